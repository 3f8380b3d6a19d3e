"""A large answer read as it arrives: `StreamedArray` hands out the rows of one array while the
rest downloads (jsonstream.py); a body cut off or broken on the way is a TransportError (ask
again), never a shorter list, and one row over the size cap is handed out as an `Oversized` in
its place (the reader reports it unreadable; the others are read).

The body of a streamed read is bounded twice: as a whole (`STREAM_DEADLINES` times the call's
deadline) and by progress — when no new row (or member of the answer) comes within `stall`
seconds, the read ends in a TransportError. Whitespace or a trickle of one row's bytes keeps a
socket busy but is no progress, so it cannot hold a load for the whole body's deadline. Both are
checked between chunks too, for a transport without sockets.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from decoy_lab.errors import TransportError
from decoy_lab.transport.answers import answer_of, guarded, late
from decoy_lab.transport.deadline import Bound
from decoy_lab.transport.jsonstream import ArrayStream, Known

STREAM_DEADLINES = 10  # a streamed read (thousands of rows) may take this many times the deadline


class StreamedArray:
    """The elements of one array of a JSON answer, handed out as the body arrives (jsonstream);
    `rest` holds the answer's other members once iteration has finished. A dropped connection
    or a body that is not JSON is a TransportError (the read can simply be asked again)."""

    def __init__(
        self,
        server: str,
        path: str,
        key: str,
        opened: Any = None,
        resp: httpx.Response | None = None,
        *,
        bound: Bound | None = None,
        stall: float | None = None,
    ):
        self._server, self.path, self.key = server, path, key
        self._opened, self._resp = opened, resp
        self._bound = bound or Bound.start(300.0)
        self.stall = stall if stall is not None else self._bound.seconds / STREAM_DEADLINES
        self.rest: dict[str, Any] = {}
        self._elements: list[Any] | None = None
        self.parser = ArrayStream(key, skip_oversized=True, texts=True)

    @property
    def fingerprints(self) -> list[str | None] | None:
        """Per object element, the SHA-256 of its text as served (None for an answer read whole)."""
        return self.parser.fingerprints if self._elements is None else None

    @property
    def texts(self) -> list[str | None] | None:
        """Per element handed out so far, the JSON text it was read from (None where not kept; None
        for an answer read whole): a reader may keep the text rather than the dict."""
        return self.parser.texts if self._elements is None else None

    @property
    def bytes_read(self) -> int:
        """Bytes of the body read so far (as they came, before any content decoding)."""
        return self._resp.num_bytes_downloaded if self._resp is not None else 0

    @classmethod
    def whole(cls, body: Any, key: str, path: str = "") -> StreamedArray:
        """An answer that was read in one piece (not a streamed 200)."""
        out = cls("", path, key)
        body = body if isinstance(body, dict) else {}
        if key not in body:
            raise out._missing()
        items = body[key]
        if not isinstance(items, list):
            raise out._not_a_list(items)
        out._elements = items
        out.rest = {k: v for k, v in body.items() if k != key}
        return out

    def _missing(self) -> TransportError:
        return TransportError(
            f"GET {self.path}: the answer has no {self.key} array (it is not an empty list); ask again"
        )

    def _not_a_list(self, value: Any) -> TransportError:
        kind = "null" if value is None else type(value).__name__
        return TransportError(f"GET {self.path}: the answer's {self.key} is {kind}, not a list; ask again")

    def __iter__(self) -> Iterator[Any]:
        if self._elements is not None:
            yield from self._elements
            return
        parser = self.parser
        assert self._resp is not None
        head = bytearray()  # the body while no element has come: was the array there at all?
        chunks = self._resp.iter_bytes()
        moved, made = time.monotonic(), parser.progress  # when progress was last made, and how much
        try:
            while (chunk := self._next(chunks, moved)) is not None:
                if not parser.count and len(head) < _HEAD_KEPT:
                    head += chunk
                got = parser.feed(chunk)
                yield from got
                if parser.progress != made:  # the clock restarts after the rows were used: their
                    moved, made = time.monotonic(), parser.progress  # reading is not the server's time
                elif time.monotonic() - moved >= self.stall:
                    raise self._stalled()
                if self._bound.passed():  # a transport without sockets (MockTransport, TestClient)
                    raise late("GET", self.path, self._bound)
            self.rest = parser.close()
        except ValueError as exc:
            raise TransportError(f"GET {self.path}: the answer is not JSON ({exc}); ask again") from None
        if self.key in self.rest:  # the member was there, and not an array
            raise self._not_a_list(self.rest[self.key])
        if not parser.count and not _has_member(bytes(head), self.key):
            raise self._missing()

    def _next(self, chunks: Iterator[bytes], moved: float) -> bytes | None:
        """The next chunk, waiting until the whole deadline or until `stall` s after the last
        progress, whichever is sooner."""
        step = self._bound.sooner(moved + self.stall, self.stall)
        try:
            return guarded("GET", self.path, step, lambda: next(chunks, None), self._server)
        except TransportError:
            if step is not self._bound and step.expired:
                raise self._stalled() from None
            raise

    def _stalled(self) -> TransportError:
        return TransportError(
            f"GET {self.path}: no new row came within {self.stall:g} s ({self.parser.count:,} so far): the "
            "server keeps the answer open without progress (whitespace or a trickle is not progress), so "
            "the read is ended; ask again"
        )

    def close(self) -> None:
        if self._opened is not None:
            opened, self._opened = self._opened, None
            opened.__exit__(None, None, None)

    def __enter__(self) -> StreamedArray:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_HEAD_KEPT = 1 << 20


def _has_member(body: bytes, key: str) -> bool:
    """Whether a body that handed out no element names `key` (`[]`), or may (too long to keep)."""
    if len(body) >= _HEAD_KEPT:
        return True
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    return isinstance(parsed, dict) and key in parsed


def array_of(
    server: str,
    path: str,
    key: str,
    opened: Any,
    resp: httpx.Response,
    whole: Bound,
    *,
    fingerprints: bool = False,
    known: Known | None = None,
    stall: float | None = None,
) -> StreamedArray:
    """The array of a streamed answer whose status and headers have come (`opened` is the open
    stream, `resp` its response): a 200 is read as it arrives, ended when no new row comes within
    `stall` s; an error status is read whole and raised exactly as `answer_of` raises it."""
    if resp.status_code == 200:
        out = StreamedArray(server, path, key, opened, resp, bound=whole, stall=stall)
        out.parser = ArrayStream(key, fingerprints=fingerprints, known=known, skip_oversized=True, texts=True)
        return out
    try:
        guarded("GET", path, whole, resp.read, server)
    finally:
        opened.__exit__(None, None, None)
    return StreamedArray.whole(answer_of("GET", path, resp), key, path)  # raises for an error status
