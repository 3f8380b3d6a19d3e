"""Helpers shared by the memory tests: a small cast of keys, and rows as GET would serve them."""

from __future__ import annotations

import functools
import itertools
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from decoy_lab import memory as M
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key


@dataclass
class Cast:
    """The owner, this agent, and three other connections (travel reader, topic reader, everything)."""

    owner: AgentKey
    agent: AgentKey
    travel: AgentKey
    topical: AgentKey
    everything: AgentKey

    def keys(self, *, topics=(), accounts=(), self_selectors=None, owner=True) -> M.RecipientKeys:
        grantees = [
            {
                "token_id": "tok-travel",
                "public_key": self.travel.public_key_b64,
                "connection_id": "con-travel",
                "selectors": {
                    "all": False,
                    "categories": ["travel"],
                    "topics": [],
                    "account_ids": [],
                    "account_wildcard": False,
                },
            },
            {
                "token_id": "tok-topic",
                "public_key": self.topical.public_key_b64,
                "connection_id": "con-topic",
                "selectors": {
                    "all": False,
                    "categories": [],
                    "topics": list(topics),
                    "account_ids": list(accounts),
                    "account_wildcard": False,
                },
            },
            {
                "token_id": "tok-all",
                "public_key": self.everything.public_key_b64,
                "connection_id": "con-all",
                "selectors": {"all": True, "categories": [], "topics": [], "account_ids": [], "account_wildcard": True},
            },
        ]
        return M.RecipientKeys(
            self.owner.public_key_b64 if owner else None,
            self.agent.public_key_b64,
            grantees,
            self_selectors=self_selectors,
            self_token_id="tok-self" if self_selectors else None,
        )

    def key_for(self, token_id: str) -> AgentKey:
        return {"tok-travel": self.travel, "tok-topic": self.topical, "tok-all": self.everything}[token_id]


@functools.cache
def cast() -> Cast:
    """One set of RSA-2048 keys for the whole session (key generation is the slow part)."""
    return Cast(*(AgentKey.generate() for _ in range(5)))


_clock = itertools.count()
_T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def stamp(minutes: int | None = None) -> str:
    """An ISO timestamp, later on every call unless `minutes` pins it."""
    n = next(_clock) if minutes is None else minutes
    return (_T0 + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")


def serve(
    row: dict,
    *,
    to: str = "self",
    rev: int = 1,
    mine: bool = True,
    created: str | None = None,
    author_kind: str = "agent",
) -> dict:
    """A POSTed row as GET /memories would serve it to `to` ("self" or a grantee token id)."""
    if to == "self":
        wrapped, via = row["self_wrap"], ["self"]
    else:
        w = next(w for w in row.get("grantee_wraps", ()) if w["token_id"] == to)
        wrapped, via = w["wrapped_key"], w["via"]
    created = created or stamp()
    return {
        "id": row["id"],
        "kid": row["kid"],
        "rev": rev,
        "ciphertext": row["ciphertext"],
        "wrapped_key": wrapped,
        "via": via,
        "mine": mine,
        "author_kind": author_kind,
        "created_at": created,
        "updated_at": created,
    }


def apply_put(served: dict, body: dict, *, to_key: AgentKey | None = None) -> dict:
    """The row as served after a PUT (a rotation replaces the self wrap)."""
    out = dict(served, ciphertext=body["ciphertext"], rev=body["expected_rev"] + 1)
    if "kid" in body:
        out.update(kid=body["kid"], wrapped_key=body["self_wrap"])
    return out


def plain_memory(row_id: str = "r1", **over) -> dict:
    """A memory's plaintext bound to `row_id`, as a writer seals it (`over` replaces or adds fields)."""
    return {
        "v": 2,
        "row_id": row_id,
        "observation": {"entityName": "default_user", "content": "x"},
        "about": ["user"],
        **over,
    }


def craft(
    obj, reader: AgentKey, *, row_id: str | None = None, key: bytes | None = None, kid: str | None = None
) -> dict:
    """A served row whose plaintext is exactly `obj` (for the refusals a real helper never writes)."""
    key = key or random_key()
    row_id = row_id or str(uuid.uuid4())
    return {
        "id": row_id,
        "kid": kid or wire.kid(key),
        "rev": 1,
        "ciphertext": wire.b64encode(sealing.seal_json(key, obj)),
        "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, reader.public_key_b64)),
        "via": ["self"],
        "mine": True,
        "author_kind": "agent",
        "created_at": stamp(),
        "updated_at": stamp(),
    }


def open_plaintext(row: dict, reader: AgentKey, wrapped: str | None = None) -> dict:
    key = sealing.unwrap_as_agent(wrapped or row.get("wrapped_key") or row["self_wrap"], reader)
    assert wire.kid(key) == row["kid"]
    return sealing.open_json(key, row["ciphertext"])


def owner_key_of(row: dict, owner: AgentKey) -> bytes:
    """The key as the owner's app recovers it from owner_wrap."""
    return sealing.unwrap_as_owner(row["owner_wrap"], owner)
