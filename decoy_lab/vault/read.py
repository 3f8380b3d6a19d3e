"""A loaded vault: every row one GET served, read with this connection's key, kept as data.

`read_vault(...)` turns the rows of a `GET /api/agent/context/memories` answer — while it is
still arriving — into `DecodedRow`s (decode.py) through decoy_lab.memory's readers (in parallel,
with the connection's key cache so a reload of unchanged rows costs no RSA work, and rows an
earlier load read are not opened at all: reuse.py says which); unreadable rows
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
from decoy_lab.vault.decoded_rows import DecodedRows, as_decoded
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.vault.reuse import Again, Read, Reuse
from decoy_lab.vault.served import Fingerprints, ServedRows, as_served, entry_of
from decoy_lab.vault.waiting import explain_waiting, no_longer_asked, on_their_way, waiting_rows
from decoy_lab.wire.crypto import AgentKey


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
            text += f"; {plural(self.dropped, 'served element')} not a row (dropped)"
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
    """Read a memories GET answer (already parsed) into a Vault, taking from `previous` the rows
    served exactly as it was served them; see read_vault."""
    rest = {k: v for k, v in answer.items() if k != "memories"}
    return read_vault(
        answer.get("memories") or [],
        agent_key,
        rest=lambda: rest,
        key_cache=key_cache,
        reuse=Reuse(previous),
        workers=workers,
        space_rows=space_rows,
        progress=progress,
    )


def read_vault(
    rows: Iterable[Any],
    agent_key: AgentKey,
    *,
    rest: Callable[[], Mapping],
    key_cache: MutableMapping[str, bytes],
    reuse: Reuse | None = None,
    workers: int | None = None,
    space_rows: Iterable[DecodedRow] = (),
    progress: Callable[[int, int], Any] | None = None,
) -> Vault:
    """Read served rows — a list, or rows still arriving from a streamed GET — into a Vault, in
    parallel as they come. `rest()` gives the answer's other members once the rows are used up.

    A row `reuse` (reuse.py: what earlier loads read) gives what it read as is not opened; a
    further copy of an id is reported, never read; an id of another JSON type is left to the
    reader, which reports it."""
    taking = _Rows(reuse if reuse is not None else Reuse(), getattr(rows, "texts", None))
    results = memory.read_rows(
        taking.to_open(rows),
        agent_key,
        key_cache=key_cache,
        workers=workers,
        progress=progress,
        parse=taking.served.for_reading,  # its blobs as the bytes the compact form keeps: no base64 again
        then=lambda r, res: (kept(r, res), res),  # in the workers: what the vault keeps of it
    )
    fresh = iter(results)
    pairs = [s if s is not None else next(fresh) for s in taking.slots]
    return _vault(taking.served, pairs, rest, space_rows, taking.dropped, len(results))


class _Rows:
    """One read's served rows as they come: what `served` keeps of each, and per row what it
    reads as — None for a row being opened (`to_open` hands out its index)."""

    def __init__(self, reuse: Reuse, texts: list[str | None] | None):
        self.reuse = reuse
        self.texts = texts  # a StreamedArray's: per element, the text it was read from
        self.served = ServedRows()  # per row, its served text where the reader kept one (compact), else the dict
        self.slots: list[Read | None] = []
        self.dropped = 0  # elements that were not rows at all: counted in the summary, never silent

    def to_open(self, rows: Iterable[Any]) -> Iterator[int]:
        """Each element in turn, kept, then: taken as it read before, reported (only the first copy
        of an id is read), or handed out to be opened (waiting, a row is its index: parsed again
        in the worker from what `served` keeps)."""
        seen: set[str] = set()
        reuse, texts = self.reuse, self.texts
        keep, slot = self.served.append, self.slots.append  # (bound once: this runs once a row)
        for i, element in enumerate(rows):
            text = _take(texts, i)
            if type(element) is Again:
                rid: Any = element.id
            elif isinstance(element, dict):
                rid = element.get("id")
            elif isinstance(element, Oversized):  # skipped by the stream reader for its size: unreadable, said why
                stub, unread, why = oversized(element)
                keep(stub)
                slot((unread, why))
                continue
            else:
                self.dropped += 1
                continue
            if isinstance(rid, str) and rid in seen:  # a faulty server or cache may list an id twice
                row = reuse.row(element) if type(element) is Again else element
                keep(entry_of(text, row)[0])
                slot(duplicate(row))
                continue
            if isinstance(rid, str):
                seen.add(rid)
            entry, before = reuse.take(element, text)
            keep(entry)
            slot(before)
            if before is None:
                yield len(self.slots) - 1


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
