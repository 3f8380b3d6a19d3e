"""`Reuse`: which served rows one load need not open, because an earlier load already read them.

One `Reuse` per load, built from the connection's previous `Vault` and the local cache's snapshot
(store/snapshot.py), and handed to the two readers of the answer: the stream reader
(transport/jsonstream.py) asks `get(fingerprint)` for each row's text and hands out what it gets
in the row's place, unparsed; `read_vault` asks `take(row, text)` for each row, and opens only the
rows it gives nothing for. Rows are keyed as the cache file keys them: a row is taken only when its
id, kid, rev and ciphertext hash are the ones served now —

- from the previous vault, a row served exactly as then: the same text (known by its fingerprint,
  or compared), or a dict equal field for field (which holds all four);
- from the cache, a row with the same id, kid, rev and ciphertext hash, its served fields brought
  up to date (`Snapshot.reuse`); one served byte for byte as kept is handed out as the cache's copy.

The snapshot is waited for when the first row comes (the file is opened on a worker meanwhile),
and before any row is opened: its keys are in the key cache by then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from decoy_lab.errors import UnreadableRow
from decoy_lab.vault.decoded_rows import Kept, as_decoded
from decoy_lab.vault.served import Entry, ServedRows, as_served, entry_of

Read = tuple[Kept, Any]  # a row as the vault keeps it, and what it read as (a model, None or UnreadableRow)


@dataclass(frozen=True, slots=True)
class Again:
    """A row the stream reader knew by its text's fingerprint: served byte for byte as row `at` of
    the previous load, whose id was `id` (handed out in its place, not parsed)."""

    at: int
    id: str


class Loaded(Protocol):
    """What Reuse reads of the previous load (vault/read.py's `Vault`)."""

    served: Sequence[dict]
    decoded_rows: Sequence[Any]
    results: list[Any]
    fingerprints: Sequence[str | None] | None


class Cached(Protocol):
    """What Reuse asks of the local cache's contents (store/snapshot.py's `Snapshot`)."""

    @property
    def by_fingerprint(self) -> Mapping[str, dict]: ...

    def reuse(self, row: Mapping) -> Read | None: ...


class Reuse:
    """What one load may take from the previous vault and from the cache, instead of opening it.
    `cached()` gives the cache's snapshot (waited for once, at the first row); none by default."""

    def __init__(self, previous: Loaded | None = None, cached: Callable[[], Cached | None] | None = None):
        self._previous = previous
        self._waiting = cached
        self._cache: Cached | None = None
        self._before = as_served(previous.served) if previous is not None else ServedRows()

    def __repr__(self) -> str:
        cache = "no cache" if self._waiting is None and self._cache is None else "and the cache's rows"
        return f"<Reuse {len(self._before):,} rows of the previous load, {cache}>"

    def _cached(self) -> Cached | None:
        """The cache's snapshot, waited for on first use (its keys go to the key cache then)."""
        if self._waiting is not None:
            self._cache, self._waiting = self._waiting(), None
        return self._cache

    @cached_property
    def _earlier(self) -> dict[str, tuple[int, Read]]:
        """id -> (its index in the previous vault's `served`, how it read) of each id as first served.
        A row that read as a model had a string id, the one its DecodedRow carries, so only the
        others are parsed again to find theirs."""
        previous = self._previous
        if previous is None:
            return {}
        out: dict[str, tuple[int, Read]] = {}
        rows = as_decoded(previous.decoded_rows)
        ids = rows.ids()
        for i, result in enumerate(previous.results):
            model = result is not None and not isinstance(result, UnreadableRow)
            rid = ids[i] if model else self._before[i].get("id")
            if isinstance(rid, str) and rid not in out:  # a further copy of an id is reported, never read
                out[rid] = (i, (rows.kept(i), result))
        return out

    @cached_property
    def _texts(self) -> Mapping[str, Any]:
        """Fingerprint of a row's text -> what the stream reader hands out for it: the cache's copy
        of the row where the cache knows texts, else the previous vault's row as `Again`."""
        cache = self._cached()
        known = cache.by_fingerprint if cache is not None else {}
        if known or self._previous is None:
            return known
        fps = self._previous.fingerprints
        if fps is None or len(fps) != len(self._previous.results):
            return {}
        fps = list(fps)
        return {fp: Again(i, rid) for rid, (i, _read) in self._earlier.items() if (fp := fps[i]) is not None}

    def get(self, fingerprint: str) -> Any:
        """What the stream reader hands out for a row whose text has this fingerprint; None: parse it."""
        return self._texts.get(fingerprint)

    def row(self, known: Again) -> dict:
        """The row `known` stands for, as a dict (a further copy of its id is reported with it)."""
        return self._before[known.at]

    def take(self, row: dict | Again, text: str | None) -> tuple[Entry, Read | None]:
        """What the vault keeps of a served row (its text compacted, or the dict), and what it read
        as before — None: open it. `text`: the row's JSON text as served, when the reader cut one."""
        cache = self._cached() if self._waiting is not None else self._cache  # its keys restored first
        if type(row) is Again:
            return self._before.entry(row.at), self._earlier[row.id][1]
        assert isinstance(row, dict)
        rid = row.get("id")
        at = self._earlier.get(rid) if isinstance(rid, str) else None
        entry, same = entry_of(text, row, self._before.entry(at[0]) if at is not None else None)
        if at is not None and same:
            return entry, at[1]
        if cache is not None and isinstance(rid, str):
            return entry, cache.reuse(row)
        return entry, None


__all__ = ["Again", "Cached", "Loaded", "Read", "Reuse"]
