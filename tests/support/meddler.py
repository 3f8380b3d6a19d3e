"""A network between the client and a real server that a test can script: `Meddler` passes every
request through to the server except the ones a test planned for a route, each of which runs
one step (lose the request, answer for the server, …) instead."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx

Step = Callable[[httpx.Request, httpx.BaseTransport], httpx.Response]


class Meddler(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.plans: dict[tuple[str, str], list[Step]] = {}
        self.seen: list[tuple[str, str, bytes]] = []  # (method, path, body) of every request sent

    def plan(self, method: str, path: str, *steps: Step) -> None:
        """The next requests to `method path` meet these steps, in order; then the server again."""
        self.plans.setdefault((method, path), []).extend(steps)

    def bodies(self, method: str, path: str) -> list[bytes]:
        return [body for m, p, body in self.seen if (m, p) == (method, path)]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        self.seen.append((request.method, request.url.path, body))
        steps = self.plans.get((request.method, request.url.path))
        if steps:
            return steps.pop(0)(request, self.inner)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def lost(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The request left and no answer came (it never reached the server: nothing committed)."""
    raise httpx.ReadError("the connection dropped before an answer came", request=request)


def answer(status: int, body: Any) -> Step:
    """An answer for the server, which never sees the request (a stale or lying front)."""

    def step(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        return httpx.Response(status, content=json.dumps(body).encode(), headers={"content-type": "application/json"})

    return step


def claims_existing(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """Answers a POST of rows as if the server held every one already (`existing`), unseen by it."""
    ids = [r["id"] for r in json.loads(request.content)["rows"]]
    return answer(200, {"created": [], "existing": ids})(request, inner)


def committed_then_lost(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The server took the request and committed it; its answer never came back."""
    response = inner.handle_request(request)
    response.read()
    response.close()
    raise httpx.ReadError("the connection dropped after the server answered", request=request)


MEMORY_PERMISSIONS = ["memory.read", "memory.save", "memory.edit", "memory.delete"]


def scripted_pair(sb: Any, name: str, *, meddler: Meddler | None = None, **options: Any) -> tuple[Any, Meddler]:
    """A connection paired with `sb` over a Meddler (`meddler`, or a new one) it returns beside it:
    one send and one retry, no waiting between them (what a test of unknown outcomes and refusals
    wants), no saved profile. `options` are Connection.pair's and replace those defaults
    (permissions, retries, client_id, backoff, sleep, profile)."""
    from decoy_lab.client.connection import Connection

    meddler = meddler or Meddler()
    settings: dict[str, Any] = {
        "permissions": MEMORY_PERMISSIONS,
        "retries": 1,
        "client_id": f"scripted-{uuid.uuid4().hex[:8]}",
        "backoff": 0,
        "sleep": lambda s: None,
        "profile": None,
        **options,
    }
    conn = Connection.pair(sb.url, name=name, on_link=lambda *a: None, transport=meddler, **settings)
    return conn, meddler


def scripted_resume(profile: str, meddler: Meddler, **options: Any) -> Any:
    """The saved profile opened anew over `meddler`, as another process would (its own journal):
    no resend of its own, no waiting."""
    from decoy_lab.client.connection import Connection

    settings: dict[str, Any] = {"retries": 0, "backoff": 0, "sleep": lambda s: None, **options}
    return Connection.resume(profile, transport=meddler, **settings)
