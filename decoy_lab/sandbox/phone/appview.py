"""Every row as the owner's app shows it, and every row as the server stores it.

`app_view(state)`: text, categories, topic, about, kind and author, or the id and why the app
cannot open it, plus the problems the app would show a careful owner (a stale topic name, a
memory filed under a topic that does not exist …). `check_row` asks the same of one row that
may not be stored yet; `stored_rows` is what `GET /_sandbox/rows` serves; `render` is the view
as text.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import CryptoError, DecoyError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import SandboxState, iso
from decoy_lab.sandbox.phone.opening import Opened, Unopenable, approval, author_name, connection_names, open_row
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey


def app_view(state: SandboxState) -> list[dict]:
    """Every stored row as the owner's app sees it (memories, topics, links, legacy space rows).

    Each entry: id, kind (memory/topic/link/space_row/other; "unknown" when it does not open),
    readable, labels (via-style: category:…, topic:…, account:…), author, edited_by, kid, rev,
    timestamps, `shared_with` (connection name, token id, via) and `problems` (what looks wrong
    to the app even when the row opens); readable rows add text/categories/topic/about (a
    memory), name/type (a topic) or from/to/relation (a link); unreadable rows add `problem`
    and `reason`.
    """
    owner_key = state.owner.key
    out: list[dict] = []
    with state.store.tx() as con:
        names = connection_names(con)
        wraps = ms.all_wraps(con)
        rows = ms.all_memories(con)
        opened = {row.id: open_row(row, owner_key) for row in rows}
        topics = {
            f"topic:{rid}": o.plain for rid, o in opened.items() if isinstance(o, Opened) and o.plain.kind == "topic"
        }
        linked = {
            e for o in opened.values() if isinstance(o, Opened) and o.plain.kind == "link" for e in o.plain.endpoints
        }
        filed = {
            o.plain.topic_id
            for o in opened.values()
            if isinstance(o, Opened) and o.plain.kind == "memory" and o.plain.topic_id
        }
        for row in rows:
            o = opened[row.id]
            entry: dict[str, Any] = {
                "id": row.id,
                "kid": row.kid,
                "rev": row.rev,
                "author": author_name(con, row),
                "author_kind": row.author_kind,
                "created_at": iso(row.created_at),
                "updated_at": iso(row.updated_at),
                "shared_with": [
                    {"connection": names.get(w.token_id, w.token_id[:8]), "token_id": w.token_id, "via": w.via}
                    for w in wraps.get(row.id, [])
                    if w.kid == row.kid
                ],
            }
            if isinstance(o, Unopenable):
                entry.update(kind="unknown", readable=False, problem=o.problem, reason=o.reason, problems=[o.reason])
            else:
                entry.update(_describe(o.plain, topics, linked, filed))
                _, problem = approval(con, row, o.plain)
                if problem:
                    entry["problems"].append(problem)
            entry["edited_by"] = (
                "the author" if row.edited_by_author else names.get(row.editor_connection or "", "another connection")
            )
            out.append(entry)
        out.extend(_space_view(con, owner_key))
    return out


def check_row(state: SandboxState, row: dict, *, trace: Any = None) -> dict:
    """Would the owner's app open this row? `row` is a POST-ready or stored row dict (id, kid,
    ciphertext, owner_wrap). Answers like an app_view entry: readable with text and labels, or
    the problem and reason; with `trace`, every step the app takes is recorded."""
    probe = ms.MemoryRow(
        str(row.get("id")),
        str(row.get("kid")),
        int(row.get("rev") or 1),
        row.get("ciphertext") or "",
        row.get("owner_wrap") or "",
        "agent",
        None,
        None,
        0.0,
        0.0,
        0.0,
    )
    opened = open_row(probe, state.owner.key, trace=trace)
    if isinstance(opened, Unopenable):
        return {"id": probe.id, "readable": False, "problem": opened.problem, "reason": opened.reason}
    topics = {}
    plain = opened.plain
    wanted = [plain.topic_id] if plain.topic_id and plain.kind == "memory" else []
    if plain.kind == "link":  # a relation's topic ends, stored already or in the same POST
        wanted = [e for e in plain.endpoints if e.startswith("topic:")]
    for tid in wanted:
        with state.store.tx() as con:
            stored = ms.get_memory(con, tid[len("topic:") :])
        o = open_row(stored, state.owner.key) if stored is not None else None
        if isinstance(o, Opened) and o.plain.kind == "topic":
            topics[tid] = o.plain
    entry: dict[str, Any] = {"id": probe.id}
    entry.update(_describe(opened.plain, topics, linked={opened.plain.topic_id}, filed={opened.plain.topic_id}))
    return entry


def _describe(p: memory.Plain, topics: dict, linked: set, filed: set) -> dict:
    """One opened row as the app shows it, with the problems the app would have with it."""
    if p.kind == "memory":
        return _describe_memory(p, topics)
    if p.kind == "topic":
        return _describe_topic(p, topics, linked, filed)
    if p.kind == "link":
        return _describe_link(p, topics)
    return {
        "kind": "other",
        "readable": True,
        "keys": sorted(p.plaintext),
        "problems": ["neither observation, entity nor relation: the app shows nothing for it"],
    }


def _describe_memory(p: memory.Plain, topics: dict) -> dict:
    problems: list[str] = []
    tid = p.topic_id
    topic = None
    if tid:
        t = topics.get(tid)
        topic = {"id": tid, "name": t.name if t else p.entity_name}
        if t is None:
            problems.append(
                f"filed under {tid}, but no topic row with that id opens: the app shows it under a topic it cannot name"
            )
        elif p.entity_name is not None and memory.normalize_topic_name(p.entity_name) != memory.normalize_topic_name(
            t.name
        ):
            problems.append(f"observation.entityName {p.entity_name!r} is not the topic's name {t.name!r}")
    elif p.about_label == "user" and p.entity_name not in (None, memory.USER_ENTITY):
        problems.append(f"about the user, but entityName is {p.entity_name!r}, not default_user")
    elif p.account_id and p.entity_name:
        problems.append(
            f"about an account, but entityName is {p.entity_name!r}: a memory never carries the account's name"
        )
    unknown = [c for c in p.categories if c not in memory.CATEGORIES]
    if unknown:
        problems.append(f"categories the app does not know: {', '.join(unknown)}")
    if len(set(p.categories)) != len(p.categories):
        problems.append("a category is listed twice")
    if isinstance(p.metadata, dict) and any(k in p.metadata for k in ("topic", "topics", "topic_name")):
        problems.append("metadata names a topic: it files nothing; the memory is not under that topic")
    return {
        "kind": "memory",
        "readable": True,
        "text": p.text,
        "labels": p.labels,
        "categories": list(p.categories),
        "about": p.about_label,
        "topic": topic,
        "account": p.account_id,
        "entity_name": p.entity_name,
        "metadata": p.metadata,
        "problems": problems,
    }


def _describe_topic(p: memory.Plain, topics: dict, linked: set, filed: set) -> dict:
    problems: list[str] = []
    tid = f"topic:{p.row_id}"
    if tid not in linked:
        problems.append("no link places this topic on the Map (it has no relation row)")
    if tid not in filed:
        problems.append("no memory is filed under this topic")
    if p.entity_type and p.entity_type not in memory.ENTITY_TYPES:
        problems.append(f"entityType {p.entity_type!r} is not one the app knows")
    name = p.name or ""
    if name.strip().lower() in memory.USER_NAMES:
        problems.append(f"the topic is named {name!r}: the user is never a topic")
    if len(name) > memory.MAX_TOPIC_NAME:
        problems.append(f"the name is {len(name)} characters; at most {memory.MAX_TOPIC_NAME}")
    twins = [
        t
        for t_id, t in topics.items()
        if t_id != tid
        and t.name is not None
        and memory.normalize_topic_name(t.name) == memory.normalize_topic_name(name)
    ]
    if twins:
        problems.append(
            f"{len(twins)} other topic(s) have the same name: the app shows them together under "
            "the oldest, and agents should reuse it"
        )
    return {
        "kind": "topic",
        "readable": True,
        "name": p.name,
        "labels": p.labels,
        "type": p.entity_type,
        "topic_id": tid,
        "problems": problems,
    }


def _describe_link(p: memory.Plain, topics: dict) -> dict:
    problems: list[str] = []
    ends = [e for e in p.endpoints if e != "user"]
    for e in ends:
        if e.startswith("topic:") and e not in topics:
            problems.append(f"endpoint {e} is not a topic row that opens")
    for end, end_name in zip(p.endpoints, (p.relation_from, p.relation_to)):
        if end.startswith("account:") and end_name:
            problems.append(f"the account end {end} carries the name {end_name!r}: an account end's name is empty")
    if p.relation_type and len(p.relation_type) > memory.MAX_RELATION_TYPE:
        problems.append(f"relationType is {len(p.relation_type)} characters; at most {memory.MAX_RELATION_TYPE}")
    to_id = p.endpoints[-1] if p.endpoints else None
    if to_id in topics and topics[to_id].name != p.relation_to:
        problems.append(f"relation.to {p.relation_to!r} is not the topic's name {topics[to_id].name!r}")
    return {
        "kind": "link",
        "readable": True,
        "labels": p.labels,
        "from": p.relation_from,
        "to": p.relation_to,
        "relation": p.relation_type,
        "endpoints": list(p.endpoints),
        "problems": problems,
    }


def _space_view(con: sqlite3.Connection, owner_key: AgentKey) -> list[dict]:
    out = []
    for space in ss.all_spaces(con):
        try:
            key = sealing.unwrap_as_owner(space.owner_wrap, owner_key)
        except (CryptoError, WireFormatError) as exc:
            key, why = None, f"the space's owner_wrap does not open: {exc}"
        if key is not None and (got := wire.kid(key)) != space.skid:
            key, why = None, f"the space key is {got}, the space says skid {space.skid}"
        for r in ss.space_rows(con, space.id):
            entry: dict[str, Any] = {
                "id": r.id,
                "kind": "space_row",
                "space_id": space.id,
                "space_kind": space.kind,
                "account": space.account_id,
                "rev": r.rev,
                "author": author_name(con, r),
                "author_kind": r.author_kind,
                "created_at": iso(r.created_at),
                "updated_at": iso(r.updated_at),
                "problems": [],
            }
            if key is None:
                entry.update(readable=False, problem="space_key", reason=why, problems=[why])
            else:
                try:
                    obj = sealing.open_space_row(r.ciphertext, key, space_id=space.id, row_id=r.id)
                    graph = next((k for k in ("entity", "observation", "relation") if k in obj), "other")
                    entry.update(
                        readable=True,
                        graph=graph,
                        summary=_graph_summary(graph, obj),
                        categories=list(obj.get("categories") or []),
                        plaintext=obj,
                    )
                except DecoyError as exc:
                    entry.update(readable=False, problem="space_row", reason=str(exc), problems=[str(exc)])
            out.append(entry)
    return out


def _graph_summary(graph: str, obj: dict) -> str:
    """One line for a legacy graph row, as the app lists it."""
    got = obj.get(graph)
    part = got if isinstance(got, dict) else {}
    if graph == "entity":
        return f"topic {part.get('name')!r} ({part.get('entityType') or 'no type'})"
    if graph == "observation":
        return f"[{part.get('entityName')}] {part.get('content')}"
    if graph == "relation":
        return f"{part.get('from')} —{part.get('relationType')}→ {part.get('to')}"
    return "neither entity, observation nor relation"


def render(view: list[dict]) -> str:
    """The app view as plain text, one line per row (ids shortened), problems indented."""
    lines = []
    for e in view:
        head = f"{e['id'][:8]}  {e['kind']:<9} {e.get('author', ''):<22}"
        if not e.get("readable"):
            lines.append(f"{head} CANNOT OPEN ({e.get('problem')}): {e.get('reason')}")
            continue
        if e["kind"] == "memory":
            where = e["topic"]["name"] if e.get("topic") else (f"account {e['account']}" if e.get("account") else "You")
            cats = ", ".join(e["categories"]) or "no category"
            lines.append(f"{head} [{where}; {cats}] {e['text']}")
        elif e["kind"] == "topic":
            lines.append(f"{head} topic {e['name']!r} ({e['type'] or 'no type'})")
        elif e["kind"] == "link":
            lines.append(f"{head} {e['from']} —{e['relation']}→ {e['to']}")
        elif e["kind"] == "space_row":
            lines.append(f"{head} (legacy {e['space_kind']} space) {e['summary']}")
        else:
            lines.append(f"{head} {json.dumps(e.get('keys'))[:100]}")
        lines.extend(f"          ! {p}" for p in e.get("problems", []))
    return "\n".join(lines)


def stored_rows(state: SandboxState) -> list[dict]:
    """Every stored memory row exactly as the server holds it (for `GET /_sandbox/rows`):
    id, kid, rev, ciphertext, owner_wrap, the author's `self_wrap`, every grantee wrap, author."""
    out = []
    with state.store.tx() as con:
        names = connection_names(con)
        wraps = ms.all_wraps(con)
        for row in ms.all_memories(con):
            mine = [w for w in wraps.get(row.id, []) if w.token_id == row.author_token]
            out.append(
                {
                    "id": row.id,
                    "kid": row.kid,
                    "rev": row.rev,
                    "ciphertext": row.ciphertext,
                    "owner_wrap": row.owner_wrap,
                    "self_wrap": mine[0].wrapped_key if mine else None,
                    "grantee_wraps": [
                        {
                            "token_id": w.token_id,
                            "connection": names.get(w.token_id),
                            "via": w.via,
                            "kid": w.kid,
                            "current": w.kid == row.kid,
                            "wrapped_key": w.wrapped_key,
                        }
                        for w in wraps.get(row.id, [])
                        if w.token_id != row.author_token
                    ],
                    "author": author_name(con, row),
                    "author_kind": row.author_kind,
                    "author_token": row.author_token,
                    "created_at": iso(row.created_at),
                    "updated_at": iso(row.updated_at),
                }
            )
    return out


def view_of(state: SandboxState, row_id: str) -> dict | None:
    """One stored memory row as the owner's app sees it (check_row on what is stored), or None."""
    with state.store.tx() as con:
        row = ms.get_memory(con, row_id)
    if row is None:
        return None
    entry = check_row(
        state,
        {"id": row.id, "kid": row.kid, "rev": row.rev, "ciphertext": row.ciphertext, "owner_wrap": row.owner_wrap},
    )
    return {**entry, "kind": entry.get("kind", "unknown"), "rev": row.rev}
