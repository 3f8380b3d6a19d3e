"""A loaded vault: every row one GET served, read with this connection's key, kept as data.

`read_vault(...)` turns the rows of a `GET /api/agent/context/memories` answer — while it is
still arriving — into `DecodedRow`s (decode.py) through decoy_lab.memory's readers (in parallel,
with the connection's key cache so a reload of unchanged rows costs no RSA work, and rows whose
served fields did not change since the previous load are not opened at all); unreadable rows
stay, with the reason, and an id served twice is read once, its copies reported; a row the stream
reader skipped for its size is unreadable, saying where it was, its size and the cap. Legacy
space rows are read with the space key and marked `source="space"`.
What the answer says is still waiting is explained in words by waiting.py.

`Vault` holds the result: `.memories`, `.topics`, `.links`, `.rows` DataFrames (frames.py),
`.summary`, `.served` (the raw rows, kept as their served text: served.py), `.memory(id)`.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from decoy_lab import memory
from decoy_lab.errors import UnreadableRow
from decoy_lab.gcpause import gc_paused
from decoy_lab.memory import Topic
from decoy_lab.text import plural
from decoy_lab.transport.oversized import Oversized
from decoy_lab.vault import frames, heap
from decoy_lab.vault.counts import VaultCounts
from decoy_lab.vault.decode import duplicate, kept, oversized  # kept: what the vault keeps of a row
from decoy_lab.vault.decoded_rows import DecodedRows, Kept, as_decoded
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.vault.served import Entry, Fingerprints, ServedRows, as_served, compact, same_row
from decoy_lab.vault.waiting import explain_waiting, no_longer_asked, on_their_way, waiting_rows
from decoy_lab.wire.crypto import AgentKey

# A served row -> what it read as before (the local cache), or None: open it afresh.
Reuse = Callable[[Mapping], "tuple[Kept, Any] | None"]

# id -> (where the row is in the served rows kept, what it read as). A row served again exactly as
# before (the same text, or dict equality: every field, the long base64 strings compared, never
# hashed) reads the same.
Earlier = Mapping[str, "tuple[int, tuple[Kept, Any]]"]


@dataclass(frozen=True, slots=True)
class Again:
    """A row the stream reader knew by its fingerprint: served byte for byte as row `at` of the
    load before, whose id was `id` (handed out in its place, not parsed: `Vault.known`)."""

    at: int
    id: str


@dataclass
class Vault:
    """Everything one load read. DataFrames are built on first use."""

    served: Sequence[dict] = field(repr=False)  # a ServedRows (a list of dicts is taken as one)
    decoded_rows: Sequence[DecodedRow] = field(repr=False)  # a DecodedRows (a list is taken as one)
    models: list[Any] = field(default_factory=list, repr=False)
    answer: dict = field(default_factory=dict, repr=False)
    space_rows: list[DecodedRow] = field(default_factory=list, repr=False)
    read: int = 0  # how many rows this load opened (the rest were unchanged since the previous load)
    results: list[Any] = field(default_factory=list, repr=False)  # model, None or UnreadableRow per served row
    dropped: int = 0  # elements of the memories array that were not objects (not rows at all)
    skipped_spaces: int = 0  # legacy spaces listed but not read (not an object, no id, rows refused)
    # account id → name from the authorized account list, and why a name is missing
    account_names: frames.AccountNames = field(default_factory=frames.AccountNames)
    # per served row, the SHA-256 of its JSON text as it came (jsonstream.fingerprint), None where
    # not taken: the local cache knows a row served byte for byte as before without parsing it
    fingerprints: Sequence[str | None] | None = field(default=None, repr=False)  # kept as Fingerprints
    # where the topic map built from this vault is kept, sealed beside the profile's cache
    # (store/sealed.py, views/mapcache.py); None for a vault loaded with no saved profile
    map_file: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.served = as_served(self.served)
        self.decoded_rows = as_decoded(self.decoded_rows)
        if self.fingerprints is not None:
            self.keep_fingerprints(self.fingerprints)

    def keep_fingerprints(self, values: Sequence[str | None] | None) -> None:
        """Keep the served rows' text fingerprints as 32 bytes a row (`Fingerprints`; ~80 bytes a
        row less than strings: part of what holds a load's memory under 2× the served bytes)."""
        self.fingerprints = Fingerprints.of(values) if values is not None else None

    def earlier(self) -> Earlier:
        """id -> (its index in `served`, (its DecodedRow as kept, model-or-error)) of each id as first
        served, for the next load to reuse (the row as kept is taken from `served` when it comes
        again, one at a time). A row that read as a model had a string id, the one its DecodedRow
        carries, so only the others are parsed again to find theirs."""
        out: dict = {}
        served, rows = self.served, self.decoded_rows
        assert isinstance(served, ServedRows) and isinstance(rows, DecodedRows)
        ids = rows.ids()
        for i, result in enumerate(self.results):
            pair = (rows.kept(i), result)
            model = result is not None and not isinstance(result, UnreadableRow)
            rid = ids[i] if model else served[i].get("id")
            if isinstance(rid, str) and rid not in out:  # a further copy of an id is reported, never read
                out[rid] = (i, pair)
        return out

    def known(self, earlier: Earlier) -> dict[str, Again]:
        """Fingerprint -> Again for each row of `earlier` (this vault's `earlier()`) whose text's
        fingerprint was taken: the stream reader hands such a row, served again byte for byte,
        out as its Again without parsing it, and the next load takes what it read as."""
        fps = self.fingerprints
        if fps is None or len(fps) != len(self.results):
            return {}
        fps = list(fps)
        return {fp: Again(i, rid) for rid, (i, _pair) in earlier.items() if (fp := fps[i]) is not None}

    @cached_property
    def topic_list(self) -> list[memory.Topic]:
        """Topics as memory.build_topics lists them (oldest first, same names once)."""
        return memory.build_topics(self.models)  # it reads the Memory and TopicEntity models, and skips the rest

    @property
    def all_rows(self) -> list[DecodedRow]:
        return [*self.decoded_rows, *self.space_rows, *waiting_rows(self.answer)]

    @cached_property
    def memories(self) -> pd.DataFrame:
        rows = as_decoded(self.decoded_rows).kept_rows()  # a memory as its model: no DecodedRow made for it
        with gc_paused():  # 100,000 rows of cycle-free tuples and lists: collector scans only cost
            return frames.memories_frame([*rows, *self.space_rows], self.topic_list, self.account_names)

    @cached_property
    def topics(self) -> pd.DataFrame:
        return frames.topics_frame(self.topic_list, self._others())  # a topic's row is never kept as a Memory

    @cached_property
    def links(self) -> pd.DataFrame:
        return frames.links_frame(self._others(), self.account_names)

    @cached_property
    def rows(self) -> pd.DataFrame:
        with gc_paused():
            return frames.rows_frame(self.all_rows)

    def accounts_named(self) -> list[str]:
        """The account ids a memory is about or a link ends at (bare ids, first seen first)."""
        rows = as_decoded(self.decoded_rows)
        ids = [
            k.account for k in rows.kept_rows() if (type(k) is not DecodedRow or k.kind == frames.MEMORY) and k.account
        ]
        ids += [
            e.removeprefix(frames.ACCOUNT_PREFIX)
            for r in self._others()
            if r.kind == frames.LINK
            for e in r.endpoints
            if isinstance(e, str) and e.startswith(frames.ACCOUNT_PREFIX)
        ]
        return list(dict.fromkeys(ids))

    @property
    def notes(self) -> list[str]:
        notes = explain_waiting(self.answer)
        unnamed = [a for a in self.accounts_named() if self.account_names.why_unnamed(a)]
        if unnamed:
            why = self.account_names.unavailable or frames.NOT_LISTED
            some = plural(len(unnamed), "account is", "accounts are")
            notes.append(f"{some} shown by id, with no name: {why}.")
        return notes

    def _others(self) -> Iterator[DecodedRow]:
        """The decoded rows that are not kept as their Memory (topics, links, unreadable rows…)."""
        rows = as_decoded(self.decoded_rows)
        return (k for k in rows.kept_rows() if type(k) is DecodedRow)

    def counts(self) -> dict[str, int]:
        kinds = as_decoded(self.decoded_rows).kinds()
        return {
            "memories": kinds.count(frames.MEMORY),
            "topics": kinds.count(frames.TOPIC),
            "links": kinds.count(frames.LINK),
            "unreadable": kinds.count(frames.UNREADABLE),
            "other": kinds.count(frames.OTHER),
            "space_rows": len(self.space_rows),
        }

    @property
    def summary(self) -> str:
        """One line in the count vocabulary (counts.py): "59 memories (2 from legacy space rows),
        12 topics, 12 links, 0 unreadable" (+ dropped elements, skipped spaces, rows waiting)."""
        text = VaultCounts.of(self).line()
        other = self.counts()["other"]
        if other:
            text += f", {other} other"
        if self.dropped:
            text += f"; {self.dropped} served element{'s' if self.dropped != 1 else ''} not a row (dropped)"
        if self.skipped_spaces:
            text += f"; {plural(self.skipped_spaces, 'legacy space', 'legacy spaces')} skipped (not served readably)"
        waiting = on_their_way(self.answer)
        if waiting:
            text += (
                f"; {plural(waiting, 'row', 'rows')} (memories, topics and links) on their way from the owner's phone"
            )
        stopped = no_longer_asked(self.answer)
        if stopped:
            text += f"; {stopped} no longer asked for"
        return text

    def row(self, row_id: str) -> DecodedRow | None:
        """The first row with this id, as `all_rows` lists them (found by id: one row made)."""
        rows = as_decoded(self.decoded_rows)
        i = next((i for i, rid in enumerate(rows.ids()) if rid == row_id), None)
        if i is not None:
            return rows[i]
        return next((r for r in [*self.space_rows, *waiting_rows(self.answer)] if r.id == row_id), None)

    def memory(self, row_id: str) -> memory.Memory | None:
        """The Memory with this id, or None when this load holds no readable memory by that id."""
        return next((m for m in self.models if isinstance(m, memory.Memory) and m.id == row_id), None)

    def served_row(self, row_id: str) -> dict | None:
        """The row with this id as it was served (the first copy), made again from its text."""
        for i, rid in enumerate(as_decoded(self.decoded_rows).ids()):  # by the decoded id: one row is parsed
            if rid == row_id and i < len(self.served) and self.served[i].get("id") == row_id:
                return self.served[i]
        return next((r for r in self.served if r.get("id") == row_id), None)

    def find_topic(self, name_or_id: Any) -> Topic | None:  # (`memory` here is the method above)
        return memory.find_topic(self.topic_list, name_or_id)

    def unreadable(self) -> dict[str, str]:
        return {r.id: r.reason or "" for r in self._others() if r.kind == frames.UNREADABLE}

    def __len__(self) -> int:
        return len(self.served)

    def __repr__(self) -> str:
        return f"<Vault {self.summary}>"

    def __str__(self) -> str:
        return "\n".join([self.summary, *self.notes])

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        bad = self.unreadable()
        bad_html = "".join(f"<li><code>{html.escape(i)}</code>: {html.escape(r)}</li>" for i, r in bad.items())
        table = self.memories[["text", "topic", "categories", "updated_at"]].head(20).to_html(index=False, escape=True)
        return (
            f"<div class='decoy-vault'><strong>{html.escape(self.summary)}</strong>"
            + (f"<ul>{notes}</ul>" if notes else "")
            + (f"<details><summary>Unreadable rows</summary><ul>{bad_html}</ul></details>" if bad else "")
            + table
            + "</div>"
        )


def build_vault(
    answer: Mapping,
    agent_key: AgentKey,
    *,
    key_cache: MutableMapping[str, bytes],
    workers: int | None = None,
    space_rows: Iterable[DecodedRow] = (),
    previous: Vault | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Vault:
    """Read a memories GET answer (already parsed) into a Vault; see read_vault."""
    rest = {k: v for k, v in answer.items() if k != "memories"}
    return read_vault(
        answer.get("memories") or [],
        agent_key,
        rest=lambda: rest,
        key_cache=key_cache,
        workers=workers,
        space_rows=space_rows,
        previous=previous,
        progress=progress,
    )


def read_vault(
    rows: Iterable[Any],
    agent_key: AgentKey,
    *,
    rest: Callable[[], Mapping],
    key_cache: MutableMapping[str, bytes],
    workers: int | None = None,
    space_rows: Iterable[DecodedRow] = (),
    previous: Vault | None = None,
    progress: Callable[[int, int], Any] | None = None,
    cached: Reuse | None = None,
) -> Vault:
    """Read served rows — a list, or rows still arriving from a streamed GET — into a Vault, in
    parallel as they come. `rest()` gives the answer's other members once the rows are used up.

    A row that `previous` read, served again exactly as then, is taken from it unread (looked up
    by id and compared, or known by its text's fingerprint); else `cached(row)` (the local cache)
    may give what it read as (same id, kid, rev, ciphertext hash); a further copy of an id is
    reported, never read; an id of another JSON type is left to the reader, which reports it."""
    before = previous.earlier() if previous is not None else {}
    _know_texts(rows, previous, before)
    kept_before = as_served(previous.served) if previous is not None else ServedRows()
    served = ServedRows()  # per row, its served text where the reader kept one (compact), else the dict
    texts = getattr(rows, "texts", None)  # a StreamedArray's: per element, the text it was read from
    taken = 0  # elements taken from `rows` so far
    slots: list[Any] = []  # per served row: what it reads as, or None while it is being read
    seen: set[str] = set()
    dropped = 0

    def to_open() -> Iterator[int]:
        nonlocal dropped, taken
        for r in rows:
            text = _take(texts, taken)
            taken += 1
            if type(r) is Again:  # served as the load before served it: read as it read then
                if r.id not in seen:
                    seen.add(r.id)
                    served.append(kept_before.entry(r.at))
                    slots.append(before[r.id][1])
                    continue
                r = kept_before[r.at]  # a further copy of an id: the dict, reported as a duplicate below
            if isinstance(r, Oversized):  # skipped by the stream reader for its size: unreadable, said why
                stub, row, why = oversized(r)
                served.append(stub)
                slots.append((row, why))
                continue
            if not isinstance(r, dict):
                dropped += 1  # counted in the summary, never silent
                continue
            rid = r.get("id")
            at = before.get(rid) if isinstance(rid, str) and rid not in seen else None
            hit = (kept_before.entry(at[0]), at[1]) if at is not None else None
            entry, same = _kept_form(text, r, hit)
            served.append(entry)
            if isinstance(rid, str):
                if rid in seen:  # a faulty server or cache may list an id twice: read the first only
                    slots.append(duplicate(r))
                    continue
                seen.add(rid)
                if same:
                    slots.append(hit[1])  # type: ignore[index]  # same: there was a hit
                    continue
                reused = cached(r) if cached is not None else None
                if reused is not None:
                    slots.append(reused)
                    continue
            slots.append(None)
            yield len(served) - 1  # parsed again in the worker from what `served` keeps: waiting, a row is its index

    results = memory.read_rows(
        to_open(),
        agent_key,
        key_cache=key_cache,
        workers=workers,
        progress=progress,
        parse=served.for_reading,  # its blobs as the bytes the compact form keeps: no base64 again
        then=lambda r, res: (kept(r, res), res),  # in the workers: what the vault keeps of it
    )
    fresh = iter(results)
    return _vault(served, [s if s is not None else next(fresh) for s in slots], rest, space_rows, dropped, len(results))


def _know_texts(rows: Iterable[Any], previous: Vault | None, before: Earlier) -> None:
    """Tell a StreamedArray's reader the texts the load before was served, so it hands those rows
    over as `Again` unparsed (unless it knows the local cache's already)."""
    parser = getattr(rows, "parser", None)
    if previous is not None and parser is not None and parser.fingerprints is not None and not parser.known:
        parser.known = previous.known(before)


def _kept_form(text: str | None, row: dict, hit: tuple[Entry, Any] | None) -> tuple[Entry, bool]:
    """What `served` keeps of a row (its text compacted, else the dict), and whether it is the row
    `hit` kept from before. A row served again as the same text keeps the same compact form: it
    is compared made again from it (cheaper than compacting the text anew) and not compacted."""
    if hit is not None and text is not None and not isinstance(hit[0], dict) and same_row(hit[0], text, row):
        return hit[0], True
    now = compact(text, row) if text is not None else None
    return (now if now is not None else row), hit is not None and same_row(hit[0], now, row)


def _take(texts: list[str | None] | None, i: int) -> str | None:
    """Element `i`'s text, let go of by the stream's list: it is kept compact, not held twice."""
    if texts is None:
        return None
    text, texts[i] = texts[i], None
    return text


def _vault(
    served: ServedRows,
    pairs: list,
    rest: Callable[[], Mapping],
    space_rows: Iterable[DecodedRow],
    dropped: int,
    read: int,
) -> Vault:
    """The Vault of one read: per served row, (what the vault keeps of its DecodedRow, what it reads as)."""
    served.trim()  # every row is in: the last page's unused room let go
    vault = Vault(
        served=served,
        decoded_rows=DecodedRows(d for d, _ in pairs),
        models=[m for _, m in pairs if m is not None and not isinstance(m, UnreadableRow)],
        answer=dict(rest()),
        space_rows=list(space_rows),
        read=read,
        results=[m for _, m in pairs],
        dropped=dropped,
    )
    heap.give_back()  # what reading the rows freed goes back to the system (heap.py)
    return vault
