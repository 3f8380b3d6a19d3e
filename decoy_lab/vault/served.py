"""The rows a load was served, kept compact: `ServedRows` holds each row as the JSON text it came
in (what the stream reader cut out of the answer) rather than a dict, and makes the dict again
when a row is asked for. A dict of a served row costs ~1.6× its text (ten keys, a dozen string
objects); the text costs its length, so 100,000 rows keep ~130 MB instead of ~200 MB. A row
given as a dict (an answer read whole, the local cache's rows, a row the reader skipped, one only
json reads) is kept as given. The texts are those orjson read the first time, so parsed again
with orjson a row is the dict it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import orjson

Entry = str | dict  # a row as its served JSON text, or as a dict


class ServedRows(Sequence[dict]):
    """A read-only list of served rows (dicts), each kept as its text where it came as one."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Iterable[Entry] = ()):
        self._entries: list[Entry] = list(entries)

    @staticmethod
    def _row(entry: Entry) -> dict:
        return orjson.loads(entry) if type(entry) is str else entry  # type: ignore[return-value]

    @overload
    def __getitem__(self, i: int) -> dict: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...
    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return [self._row(e) for e in self._entries[i]]
        return self._row(self._entries[i])

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[dict]:
        return map(self._row, self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ServedRows):
            other = list(other)
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]  # equal to a list of dicts, like a list

    def __repr__(self) -> str:
        texts = sum(type(e) is str for e in self._entries)
        return f"<ServedRows {len(self)} rows, {texts} kept as their JSON text>"

    def entry(self, i: int) -> Entry:
        """Row `i` as kept: its served text, or the dict it was given as."""
        return self._entries[i]

    def text_bytes(self) -> int:
        """Characters of the rows kept as text (their served JSON, ASCII: bytes on the wire)."""
        return sum(len(e) for e in self._entries if type(e) is str)


def same_row(kept: Entry, text: str | None, row: dict) -> bool:
    """Is a row served now (`row`, and its text when the reader cut one) the row `kept` from
    before? Texts are compared as texts (the same bytes); otherwise the dicts, field for field."""
    if type(kept) is str and text is not None:
        return kept == text
    return ServedRows._row(kept) == row


def as_served(rows: Any) -> ServedRows:
    return rows if isinstance(rows, ServedRows) else ServedRows(rows)


__all__ = ["Entry", "ServedRows", "as_served", "same_row"]
