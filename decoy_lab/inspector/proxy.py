"""The recording reverse proxy: an ASGI app passing every exchange through, byte for byte.

Each request goes upstream as it was sent: method, path and query as raw bytes, every header but
the hop-by-hop ones (RFC 9110 §7.6.1: `Connection` and those it names, `Keep-Alive`, `TE`,
`Trailer`, `Transfer-Encoding`, `Upgrade`, `Proxy-*`), and the body streamed as it arrives (its
`Content-Length` kept, else chunked). `Host` is kept for a loopback upstream (the sandbox then
names the inspector in the addresses it answers with, so the agent stays on it) and set to the
upstream's for any other. The answer comes back the same way: status, headers (the upstream's
own `Date` and `Server`), and the raw body bytes as they arrive (never decoded, never buffered),
chunked when the upstream sent no length. Both bodies are teed into the record up to its cap.

Connections to the upstream are pooled (kept alive at most 2 s idle, under any server's own
limit); an idempotent request whose connection fails before any answer is sent once more. The
upstream side is upstream.py's lean client: the proxy's own cost per exchange is what a
notebook's kernel, the sandbox in it and the agents beside it do not get of the machine's cores.

What can go wrong is recorded, never raised: the upstream refuses the connection (502, a JSON
body `{"error", "code": "UPSTREAM_DOWN", "message"}` as the sandbox words its errors), gives no
answer in time (504 `UPSTREAM_TIMEOUT`), closes before answering (502 `UPSTREAM_CUT_OFF`) or in
the middle of its body (the agent's connection is then closed too, so it sees a cut answer, not a
short one); the agent goes away while sending its body or while the answer streams (the upstream
exchange is dropped); a fault of the proxy itself (500 `INSPECTOR_ERROR`); the inspector stopping
while an exchange still runs (after the server's grace period: 503 `INSPECTOR_STOPPED`). Each ends its
flow with what happened, and the next exchange is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from decoy_lab.inspector import flow_record
from decoy_lab.inspector.lifespan import answer_lifespan
from decoy_lab.inspector.tee import RowCollector, Tee
from decoy_lab.inspector.upstream import Answer, CutOff, Pool, Refused, TimedOut, UpstreamError

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
MEMORIES = "/api/agent/context/memories"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
# An idle pooled connection to the upstream is dropped well before a server's own keep-alive limit
# (5 s for uvicorn, the sandbox's), so a request is never sent on one the server is closing; should
# that still happen, an idempotent request whose body was whole is sent once more (RFC 9110 §9.2.2).
KEEPALIVE_EXPIRY = 2.0
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
# An agent that closes its connection as soon as it has the last byte has not left early: the end
# of the answer is given this long to arrive once it has gone.
GRACE = 0.5


OWNER_SURFACE_REFUSED = (
    "the sandbox's owner surface is not served through the inspector: the user reaches it at the"
    " sandbox's own address; an agent never does"
)


OWNER_BODY_READ = 64 * 1024  # bytes of a refused request's body read and dropped before answering


def is_owner_surface(path: str) -> bool:
    """The sandbox's owner pages and actions (`/`, `/_sandbox…`, `/connect…`), however the agent
    spells the path (percent-encoded, doubled slashes, any case)."""
    name = "/" + re.sub("/+", "/", unquote(path)).strip("/").lower()
    return name == "/" or name.startswith(("/_sandbox", "/connect"))


class Records(Protocol):
    """What the proxy records into: the Recorder, or the proxy process's Relay to the inspector's process."""

    cap: int

    def ms(self) -> float: ...

    def answered(self, flow: flow_record.Flow) -> None: ...

    async def pace(self) -> None: ...

    def collector(self, flow: flow_record.Flow, encoding: str | None) -> RowCollector: ...

    def tee(self, flow: flow_record.Flow, side: str) -> Tee: ...

    def begin(
        self, method: str, path: str, query: str, headers: list[tuple[str, str]], http_version: str
    ) -> flow_record.Flow: ...

    def finish(
        self,
        flow: flow_record.Flow,
        request: Tee,
        response: Tee,
        response_headers: list[tuple[str, str]],
        *,
        ended: str,
        reason: str = "",
        rows: RowCollector | None = None,
    ) -> bool: ...


class AgentGone(Exception):
    """The agent closed its connection while its request body was still coming."""


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": code, "code": code, "message": message}).encode("utf-8")


def upstream_problem(url: str) -> str | None:
    """Why `url` cannot be a proxy's upstream (a Decoy base URL), or None when it can."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # a port past 65535 or not a number raises here
    except ValueError as exc:
        return f"{url}: not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url}: not an http:// or https:// URL"
    if parts.username is not None or parts.password is not None:
        return f"{url}: a Decoy base URL carries no user name or password"
    return None


class ProxyApp:
    """`ProxyApp(recorder, upstream)`: an ASGI app; `pool` (tests) is the upstream client to use."""

    def __init__(
        self,
        recorder: Records,
        upstream: str,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        pool: Pool | None = None,
    ):
        self.recorder = recorder
        self.upstream = upstream.rstrip("/")
        why = upstream_problem(self.upstream)
        if why is not None:
            raise ValueError(why)
        parts = urlsplit(self.upstream)
        self._host = parts.netloc
        self._keep_host = parts.hostname in LOOPBACK
        self._pool = pool or Pool(
            self.upstream, timeout=timeout, connect_timeout=connect_timeout, expiry=KEEPALIVE_EXPIRY
        )

    def __repr__(self) -> str:
        return f"<ProxyApp → {self.upstream}>"

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send, self.aclose)
        elif scope["type"] == "http":
            await self.exchange(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    # -- one exchange ------------------------------------------------------------------------------
    async def exchange(self, scope: dict, receive: Any, send: Any) -> None:
        if is_owner_surface(scope["path"]):
            await self._refuse_owner_surface(scope, receive, send)
            return
        await self._recorded(scope, receive, send)

    def _begin(self, scope: dict) -> tuple[flow_record.Flow, Tee, Tee, str, str, list[tuple[str, str]]]:
        """Begin recording the exchange `scope` opens: its flow, the request's and the answer's
        tees, and the path, query and headers exactly as the agent sent them (latin-1: byte for byte)."""
        rec = self.recorder
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        path = (scope.get("raw_path") or scope["path"].encode("utf-8")).decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        flow = rec.begin(scope["method"], path, query, raw, f"HTTP/{scope.get('http_version', '1.1')}")
        return flow, rec.tee(flow, "request"), rec.tee(flow, "response"), path, query, raw

    async def _refuse_owner_surface(self, scope: dict, receive: Any, send: Any) -> None:
        """The owner's pages and actions are the user's, never an agent's: answered here, 403,
        never forwarded (an agent could read every memory in clear, approve its own asks or
        widen its own grants); recorded so the attempt shows."""
        rec = self.recorder
        flow, req, resp, _, _, _ = self._begin(scope)
        dropped = 0  # a small body is read (never kept) first: closing on unread bytes resets the answer
        while dropped <= OWNER_BODY_READ:
            message = await receive()
            dropped += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        why = OWNER_SURFACE_REFUSED
        body = error_body("OWNER_SURFACE_NOT_PROXIED", why)
        headers = _json_head(body)
        flow.status, flow.timings.first_byte = 403, rec.ms()
        await send({"type": "http.response.start", "status": 403, "headers": _encode(headers)})
        await send({"type": "http.response.body", "body": body, "more_body": False})
        req.complete = True
        resp.add(body)
        resp.complete = True
        rec.finish(flow, req, resp, headers, ended=flow_record.ANSWERED, reason=why)

    async def _recorded(self, scope: dict, receive: Any, send: Any) -> None:
        """One exchange, recorded however it ends: a fault of the proxy itself, or the inspector
        stopping while it runs, still ends its flow (and answers 500 when nothing was sent yet)."""
        rec = self.recorder
        flow, req, resp, path, query, raw = self._begin(scope)
        started: list[bool] = []

        async def sending(message: dict) -> None:
            started.append(True)
            await send(message)

        try:
            await self._exchange(scope, receive, sending, flow, req, resp, path, query, raw)
        except (Exception, asyncio.CancelledError) as exc:  # cancelled: the server's graceful stop ran out
            if flow.ended != flow_record.IN_FLIGHT:
                raise
            stopped = isinstance(exc, asyncio.CancelledError)
            ended = flow_record.STOPPED if stopped else flow_record.PROXY_ERROR
            why = "the inspector stopped during the exchange" if stopped else f"the inspector failed: {_why(exc)}"
            if not started:
                code, status = ("INSPECTOR_STOPPED", 503) if stopped else ("INSPECTOR_ERROR", 500)
                body = error_body(code, why)
                await send({"type": "http.response.start", "status": status, "headers": _encode(_json_head(body))})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                flow.status = status
            rec.finish(flow, req, resp, [], ended=ended, reason=why)

    async def _exchange(
        self,
        scope: dict,
        receive: Any,
        send: Any,
        flow: flow_record.Flow,
        req: Tee,
        resp: Tee,
        path: str,
        query: str,
        raw: list[tuple[str, str]],
    ) -> None:
        rec = self.recorder
        first = await receive()
        if first["type"] == "http.disconnect":
            why = first.get("reason") or "the agent left before its body"
            rec.finish(flow, req, resp, [], ended=flow_record.AGENT_DISCONNECTED, reason=why)
            return
        chunk = first.get("body", b"")
        req.add(chunk)
        watch = _Watch(receive)  # the agent leaving, watched once its body is all in
        content: Any
        if first.get("more_body"):
            content = self._rest_of_body(chunk, receive, req, flow, watch)
        else:
            req.complete, content, flow.timings.sent = True, chunk, rec.ms()
            watch.start()
        target = path + (f"?{query}" if query else "")
        method, headers = scope["method"], self._forwarded(raw)
        try:
            try:
                answer = await watch.race(self._pool.send(method, target, headers, content))
            except CutOff as exc:
                if not exc.before_answer or method not in IDEMPOTENT or not isinstance(content, bytes):
                    raise
                flow.notes.append(f"sent again: the first connection failed before any answer ({_why(exc)})")
                answer = await watch.race(self._pool.send(method, target, headers, content))
        except AgentGone as gone:
            rec.finish(flow, req, resp, [], ended=flow_record.AGENT_DISCONNECTED, reason=str(gone))
            return
        except UpstreamError as exc:
            watch.stop()
            await self._failed(flow, req, resp, exc, send)
            return
        await self._stream_answer(flow, req, resp, answer, watch, send)

    async def _rest_of_body(self, first: bytes, receive: Any, req: Tee, flow: flow_record.Flow, watch: _Watch) -> Any:
        if first:
            yield first
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise AgentGone(message.get("reason") or "the agent closed its connection while sending its body")
            chunk = message.get("body", b"")
            if chunk:
                req.add(chunk)
                yield chunk
                await self.recorder.pace()
            if not message.get("more_body"):
                break
        req.complete, flow.timings.sent = True, self.recorder.ms()
        watch.start()

    def _forwarded(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        named = {n.strip().lower() for k, v in headers if k.lower() == "connection" for n in v.split(",")}
        out = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP and k.lower() not in named]
        if not self._keep_host:
            out = [(k, self._host if k.lower() == "host" else v) for k, v in out]
        return out

    async def _failed(self, flow: flow_record.Flow, req: Tee, resp: Tee, exc: UpstreamError, send: Any) -> None:
        """No answer came: say why to the agent (502/504, a JSON body) and record it."""
        if isinstance(exc, Refused):
            status, code, ended = 502, "UPSTREAM_DOWN", flow_record.UPSTREAM_DOWN
            message = f"the inspector cannot reach {self.upstream} ({_why(exc)}): is it running? Nothing was sent"
        elif isinstance(exc, TimedOut):
            status, code, ended = 504, "UPSTREAM_TIMEOUT", flow_record.UPSTREAM_TIMEOUT
            message = f"{self.upstream} gave no answer in time ({_why(exc)}); the request may have been received"
        else:
            status, code, ended = 502, "UPSTREAM_CUT_OFF", flow_record.UPSTREAM_CUT_OFF
            message = f"{self.upstream} closed the connection before answering ({_why(exc)}); the request may have been received"
        body = error_body(code, message)
        headers = _json_head(body)
        flow.status = status
        flow.timings.first_byte = self.recorder.ms()
        try:
            await send({"type": "http.response.start", "status": status, "headers": _encode(headers)})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        except OSError:  # pragma: no cover - the agent left too
            pass
        resp.add(body)
        resp.complete = True
        self.recorder.finish(flow, req, resp, headers, ended=ended, reason=message)

    async def _stream_answer(
        self, flow: flow_record.Flow, req: Tee, resp: Tee, answer: Answer, watch: _Watch, send: Any
    ) -> None:
        rec = self.recorder
        flow.status = answer.status_code
        flow.timings.first_byte = rec.ms()
        rec.answered(flow)
        headers = answer.headers
        out = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        encoding = answer.header("content-encoding")
        rows = rec.collector(flow, encoding) if flow.method == "GET" and flow.path == MEMORIES else None
        watch.start()
        gone = watch.task
        assert gone is not None
        ended, reason = flow_record.ANSWERED, ""
        delivered, left_at = [0], []  # bytes handed to the agent; how many it had when it left
        gone.add_done_callback(lambda t: None if t.cancelled() else left_at.append(delivered[0]))
        try:
            await send({"type": "http.response.start", "status": answer.status_code, "headers": _encode(out)})
            whole = False
            async with watch.until_gone(GRACE, quiet=True):  # nobody listens: a silent upstream is not waited for
                async for chunk in answer.chunks():
                    resp.add(chunk)
                    if rows is not None:
                        rows.feed(chunk)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await rec.pace()
                    delivered[0] += len(chunk)
                whole = True
            resp.complete = whole
            if left_at and not (whole and left_at[0] >= resp.size):  # it left before the last byte
                ended = flow_record.AGENT_DISCONNECTED
                reason = f"the agent closed its connection after {left_at[0]:,} bytes of the answer"
            else:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except TimedOut as exc:
            ended, reason = (
                flow_record.UPSTREAM_TIMEOUT,
                f"the upstream stopped sending after {resp.size:,} bytes ({_why(exc)})",
            )
        except CutOff as exc:
            ended, reason = (
                flow_record.UPSTREAM_CUT_OFF,
                f"the upstream closed the connection after {resp.size:,} bytes ({_why(exc)})",
            )
        except OSError as exc:
            ended, reason = flow_record.AGENT_DISCONNECTED, f"the agent's connection failed ({exc})"
        finally:
            watch.stop()
            await answer.aclose()
            if rows is not None:
                rows.close(resp.complete)
            rec.finish(flow, req, resp, headers, ended=ended, reason=reason, rows=rows)


class _Watch:
    """Watches for the agent leaving (the ASGI `http.disconnect`), from when its body is all in.

    `until_gone(grace)` is a block of the exchange ended `grace` seconds after the agent left, as
    a timeout whose deadline the leaving sets: it costs no task of its own, and what it awaits runs
    as it is (an answer's chunks already read go through in the same turn of the loop)."""

    def __init__(self, receive: Any):
        self._receive = receive
        self.task: asyncio.Task | None = None
        self._armed: list[tuple[Any, float]] = []  # (a running block's timeout, its grace)

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(_disconnect(self._receive))
            self.task.add_done_callback(self._left)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    @property
    def gone(self) -> bool:
        return self.task is not None and self.task.done() and not self.task.cancelled()

    def _left(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        now = asyncio.get_running_loop().time()
        for cm, grace in self._armed:
            if not cm.expired():
                cm.reschedule(now + grace)

    @contextlib.asynccontextmanager
    async def until_gone(self, grace: float, *, quiet: bool = False) -> AsyncIterator[None]:
        """The block, ended `grace` s after the agent left: quietly with `quiet`, else AgentGone."""
        cm = asyncio.timeout(None)
        try:
            async with cm:
                entry = (cm, grace)
                self._armed.append(entry)
                try:
                    if self.gone:
                        cm.reschedule(asyncio.get_running_loop().time() + grace)
                    yield
                finally:
                    self._armed.remove(entry)
        except TimeoutError:
            if not cm.expired():  # not this block's own: passed on
                raise
            if not quiet:
                raise AgentGone("the agent closed its connection before the answer came") from None

    async def race(self, work: Any) -> Any:
        """`work`'s result, unless the agent leaves first (then AgentGone, and `work` is cancelled)."""
        async with self.until_gone(0.0):
            return await work
        raise AssertionError("unreachable: the block returns or raises")  # pragma: no cover


async def _disconnect(receive: Any) -> None:
    """Returns once the agent's connection has closed (the server says so on `receive`)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _json_head(body: bytes) -> list[tuple[str, str]]:
    return [("content-type", "application/json"), ("content-length", str(len(body)))]


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
