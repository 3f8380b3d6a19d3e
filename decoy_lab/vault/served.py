"""The rows a load was served, kept compact: `ServedRows` holds each row as the JSON text it came
in (what the stream reader cut out of the answer) rather than a dict, and makes the dict again
when a row is asked for. A dict of a served row costs ~1.6× its text (ten keys, a dozen string
objects); the text costs its length. Its blobs (ciphertext, wrapped_key, self_wrap: ~80 % of a
row) are kept as the bytes their base64 stands for (`compact`: ¾ of the text), the rest as text,
and the text is made again byte for byte when asked for — only where re-encoding the bytes gives
the very characters served (canonical base64, not escaped in the JSON); any other row keeps its
text. The load's readers take a compact row with its blobs as those bytes (`for_reading`): each
blob is decoded once, as it comes, and never encoded or decoded again. A row given as a dict (an
answer read whole, the local cache's rows, a row the reader skipped, one only json reads) is kept
as given. The texts are those orjson read the first time, so parsed again with orjson a row is
the dict it was.
"""

from __future__ import annotations

import binascii
import re
import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import orjson

from decoy_lab.wire.layouts import canonical_b64decode

# Kept for `make bench`'s "memory a load adds ÷ served bytes" (≤ 2×; 1.97× at 100,000 rows): rows
# kept as dicts would hold ~1.6× their text each.
Entry = str | bytes | dict  # a row as its served JSON text, that text compacted, or a dict
BLOBS = ("ciphertext", "wrapped_key", "self_wrap")  # base64 members kept as bytes (compact)
_SHORTEST = 64  # characters: a shorter member is not worth a cut


def compact(text: str, row: dict) -> str | bytes:
    """A row's text with its blobs as bytes: `count ‖ (gap, size, which blob) per cut ‖ the rest
    of the text ‖ the blobs' bytes`, the text where that would not give it back exactly (`expand`).
    A blob is cut only where its member is (`"name": "` just before it): what is left is the
    row's JSON with `""` in its place, which a reader parses alone (`for_reading`). The blobs are
    decoded here once, on the thread reading the answer; nothing decodes them again."""
    if not text.isascii():
        return text
    cuts: list[tuple[int, str, bytes, int]] = []
    for which, name in enumerate(BLOBS):
        value = row.get(name)
        if type(value) is not str or len(value) < _SHORTEST:
            continue
        at = _blob_at(text, name, value)
        raw = canonical_b64decode(value) if at >= 0 else None  # made again the very characters served
        if raw is not None:
            cuts.append((at, value, raw, which))
    if not cuts:
        return text
    cuts.sort()
    head, rest, last = [len(cuts).to_bytes(1, "big")], [], 0
    for at, value, raw, which in cuts:
        rest.append(text[last:at])
        head.append(_CUT.pack(at - last, len(raw), which))
        last = at + len(value)
    rest.append(text[last:])
    return b"".join([*head, "".join(rest).encode("ascii"), *(c[2] for c in cuts)])


# `"name":"` with any JSON white space around the colon: where a blob member's string begins
_MEMBER = {name: re.compile(rf'"{name}"[ \t\n\r]*:[ \t\n\r]*"') for name in BLOBS}
_PLAIN = {name: f'"{name}":"' for name in BLOBS}


def _blob_at(text: str, name: str, value: str) -> int:
    """Where the string `value` of member `name` begins in `text`, written as is (no escapes):
    -1 where it is not. (A member of that name in a nested object may be found instead: the
    reader checks, `for_reading`.) The member as compact JSON writes it is looked for first, with
    a plain search (a raw `"` in JSON text is never inside a string, so it is a member)."""
    at = text.find(_PLAIN[name]) + len(_PLAIN[name])
    if at >= len(_PLAIN[name]) and text.startswith(value, at) and text.startswith('"', at + len(value)):
        return at
    for found in _MEMBER[name].finditer(text):
        at = found.end()
        if text.startswith(value, at) and text.startswith('"', at + len(value)):
            return at
    return -1


_CUT = struct.Struct(">IIB")  # a cut blob: the text before it (since the last), its bytes, which of BLOBS
_HEADS = [struct.Struct(">" + "IIB" * n) for n in range(len(BLOBS) + 1)]


def _cuts(kept: bytes) -> tuple[tuple[int, ...], int, int]:
    """(gap, size, which) per cut, flat; where the text begins; where the blobs begin."""
    n = kept[0]
    cuts = _HEADS[n].unpack_from(kept, 1)
    return cuts, 1 + _CUT.size * n, len(kept) - sum(cuts[1::3])


def expand(kept: bytes) -> str:
    """The text `compact` made `kept` from, exactly."""
    cuts, at, blobs_at = _cuts(kept)
    end = blobs_at  # the text without its blobs ends where they begin
    view = memoryview(kept)
    out: list[bytes | memoryview] = []
    for i in range(0, len(cuts), 3):
        gap, size = cuts[i], cuts[i + 1]
        out += [view[at : at + gap], binascii.b2a_base64(view[blobs_at : blobs_at + size], newline=False)]
        at, blobs_at = at + gap, blobs_at + size
    out.append(view[at:end])
    return b"".join(out).decode("ascii")


def for_reading(entry: Entry) -> dict:
    """The row of `entry` as a reader opens it: a compact row's blobs as the bytes they stand for
    (no base64 to decode again, the rest of its text parsed alone), any other as served."""
    if type(entry) is not bytes:
        return ServedRows._row(entry)
    cuts, at, blobs_at = _cuts(entry)
    row = orjson.loads(memoryview(entry)[at:blobs_at])
    for i in range(0, len(cuts), 3):
        size, name = cuts[i + 1], BLOBS[cuts[i + 2]]
        if row.get(name) != "":  # the cut was not the member a parse reads (a name served twice,
            return ServedRows._row(entry)  # or a nested member of that name first): as served
        row[name] = entry[blobs_at : blobs_at + size]
        blobs_at += size
    return row


PAGE = 1 << 20  # bytes of compact rows a full page holds (the first pages are smaller)
FIRST_PAGE = 1 << 16


class ServedRows(Sequence[dict]):
    """A read-only list of served rows (dicts), each kept as its text where it came as one.

    The compact rows are laid end to end in pages (bytearrays made at their full size, up to
    `PAGE`: never grown, so never moved), with two 4-byte numbers a row saying where each is,
    rather than one bytes object per row: no object header and no allocation per row, and none
    of the holes that 100,000 long-lived ~1 KB allocations leave between the short-lived ones of
    a load. A row kept as text or as a dict is held as it is."""

    __slots__ = ("_end", "_fill", "_other", "_page", "_pages")

    def __init__(self, entries: Iterable[Entry] = ()):
        self._pages: list[bytearray] = []
        self._fill = 0  # bytes used in the last page
        self._page = array("I")  # per row: the page its compact form is in
        self._end = array("I")  # per row: where in that page it ends (a row not kept compact: zero long)
        self._other: dict[int, str | dict] = {}  # the rows kept as text or as a dict, by index
        given = list(entries)
        others = [e for e in given if not isinstance(e, bytes)]
        if len(others) == len(given):  # the local cache's rows: all dicts, in one go
            self._page, self._end = array("I", [0]) * len(given), array("I", [0]) * len(given)
            self._other = dict(enumerate(others))
            return
        for entry in given:
            self.append(entry)
        self.trim()

    def append(self, entry: Entry) -> None:
        """Keep one more row (while a load reads them; the list is read-only to everyone else)."""
        if isinstance(entry, bytes):
            n = len(entry)
            if not self._pages or self._fill + n > len(self._pages[-1]):
                self.trim()
                held = sum(map(len, self._pages))
                self._pages.append(bytearray(max(n, min(PAGE, max(FIRST_PAGE, held)))))
                self._fill = 0
            self._pages[-1][self._fill : self._fill + n] = entry
            self._fill += n
        else:
            self._other[len(self._end)] = entry
        self._page.append(max(len(self._pages) - 1, 0))
        self._end.append(self._fill)

    def trim(self) -> None:
        """Let go of the last page's unused room (once the rows are all in, and before a new page)."""
        if self._pages:
            del self._pages[-1][self._fill :]

    @staticmethod
    def _row(entry: Entry) -> dict:
        if isinstance(entry, dict):
            return entry
        return orjson.loads(expand(entry) if isinstance(entry, bytes) else entry)

    @overload
    def __getitem__(self, i: int) -> dict: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...
    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return [self._row(self.entry(j)) for j in range(len(self))[i]]
        return self._row(self.entry(i))

    def __len__(self) -> int:
        return len(self._end)

    def __iter__(self) -> Iterator[dict]:
        return (self._row(self.entry(i)) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ServedRows):
            other = list(other)
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]  # equal to a list of dicts, like a list

    def __repr__(self) -> str:
        texts = len(self) - sum(isinstance(e, dict) for e in self._other.values())
        return f"<ServedRows {len(self)} rows, {texts} kept as their JSON text>"

    def entry(self, i: int) -> Entry:
        """Row `i` as kept: its served text (compacted or not), or the dict it was given as."""
        i = range(len(self))[i]  # an IndexError as a list gives, negative indices counted from the end
        other = self._other.get(i)
        if other is not None:
            return other
        page = self._page[i]
        start = self._end[i - 1] if i and self._page[i - 1] == page else 0
        return bytes(self._pages[page][start : self._end[i]])

    def text(self, i: int) -> str | None:
        """Row `i`'s JSON text exactly as served, None for a row kept as a dict."""
        entry = self.entry(i)
        return expand(entry) if isinstance(entry, bytes) else entry if isinstance(entry, str) else None

    def for_reading(self, i: int) -> dict:
        """Row `i` as a reader opens it (`for_reading`): its blobs as bytes where it was kept compact."""
        return for_reading(self.entry(i))

    def dicts(self) -> list[dict]:
        """The rows kept as the dicts they were given as (the local cache's rows among them)."""
        return [e for e in self._other.values() if isinstance(e, dict)]


_ZERO = "0" * 64


class Fingerprints(Sequence["str | None"]):
    """Per served row, the SHA-256 of its JSON text as hex (jsonstream.fingerprint) or None, kept
    as 32 bytes a row in one bytes object rather than a 64-character string each (~80 bytes a row
    less). `of(values)` gives the list back unchanged when it holds anything else."""

    __slots__ = ("_digests", "_none")

    def __init__(self, digests: bytes, none: set[int]):
        self._digests, self._none = digests, none

    @classmethod
    def of(cls, values: Sequence[str | None]) -> Sequence[str | None]:
        texts: list[Any] = list(values)
        none: set[int] = set()
        if not (set(map(type, texts)) <= {str} and set(map(len, texts)) <= {64}):  # (in C, for the usual rows)
            for i, v in enumerate(values):
                if v is None:
                    none.add(i)
                    texts[i] = _ZERO
                elif type(v) is not str or len(v) != 64:
                    return values
        joined = "".join(texts)
        try:
            digests = bytes.fromhex(joined)  # one call for every row, and one back to check
        except ValueError:
            return values
        return cls(digests, none) if digests.hex() == joined else values  # upper case or spaces: as given

    def __len__(self) -> int:
        return len(self._digests) // 32

    @overload
    def __getitem__(self, i: int) -> str | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[str | None]: ...
    def __getitem__(self, i: int | slice) -> str | list[str | None] | None:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        i = range(len(self))[i]
        return None if i in self._none else self._digests[32 * i : 32 * i + 32].hex()

    def __iter__(self) -> Iterator[str | None]:
        joined, none = self._digests.hex(), self._none  # one call for every row, not one a row
        return (None if i in none else joined[64 * i : 64 * i + 64] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (list, Fingerprints)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


def same_row(kept: Entry, now: str | bytes | None, row: dict) -> bool:
    """Is a row served now (`row`, and its text, compacted or not, when the reader cut one) the
    row `kept` from before? Texts are compared as texts (the same bytes; compact is the same for
    the same text); otherwise the dicts, field for field."""
    if type(kept) is not dict and now is not None:
        if type(kept) is type(now):
            return kept == now
        return _as_text(kept) == _as_text(now)  # type: ignore[arg-type]
    return ServedRows._row(kept) == row


def entry_of(text: str | None, row: dict, before: Entry | None = None) -> tuple[Entry, bool]:
    """What `ServedRows` keeps of a served row (its text compacted where the reader cut one, else
    the dict), and whether it is the row kept `before`. A row served again as the same text keeps
    the same compact form: it is compared made again from it (cheaper than compacting the text
    anew) and not compacted."""
    if before is not None and text is not None and not isinstance(before, dict) and same_row(before, text, row):
        return before, True
    now = compact(text, row) if text is not None else None
    return (now if now is not None else row), before is not None and same_row(before, now, row)


def _as_text(entry: str | bytes) -> str:
    return expand(entry) if isinstance(entry, bytes) else entry


def served_row(entry: Entry) -> dict:
    """The dict of a row as kept (its text parsed again, made from its compact form first)."""
    return ServedRows._row(entry)


def as_served(rows: Any) -> ServedRows:
    return rows if isinstance(rows, ServedRows) else ServedRows(rows)


__all__ = [
    "Entry",
    "Fingerprints",
    "ServedRows",
    "as_served",
    "compact",
    "entry_of",
    "expand",
    "for_reading",
    "same_row",
    "served_row",
]
