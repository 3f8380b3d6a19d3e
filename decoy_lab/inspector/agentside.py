"""The proxy's side towards the agents: an HTTP/1.1 server on asyncio for one ASGI app, its
framing read by llhttp (httptools, the parser uvicorn uses), never by hand.

uvicorn itself costs the proxy, per exchange, about as much again as the sandbox behind it costs
(measured: a bare forwarding ASGI app on uvicorn made 8 writers 45 % as fast as direct); on a
machine of few cores that is taken from the sandbox and the agents. So this server keeps only
what the proxy's ASGI app needs, on the proxy process's event loop, and leaves every byte of framing to
llhttp in its strict mode. What llhttp refuses is answered 400 and the connection closed, before
anything is sent upstream: a line ended by a bare LF, an obs-fold, a `Transfer-Encoding` beside a
`Content-Length`, two `Content-Length`s, a control character in a name, a value or the target, a
method HTTP does not name. So one request the agent sent is one request the upstream parses, and
one flow.

- each connection (at most MAX_CONNECTIONS at once): request heads read in turn (keep-alive,
  pipelining); a head must come whole within HEAD_TIMEOUT seconds, the next one within
  KEEP_ALIVE, and be at most MAX_HEAD bytes; a body may go at most BODY_TIMEOUT seconds without a
  byte and be at most MAX_BODY bytes (a larger `Content-Length` is 413 before a byte is read).
  At the connection limit, the connection stalled longest (waiting for its head or for the next
  byte of its body) is closed to make room, so a crowd of slow agents cannot starve a real one;
- the body is handed to the app as it arrives (`http.request` messages, chunked bodies de-chunked
  by llhttp piece by piece: nothing is buffered whole), `100 Continue` first when the agent asked
  for it, `http.disconnect` once the agent has closed its side;
- the answer written as the app sends it: its head with the first piece of body (one write for
  a small answer), chunked when it has no `Content-Length`, the connection closed when the app
  ended without finishing it (the agent then sees a cut answer, not a short one);
- `serve_until(stop)`: no new connection; exchanges still running get `graceful` seconds, then
  are cancelled (the app records each as stopped); then the app's `aclose()`.
Header names reach the app lower-cased.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httptools

READ = 65536
NO_BODY = frozenset({204, 304})


@dataclass(frozen=True)
class Limits:
    """What one agent connection may hold of the proxy (tests pass smaller ones)."""

    head_timeout: float = 10.0  # seconds to send a whole request head
    keep_alive: float = 5.0  # seconds an idle keep-alive connection is kept
    body_timeout: float = 10.0  # seconds a request body may go without a byte
    max_head: int = 16 * 1024  # bytes of request line and headers
    max_body: int = 1024**3  # bytes of one request body (streamed, never held)
    max_connections: int = 256  # connections served at once (as many as the sandbox serves)


class BadRequest(Exception):
    """What the agent sent is not one well-framed HTTP/1.1 request; `status` is the answer."""

    def __init__(self, why: str, status: int = 400):
        super().__init__(why)
        self.status = status


class _Head:
    """A request head as llhttp read it."""

    __slots__ = ("expect", "has_body", "headers", "keep_alive", "method", "target", "upgrade", "version")

    def __init__(self, parser: Any, target: bytes, headers: list[tuple[bytes, bytes]]):
        self.method: str = parser.get_method().decode("ascii")
        self.version: str = parser.get_http_version()
        self.keep_alive: bool = parser.should_keep_alive()
        self.target, self.headers = target, headers
        names = {k for k, _ in headers}
        self.has_body = b"transfer-encoding" in names or any(
            k == b"content-length" and v.strip() != b"0" for k, v in headers
        )
        self.expect = any(k == b"expect" and v.lower() == b"100-continue" for k, v in headers)
        self.upgrade = b"upgrade" in names


class Framing:
    """llhttp's reading of one connection's bytes, kept as events in arrival order:
    ("head", _Head), ("body", bytes), ("end", None)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.events: deque[tuple[str, Any]] = deque()
        self._parser = httptools.HttpRequestParser(self)
        self._target = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._in_head = True  # no head read yet since the last message ended
        self._head_bytes = 0  # bytes fed while in a head
        self._body_bytes = 0
        self._problem: BadRequest | None = None  # a callback's refusal, raised by feed()
        self.upgraded = False

    def feed(self, data: bytes) -> None:
        """Read `data`; raises BadRequest when it is not well-framed HTTP/1.1."""
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.upgraded = True  # an upgrade is never followed: the connection ends with this request
        except httptools.HttpParserError as exc:
            if self._problem is not None:
                raise self._problem from None
            raise BadRequest(f"not well-framed HTTP/1.1: {exc}") from None
        if self._problem is not None:
            raise self._problem
        if self._in_head and self._head_bytes > self.limits.max_head:
            raise BadRequest(f"a request head over {self.limits.max_head:,} bytes")

    # llhttp's callbacks -------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._target, self._headers, self._in_head = b"", [], True
        self._body_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        head = _Head(self._parser, self._target, self._headers)
        size = len(self._target) + sum(len(k) + len(v) + 4 for k, v in self._headers)
        hosts = sum(1 for k, _ in self._headers if k == b"host")
        lengths = [v for k, v in self._headers if k == b"content-length"]
        if size > self.limits.max_head:
            self._problem = BadRequest(f"a request head over {self.limits.max_head:,} bytes")
        elif hosts > 1:  # RFC 9112 §3.2: a request with more than one Host is refused
            self._problem = BadRequest("more than one Host header")
        elif lengths and int(lengths[0]) > self.limits.max_body:
            self._problem = BadRequest(f"a request body over {self.limits.max_body:,} bytes", 413)
        if self._problem is not None:
            raise self._problem  # llhttp stops; feed() raises it
        self.events.append(("head", head))

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > self.limits.max_body:
            self._problem = BadRequest(f"a request body over {self.limits.max_body:,} bytes", 413)
            raise self._problem
        self.events.append(("body", body))

    def on_message_complete(self) -> None:
        self._in_head, self._head_bytes = True, 0
        self.events.append(("end", None))


class _Conn(asyncio.StreamReaderProtocol):
    """A stream reader that also says when the agent has closed its side (`gone`), and since when
    it has been waiting for the agent's next byte (`stalled_since`, None while not waiting)."""

    def __init__(self, server: AgentServer):
        self.gone = asyncio.Event()
        self.stalled_since: float | None = None
        self.transport: asyncio.Transport | None = None
        self._owner = server
        reader = asyncio.StreamReader(limit=READ, loop=server.loop)
        super().__init__(reader, server.on_connection, server.loop)

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        super().connection_made(transport)

    def eof_received(self) -> bool | None:
        self.gone.set()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone.set()
        self._owner.conns.discard(self)
        super().connection_lost(exc)

    async def read(self, reader: asyncio.StreamReader, framing: Framing, timeout: float) -> None:
        """Read and parse the agent's next bytes, within `timeout` seconds (TimeoutError), or
        ConnectionError when it has closed its side."""
        self.stalled_since = self._owner.loop.time()
        try:
            async with asyncio.timeout(timeout):
                data = await reader.read(READ)
        finally:
            self.stalled_since = None
        if not data:
            raise ConnectionError("the agent closed its connection")
        framing.feed(data)


class _Exchange:
    """One request's `receive` and `send`, over its connection."""

    def __init__(
        self, conn: _Conn, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, framing: Framing, head: _Head
    ):
        self.conn, self.r, self.w, self.framing = conn, reader, writer, framing
        self.method = head.method
        self.keep_alive = head.keep_alive and not head.upgrade
        self.ended = False  # the request's last piece has been handed to the app
        self.started = self.finished = False
        self.refused: BadRequest | None = None  # its body broke the framing or a limit
        self._out_chunked = False
        self._head = b""
        self._continue = head.expect and head.has_body  # owed a 100 before its body

    async def receive(self) -> dict:
        if self.ended:
            if not self.finished:
                await self.conn.gone.wait()
            return {"type": "http.disconnect"}
        if self._continue and not self.framing.events:  # the agent waits for leave to send its body
            self._continue = False
            self.w.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            while not self.framing.events:
                await self.conn.read(self.r, self.framing, self.framing.limits.body_timeout)
        except BadRequest as exc:
            self.refused = exc
        except (TimeoutError, ConnectionError, OSError):
            pass
        if not self.framing.events:  # the body broke off: the agent is treated as gone
            self.keep_alive, self.ended = False, True
            if self.refused is not None:  # said to the agent once the app has ended (refusal())
                return {"type": "http.disconnect", "reason": f"its body was refused: {self.refused}"}
            return {"type": "http.disconnect"}
        kind, data = self.framing.events.popleft()
        if kind == "end":
            self.ended = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if self.framing.events and self.framing.events[0][0] == "end":
            self.framing.events.popleft()
            self.ended = True
        return {"type": "http.request", "body": data, "more_body": not self.ended}

    async def send(self, message: dict) -> None:
        kind = message["type"]
        if kind == "http.response.start" and not self.started:
            self.started = True
            status = int(message["status"])
            headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers") or []]
            names = {k for k, _ in headers}
            bodyless = self.method == "HEAD" or status in NO_BODY or status < 200
            self._out_chunked = not bodyless and b"content-length" not in names
            lines = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))]
            lines += [k + b": " + v + b"\r\n" for k, v in headers]
            if self._out_chunked:
                lines.append(b"transfer-encoding: chunked\r\n")
            if not self.keep_alive:
                lines.append(b"connection: close\r\n")
            self._head = b"".join(lines) + b"\r\n"
        elif kind == "http.response.body" and self.started and not self.finished:
            body = bytes(message.get("body") or b"")
            more = bool(message.get("more_body"))
            out = self._head
            self._head = b""
            if self._out_chunked:
                out += (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + (b"" if more else b"0\r\n\r\n")
            else:
                out += body
            self.finished = not more
            if out and not self.w.is_closing():  # the agent gone: what it will not read is dropped
                self.w.write(out)
                try:
                    await self.w.drain()
                except ConnectionError:
                    self.keep_alive = False


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it is installed (measured: it takes a fifth to a half off the
    proxy's CPU per exchange), else asyncio's own."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def refusal(status: int, why: str) -> bytes:
    """The answer to what is refused before the app sees it: the status, a one-line reason, closed."""
    body = why.encode("ascii", "replace") + b"\n"
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
        b"connection: close\r\n\r\n%s" % (status, _REASONS.get(status, b""), len(body), body)
    )


class AgentServer:
    """The proxy's server towards the agents: `start(host, port)`, `url`, `serve_until(stop)`."""

    def __init__(
        self, app: Any, graceful: float, loop: asyncio.AbstractEventLoop | None = None, limits: Limits | None = None
    ):
        self.app, self.graceful = app, graceful
        self.limits = limits or Limits()
        self.loop = loop or new_loop()
        self.conns: set[_Conn] = set()
        self.tasks: set[asyncio.Task] = set()
        self.busy: set[asyncio.Task] = set()  # connections in the middle of an exchange
        self.server: asyncio.Server | None = None

    def on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.transport.get_protocol()
        assert isinstance(conn, _Conn)
        if len(self.conns) >= self.limits.max_connections and not self._make_room():
            writer.close()
            return
        self.conns.add(conn)
        task = self.loop.create_task(self.serve(conn, reader, writer))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _make_room(self) -> bool:
        """Close the connection stalled longest (waiting for a head or a body's next byte)."""
        stalled = [c for c in self.conns if c.stalled_since is not None and c.transport is not None]
        if not stalled:
            return False
        oldest = min(stalled, key=lambda c: c.stalled_since or 0.0)
        self.conns.discard(oldest)
        assert oldest.transport is not None
        oldest.transport.close()
        return True

    async def serve(self, conn: _Conn, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.limits
        framing = Framing(limits)
        first = True
        client, server = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
        try:
            while True:
                try:
                    async with asyncio.timeout(limits.head_timeout if first else limits.keep_alive):
                        while not framing.events:
                            await conn.read(reader, framing, limits.head_timeout)
                except BadRequest as exc:
                    writer.write(refusal(exc.status, str(exc)))
                    return
                except (TimeoutError, ConnectionError, OSError):
                    return
                first = False
                kind, head = framing.events.popleft()
                assert kind == "head"
                ex = _Exchange(conn, reader, writer, framing, head)
                me = asyncio.current_task()
                assert me is not None
                self.busy.add(me)
                try:
                    await self.app(_scope(head, client, server), ex.receive, ex.send)
                finally:
                    self.busy.discard(me)
                if ex.refused is not None and not ex.started:
                    writer.write(refusal(ex.refused.status, str(ex.refused)))
                if not (ex.finished and ex.ended and ex.keep_alive) or framing.upgraded or conn.gone.is_set():
                    return
        finally:
            self.conns.discard(conn)
            with contextlib.suppress(Exception):
                writer.close()

    async def start(self, host: str, port: int) -> None:
        self.server = await self.loop.create_server(lambda: _Conn(self), host, port)

    @property
    def url(self) -> str:
        assert self.server is not None
        bound_host, bound_port = self.server.sockets[0].getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        return f"http://{shown}:{bound_port}"

    async def serve_until(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set, then end: exchanges still running get `graceful` seconds."""
        assert self.server is not None
        await stop.wait()
        self.server.close()
        idle = [t for t in self.tasks if t not in self.busy]
        for t in idle:
            t.cancel()
        if self.busy:
            await asyncio.wait(set(self.busy), timeout=self.graceful)
        for t in list(self.tasks):
            t.cancel()
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=2.0)
        closing = getattr(self.app, "aclose", None)
        if closing is not None:
            await closing()


def _scope(head: _Head, client: Any, server: Any) -> dict:
    """The ASGI scope of a request head llhttp has read."""
    path, _, query = head.target.partition(b"?")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": head.version,
        "method": head.method,
        "scheme": "http",
        "path": path.decode("latin-1"),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": head.headers,
        "client": client,
        "server": server,
    }


_REASONS = {s.value: s.phrase.encode("latin-1") for s in HTTPStatus}  # an unknown status goes with none
