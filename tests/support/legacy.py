"""Connections that record what they send, and legacy space rows written the way an older client did."""

from __future__ import annotations

import uuid

import httpx

from decoy_lab.client.connection import Connection
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

ROWS, SPACES = "/api/agent/context/rows", "/api/agent/context/spaces"


class Recorder:
    """Every PUT rows body the connection sends, byte for byte, and the path of every PUT (an httpx
    request hook)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []  # every PUT, either store
        self.before_put = None

    def __call__(self, request: httpx.Request) -> None:
        if request.method == "PUT":
            self.paths.append(request.url.path)
        if request.method == "PUT" and request.url.path == ROWS:
            self.bodies.append(request.read())
            if self.before_put is not None:
                self.before_put(len(self.bodies))


def connect(sb, clock, permissions, sleeps=None, recorder=None, **kw) -> Connection:
    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        clock.advance(seconds)

    http = httpx.Client(base_url=sb.url, timeout=10, event_hooks={"request": [recorder]} if recorder else {})
    kw.setdefault("profile", None)
    return Connection.pair(
        sb.url,
        name="Legacy editor",
        permissions=permissions,
        agent_key=AgentKey.generate(),
        client_id=f"legacy-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        sleep=sleep,
        http=http,
        backoff=0,
        **kw,
    )


def write_legacy(conn: Connection, plains: list[dict]) -> tuple[str, bytes, list[str]]:
    """A Me space and rows written the way an older client did (through the raw API)."""
    key = random_key()
    owner = conn.keys().owner_public_key
    space_id = conn.session.api.request(
        "POST",
        SPACES,
        json={
            "kind": "me",
            "skid": wire.kid(key),
            "own_wrap": wire.b64encode(sealing.wrap_to_agent(key, conn.agent_key.public_key_b64)),
            "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, owner)),
            "grantee_wraps": [],
        },
    )["space"]["id"]
    ids = [str(uuid.uuid4()) for _ in plains]
    rows = [
        {
            "id": rid,
            "skid": wire.kid(key),
            "ciphertext": wire.b64encode(sealing.seal_space_row(key, p, space_id=space_id, row_id=rid)),
        }
        for rid, p in zip(ids, plains)
    ]
    conn.session.api.request("POST", ROWS, json={"space_id": space_id, "rows": rows})
    return space_id, key, ids


def served_legacy(conn: Connection, space_id: str, row_id: str) -> dict:
    return next(r for r in conn.session.get(ROWS, {"space_id": space_id})["rows"] if r["id"] == row_id)


def obs(text: str, categories=("food",), **extra) -> dict:
    return {"observation": {"entityName": "default_user", "content": text}, "categories": list(categories), **extra}
