"""The inspector's tests: a sandbox, an inspector in front of it, agents paired through it, and a
small upstream whose answers stream, drip or stop as a test needs. All over loopback HTTP."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from decoy_lab.inspector import Inspector
from decoy_lab.inspector.serve import serve_in_thread
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import bearer, pair_agent

PERMISSIONS = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]


@pytest.fixture
def sandbox(owner) -> Iterator[Sandbox]:
    with Sandbox.start(owner_key=owner, seed="none") as sb:
        yield sb


@pytest.fixture
def insp(sandbox, agent_key) -> Iterator[Inspector]:
    with Inspector.start(sandbox=sandbox, agent_key=agent_key) as inspector:
        yield inspector


@pytest.fixture
def pair():
    """`pair(url, key, name)`: a token dict (pair_agent's) for an agent paired at `url`."""

    def run(url: str, key: Any, name: str = "Test agent") -> dict:
        return pair_agent(url, key, PERMISSIONS, name)

    return run


@pytest.fixture
def auth():
    return bearer


async def _body(receive: Any) -> bytes:
    data = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return data
        data += message.get("body", b"")
        if not message.get("more_body"):
            return data


async def _answer(send: Any, status: int, body: bytes, ctype: bytes = b"application/json") -> None:
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class Upstream:
    """An ASGI upstream: `/echo` (the body's size and SHA-256), `/count` (its size, never kept), `/chunked` (no length), `/drip`
        (chunks 0.1 s apart), `/big?n=` (n bytes), `/api/agent/context/memories` (the `answer` set,
        gzip-compressed when `gzip`),
        anything else 200 `{"ok": true}`. `seen` keeps each request's method, path and body size,
    `peers` the address it came from, `started` each request's method and path as soon as its head
    is in (before its body: a test waits on it for a request the proxy has begun to pass on)."""

    def __init__(self) -> None:
        self.answer: bytes = b'{"memories": []}'
        self.gzip = False  # the memories answer gzip-compressed, sent in 64 KiB pieces
        self.seen: list[tuple[str, str, int]] = []
        self.peers: list[Any] = []  # each request's client address: one per connection it came on
        self.started: list[tuple[str, str]] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        self.started.append((scope["method"], path))
        if path == "/count":  # a body counted as it streams, never kept
            size = 0
            while (message := await receive())["type"] == "http.request":
                size += len(message.get("body", b""))
                if not message.get("more_body"):
                    break
            self.seen.append((scope["method"], path, size))
            await _answer(send, 200, json.dumps({"size": size}).encode())
            return
        body = await _body(receive)
        self.seen.append((scope["method"], path, len(body)))
        self.peers.append(tuple(scope.get("client") or ()))
        if path == "/echo":
            await _answer(
                send, 200, json.dumps({"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}).encode()
            )
        elif path in ("/chunked", "/drip"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            for i in range(5):
                if path == "/drip":
                    await asyncio.sleep(0.1)
                await send({"type": "http.response.body", "body": f"part {i}\n".encode(), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif path == "/big":
            n = int(dict(p.split("=") for p in scope["query_string"].decode().split("&") if p).get("n", "0"))
            await _answer(send, 200, b"x" * n, b"application/octet-stream")
        elif path == "/api/agent/context/memories" and self.gzip:
            data = gzip.compress(self.answer, mtime=0)
            head = [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")]
            head.append((b"content-length", str(len(data)).encode()))
            await send({"type": "http.response.start", "status": 200, "headers": head})
            for i in range(0, len(data), 65536):
                await send({"type": "http.response.body", "body": data[i : i + 65536], "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif path == "/api/agent/context/memories":
            await _answer(send, 200, self.answer)
        else:
            await _answer(send, 200, b'{"ok": true}')


@pytest.fixture
def upstream() -> Iterator[tuple[str, Upstream]]:
    app = Upstream()
    served = serve_in_thread(app, name="test-upstream")
    try:
        yield served.url, app
    finally:
        served.stop()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=20, trust_env=False) as c:
        yield c
