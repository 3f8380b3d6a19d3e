"""Shared pieces for the sandbox memory-side tests (no tests here).

`Lab` is one in-process sandbox on a fake clock (TestClient over create_app); `lab.pair(...)`
runs the real device flow (auto-approve) and returns a `Peer` that talks to the API with its
token and seals rows with decoy_lab.memory for its own key. `LoopbackLab(sb)` is the same over a
sandbox served on a loopback port, for tests that want real HTTP.
"""

from __future__ import annotations

import copy
import functools
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.testclient import TestClient

from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.phone import appview, schedule, sharepass
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

T0 = 1_800_000_000.0  # a fixed start, so timestamps repeat


@functools.cache
def key(name: str) -> AgentKey:
    """One RSA key per name for the whole session (keygen is slow)."""
    return AgentKey.generate()


def rows_for(*perms: Any) -> list[dict]:
    """authorization_details rows: "memory.save" → {"permissions": ["memory.save"]}; a dict passes through."""
    return [p if isinstance(p, dict) else {"permissions": [p]} for p in perms]


@dataclass
class Peer:
    """One paired connection: its key, token and a few JSON helpers."""

    lab: Lab
    name: str
    key: AgentKey
    token: str
    token_id: str
    refresh_token: str = field(repr=False, default="")

    @property
    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def get(self, path: str, **kw: Any):
        return self.lab.client.get(path, headers=self.headers, **kw)

    def post(self, path: str, body: Any, **kw: Any):
        return self.lab.client.post(path, json=body, headers=self.headers, **kw)

    def put(self, path: str, body: Any, **kw: Any):
        return self.lab.client.put(path, json=body, headers=self.headers, **kw)

    def grantees(self) -> dict:
        r = self.get("/api/agent/context/memory-grantees")
        assert r.status_code == 200, r.text
        return r.json()

    def keys(self, *, grantees: bool = True) -> memory.RecipientKeys:
        g = self.grantees()
        if not grantees:
            g = {**g, "grantees": []}
        return memory.RecipientKeys.from_response(g, self.key.public_key_b64)

    def memories(self) -> dict:
        r = self.get("/api/agent/context/memories")
        assert r.status_code == 200, r.text
        return r.json()

    def served(self, row_id: str) -> dict | None:
        return next((m for m in self.memories()["memories"] if m["id"] == row_id), None)

    def save(self, rows: list[dict]):
        return self.post("/api/agent/context/memories", {"rows": rows})

    def new_row(self, text: str = "Prefers short answers.", *, grantees: bool = True, **kw: Any) -> dict:
        return memory.new_memory_row(self.keys(grantees=grantees), text, **kw)

    def read(self, row_id: str) -> memory.Memory | None:
        served = self.served(row_id)
        assert served is not None, f"{row_id} is not served to {self.name}"
        return memory.read_memory_row(served, self.key)


class Lab:
    """A sandbox app on a fake clock with a TestClient; the owner's key is shared per session."""

    def __init__(self, *, auto_share_after: float | None = None, faults: dict | None = None, seed: str = "none"):
        self.clock = FakeClock(T0)
        self.app = create_app(":memory:", seed=seed, clock=self.clock, owner_key=key("owner"), faults=faults)
        self.state = self.app.state.sb
        self.state.token_ttl = 10**9  # tests move the clock by days; tokens must outlive that
        self.state.device_interval = 0
        schedule.configure(self.state, auto_share_after=auto_share_after)
        self.client = TestClient(self.app)
        self.owner = self.state.owner

    def pair(self, name: str, *perms: Any, key_name: str | None = None) -> Peer:
        """A connection paired through the real device flow (auto-approved), holding `perms`."""
        k = key(key_name or name)
        tok = pair_agent(self.client, k, permissions=rows_for(*perms), name=name)
        return Peer(self, name, k, tok["access_token"], tok["token_id"], tok.get("refresh_token", ""))

    def ask(self, peer: Peer, body: dict) -> dict:
        """A grant request (auto-approved)."""
        r = peer.post("/api/agent/grant-request", body)
        assert r.status_code in (200, 201), r.text
        return r.json()

    def share(self) -> sharepass.ShareReport:
        return sharepass.run_sharing_pass(self.state)

    def stored(self, row_id: str) -> ms.MemoryRow | None:
        with self.state.store.tx() as con:
            return ms.get_memory(con, row_id)

    def wraps(self, row_id: str) -> list[ms.Wrap]:
        with self.state.store.tx() as con:
            return ms.wraps_of(con, row_id)

    def view(self, row_id: str) -> dict:
        return next(e for e in appview.app_view(self.state) if e["id"] == row_id)


def reseal(row: dict, **changes: Any) -> dict:
    """A copy of a POST-ready row with fields replaced (for building bad rows)."""
    out = copy.deepcopy(row)
    out.update(changes)
    return out


def sealed_row(
    keys: memory.RecipientKeys,
    plaintext: dict,
    *,
    row_id: str | None = None,
    key_bytes: bytes | None = None,
    owner_payload: bytes | None = None,
) -> dict:
    """A row sealed by hand (for rows decoy_lab.memory refuses to build): any plaintext, any owner payload."""
    row_id = row_id or str(uuid.uuid4())
    k = key_bytes or bytes(range(32))
    blob = sealing.seal_vault(k, sealing.json_bytes(plaintext))
    owner = sealing.seal_envelope(
        owner_payload if owner_payload is not None else wire.b64encode(k).encode(), keys.owner_public_key, owner=True
    )
    return {
        "id": row_id,
        "kid": wire.kid(k),
        "ciphertext": wire.b64encode(blob),
        "owner_wrap": wire.b64encode(owner),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(k, keys.agent_public_key)),
    }


def saved(peer, text: str = "Lisbon: Fridays only.", **kw: Any) -> dict:
    """Build a row as `peer`, POST it, and return the row (asserting 201)."""
    row = peer.new_row(text, **kw)
    assert peer.save([row]).status_code == 201
    return row


class LoopbackLab(Lab):
    """A Lab over a sandbox served on a loopback port (the `sb` / `clocked_sb` fixtures): the same
    helpers, every request sent over real HTTP by httpx; the clock is whatever `sb` runs on. Peers
    of one module share the sandbox, so each test pairs under names of its own."""

    def __init__(self, sb: Any, *, auto_share_after: float | None = None) -> None:
        self.app = sb.app
        self.state = sb.state
        self.clock = self.state.clock
        self.state.device_interval = 0
        schedule.configure(self.state, auto_share_after=auto_share_after)
        self.client = httpx.Client(base_url=sb.url, timeout=10)
        self.owner = sb.owner
