"""Who reads a row: grant selectors, grantees, the recipients of a new key, and the `via` reasons.

Access reasons are worked out here, in one place, from the labels inside the plaintext:
`all`, `category:<c>`, `topic:<id>`, `account:<id>`, or `and:<a>+<b>` for a link between ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from decoy_lab.errors import DecoyError, MemoryModelError
from decoy_lab.memory.plaintext import MAX_GRANTEE_WRAPS, Plain
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire


# -- selectors and recipients -------------------------------------------------------------------
def as_topic_id(value: str) -> str:
    return value if value.startswith("topic:") else f"topic:{value}"


def as_account_id(value: str) -> str:
    return value[len("account:") :] if value.startswith("account:") else value


def _texts(selectors: Mapping[str, Any], name: str) -> list[str]:
    """A selector list as text: ids and names are read as given, anything else is refused."""
    value = selectors.get(name) or []
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise MemoryModelError(f"grant selectors' {name} is {type(value).__name__}, not a list")
    return [str(v) for v in value]


@dataclass(frozen=True)
class Selectors:
    """What a connection reads, as memory-grantees serves it:
    `{all, categories, topics, account_ids, account_wildcard}`."""

    all: bool = False
    categories: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    account_ids: frozenset[str] = frozenset()
    account_wildcard: bool = False

    @classmethod
    def from_json(cls, value: Any) -> Selectors:
        """From the served JSON object (or anything with `as_json()`); None is "nothing"."""
        if value is None:
            return cls()
        if isinstance(value, Selectors):
            return value
        if hasattr(value, "as_json"):
            value = value.as_json()
        if not isinstance(value, Mapping):
            raise MemoryModelError(f"grant selectors are a JSON object, got {type(value).__name__}")
        return cls(
            all=bool(value.get("all")),
            categories=frozenset(_texts(value, "categories")),
            topics=frozenset(as_topic_id(t) for t in _texts(value, "topics")),
            account_ids=frozenset(as_account_id(a) for a in _texts(value, "account_ids")),
            account_wildcard=bool(value.get("account_wildcard")),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "all": self.all,
            "categories": sorted(self.categories),
            "topics": sorted(self.topics),
            "account_ids": sorted(self.account_ids),
            "account_wildcard": self.account_wildcard,
        }

    def reaches_end(self, end: str) -> bool:
        """Whether a link end (`topic:<id>` or `account:<id>`) is granted."""
        if end.startswith("account:"):
            return self.account_wildcard or as_account_id(end) in self.account_ids
        if end.startswith("topic:"):
            return self.all or end in self.topics
        return False


@dataclass(frozen=True)
class Grantee:
    """One eligible connection from memory-grantees: who to wrap a new key to, and what it reads."""

    token_id: str
    public_key: str
    connection_id: str | None = None
    selectors: Selectors = Selectors()

    @classmethod
    def from_json(cls, value: Any) -> Grantee:
        if isinstance(value, Grantee):
            return value
        if not isinstance(value, Mapping) or not value.get("token_id") or not value.get("public_key"):
            raise MemoryModelError(
                "a grantee is {token_id, public_key, connection_id, selectors} as memory-grantees serves it"
            )
        return cls(
            str(value["token_id"]),
            str(value["public_key"]),
            value.get("connection_id") or str(value["token_id"]),
            Selectors.from_json(value.get("selectors")),
        )


@dataclass
class RecipientKeys:
    """Who a new key is wrapped to: the owner (required), this agent, and the grantees.

    `self_selectors` / `self_token_id` come from memory-grantees' `self`; with them each row
    carries `self_via` (the reasons this connection reads it by under the labels it chose).
    """

    owner_public_key: str | None
    agent_public_key: str
    grantees: Sequence[Any] = ()
    self_selectors: Any = None
    self_token_id: str | None = None

    def __post_init__(self) -> None:
        self.grantees = tuple(Grantee.from_json(g) for g in self.grantees or ())
        if self.self_selectors is not None:
            self.self_selectors = Selectors.from_json(self.self_selectors)

    @classmethod
    def from_response(cls, body: Mapping[str, Any], agent_public_key: str) -> RecipientKeys:
        """From a `GET /api/agent/context/memory-grantees` answer."""
        me = body.get("self") or {}
        if not isinstance(me, Mapping):
            raise MemoryModelError(f"memory-grantees' self is {type(me).__name__}, not an object")
        return cls(
            body.get("owner_public_key"),
            agent_public_key,
            body.get("grantees") or (),
            self_selectors=me.get("selectors") if me else None,
            self_token_id=me.get("token_id"),
        )

    def others(self) -> list[Grantee]:
        """The grantees that are not this connection."""
        return [
            g
            for g in self.grantees
            if g.public_key != self.agent_public_key
            and (self.self_token_id is None or g.token_id != self.self_token_id)
        ]

    def __repr__(self) -> str:
        from decoy_lab.wire.crypto import public_key_fingerprint

        def fp(b64: str | None) -> str:
            if b64 is None:
                return "None (owner key setup not finished)"
            try:
                return public_key_fingerprint(b64)
            except DecoyError:
                return "(not base64)"

        return (
            f"RecipientKeys(owner={fp(self.owner_public_key)}, agent={fp(self.agent_public_key)}, "
            f"grantees={len(self.grantees)}, self_via={'yes' if self.self_selectors else 'no'})"
        )


# -- access reasons -----------------------------------------------------------------------------
def reasons_for(selectors: Any, plain: Plain) -> list[str]:
    """The via reasons a connection with these selectors reads this row by ([] = it does not).

    A memory about an account is reached only through that account (acctmem grants); any other
    memory by `all`, each of its categories, or its topic. A topic by `all` or its own topic id.
    A link needs every non-user end: one end is a plain reason, several an `and:` reason.
    """
    sel = Selectors.from_json(selectors)
    out: list[str] = []
    if plain.kind == "memory":
        account = plain.account_id
        if account is not None:
            if sel.reaches_end(f"account:{account}"):
                out.append(f"account:{account}")
            return out
        if sel.all:
            out.append("all")
        out.extend(f"category:{c}" for c in plain.categories if c in sel.categories)
        tid = plain.topic_id
        if tid and tid in sel.topics:
            out.append(tid)
    elif plain.kind == "topic":
        if sel.all:
            out.append("all")
        if plain.topic_id in sel.topics:
            out.append(plain.topic_id)
    elif plain.kind == "link":
        ends = list(dict.fromkeys(plain.labels))
        has_account = any(e.startswith("account:") for e in ends)
        if sel.all and not has_account:
            out.append("all")
        if ends and all(sel.reaches_end(e) for e in ends):
            specific = all(e in sel.topics or e.startswith("account:") for e in ends)
            if specific or has_account:  # with `all` alone, "all" already says it
                out.append(ends[0] if len(ends) == 1 else "and:" + "+".join(ends))
    return list(dict.fromkeys(out))


def grantee_wraps(key: bytes, plain: Plain, keys: RecipientKeys, *, trace: Trace | None = None) -> list[dict[str, Any]]:
    """`[{token_id, via, wrapped_key}]` for every other connection whose selectors reach the row
    (at most 100, the server's limit; the owner's phone shares with the rest)."""
    out: list[dict[str, Any]] = []
    for g in keys.others():
        via = reasons_for(g.selectors, plain)
        if via and len(out) < MAX_GRANTEE_WRAPS:
            out.append(
                {
                    "token_id": g.token_id,
                    "via": via,
                    "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, g.public_key, trace=trace)),
                }
            )
    return out


def self_via_of(plain: Plain, keys: RecipientKeys) -> list[str] | None:
    if keys.self_selectors is None:
        return None
    return ["self", *reasons_for(keys.self_selectors, plain)]
