"""A load's decoded rows, kept compact: `DecodedRows` is the read-only list `Vault.decoded_rows`,
holding for nearly every memory its `Memory` alone and making its `DecodedRow` when asked for.

A memory's DecodedRow repeats its model: the same id, served fields, text, topic and
categories, in a 33-slot object with two lists of its own (~380 bytes a row, 100,000 times).
Where the row's served fields read as the model holds them (`decode.slim`: every row a server
following the spec sends), the DecodedRow is made again from the model exactly as the load made
it; any other row keeps the DecodedRow it was read as.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from decoy_lab import memory
from decoy_lab.vault import frames
from decoy_lab.vault.decode import memory_row, slim
from decoy_lab.vault.frames import DecodedRow

Kept = DecodedRow | memory.Memory  # a row as DecodedRows keeps it


class DecodedRows(Sequence[DecodedRow]):
    """A read-only list of DecodedRows, each kept as its Memory where that makes it again."""

    __slots__ = ("_kept",)

    def __init__(self, rows: Iterable[Kept] = ()):
        self._kept: list[Kept] = [slim(r) if type(r) is DecodedRow else r for r in rows]

    @staticmethod
    def _row(kept: Kept) -> DecodedRow:
        return kept if type(kept) is DecodedRow else memory_row(kept)  # type: ignore[arg-type]

    @overload
    def __getitem__(self, i: int) -> DecodedRow: ...
    @overload
    def __getitem__(self, i: slice) -> list[DecodedRow]: ...
    def __getitem__(self, i: int | slice) -> DecodedRow | list[DecodedRow]:
        if isinstance(i, slice):
            return [self._row(k) for k in self._kept[i]]
        return self._row(self._kept[i])

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[DecodedRow]:
        return map(self._row, self._kept)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecodedRows):
            other = list(other)
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]  # equal to a list of DecodedRows, like a list

    def __repr__(self) -> str:
        models = sum(type(k) is not DecodedRow for k in self._kept)
        return f"<DecodedRows {len(self)} rows, {models} kept as their model>"

    def kinds(self) -> list[str]:
        """Each row's kind, without making the rows."""
        return [k.kind if type(k) is DecodedRow else frames.MEMORY for k in self._kept]

    def ids(self) -> list[str]:
        """Each row's id, without making the rows."""
        return [k.id for k in self._kept]

    def kept(self, i: int) -> Kept:
        """Row `i` as kept: its Memory, or its DecodedRow."""
        return self._kept[i]

    def kept_rows(self) -> list[Kept]:
        """Every row as kept (a copy of the list): what frames.memories_frame reads directly."""
        return list(self._kept)


def as_decoded(rows: Any) -> DecodedRows:
    return rows if isinstance(rows, DecodedRows) else DecodedRows(rows)


__all__ = ["DecodedRows", "Kept", "as_decoded"]
