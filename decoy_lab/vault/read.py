"""A loaded vault: every row one GET served, read with this connection's key, kept as data.

`read_vault(...)` turns the rows of a `GET /api/agent/context/memories` answer — while it is
still arriving — into `DecodedRow`s through decoy_lab.memory's readers (in parallel, with the
connection's key cache so a reload of unchanged rows costs no RSA work, and rows whose served
fields did not change since the previous load are not opened at all); unreadable rows stay, with the reason, and an id served twice is read once, its
copies reported. Legacy space rows are read with the space key and marked `source="space"`.
The answer's waiting states (`preparing`, `failed`, `preparing_unknown`, `failed_unknown`,
`shared_complete`) are explained in words a user can act on: saved and on its way, or no longer
asked for — never lost, and never a reason to start over.

`Vault` holds the result: `.memories`, `.topics`, `.links`, `.rows` DataFrames (frames.py),
`.summary`, `.served` (the raw rows), `.memory(id)`.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import pandas as pd

from decoy_lab import memory
from decoy_lab.errors import DecoyError, UnreadableRow
from decoy_lab.memory import Topic
from decoy_lab.recipes import sealing
from decoy_lab.vault import frames
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

WAITING = "waiting"  # kind of a row the server listed by id only (preparing / failed)
# The waiting members of a memories answer that are counted and shown, and their shapes (http.expect_object).
WAITING_MEMBERS = {
    "preparing": list,
    "failed": list,
    "preparing_others": int,
    "failed_others": int,
    "retry_after_seconds": float,
    "preparing_total": int,
}


# -- served rows → DecodedRow -----------------------------------------------------------------
_META = ("kid", "rev", "via", "mine", "author_kind", "created_at", "updated_at")
_MEMORY = ("text", "about", "entity_name", "topic_id", "account", "categories", "metadata")
# decoded() builds a memory's DecodedRow positionally (half the cost of keywords, 11,000 times a
# load): the fields must stay in this order.
assert tuple(f.name for f in fields(DecodedRow))[:19] == ("id", "kind", "status", "reason", "source", *_META, *_MEMORY)


def meta_values(row: Mapping) -> tuple:
    """The served fields a DecodedRow shows, in _META's order; a value of the wrong type is None."""
    kid, rev, via, mine, author = (
        row.get("kid"),
        row.get("rev"),
        row.get("via"),
        row.get("mine"),
        row.get("author_kind"),
    )
    return (
        kid if isinstance(kid, str) else None,
        rev if isinstance(rev, int) and not isinstance(rev, bool) else None,
        [v for v in via if isinstance(v, str)] if isinstance(via, list) else [],
        mine if isinstance(mine, bool) else None,
        author if isinstance(author, str) else None,
        row.get("created_at"),
        row.get("updated_at"),
    )


def _meta(row: Mapping) -> dict:
    return dict(zip(_META, meta_values(row)))


def decoded(
    row: Mapping[str, Any], result: memory.Row | UnreadableRow | None, served: tuple | None = None
) -> DecodedRow:
    """One served row and what memory.read_row made of it (a model, None or an UnreadableRow).
    `served`: `meta_values(row)`, when the caller knows them already (the local cache)."""
    rid = str(row.get("id")) if isinstance(row, Mapping) else "?"
    if served is not None:
        values = served
    else:
        values = meta_values(row) if isinstance(row, Mapping) else (None, None, [], None, None, None, None)
    if isinstance(result, memory.Memory):  # 11,000 times a load: positionally, in _MEMORY's order
        topic = result.topic
        args: tuple[Any, ...] = (
            rid,
            frames.MEMORY,
            frames.READABLE,
            None,
            "memories",
            *values,
            result.text,
            [result.about],
            result.entity_name,
            topic["id"] if topic else None,
            result.account,
            list(result.categories),
            result.metadata or None,
        )
        return DecodedRow(*args, plaintext=result)  # type: ignore[misc]  # args end before plaintext (the assert)
    meta = dict(zip(_META, values))
    if isinstance(result, UnreadableRow):
        return DecodedRow(rid, frames.UNREADABLE, status="unreadable", reason=result.reason, **meta)
    if isinstance(result, memory.TopicEntity):
        return DecodedRow(rid, frames.TOPIC, name=result.name, type=result.type, plaintext=result, **meta)
    if isinstance(result, memory.Link):
        return DecodedRow(
            rid,
            frames.LINK,
            relation_type=result.relation_type,
            rel_from=result.from_,
            rel_to=result.to,
            endpoints=list(result.endpoints),
            plaintext=result,
            **meta,
        )
    return DecodedRow(rid, frames.OTHER, reason="opens, but is neither a memory, a topic nor a link", **meta)


# A served row -> what it read as before (the local cache), or None: open it afresh.
Reuse = Callable[[Mapping], "tuple[DecodedRow, Any] | None"]

# id -> (the row as served, what it read as). A row served again exactly as before (dict equality:
# every field, the long base64 strings compared, never hashed) reads the same.
Earlier = Mapping[str, "tuple[dict, tuple[DecodedRow, Any]]"]


def duplicate(row: Mapping) -> tuple[DecodedRow, UnreadableRow]:
    """A further copy of an id already served in the same answer: reported, never read."""
    reason = (
        "served more than once in the same answer: this id was already listed, so this copy is not read "
        "(a faulty server or cache)"
    )
    return (
        DecodedRow(str(row.get("id")), frames.UNREADABLE, status="unreadable", reason=reason, **_meta(row)),
        UnreadableRow(str(row.get("id")), reason),
    )


# -- legacy space rows --------------------------------------------------------------------------
def space_row(space: Mapping, row: Mapping, space_key: bytes | None, *, key_reason: str | None = None) -> DecodedRow:
    """One legacy space row, opened with the space key and checked against its space and id."""
    rid = str(row.get("id"))
    meta = _meta(row)
    base = dict(
        source="space",
        space_id=str(space.get("id")),
        space_kind=space.get("kind"),
        row_type=row.get("row_type"),
        **meta,
    )
    if space_key is None:
        return DecodedRow(
            rid,
            frames.SPACE_ROW,
            status="unreadable",
            reason=key_reason or "the space key has not been shared with this connection yet",
            **base,
        )
    try:
        obj = sealing.open_space_row(row.get("ciphertext") or "", space_key, space_id=str(space.get("id")), row_id=rid)
    except UnreadableRow as exc:
        return DecodedRow(rid, frames.SPACE_ROW, status="unreadable", reason=exc.reason, **base)
    except DecoyError as exc:
        return DecodedRow(rid, frames.SPACE_ROW, status="unreadable", reason=str(exc), **base)
    out = DecodedRow(rid, frames.SPACE_ROW, plaintext=obj, **base)
    obs, ent, rel = obj.get("observation"), obj.get("entity"), obj.get("relation")
    if isinstance(obs, dict) or isinstance(obj.get("content"), str):
        o = obs if isinstance(obs, dict) else obj
        out.text = o.get("content") if isinstance(o.get("content"), str) else None
        out.entity_name = o.get("entityName") if isinstance(o.get("entityName"), str) else None
        cats = obj.get("categories")
        out.categories = [c for c in cats if isinstance(c, str)] if isinstance(cats, list) else []
    elif isinstance(ent, dict):
        out.name = ent.get("name") if isinstance(ent.get("name"), str) else None
        out.type = ent.get("entityType") if isinstance(ent.get("entityType"), str) else None
    elif isinstance(rel, dict):
        out.rel_from, out.rel_to = rel.get("from"), rel.get("to")
        out.relation_type = rel.get("relationType")
    return out


def unwrap_space_key(
    space: Mapping, agent_key: AgentKey, key_cache: MutableMapping[str, bytes]
) -> tuple[bytes | None, str | None]:
    """The space key from the space's `wrapped_key`, checked against its `skid` (cached by skid)."""
    skid, wrapped = space.get("skid"), space.get("wrapped_key")
    if not wrapped:
        return None, (
            "the space key has not reached this connection yet; the owner's device shares it in the background"
        )
    if isinstance(skid, str) and skid in key_cache:
        return key_cache[skid], None
    try:
        key = sealing.unwrap_as_agent(wrapped, agent_key)
    except DecoyError as exc:
        return None, f"this connection's key does not open the space key: {exc}"
    if isinstance(skid, str) and wire.kid(key) != skid:
        return None, f"the space key's fingerprint {wire.kid(key)} is not the served skid {skid}"
    if isinstance(skid, str):
        key_cache[skid] = key
    return key, None


# -- waiting states, in words -----------------------------------------------------------------
def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def explain_waiting(answer: Mapping) -> list[str]:
    """Sentences for the waiting fields of a memories GET answer (empty when nothing waits)."""
    notes: list[str] = []
    retry = answer.get("retry_after_seconds")
    again = f" Read again in {retry} s and carry on with what is readable meanwhile." if retry else ""
    preparing = answer.get("preparing") or []
    if preparing:
        notes.append(
            f"{_n(len(preparing), 'row', 'rows')} this connection saved (topic rows included) "
            "are stored and waiting for the owner's phone to share their keys with this connection's "
            "current key; Decoy is asking the phone in the background. Keep their ids and do not save "
            "them again." + again
        )
    others = answer.get("preparing_others") or 0
    if others:
        notes.append(
            f"{_n(others, 'memory', 'memories')} saved by the owner or other connections "
            "are granted to this connection and on their way: the owner's phone has not shared "
            "their keys yet." + again
        )
    if answer.get("preparing_unknown"):
        notes.append(
            "This connection holds a grant by category, topic or account, and no key has been shared "
            "under it yet; Decoy is asking the owner's phone during the first day. This says nothing "
            "about whether matching memories exist." + again
        )
    failed = answer.get("failed") or []
    if failed:
        notes.append(
            f"{_n(len(failed), 'row', 'rows')} this connection saved still have no key for its "
            "current key, and Decoy has stopped asking the owner's phone on its own (stopped_asking). "
            "They are stored: they read normally as soon as the phone shares them, and a later read may "
            "ask the phone once more. Carry on with what is readable; if the task needs them now, ask "
            "the owner once to open Decoy."
        )
    failed_others = answer.get("failed_others") or 0
    if failed_others:
        notes.append(
            f"{_n(failed_others, 'memory', 'memories')} saved by others are granted but unshared, "
            "and Decoy has stopped asking the owner's phone for them on its own (stopped_asking)."
        )
    if answer.get("failed_unknown"):
        notes.append(
            "Nothing has been shared under this connection's category, topic or account grants, and "
            "Decoy is not asking the owner's phone for it on its own (stopped_asking); Decoy cannot "
            "tell whether such memories exist. Carry on with what is readable."
        )
    if answer.get("shared_complete"):
        at = answer.get("shared_complete_at")
        notes.append(
            "The owner's device reports it has shared everything it can under this connection's "
            "grants" + (f" (at {at})." if at else ".")
        )
    if answer.get("preparing_capped"):
        notes.append(f"The id lists were cut to 500 ids each; {answer.get('preparing_total')} rows wait in all.")
    return notes


def waiting_rows(answer: Mapping) -> list[DecodedRow]:
    """The ids the server listed under `preparing` / `failed`, as rows with a status and reason."""
    out = []
    for rid in answer.get("preparing") or []:
        out.append(
            DecodedRow(
                str(rid),
                WAITING,
                status="preparing",
                mine=True,
                reason="saved; waiting for the owner's phone to share its key with this connection",
            )
        )
    for rid in answer.get("failed") or []:
        out.append(
            DecodedRow(
                str(rid),
                WAITING,
                status="failed",
                mine=True,
                reason="saved; Decoy stopped asking the owner's phone to share its key (stopped_asking)",
            )
        )
    return out


# -- the Vault ------------------------------------------------------------------------------------
@dataclass
class Vault:
    """Everything one load read. DataFrames are built on first use."""

    served: list[dict] = field(repr=False)
    decoded_rows: list[DecodedRow] = field(repr=False)
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
    fingerprints: list[str | None] | None = field(default=None, repr=False)

    def earlier(self) -> Earlier:
        """id -> (the row as served, (DecodedRow, model-or-error)) of each id as first served, for the
        next load to reuse."""
        out: dict = {}
        for row, pair in zip(self.served, zip(self.decoded_rows, self.results)):
            rid = row.get("id")
            if isinstance(rid, str) and rid not in out:  # a further copy of an id is reported, never read
                out[rid] = (row, pair)
        return out

    @cached_property
    def topic_list(self) -> list[memory.Topic]:
        """Topics as memory.build_topics lists them (oldest first, same names once)."""
        return memory.build_topics(m for m in self.models if isinstance(m, (memory.Memory, memory.TopicEntity)))

    @property
    def all_rows(self) -> list[DecodedRow]:
        return [*self.decoded_rows, *self.space_rows, *waiting_rows(self.answer)]

    @cached_property
    def memories(self) -> pd.DataFrame:
        return frames.memories_frame([*self.decoded_rows, *self.space_rows], self.topic_list, self.account_names)

    @cached_property
    def topics(self) -> pd.DataFrame:
        return frames.topics_frame(self.topic_list, self.decoded_rows)

    @cached_property
    def links(self) -> pd.DataFrame:
        return frames.links_frame(self.decoded_rows, self.account_names)

    @cached_property
    def rows(self) -> pd.DataFrame:
        return frames.rows_frame(self.all_rows)

    def accounts_named(self) -> list[str]:
        """The account ids a memory is about or a link ends at (bare ids, first seen first)."""
        ids = [r.account for r in self.decoded_rows if r.kind == frames.MEMORY and r.account]
        ids += [
            e.removeprefix(frames.ACCOUNT_PREFIX)
            for r in self.decoded_rows
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
            some = "1 account is" if len(unnamed) == 1 else f"{len(unnamed)} accounts are"
            notes.append(f"{some} shown by id, with no name: {why}.")
        return notes

    def counts(self) -> dict[str, int]:
        kinds = [r.kind for r in self.decoded_rows]
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
        """One line: "72 memories, 8 topics, 8 links, 0 unreadable" (+ space rows, + waiting)."""
        c = self.counts()
        text = ", ".join(
            [
                _n(c["memories"], "memory", "memories"),
                _n(c["topics"], "topic", "topics"),
                _n(c["links"], "link", "links"),
                f"{c['unreadable']} unreadable",
            ]
        )
        if c["other"]:
            text += f", {c['other']} other"
        if c["space_rows"]:
            bad = sum(r.status != frames.READABLE for r in self.space_rows)
            text += f"; {_n(c['space_rows'], 'legacy space row', 'legacy space rows')}" + (
                f" ({bad} unreadable)" if bad else ""
            )
        if self.dropped:
            text += f"; {self.dropped} served element{'s' if self.dropped != 1 else ''} not a row (dropped)"
        if self.skipped_spaces:
            text += f"; {_n(self.skipped_spaces, 'legacy space', 'legacy spaces')} skipped (not served readably)"
        waiting = len(self.answer.get("preparing") or []) + int(self.answer.get("preparing_others") or 0)
        if waiting:
            text += f"; {waiting} on their way from the owner's phone"
        stopped = len(self.answer.get("failed") or []) + int(self.answer.get("failed_others") or 0)
        if stopped:
            text += f"; {stopped} no longer asked for"
        return text

    def row(self, row_id: str) -> DecodedRow | None:
        return next((r for r in self.all_rows if r.id == row_id), None)

    def memory(self, row_id: str) -> memory.Memory | None:
        """The Memory with this id, or None when this load holds no readable memory by that id."""
        return next((m for m in self.models if isinstance(m, memory.Memory) and m.id == row_id), None)

    def served_row(self, row_id: str) -> dict | None:
        return next((r for r in self.served if r.get("id") == row_id), None)

    def find_topic(self, name_or_id: Any) -> Topic | None:  # (`memory` here is the method above)
        return memory.find_topic(self.topic_list, name_or_id)

    def unreadable(self) -> dict[str, str]:
        return {r.id: r.reason or "" for r in self.decoded_rows if r.kind == frames.UNREADABLE}

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
    by id and compared field for field, so the long base64 strings are compared, never hashed);
    otherwise `cached(row)` (the local cache, cache.py) may give what it reads as, when its id,
    kid, rev and ciphertext hash match what was read before; a further copy of an id already
    served is reported, never read; an id of another JSON type is left to the reader, which
    reports it."""
    before = previous.earlier() if previous is not None else {}
    served: list[dict] = []
    slots: list[Any] = []  # per served row: what it reads as, or None while it is being read
    seen: set[str] = set()
    dropped = 0

    def to_open() -> Iterator[dict]:
        nonlocal dropped
        for r in rows:
            if not isinstance(r, dict):
                dropped += 1  # counted in the summary, never silent
                continue
            served.append(r)
            rid = r.get("id")
            if isinstance(rid, str):
                if rid in seen:  # a faulty server or cache may list an id twice: read the first only
                    slots.append(duplicate(r))
                    continue
                seen.add(rid)
                hit = before.get(rid)
                if hit is not None and hit[0] == r:
                    slots.append(hit[1])
                    continue
                kept = cached(r) if cached is not None else None
                if kept is not None:
                    slots.append(kept)
                    continue
            slots.append(None)
            yield r

    results = memory.read_rows(
        to_open(),
        agent_key,
        key_cache=key_cache,
        workers=workers,
        progress=progress,
        then=lambda r, res: (decoded(r, res), res),
    )
    fresh = iter(results)
    pairs = [s if s is not None else next(fresh) for s in slots]
    return Vault(
        served=served,
        decoded_rows=[d for d, _ in pairs],
        models=[m for _, m in pairs if m is not None and not isinstance(m, UnreadableRow)],
        answer=dict(rest()),
        space_rows=list(space_rows),
        read=len(results),
        results=[m for _, m in pairs],
        dropped=dropped,
    )
