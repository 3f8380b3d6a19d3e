"""Served rows → `DecodedRow`s: the served fields a row shows, what `memory.read_row` made of it,
a further copy of an id reported (never read), and legacy space rows opened with the space key
(`source="space"`), that key unwrapped and checked against its `skid`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import fields
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import DecoyError, UnreadableRow
from decoy_lab.recipes import sealing
from decoy_lab.transport.oversized import Oversized
from decoy_lab.vault import frames
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

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
        [_few(v) for v in via if isinstance(v, str)] if isinstance(via, list) else [],
        mine if isinstance(mine, bool) else None,
        _few(author) if isinstance(author, str) else None,
        row.get("created_at"),
        row.get("updated_at"),
    )


def _few(value: str) -> str:
    """One shared copy of a value of few distinct ones ("agent", "self", "category:food"): a
    string object each per row is ~55 bytes times 100,000."""
    return sys.intern(value) if len(value) <= 64 else value


def _shared(model: memory.Memory, values: tuple) -> tuple:
    """A memory's served fields, sharing the model's objects where they hold the same: its parsed
    times (a datetime, not a second copy of the text; frames make both UTC datetimes) and `via`."""
    kid, rev, via, mine, author, created, updated = values
    return (
        kid,
        rev,
        model.via if model.via == via else via,
        mine,
        author,
        model.created_at or created,
        model.updated_at or updated,
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
            *_shared(result, values),
            result.text,
            [result.about],
            result.entity_name,
            topic["id"] if topic else None,
            result.account,
            result.categories,  # the model's list, not a copy (rows are data, read, never changed)
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


def memory_row(model: memory.Memory) -> DecodedRow:
    """A memory's DecodedRow made from its model alone: what `decoded` makes of a row whose served
    fields read as the model holds them (`slim`)."""
    topic = model.topic
    return DecodedRow(  # positionally, in _META's and _MEMORY's order (the assert)
        model.id,
        frames.MEMORY,
        frames.READABLE,
        None,
        "memories",
        model.kid,
        model.rev,
        model.via,
        model.mine,
        model.author_kind,
        model.created_at,
        model.updated_at,
        model.text,
        [model.about],
        model.entity_name,
        topic["id"] if topic else None,
        model.account,
        model.categories,
        model.metadata or None,
        plaintext=model,
    )


def slim(row: DecodedRow) -> DecodedRow | memory.Memory:
    """A DecodedRow as compactly as it can be kept: its Memory when `memory_row` makes it again
    exactly (nearly every memory), else itself."""
    model = row.plaintext
    if type(model) is memory.Memory and row.kind == frames.MEMORY and memory_row(model) == row:
        return model
    return row


def kept(row: Mapping[str, Any], result: memory.Row | UnreadableRow | None) -> DecodedRow | memory.Memory:
    """`slim(decoded(row, result))` without making the DecodedRow it would let go of: a memory
    whose served fields read as its model holds them is kept as the model (a tuple compared,
    11,000 times a load, in the workers)."""
    if isinstance(result, memory.Memory) and isinstance(row, Mapping):
        values = (str(row.get("id")), *_shared(result, meta_values(row)))
        m = result
        if values == (m.id, m.kid, m.rev, m.via, m.mine, m.author_kind, m.created_at, m.updated_at):
            return result
    return decoded(row, result)


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


def oversized(element: Oversized) -> tuple[dict, DecodedRow, UnreadableRow]:
    """An element the stream reader skipped for its size: what can be said of it as served (its id
    when read), and an unreadable row with the reason (where it was, its size and the cap)."""
    rid = element.id if element.id is not None else f"element {element.index + 1} (id not read)"
    served = {"id": element.id} if element.id is not None else {}
    return (
        served,
        DecodedRow(rid, frames.UNREADABLE, status="unreadable", reason=element.reason, **_meta({})),
        UnreadableRow(rid, element.reason),
    )


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
