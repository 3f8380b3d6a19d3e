"""The proxy's side towards the agents: a lean HTTP/1.1 server on asyncio for one ASGI app.

uvicorn costs the proxy, per exchange, about as much again as the sandbox behind it costs
(measured: a bare forwarding ASGI app on uvicorn made 8 writers 45 % as fast as direct, a bare
byte pump 100 %); on a machine of few cores that is taken from the sandbox and the agents. This
server does only what the proxy's ASGI app needs, on a daemon thread's own event loop:

- each connection (at most MAX_CONNECTIONS at once): request heads read in turn (keep-alive; a
  head must come whole within HEAD_TIMEOUT seconds, the next one within KEEP_ALIVE, and be at
  most MAX_HEAD bytes, else the connection is closed, after a 400 for one too long or malformed,
  or framed two ways), the body framed by `Content-Length` or `chunked` and handed to the app as
  it arrives (`http.request` messages; `100 Continue` first when the agent asked for it),
  `http.disconnect` once the agent has closed its side;
- the answer written as the app sends it: its head with the first piece of body (one write for
  a small answer), chunked when it has no `Content-Length`, the connection closed when the app
  ended without finishing it (the agent then sees a cut answer, not a short one);
- `stop()`: no new connection; exchanges still running get `graceful` seconds, then are
  cancelled (the app records each as stopped); then the app's `aclose()`.
Loopback only, like the rest of the inspector; header names reach the app lower-cased.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from http import HTTPStatus
from typing import Any

from decoy_lab.inspector.serve import is_loopback_host

HEAD_TIMEOUT = 10.0
KEEP_ALIVE = 5.0
MAX_HEAD = 16 * 1024
MAX_CONNECTIONS = 256
READ = 65536
NO_BODY = frozenset({204, 304})


class _Conn(asyncio.StreamReaderProtocol):
    """A stream reader that also says when the agent has closed its side (`gone`)."""

    def __init__(self, server: _Server):
        self.gone = asyncio.Event()
        self._owner = server
        super().__init__(asyncio.StreamReader(limit=MAX_HEAD, loop=server.loop), server.on_connection, server.loop)

    def eof_received(self) -> bool | None:
        self.gone.set()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone.set()
        super().connection_lost(exc)


class _Exchange:
    """One request's `receive` and `send`, over its connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Event, head: dict):
        self.r, self.w, self.gone = reader, writer, gone
        self.method: str = head["method"]
        self.length: int | None = head["length"]
        self.chunked: bool = head["chunked"]
        self.body_done = not self.chunked and not self.length
        self.started = self.finished = False
        self.keep_alive: bool = head["keep_alive"]
        self._out_chunked = False
        self._head = b""
        self._told = False  # the request (its last piece) has been handed to the app
        self._continue = bool(head.get("expect")) and not self.body_done  # owed a 100 before its body

    async def receive(self) -> dict:
        if self.body_done:
            if not self._told:  # a request without a body is told once, as an empty one
                self._told = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if not self.finished:
                await self.gone.wait()
            return {"type": "http.disconnect"}
        self._told = True
        if self._continue:  # the agent waits for leave to send its body (Expect: 100-continue)
            self._continue = False
            self.w.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            data = await self._read_body()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            self.keep_alive = False
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": data, "more_body": not self.body_done}

    async def _read_body(self) -> bytes:
        if not self.chunked:
            assert self.length is not None
            data = await self.r.read(min(self.length, READ))
            if not data:
                raise asyncio.IncompleteReadError(b"", self.length)
            self.length -= len(data)
            self.body_done = self.length == 0
            return data
        size = int((await self.r.readuntil(b"\r\n")).split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            while await self.r.readuntil(b"\r\n") != b"\r\n":
                pass
            self.body_done = True
            return b""
        data = await self.r.readexactly(size + 2)
        return data[:-2]

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


class _Server:
    def __init__(self, app: Any, graceful: float, loop: asyncio.AbstractEventLoop | None = None):
        self.app, self.graceful = app, graceful
        self.loop = loop or new_loop()
        self.tasks: set[asyncio.Task] = set()
        self.busy: set[asyncio.Task] = set()  # connections in the middle of an exchange
        self.server: asyncio.Server | None = None

    def on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.tasks) >= MAX_CONNECTIONS:  # as many as the sandbox serves at once: refused
            writer.close()
            return
        proto = writer.transport.get_protocol()
        task = self.loop.create_task(self.serve(reader, writer, proto.gone))  # type: ignore[attr-defined]
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gone: asyncio.Event) -> None:
        first = True
        client, server = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
        try:
            while True:
                try:
                    async with asyncio.timeout(HEAD_TIMEOUT if first else KEEP_ALIVE):
                        raw = await reader.readuntil(b"\r\n\r\n")
                except asyncio.LimitOverrunError:
                    writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    return
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                first = False
                scope, head = _scope(raw, client, server)
                if scope is None:
                    writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    return
                ex = _Exchange(reader, writer, gone, head)
                me = asyncio.current_task()
                assert me is not None
                self.busy.add(me)
                try:
                    await self.app(scope, ex.receive, ex.send)
                finally:
                    self.busy.discard(me)
                if not (ex.finished and ex.body_done and ex.keep_alive) or gone.is_set():
                    return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def run(self, host: str, port: int, ready: threading.Event, stop: asyncio.Event) -> None:
        await self.start(host, port)
        ready.set()
        await self.serve_until(stop)

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


class LeanServed:
    """A running lean server: `.url`, `.running`, `.stop()` (as serve.Served)."""

    def __init__(self, app: Any, host: str, port: int, graceful: float, name: str):
        self._srv = _Server(app, graceful)
        self._stop: asyncio.Event | None = None
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = self._srv.loop
            asyncio.set_event_loop(loop)
            self._stop = asyncio.Event()
            try:
                loop.run_until_complete(self._srv.run(host, port, ready, self._stop))
            except BaseException as exc:  # reported to the starter below
                failure.append(exc)
                ready.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name=name, daemon=True)
        self._thread.start()
        ready.wait(15)
        if failure or self._srv.server is None:
            raise RuntimeError(f"{name} failed to start on {host}:{port}: {failure[0] if failure else 'no answer'!r}")
        self.url = self._srv.url

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._srv.loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)

    def __repr__(self) -> str:
        return f"<LeanServed {self.url} {'running' if self.running else 'stopped'}>"


def serve_lean(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, graceful: float = 2.0, name: str = "decoy-inspector"
) -> LeanServed:
    """Serve `app` (an ASGI app for HTTP) on `host:port` (0: a free port) and return once it listens."""
    if not is_loopback_host(host):
        raise ValueError(f"the inspector listens on loopback only, not {host!r}")
    return LeanServed(app, host, port, graceful, name)


def _scope(raw: bytes, client: Any, server: Any) -> tuple[dict | None, dict]:
    """The ASGI scope of a request head, and how its body is framed; (None, {}) when it is no head."""
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None, {}
    method, target, version = parts
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            return None, {}
        headers.append((name.lower(), value.strip()))
    low = dict(headers)
    path, _, query = target.partition(b"?")
    lengths = {v for k, v in headers if k == b"content-length"}
    length_text = low.get(b"content-length", b"").strip()
    chunked = b"chunked" in low.get(b"transfer-encoding", b"").lower()
    if len(lengths) > 1 or (length_text and not length_text.isdigit()) or (chunked and lengths):
        return None, {}  # a body framed two ways is refused (RFC 9112 §6.1, §6.3): never passed on
    conn = low.get(b"connection", b"").lower()
    keep = b"close" not in conn if version == b"HTTP/1.1" else b"keep-alive" in conn
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": version[5:].decode("latin-1"),
        "method": method.decode("latin-1"),
        "scheme": "http",
        "path": path.decode("latin-1"),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": client,
        "server": server,
    }
    head = {"method": scope["method"], "length": None if chunked else int(length_text or 0), "chunked": chunked}
    head["keep_alive"] = keep
    head["expect"] = b"100-continue" in low.get(b"expect", b"").lower()
    return scope, head


_REASONS = {s.value: s.phrase.encode("latin-1") for s in HTTPStatus}  # an unknown status goes with none
