"""The staging hop: a small reverse proxy between the inspector and the sandbox that stages faults.

    agent → inspector (records what the agent saw) → StageHop (stages faults) → sandbox

The sandbox's own faults (`POST /_sandbox/faults`) are seeded probabilities; a conformance run
needs each fault at a known exchange, whatever the agent does before it. So the hop holds a list
of `Fault`s, each matching requests by method and path and firing on chosen matches (`nth`):

- `answer`  — answer with `status` and `body` without forwarding (a 503 before commit, a
              `slow_down` to a device-code poll, nothing is written upstream);
- `drop`    — forward, let the upstream commit, send the status line and cut the connection: the
              agent sees a network error although the write happened (the sandbox's
              `drop_after_commit`, at a chosen exchange). Only a write the sandbox accepted is
              cut: a refused one (a 4xx) keeps its refusal and the drop waits for the next match;
- `before`  — run `action(request)` (the owner editing a memory, say) and then forward;
- `expire`  — from the matching request on, the bearer token it carries answers
              `401 TOKEN_EXPIRED` (`recovery: refresh`), as an access token past its life does.

A fault with `after="drop"` counts its matches only once a drop has fired on its own route (the
503 that meets the resend of the rows whose answer was lost, not of another write's). An `answer` may carry headers (`Retry-After` with a
`429 RATE_LIMITED`).

Every fault that fires is kept in `events` (kind, method, path, when), so a rule can tell a
staged fault from the agent's own mistake. The hop sees raw tokens (it sits behind the
inspector) and never records one: an expired token is kept only as its fingerprint.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx

from decoy_lab.inspector.lifespan import answer_lifespan
from decoy_lab.secret import secret_fingerprint

HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"})


class Dropped(ConnectionAbortedError):
    """Raised after the status line went out: uvicorn then closes the connection."""


class QuietDrops(logging.Filter):
    """uvicorn logs the abort of a staged drop as an application error: it is not one."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, Dropped) and "without completing response" not in record.getMessage()


def quiet_drops() -> None:
    log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietDrops) for f in log.filters):
        log.addFilter(QuietDrops())


@dataclass
class Request:
    """What a fault sees of one request: method, path, query, headers, body (raw and as JSON)."""

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def form(self) -> dict[str, str]:
        try:
            return dict(parse_qsl(self.body.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            return {}

    @property
    def token(self) -> str | None:
        for k, v in self.headers:
            if k.lower() == "authorization" and v.lower().startswith("bearer "):
                return v[7:].strip()
        return None


@dataclass
class Fault:
    """One staged fault: `kind` (answer / drop / before / expire) on requests matching
    `method` and `path` (and `when(request)`, if given), firing on the `nth` matches (1-based)."""

    kind: str
    method: str
    path: str
    nth: tuple[int, ...] = (1,)
    status: int = 503
    body: dict[str, Any] = field(default_factory=dict)
    action: Callable[[Request], Any] | None = None
    when: Callable[[Request], bool] | None = None
    note: str = ""
    after: str = ""  # counts matches only once a fault of this kind fired on this route ("drop": the resend)
    headers: list[tuple[str, str]] = field(default_factory=list)  # an `answer`'s headers (Retry-After)
    seen: int = 0

    def matches(self, req: Request) -> bool:
        if req.method != self.method or req.path != self.path:
            return False
        return self.when is None or bool(self.when(req))


class StageHop:
    """An ASGI app forwarding to `upstream`, staging `faults`; `events` lists those that fired."""

    def __init__(self, upstream: str, faults: list[Fault] | None = None, *, timeout: float = 60.0):
        self.upstream = upstream.rstrip("/")
        self.faults = list(faults or [])
        self.events: list[dict[str, Any]] = []
        self.expired: set[str] = set()  # fingerprints of access tokens that answer TOKEN_EXPIRED
        self._lock = threading.Lock()
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        quiet_drops()

    def __repr__(self) -> str:
        return f"<StageHop → {self.upstream}: {len(self.faults)} faults, {len(self.events)} fired>"

    def add(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)

    def _note(self, fault: Fault | None, kind: str, req: Request, **more: Any) -> None:
        with self._lock:
            self.events.append(
                {
                    "kind": kind,
                    "method": req.method,
                    "path": req.path,
                    "at": time.time(),
                    "note": fault.note if fault else "",
                    **more,
                }
            )

    async def _close_client(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send, self._close_client)
            return
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        req = Request(
            scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1"), headers, bytes(body)
        )
        await self._handle(req, send)

    def _firing(self, req: Request) -> Fault | None:
        """Every matching fault counts this request; the first whose turn it is fires."""
        firing = None
        with self._lock:
            # a drop of another write is not the loss this fault's resend follows
            fired = {(e["kind"], e["method"], e["path"]) for e in self.events}
            for fault in self.faults:
                if fault.after and (fault.after, fault.method, fault.path) not in fired:
                    continue
                if fault.matches(req):
                    fault.seen += 1
                    if fault.seen in fault.nth and firing is None:
                        firing = fault
        return firing

    async def _handle(self, req: Request, send: Any) -> None:
        token = req.token
        if token and secret_fingerprint(token) in self.expired:
            self._note(None, "token-expired", req, token=secret_fingerprint(token))
            await _answer(send, 401, _expired_body(), [("www-authenticate", 'Bearer error="invalid_token"')])
            return
        fault = self._firing(req)
        if fault is not None and fault.kind == "answer":
            self._note(fault, "answer", req, status=fault.status, code=fault.body.get("code", ""))
            await _answer(send, fault.status, fault.body, fault.headers)
            return
        if fault is not None and fault.kind == "expire" and token:
            with self._lock:
                self.expired.add(secret_fingerprint(token))
            self._note(fault, "expire", req, token=secret_fingerprint(token))
            await _answer(send, 401, _expired_body(), [("www-authenticate", 'Bearer error="invalid_token"')])
            return
        if fault is not None and fault.kind == "before" and fault.action is not None:
            result = await asyncio.to_thread(fault.action, req)
            self._note(fault, "before", req, result=result)
        answer = await self._forward(req)
        if fault is not None and fault.kind == "drop" and answer.status_code >= 300:
            with self._lock:  # a refused write keeps its refusal: the drop waits for a write that is kept
                fault.seen -= 1
            fault = None
        if fault is not None and fault.kind == "drop":
            self._note(fault, "drop", req, status=answer.status_code)
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status_code,
                    "headers": _head(answer, len(answer.content) or 1),
                }
            )
            raise Dropped("staged fault: the write committed and its answer was lost")
        await send(
            {"type": "http.response.start", "status": answer.status_code, "headers": _head(answer, len(answer.content))}
        )
        await send({"type": "http.response.body", "body": answer.content, "more_body": False})

    async def _forward(self, req: Request) -> httpx.Response:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, trust_env=False, follow_redirects=False)
        url = self.upstream + req.path + (f"?{req.query}" if req.query else "")
        headers = [(k, v) for k, v in req.headers if k.lower() not in HOP_BY_HOP]
        try:
            return await self._client.request(req.method, url, headers=headers, content=req.body)
        except httpx.HTTPError as exc:
            body = {
                "error": "UPSTREAM_DOWN",
                "code": "UPSTREAM_DOWN",
                "message": f"the sandbox did not answer: {exc!r}",
            }
            return httpx.Response(502, json=body)


def _expired_body() -> dict[str, Any]:
    return {
        "error": "TOKEN_EXPIRED",
        "code": "TOKEN_EXPIRED",
        "message": "the access token expired; refresh it at POST /oauth/token",
        "recovery": "refresh",
    }


def _head(answer: httpx.Response, length: int) -> list[tuple[bytes, bytes]]:
    out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP]
    out = [(k, v) for k, v in out if k != b"content-encoding"]  # httpx decoded the body
    return [*out, (b"content-length", str(length).encode())]


async def _answer(send: Any, status: int, body: dict[str, Any], extra: list[tuple[str, str]] | None = None) -> None:
    data = json.dumps(body).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra or []]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})
