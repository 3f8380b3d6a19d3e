"""The proxy's side towards the upstream: a lean HTTP/1.1 client on asyncio streams, with a pool.

It does only what a byte-for-byte proxy needs: send a request head as given and a body (bytes,
or streamed chunks, chunked when the agent gave no length), read the answer's status line and
raw headers, and yield the answer's body bytes as they arrive (de-chunked; never decoded, never
buffered whole), then put the connection back for the next request when the answer was whole
and the server keeps it alive. A general client costs several times this per exchange (a
profile of the proxy at 8 writers found most of its time in one), and on a machine of few cores
that time is taken from the server and the agents behind it.

What goes wrong is one of three errors, as the proxy records them: `Refused` (no connection),
`TimedOut` (no answer, or no next byte, in time), `CutOff` (the upstream closed the connection
before answering or mid-body; `before_answer` says which: a request whose answer never began
may be sent once more when it is idempotent). Connections idle longer than `expiry` seconds, or
closed by the server meanwhile, are never reused.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar
from urllib.parse import urlsplit

READ = 65536
MAX_HEAD = 256 * 1024  # an answer head longer than this is a fault of the upstream
MAX_IDLE = 32  # connections kept open for reuse at most
NO_BODY = frozenset({204, 304})
T = TypeVar("T")


class UpstreamError(Exception):
    """The upstream did not give a whole answer."""


class Refused(UpstreamError):
    """No connection could be made."""


class TimedOut(UpstreamError):
    """No answer, or no next byte of it, within the timeout."""


class CutOff(UpstreamError):
    """The connection closed before the answer began (`before_answer`), or in its middle."""

    def __init__(self, message: str, *, before_answer: bool = False):
        super().__init__(message)
        self.before_answer = before_answer


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.idle_since = 0.0

    def usable(self, now: float, expiry: float) -> bool:
        return (
            now - self.idle_since < expiry and not self.reader.at_eof() and not self.writer.is_closing()
        ) and not self.reader._buffer  # type: ignore[attr-defined]  # bytes nobody asked for: not ours to reuse

    def close(self) -> None:
        self.writer.close()


class Answer:
    """An answer's head (`status`, `headers` as sent, latin-1), and `chunks()`: its body bytes."""

    def __init__(self, pool: Pool, conn: _Conn, status: int, headers: list[tuple[str, str]], framing: tuple):
        self.status_code, self.headers = status, headers
        self._pool, self._conn, self._framing = pool, conn, framing
        self._whole = framing[0] == "length" and framing[1] == 0

    def header(self, name: str) -> str | None:
        lname = name.lower()
        return next((v for k, v in self.headers if k.lower() == lname), None)

    async def chunks(self) -> AsyncIterator[bytes]:
        kind, left = self._framing[0], self._framing[1]
        r, timeout = self._conn.reader, self._pool.timeout
        try:
            if kind == "length":
                while left > 0:
                    data = await _within(timeout, r.read(min(left, READ)))
                    if not data:
                        raise CutOff(f"the connection closed with {left:,} bytes of the answer still to come")
                    left -= len(data)
                    yield data
            elif kind == "chunked":
                while True:
                    line = await _within(timeout, r.readuntil(b"\r\n"))
                    size = int(line.split(b";", 1)[0].strip() or b"x", 16)
                    if size == 0:
                        while (await _within(timeout, r.readuntil(b"\r\n"))) != b"\r\n":
                            pass  # trailers: not passed on (hop-by-hop)
                        break
                    data = await _within(timeout, r.readexactly(size + 2))
                    yield data[:-2]
            else:  # until the server closes
                while data := await _within(timeout, r.read(READ)):
                    yield data
        except TimeoutError:
            raise TimedOut(f"no byte of the answer for {timeout:g} s") from None
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise CutOff(f"the connection closed in the middle of the answer ({type(exc).__name__})") from None
        except (ValueError, asyncio.LimitOverrunError):
            raise CutOff("the answer's chunked framing is broken") from None
        self._whole = True

    async def aclose(self) -> None:
        """Hand the connection back when the answer was read whole and may be reused, else close it."""
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is None:
            return
        if self._whole and self._framing[0] != "close" and self._framing[2:] != ("close",):
            self._pool.put(conn)
        else:
            conn.close()


class Pool:
    """Connections to one upstream (`base`: http:// or https://), kept alive `expiry` seconds idle."""

    def __init__(self, base: str, *, timeout: float = 60.0, connect_timeout: float = 5.0, expiry: float = 2.0):
        parts = urlsplit(base)
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.timeout, self.connect_timeout, self.expiry = timeout, connect_timeout, expiry
        self._idle: list[_Conn] = []

    def __repr__(self) -> str:
        return f"<Pool {self.host}:{self.port}, {len(self._idle)} idle>"

    def put(self, conn: _Conn) -> None:
        """Keep `conn` for the next request; connections past their time, or past MAX_IDLE, are closed."""
        now = conn.idle_since = time.monotonic()
        kept = [c for c in self._idle if now - c.idle_since < self.expiry]
        for c in self._idle:
            if now - c.idle_since >= self.expiry:
                c.close()
        kept.append(conn)
        for c in kept[:-MAX_IDLE]:
            c.close()
        self._idle = kept[-MAX_IDLE:]

    async def _conn(self) -> _Conn:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.usable(now, self.expiry):
                return conn
            conn.close()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=self.tls, limit=MAX_HEAD), self.connect_timeout
            )
        except TimeoutError:
            raise Refused(f"no connection within {self.connect_timeout:g} s") from None
        except OSError as exc:
            raise Refused(f"{type(exc).__name__}: {exc.strerror or exc}") from None
        return _Conn(reader, writer)

    async def send(self, method: str, target: str, headers: list[tuple[str, str]], body: Any) -> Answer:
        """Send one request (`body`: bytes, or an async iterator of chunks) and read its answer's head."""
        conn = await self._conn()
        try:
            await self._write(conn, method, target, headers, body)
            return await self._head(conn, method)
        except (Exception, asyncio.CancelledError):  # (not GeneratorExit: a loop already gone closes it)
            conn.close()
            raise

    async def _write(self, conn: _Conn, method: str, target: str, headers: list[tuple[str, str]], body: Any) -> None:
        streamed = not isinstance(body, bytes | bytearray)
        named = {k.lower() for k, _ in headers}
        head = [f"{method} {target} HTTP/1.1\r\n"]
        head += [f"{k}: {v}\r\n" for k, v in headers if not (k.lower() == "content-length" and streamed is False)]
        chunked = streamed and "content-length" not in named
        if chunked:
            head.append("transfer-encoding: chunked\r\n")
        elif not streamed and (body or method in ("POST", "PUT", "PATCH") or "content-length" in named):
            head.append(f"content-length: {len(body)}\r\n")
        head.append("\r\n")
        w = conn.writer
        try:
            if not streamed:  # one write, so one segment on the wire for a small request
                w.write("".join(head).encode("latin-1") + body)
            else:
                w.write("".join(head).encode("latin-1"))
                async for chunk in body:
                    w.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                    await w.drain()
                if chunked:
                    w.write(b"0\r\n\r\n")
            await w.drain()
        except ConnectionError as exc:
            raise CutOff(f"the connection closed while the request was sent ({exc})", before_answer=True) from None

    async def _head(self, conn: _Conn, method: str) -> Answer:
        r = conn.reader
        while True:
            try:
                raw = await _within(self.timeout, r.readuntil(b"\r\n\r\n"))
            except TimeoutError:
                raise TimedOut(f"no answer within {self.timeout:g} s") from None
            except asyncio.IncompleteReadError as exc:
                raise CutOff(f"the connection closed after {len(exc.partial)} bytes", before_answer=True) from None
            except ConnectionError as exc:
                raise CutOff(f"the connection failed ({type(exc).__name__})", before_answer=True) from None
            except asyncio.LimitOverrunError:
                raise CutOff(f"an answer head over {MAX_HEAD:,} bytes", before_answer=True) from None
            lines = raw.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise CutOff(f"not an HTTP answer: {lines[0][:80]!r}", before_answer=True)
            status = int(parts[1])
            if status >= 200 or status == 101:
                break  # an interim 1xx answer is read past
        headers = [(k.strip(), v.strip()) for k, _, v in (x.partition(":") for x in lines[1:] if x)]
        return Answer(self, conn, status, headers, _framing(method, status, parts[0], headers))

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


async def _within(seconds: float, work: Awaitable[T]) -> T:
    """`work`'s result, or TimeoutError after `seconds` (no task of its own, unlike wait_for: a
    read of bytes already buffered returns in the same turn of the loop)."""
    async with asyncio.timeout(seconds):
        return await work


def _framing(method: str, status: int, version: str, headers: list[tuple[str, str]]) -> tuple:
    """How the body is delimited: ("length", n[, "close"]), ("chunked", 0[, "close"]), ("close", 0)."""
    low = {k.lower(): v for k, v in headers}
    closing = "close" in low.get("connection", "").lower() or version == "HTTP/1.0"
    tail = ("close",) if closing else ()
    if method == "HEAD" or status in NO_BODY or 100 <= status < 200:
        return ("length", 0, *tail)
    if "chunked" in low.get("transfer-encoding", "").lower():
        return ("chunked", 0, *tail)
    length = low.get("content-length", "").strip()
    if length.isdigit():
        return ("length", int(length), *tail)
    return ("close", 0)
