"""Topics as a connection lists them: entity rows plus the topics memories name, same-name
copies listed once under the oldest id; finding and comparing topics by name or id; and the
memories of a GET answer, each named by its listed topic (read_memory_rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from decoy_lab.memory.build import topic_parts, topic_ref
from decoy_lab.memory.plaintext import normalize_topic_name
from decoy_lab.memory.reach import as_topic_id
from decoy_lab.memory.read import Memory, TopicEntity, read_rows
from decoy_lab.wire.crypto import AgentKey


# -- topics -------------------------------------------------------------------------------------
@dataclass
class Topic:
    """A topic as listed: under its oldest id and name, `ids` naming every same-name copy and
    `memories` the ids of the memories filed under any of them. `type` is None when known only
    from a memory's about."""

    id: str
    name: str
    type: str | None
    memories: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    created_at: datetime | None = None


_NEVER = datetime.max.replace(tzinfo=UTC)
_DAWN = datetime.min.replace(tzinfo=UTC)


def build_topics(items: Iterable[Any]) -> list[Topic]:
    """Topics from already-read rows (Memory / TopicEntity; others are ignored), oldest first."""
    entities: dict[str, TopicEntity] = {}
    memories: dict[str, list[Memory]] = {}
    for it in items:  # (a memory first, the usual row; no list made for a topic seen before)
        if isinstance(it, Memory):
            if it.topic:
                filed = memories.get(it.topic["id"])
                if filed is None:
                    memories[it.topic["id"]] = [it]
                else:
                    filed.append(it)
        elif isinstance(it, TopicEntity):
            entities.setdefault(it.topic_id, it)
    found: list[Topic] = []
    for tid, e in entities.items():
        found.append(Topic(tid, e.name, e.type, [m.id for m in memories.get(tid, ())], [tid], e.created_at))
    for tid, mems in memories.items():
        if tid in entities:
            continue
        newest = max(mems, key=lambda m: m.updated_at or m.created_at or _DAWN)
        oldest = min((m.created_at for m in mems if m.created_at), default=None)
        found.append(Topic(tid, newest.entity_name or "", None, [m.id for m in mems], [tid], oldest))
    found.sort(key=lambda t: (t.created_at or _NEVER, t.id))
    merged: dict[str, Topic] = {}
    out: list[Topic] = []
    for t in found:
        norm = normalize_topic_name(t.name)
        first = merged.get(norm) if norm else None
        if first is None:
            merged[norm] = t
            out.append(t)
        else:
            first.ids.append(t.id)
            first.memories.extend(m for m in t.memories if m not in first.memories)
    return out


def list_topics(
    rows: Sequence[Mapping[str, Any]],
    agent_key: AgentKey,
    *,
    key_cache: MutableMapping[str, bytes] | None = None,
    workers: int | None = None,
) -> list[Topic]:
    """Every topic this connection can see: each topic row it opens, plus each `topic:<id>` named by
    a memory it opens. Oldest first; same normalized name listed once, under the oldest id."""
    return build_topics(
        r
        for r in read_rows(rows, agent_key, key_cache=key_cache, workers=workers)
        if isinstance(r, (Memory, TopicEntity))
    )


def find_topic(topics: Sequence[Topic], name_or_id: Any) -> Topic | None:
    """The listed topic with this normalized name, or holding this `topic:<id>`; None when none."""
    if name_or_id is None:
        return None
    if not isinstance(name_or_id, str):
        ref = topic_ref(name_or_id)
        return find_topic(topics, ref.id) or find_topic(topics, ref.name)
    if name_or_id.startswith("topic:"):
        return next((t for t in topics if name_or_id in t.ids), None)
    norm = normalize_topic_name(name_or_id)
    if not norm:
        return None
    return next((t for t in topics if normalize_topic_name(t.name) == norm), None)


def _topic_keys(value: Any) -> tuple[set[str], str]:
    if isinstance(value, str):
        return ({value}, "") if value.startswith("topic:") else (set(), normalize_topic_name(value))
    tid, name, ids = topic_parts(value)
    keys = {as_topic_id(i) for i in [tid, *ids] if isinstance(i, str) and i}
    return keys, normalize_topic_name(name) if isinstance(name, str) else ""


def same_topic(a: Any, b: Any) -> bool:
    """Whether two topics (dicts, Topics, ids, names or Memories) are one: a shared id, or the same
    normalized name (same-name copies count as one)."""
    ids_a, name_a = _topic_keys(a)
    ids_b, name_b = _topic_keys(b)
    return bool(ids_a & ids_b) or bool(name_a and name_a == name_b)


# -- memories named by their listed topic ------------------------------------------------------
def read_memory_rows(
    rows: Sequence[Mapping[str, Any]],
    agent_key: AgentKey,
    topics: Sequence[Topic] | None = None,
    *,
    key_cache: MutableMapping[str, bytes] | None = None,
    workers: int | None = None,
) -> list[Memory]:
    """The memories among `rows`, skipping topics, links and unreadable rows. With `topics`
    (from list_topics) each memory's topic carries that topic's listed name."""
    out = [r for r in read_rows(rows, agent_key, key_cache=key_cache, workers=workers) if isinstance(r, Memory)]
    if topics:
        by_id = {i: t for t in topics for i in t.ids}
        for m in out:
            if m.topic and m.topic["id"] in by_id:
                m.topic = {"id": m.topic["id"], "name": by_id[m.topic["id"]].name}
    return out
