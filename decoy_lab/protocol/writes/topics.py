"""Topics a write files a memory under: reuse a visible one before creating ("reuse before
creating", looked up again in what the server holds now), refuse a second one while this
connection's own rows are still on their way, and keep a new topic findable before the next load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from decoy_lab import memory
from decoy_lab.errors import MemoryModelError
from decoy_lab.protocol.writes.resend import settle_pending
from decoy_lab.vault.waiting import own_rows_waiting

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session


def resolve_link(s: Session, link: Any) -> tuple[str | None, Any]:
    """`link`: a relation type (from You), or {'relation_type': …, 'topic': parent name or id}."""
    if link is None:
        return None, None
    if isinstance(link, str):
        return link, None
    if isinstance(link, Mapping):
        rel = link.get("relation_type") or link.get("relationType")
        parent = link.get("topic") or link.get("parent")
        if parent is not None:
            found = s.find_topic(parent)
            if found is None:
                raise MemoryModelError(f"the parent topic {parent!r} is not visible to this connection")
            parent = {"id": found.id, "name": found.name}
        return rel, parent
    raise MemoryModelError("link is a relation type (text) or {'relation_type': …, 'topic': parent}")


def new_topic(s: Session, keys: memory.RecipientKeys, name: str, topic_type: str, link: Any) -> memory.TopicRows:
    rel, parent = resolve_link(s, link)
    return memory.new_topic_rows(keys, name, type=topic_type, relation_type=rel, parent=parent)


def remember_topic(s: Session, made: memory.TopicRows, topic_type: str, memory_ids: list[str]) -> None:
    """Keep a topic this session created findable before the next load lists it."""
    s.made_topics.append(memory.Topic(made.topic_id, made.topic["name"], topic_type or "", memory_ids, [made.topic_id]))


def _waiting(s: Session) -> dict[str, Any]:
    """The last load's waiting fields, when rows this connection saved are still on their way
    (others' topics it cannot open yet are not reachable: the spec lets it create its own)."""
    answer = s.vault.answer if s.vault is not None else {}
    return answer if own_rows_waiting(answer) else {}


def find_or_refuse_new(s: Session, topic: Any) -> memory.Topic | None:
    """The visible topic `topic` names, or None to create it. "Reuse before creating": a name the
    last load does not list is looked up again in what the server holds now (after finishing any
    pending write, which may hold it), so a topic another connection made since is reused (the
    oldest exact normalized match). While rows this connection saved are still `preparing` (after
    a reconnect with a new key), the topic may be among them: if it is still not visible, refuse
    to create a second one ("do not … recreate a topic again because it is not listed")."""
    found = s.find_topic(topic)
    if found is not None:
        return found
    settle_pending(s)
    s.load()
    found = s.find_topic(topic)
    waiting = _waiting(s)
    if found is None and waiting:
        retry = waiting.get("retry_after_seconds")
        raise MemoryModelError(
            f"topic {topic!r} is not visible yet, and rows this connection saved are still on their way from "
            f"the owner's phone (preparing); it may be one of them. Read again"
            + (f" in {retry} s" if retry else " later")
            + " (conn.load()) and save then, so no second topic is made"
        )
    return found


def topic_name(topic: Any) -> str:
    if isinstance(topic, str) and topic.startswith("topic:"):
        raise MemoryModelError(f"{topic} is not a topic this connection can see")
    name = topic if isinstance(topic, str) else (topic.get("name") if isinstance(topic, Mapping) else None)
    if not isinstance(name, str):
        raise MemoryModelError("topic is a name, a topic:<id>, or {'id', 'name'}")
    return name
