"""The proxy's side towards the upstream: a lean HTTP/1.1 client on asyncio streams, with a pool.

It does only what a byte-for-byte proxy needs: send a request head as given (its method, target,
names and values checked against RFC 9110's characters first, so nothing can frame differently
upstream) and a body (bytes, or streamed chunks, chunked when the agent gave no length); read
the answer through llhttp (httptools), which frames it — status, raw headers, the body's bytes
as they arrive (de-chunked; never decoded, never buffered whole) — and refuses one that is not
well-framed; then put the connection back for the next request when the answer was whole and
the server keeps it alive. A general client costs several times this per exchange (a
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
import re
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httptools

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


class _Reading:
    """llhttp's reading of one answer on a connection: its head, then its body as pieces."""

    def __init__(self, method: str):
        self.method = method
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.head_done = False
        self.complete = False
        self.dirty = False  # bytes came after the answer: the connection is not reused
        self.until_close = False  # no length and not chunked: the body ends when the server closes
        self.keep_alive = False
        self.body: deque[bytes] = deque()
        self.head_bytes = 0
        self._parser = httptools.HttpResponseParser(self)

    def feed(self, data: bytes) -> None:
        """Read `data`; raises CutOff when it is not a well-framed HTTP/1.1 answer."""
        if not self.head_done:
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD:
                raise CutOff(f"an answer head over {MAX_HEAD:,} bytes", before_answer=True)
        if self.complete:
            self.dirty = True
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.dirty = True  # an upgrade is never followed
        except httptools.HttpParserError as exc:
            raise CutOff(f"not a well-framed HTTP/1.1 answer: {exc}", before_answer=not self.head_done) from None

    def on_message_begin(self) -> None:
        if self.complete:
            self.dirty = True
        self.headers = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # an interim answer is read past
        self.status, self.head_done = status, True
        self.keep_alive = self._parser.should_keep_alive()
        low = {k.lower() for k, _ in self.headers}
        no_body = self.method == "HEAD" or status in NO_BODY or status == 101
        self.until_close = not no_body and "content-length" not in low and "transfer-encoding" not in low
        if self.method == "HEAD":  # llhttp cannot be told an answer has no body: it ends here
            self.complete, self.dirty = True, True

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True


class Answer:
    """An answer's head (`status`, `headers` as sent, latin-1), and `chunks()`: its body bytes."""

    def __init__(self, pool: Pool, conn: _Conn, reading: _Reading):
        self.status_code, self.headers = reading.status, reading.headers
        self._pool, self._conn, self._reading = pool, conn, reading

    def header(self, name: str) -> str | None:
        lname = name.lower()
        return next((v for k, v in self.headers if k.lower() == lname), None)

    async def chunks(self) -> AsyncIterator[bytes]:
        rd, r, timeout = self._reading, self._conn.reader, self._pool.timeout
        try:
            while True:
                while rd.body:
                    yield rd.body.popleft()
                if rd.complete:
                    break
                data = await _within(timeout, r.read(READ))
                if not data:
                    if rd.until_close:
                        rd.complete, rd.keep_alive = True, False
                        break
                    raise CutOff("the connection closed before the answer's end")
                rd.feed(data)
        except TimeoutError:
            raise TimedOut(f"no byte of the answer for {timeout:g} s") from None
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise CutOff(f"the connection closed in the middle of the answer ({type(exc).__name__})") from None

    async def aclose(self) -> None:
        """Hand the connection back when the answer was read whole and may be reused, else close it."""
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is None:
            return
        rd = self._reading
        if rd.complete and rd.keep_alive and not rd.dirty and not rd.body:
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
        _check_fields(method, target, headers)
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
        r, reading = conn.reader, _Reading(method)
        while not reading.head_done:
            try:
                data = await _within(self.timeout, r.read(READ))
            except TimeoutError:
                raise TimedOut(f"no answer within {self.timeout:g} s") from None
            except ConnectionError as exc:
                raise CutOff(f"the connection failed ({type(exc).__name__})", before_answer=True) from None
            if not data:
                raise CutOff(f"the connection closed after {reading.head_bytes} bytes", before_answer=True)
            reading.feed(data)
        return Answer(self, conn, reading)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


async def _within(seconds: float, work: Awaitable[T]) -> T:
    """`work`'s result, or TimeoutError after `seconds` (no task of its own, unlike wait_for: a
    read of bytes already buffered returns in the same turn of the loop)."""
    async with asyncio.timeout(seconds):
        return await work


TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.6.2
TARGET = re.compile(r"[\x21-\x7e\x80-\xff]+")  # no space, no control character
VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")  # RFC 9110 §5.5: no CR, LF, NUL or other control


def _check_fields(method: str, target: str, headers: list[tuple[str, str]]) -> None:
    """Refuse to write a request line or header that would frame differently upstream (the agent
    side's parser refuses these already; this keeps any other caller as strict)."""
    if not TOKEN.fullmatch(method) or not TARGET.fullmatch(target):
        raise ValueError("a request line with characters HTTP does not allow there")
    for name, value in headers:
        if not TOKEN.fullmatch(name) or not VALUE.fullmatch(value):
            raise ValueError(f"a header with characters HTTP does not allow there ({name[:40]!r})")
