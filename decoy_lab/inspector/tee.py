"""What the proxy tees off each exchange as it streams: a body's first `cap` bytes with every byte
counted (`Tee`), and a memories answer's rows parsed as they come, however large the answer
(`RowCollector`, on transport/jsonstream.py); `decoder` / `decoded` undo a Content-Encoding the
record decodes. The recorder (recorder.py) finishes what they hold; in the proxy's own process
(proxy_child.py) they send it on instead of keeping it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.inspector.flow_record import BODY_CAP, Body
from decoy_lab.inspector.masking import Masker
from decoy_lab.transport.jsonstream import ArrayStream

ENCODINGS = ("gzip", "x-gzip", "deflate")  # decoded for the record (stdlib zlib); others are kept as sent


def decoder(encoding: str | None) -> Callable[[bytes], bytes] | None:
    """An incremental decoder for a `Content-Encoding` the record decodes, else None."""
    enc = (encoding or "").strip().lower()
    if enc not in ENCODINGS:
        return None
    d = zlib.decompressobj(16 + zlib.MAX_WBITS if enc != "deflate" else zlib.MAX_WBITS)
    return d.decompress


def decoded(data: bytes, encoding: str | None, cap: int) -> tuple[bytes, str]:
    """The kept bytes of a compressed body, decoded (as far as they go, at most `cap`), and a note."""
    decode = decoder(encoding)
    if decode is None or not data:
        return data, ""
    try:
        plain = decode(data)[:cap]
    except zlib.error as exc:
        return data, f"the body is {encoding}-encoded and does not decode ({exc}): kept as sent"
    return plain, f"the body was {encoding}-encoded on the wire ({len(data):,} bytes kept); the record holds it decoded"


class Tee:
    """A body as it streams: the first `cap` bytes kept, every byte counted."""

    def __init__(self, cap: int = BODY_CAP):
        self.cap = cap
        self.buf = bytearray()
        self.size = 0
        self.complete = False

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]

    @classmethod
    def of(cls, kept: bytes, size: int, complete: bool) -> Tee:
        """A body teed elsewhere (the proxy's own process): its kept bytes, size and completeness."""
        tee = cls(len(kept))
        tee.buf, tee.size, tee.complete = bytearray(kept), size, complete
        return tee

    def body(self, masker: Masker) -> Body:
        data = masker.mask_bytes(bytes(self.buf))
        return Body(data, self.size, self.size > len(self.buf), self.complete)


class RowCollector:
    """The rows of a memories answer, parsed while it streams; the rows before any fault are kept,
    and `problem` says what stopped the parse."""

    def __init__(self, key: str = "memories", *, encoding: str | None = None, cap: int | None = None):
        self._decode = decoder(encoding)
        self._stream: ArrayStream | None = ArrayStream(key)
        self.rows: list[Any] = []
        self.count = 0  # rows parsed so far (a subclass may hand them on instead of keeping them)
        self.problem = ""
        self.cap = cap if self._decode is None else None  # a decoded body's kept part is not its first bytes
        self.within: int | None = None  # the rows whole in the body's first `cap` bytes, once past them
        self._fed = 0

    @classmethod
    def of(cls, rows: list[Any], problem: str, within: int | None = None) -> RowCollector:
        """Rows collected elsewhere (the proxy's own process), what stopped their parse, and how
        many were whole within the record's cap."""
        done = cls()
        done._stream, done.rows, done.count, done.problem, done.within = None, rows, len(rows), problem, within
        return done

    def feed(self, chunk: bytes) -> None:
        if self._stream is None:
            return
        head = -1 if self.cap is None or self.within is not None else self.cap - self._fed
        self._fed += len(chunk)
        if 0 <= head < len(chunk):  # the record's cap falls in this chunk: count the rows before it
            self._take(chunk[:head])
            self.within = self.count
            chunk = chunk[head:]
        self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        if self._stream is None or not chunk:
            return
        try:
            got = self._stream.feed(self._decode(chunk) if self._decode else chunk)
            self.count += len(got)
            self.rows.extend(got)
        except (ValueError, DecoyError, zlib.error) as exc:
            self._stop(exc)

    def close(self, complete: bool) -> None:
        if self._stream is None:
            return
        try:
            self._stream.close()
        except (ValueError, DecoyError) as exc:
            self._stop(exc, cut=not complete)
        self._stream = None

    def _stop(self, exc: Exception, cut: bool = False) -> None:
        if cut or self.count:
            self.problem = f"error: the answer was cut short after {self.count} rows: {exc}"
        else:
            self.problem = f"error: the answer is not a JSON object of rows: {exc}"
        self._stream = None
