"""The owner's phone: its sharing pass, its view of every row, and what agents are told meanwhile.

- `run_sharing_pass(state)` does what the Decoy app does in the background: for each stored row
  it opens `owner_wrap` with the owner key exactly as the app does (the plaintext must be the
  44-character base64 text of the key), checks the key against `kid`, opens the ciphertext,
  decodes the plaintext (`memory.decode_plaintext`: `v` 2, bound to its id, typed fields), and
  wraps the key to every live connection whose grants now reach it (all, category, topic —
  a topic's own entity row, a link whose non-user ends are all granted, as an `and:` reason —
  account), recording `via`. Rows it cannot open are reported with the reason. Legacy space
  keys are converged the same way, and legacy rows it was asked to move get their own keys
  first (moves.py). Afterwards every live connection is marked `shared_complete`.
- `app_view(state)` is every row as the owner's app shows it: text, categories, topic, about,
  kind and author, or the id and why the app cannot open it, plus the problems the app would
  show a careful owner (a stale topic name, a memory filed under a topic that does not exist …).
- `report(...)` builds the `preparing` / `failed` / `preparing_unknown` … part of a read, on the
  spec's schedule, from the state's clock. A connection granted `everything` is the one that
  "holds the vault key" (`everything` is the whole-vault key's grant), so it has no first day of
  asks: `failed_unknown` at once. A read answered `failed_unknown` asks the phone once more, at
  most once a day for the owner (`ask_for_unknown`); the answer itself stays `failed_unknown`.
  While `preparing_unknown`, the phone is asked on the spec's first-day schedule
  (`ask_for_preparing_unknown`: about 1, 16 and 46 minutes and 4 hours after the grant).

When does the phone run? Not inside a save (so a test can always observe `preparing` first).
It runs when asked (`Owner.share()`, `POST /_sandbox/share`) and, like the real phone
answering a background push, on the first read that comes `auto_share_after` seconds (default
5, the first retry an agent is told) after something was owed; `configure(state,
auto_share_after=None)` turns the automatic pass off, as if the phone were switched off.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from .. import memory, sealing, wire
from ..errors import CryptoError, DecoyError, UnreadableRow, WireFormatError
from . import auth
from . import memstore as ms

DEFAULT_AUTO_SHARE_AFTER = 5.0
DAY = 86400.0
ASK_DAYS = 7
SPACE_KINDS = ("me", "account")


# ── settings (kept on state.extra: the state object belongs to app.py) ─────────────────────


def configure(state: Any, *, auto_share_after: float | None = DEFAULT_AUTO_SHARE_AFTER) -> None:
    """Set how long after something is owed the phone answers on its own (None: never)."""
    state.extra["auto_share_after"] = auto_share_after


def _auto_after(state: Any) -> float | None:
    return state.extra.get("auto_share_after", DEFAULT_AUTO_SHARE_AFTER)


def nudge(state: Any, now: float) -> None:
    """Something is owed: the phone is asked (once; the pass clears it)."""
    state.extra.setdefault("phone_nudged_at", now)


def ask_for_unknown(state: Any, now: float) -> bool:
    """A `failed_unknown` read: "a read may ask once more, at most once a day per owner" (the
    sandbox has one owner). True when this read asks the phone."""
    last = state.extra.get("unknown_read_ask_at")
    if last is not None and now - last < DAY:
        return False
    state.extra["unknown_read_ask_at"] = now
    nudge(state, now)
    return True


UNKNOWN_ASKS = (60.0, 16 * 60.0, 46 * 60.0, 4 * 3600.0)


def ask_for_preparing_unknown(state: Any, agent: Any, now: float) -> bool:
    """`preparing_unknown`: "Decoy asks the owner's phone for it during the first day after this
    connection's approval or newest grant (about 1, 16 and 46 minutes and 4 hours after it)".
    Asks due by now and not yet sent are sent (one push); reading more often asks no more often."""
    base = unknown_base(agent)
    due = [base + t for t in UNKNOWN_ASKS if base + t <= now]
    sent = state.extra.setdefault("unknown_asks_sent", {})
    if not due or sent.get(agent.token_id, float("-inf")) >= due[-1]:
        return False
    sent[agent.token_id] = due[-1]
    nudge(state, now)
    return True


def note_write(state: Any) -> None:
    """Every saved row or edit nudges the owner's phone."""
    nudge(state, float(state.clock()))


def maybe_share_on_read(state: Any, now: float) -> ShareReport | None:
    after = _auto_after(state)
    asked = state.extra.get("phone_nudged_at")
    if after is None or asked is None or now - asked < after:
        return None
    return run_sharing_pass(state)


# ── opening a row as the owner's app does ──────────────────────────────────────────────────


@dataclass
class Opened:
    """A row the owner's app opened: its key and decoded plaintext."""

    key: bytes
    plain: memory.Plain


@dataclass
class Unopenable:
    """A row the owner's app cannot open, and why (`problem` is a short code, `reason` words)."""

    id: str
    problem: str
    reason: str
    author: str = ""

    def as_dict(self) -> dict:
        return {"id": self.id, "problem": self.problem, "reason": self.reason, "author": self.author}


PROBLEMS = {
    "owner_wrap": "the owner's app cannot open owner_wrap",
    "kid_mismatch": "the key in owner_wrap does not match the row's kid",
    "ciphertext": "the ciphertext does not open with the key in owner_wrap",
    "json": "the plaintext is not UTF-8 JSON",
    "version": "the plaintext's v is not 2",
    "binding": "the plaintext is bound to another row id",
    "fields": "a plaintext field has the wrong type",
}


def open_row(row: ms.MemoryRow, owner_key: Any, *, trace: Any = None) -> Opened | Unopenable:
    """Open one stored row as the owner's app does, step by step, naming the step that fails.
    With a `trace` (trace.Trace) every step is recorded for the step-through views."""
    try:
        key = sealing.unwrap_as_owner(row.owner_wrap, owner_key, trace=trace)
    except (CryptoError, WireFormatError) as exc:
        return Unopenable(row.id, "owner_wrap", f"{PROBLEMS['owner_wrap']}: {exc}")
    if trace is not None:
        with trace.step(
            "kid check: SHA-256(key)[:8] == row kid", inputs={"row kid": row.kid, "key kid": wire.kid(key)}
        ) as st:
            st.output = "match" if wire.kid(key) == row.kid else "MISMATCH"
    if wire.kid(key) != row.kid:
        return Unopenable(
            row.id,
            "kid_mismatch",
            f"{PROBLEMS['kid_mismatch']}: owner_wrap holds key {wire.kid(key)}, the row says kid {row.kid}",
        )
    try:
        obj = sealing.open_json(key, row.ciphertext, row_id=row.id, trace=trace)
    except UnreadableRow as exc:
        return Unopenable(row.id, "json", f"{PROBLEMS['json']}: {exc.reason}")
    except (CryptoError, WireFormatError) as exc:
        return Unopenable(row.id, "ciphertext", f"{PROBLEMS['ciphertext']}: {exc}")
    try:
        plain = memory.decode_plaintext(obj, row.id, trace=trace)
    except UnreadableRow as exc:
        problem = "fields"
        if isinstance(obj, dict) and obj.get("v") != 2:
            problem = "version"
        elif isinstance(obj, dict) and obj.get("row_id") != row.id:
            problem = "binding"
        return Unopenable(row.id, problem, f"{PROBLEMS[problem]}: {exc.reason}")
    return Opened(key, plain)


def check_row(state: Any, row: dict, *, trace: Any = None) -> dict:
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
    tid = opened.plain.topic_id
    if tid and opened.plain.kind == "memory":
        with state.store.tx() as con:
            stored = ms.get_memory(con, tid[len("topic:") :])
        o = open_row(stored, state.owner.key) if stored is not None else None
        if isinstance(o, Opened) and o.plain.kind == "topic":
            topics[tid] = o.plain
    entry: dict[str, Any] = {"id": probe.id}
    entry.update(_describe(opened.plain, topics, linked={opened.plain.topic_id}, filed={opened.plain.topic_id}))
    return entry


def label_set(plain: memory.Plain) -> dict:
    """The labels that decide who reads a row, as the phone remembers them."""
    return {"categories": list(plain.categories), "about": list(plain.about), "endpoints": list(plain.endpoints)}


def approval(con: Any, row: ms.MemoryRow, plain: memory.Plain) -> tuple[memory.Plain, str | None]:
    """The plaintext whose labels decide sharing, and a problem when they are not approved.

    "Only author- or owner-approved labels may determine new sharing": when another connection's
    edit (a Read & write grant corrects text only) changed the labels the phone last accepted, the
    phone keeps sharing by the accepted ones and says so.
    """
    if row.edited_by_author:
        return plain, None
    prev = ms.approved_labels(con, row.id)
    if prev is None or prev[1] == label_set(plain):
        return plain, None
    editor = _connection_names(con).get(row.editor_connection or "", "another connection")
    old = prev[1]
    problem = (
        f"{editor}, which is not the author, changed the labels (now {_labels_text(label_set(plain))}, "
        f"approved {_labels_text(old)}): the app shares by the approved labels only"
    )
    return dataclasses.replace(
        plain, categories=old["categories"], about=old["about"], endpoints=old["endpoints"]
    ), problem


def _labels_text(labels: dict) -> str:
    parts = [f"category:{c}" for c in labels["categories"]] + [a for a in labels["about"] if a != "user"]
    parts += [e for e in labels["endpoints"] if e != "user"]
    return ", ".join(parts) or "no labels"


# ── the sharing pass ───────────────────────────────────────────────────────────────────────


@dataclass
class ShareReport:
    """What one pass did: wraps added or re-reasoned, per connection, and rows it could not open."""

    at: float
    rows: int = 0
    opened: int = 0
    shared: int = 0
    updated: int = 0
    spaces_shared: int = 0
    per_connection: dict[str, int] = field(default_factory=dict)
    unreadable: list[Unopenable] = field(default_factory=list)
    unapproved: list[dict] = field(default_factory=list)

    text: str = ""

    def summary(self) -> str:
        return (
            f"{self.rows} rows, {self.opened} opened, {self.shared} new wraps, {self.updated} re-reasoned, "
            f"{len(self.unreadable)} the owner's app cannot open, {len(self.unapproved)} with unapproved labels"
        )

    def as_dict(self) -> dict:
        return {
            "at": ms.iso(self.at),
            "rows": self.rows,
            "opened": self.opened,
            "shared": self.shared,
            "updated": self.updated,
            "spaces_shared": self.spaces_shared,
            "per_connection": dict(self.per_connection),
            "unreadable": [u.as_dict() for u in self.unreadable],
            "unapproved": list(self.unapproved),
            "text": self.text,
        }

    def __repr__(self) -> str:
        return f"<ShareReport {self.summary()}>"


def reasons(agent: Any, row: ms.MemoryRow, plain: memory.Plain) -> list[str]:
    """Why this connection should read this row now, by its labels and live grants."""
    out = memory.reasons_for(agent.access.read, plain)
    if row.author_kind == "agent" and row.author_connection == agent.connection_id and agent.access.save:
        out = ["self", *out]
    return out


def run_sharing_pass(state: Any) -> ShareReport:
    """Open every row as the owner and wrap its key to each connection that should read it.
    Legacy rows the phone was asked to move are moved first, so their new keys are shared here."""
    from . import moves  # imported late: moves uses this module's row opening

    moves.move_asked(state)
    now = float(state.clock())
    owner_key = state.owner.key
    report = ShareReport(at=now)
    with state.store.tx() as con:
        agents = [a for a in auth.live_agents(con, now) if a.public_key]
        wraps = ms.all_wraps(con)
        for row in ms.all_memories(con):
            report.rows += 1
            opened = open_row(row, owner_key)
            if isinstance(opened, Unopenable):
                opened.author = author_name(con, row)
                report.unreadable.append(opened)
                continue
            report.opened += 1
            plain, problem = approval(con, row, opened.plain)
            if problem is not None:
                report.unapproved.append({"id": row.id, "problem": problem})
            elif row.edited_by_author:
                ms.set_approved_labels(con, row.id, row.rev, label_set(plain))
            have = {w.token_id: w for w in wraps.get(row.id, [])}
            before = report.shared + report.updated
            for agent in agents:
                via = reasons(agent, row, plain)
                if not via:
                    continue
                cur = have.get(agent.token_id)
                if cur is not None and cur.kid == row.kid and cur.key_fp == ms.key_fp(agent.public_key):
                    if cur.via != via:
                        ms.set_wrap_via(con, row.id, agent.token_id, via)
                        report.updated += 1
                    continue
                wrapped = wire.b64encode(sealing.wrap_to_agent(opened.key, agent.public_key))
                ms.put_wrap(
                    con, ms.Wrap(row.id, agent.token_id, ms.key_fp(agent.public_key), row.kid, wrapped, via, now)
                )
                report.shared += 1
                report.per_connection[agent.token_id] = report.per_connection.get(agent.token_id, 0) + 1
            if report.shared + report.updated > before:  # newly readable: the sync feed carries it
                ms.log_change(con, "context_memory", row.id, "updated", now)
        ms.set_unopenable(con, [(u.id, u.problem, u.reason) for u in report.unreadable], now)
        report.spaces_shared = _converge_spaces(con, agents, owner_key)
        for agent in agents:
            ms.set_shared_complete(con, agent.token_id, now)
    report.text = report.summary()
    state.extra.pop("phone_nudged_at", None)
    state.extra["last_share"] = report
    return report


def space_covered(agent: Any, space: ms.Space) -> bool:
    """A legacy space is covered by `memory.read` (Me) or `acctmem.read` on its account."""
    read = agent.access.read
    if space.kind == "me":
        return bool(read.all or read.categories or read.topics)
    return bool(read.account_wildcard or (space.account_id in read.accounts))


def _converge_spaces(con: Any, agents: list, owner_key: Any) -> int:
    n = 0
    for space in ms.all_spaces(con):
        try:
            key = sealing.unwrap_as_owner(space.owner_wrap, owner_key)
        except (CryptoError, WireFormatError):
            continue
        for agent in agents:
            if not space_covered(agent, space):
                continue
            cur = ms.space_wrap(con, space.id, agent.token_id)
            if cur is not None and cur[0] == ms.key_fp(agent.public_key):
                continue
            ms.put_space_wrap(
                con,
                space.id,
                agent.token_id,
                ms.key_fp(agent.public_key),
                wire.b64encode(sealing.wrap_to_agent(key, agent.public_key)),
            )
            n += 1
    return n


# ── the owner's app view ───────────────────────────────────────────────────────────────────


def author_name(con: Any, row: ms.MemoryRow | ms.SpaceRow) -> str:
    if row.author_kind == "owner":
        return "You (the owner)"
    tok = getattr(row, "author_token", None)
    try:
        r = con.execute("SELECT name FROM connections WHERE token_id = ?", (tok,)).fetchone()
    except Exception:  # pragma: no cover - connections table absent
        r = None
    return r[0] if r and r[0] else f"agent {str(tok)[:8]}"


def _connection_names(con: Any) -> dict[str, str]:
    try:
        return {r[0]: r[1] for r in con.execute("SELECT token_id, name FROM connections")}
    except Exception:  # pragma: no cover
        return {}


def app_view(state: Any) -> list[dict]:
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
        names = _connection_names(con)
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
                "created_at": ms.iso(row.created_at),
                "updated_at": ms.iso(row.updated_at),
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


def _describe(p: memory.Plain, topics: dict, linked: set, filed: set) -> dict:
    problems: list[str] = []
    if p.kind == "memory":
        tid = p.topic_id
        topic = None
        if tid:
            t = topics.get(tid)
            topic = {"id": tid, "name": t.name if t else p.entity_name}
            if t is None:
                problems.append(
                    f"filed under {tid}, but no topic row with that id opens: the app shows it "
                    "under a topic it cannot name"
                )
            elif p.entity_name is not None and memory.normalize_topic_name(
                p.entity_name
            ) != memory.normalize_topic_name(t.name):
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
    if p.kind == "topic":
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
    if p.kind == "link":
        ends = [e for e in p.endpoints if e != "user"]
        for e in ends:
            if e.startswith("topic:") and e not in topics:
                problems.append(f"endpoint {e} is not a topic row that opens")
        for end, name in zip(p.endpoints, (p.relation_from, p.relation_to)):
            if end.startswith("account:") and name:
                problems.append(f"the account end {end} carries the name {name!r}: an account end's name is empty")
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
    return {
        "kind": "other",
        "readable": True,
        "keys": sorted(p.plaintext),
        "problems": ["neither observation, entity nor relation: the app shows nothing for it"],
    }


def _space_view(con: Any, owner_key: Any) -> list[dict]:
    out = []
    for space in ms.all_spaces(con):
        try:
            key = sealing.unwrap_as_owner(space.owner_wrap, owner_key)
        except (CryptoError, WireFormatError) as exc:
            key, why = None, f"the space's owner_wrap does not open: {exc}"
        if key is not None and wire.kid(key) != space.skid:
            key, why = None, f"the space key is {wire.kid(key)}, the space says skid {space.skid}"
        for r in ms.space_rows(con, space.id):
            entry = {
                "id": r.id,
                "kind": "space_row",
                "space_id": space.id,
                "space_kind": space.kind,
                "account": space.account_id,
                "rev": r.rev,
                "author": author_name(con, r),
                "author_kind": r.author_kind,
                "created_at": ms.iso(r.created_at),
                "updated_at": ms.iso(r.updated_at),
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
    part = obj.get(graph) if isinstance(obj.get(graph), dict) else {}
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


# ── what a read says while keys are owed ───────────────────────────────────────────────────


def retry_after(elapsed: float) -> int:
    """5 s in the first 15 minutes, 60 in the first hour, 300 in the first 4 hours, then 3600."""
    if elapsed < 15 * 60:
        return 5
    if elapsed < 3600:
        return 60
    if elapsed < 4 * 3600:
        return 300
    return 3600


def _key_time(agent: Any) -> float:
    return float(agent.key_changed_at or agent.approved_at or 0.0)


def owed_at(agent: Any, row: ms.MemoryRow, why: str) -> float:
    """When this row came to be owed to this connection's current key."""
    t = max(row.key_at, _key_time(agent))
    if why != "self" and agent.newest_grant_at:
        t = max(t, float(agent.newest_grant_at))
    return t


PREPARING_SENTENCE = (
    "These memories are saved and are being shared with this connection by the owner's phone: "
    "read again after retry_after_seconds and carry on with what you can read. Do not save them "
    "again, report them missing or pair again."
)
FAILED_SENTENCE = (
    "Decoy has stopped asking the owner's phone on its own for these memories. Carry on without "
    "them; they read normally once the phone shares them, and a later read may ask once more."
)
UNKNOWN_PREPARING_SENTENCE = (
    "This connection holds a grant on a category, a topic or an account and nothing has "
    "been shared with its current key under it yet. Decoy is asking the owner's phone; it "
    "cannot tell whether any such memories exist. Do not pair again."
)
UNKNOWN_FAILED_SENTENCE = (
    "Nothing has been shared under this connection's category, topic or account grants, "
    "and Decoy is not asking the owner's phone for it on its own. It cannot tell whether "
    "anything exists to share."
)
CAP = 500


def report(
    con: Any, agent: Any, waiting: list[tuple[ms.MemoryRow, str]], wraps: dict[str, ms.Wrap], now: float
) -> dict:
    """The `preparing` … `do_not` fields of a memories read for this connection."""
    out: dict[str, Any] = {}
    retry: list[int] = []
    failed_state = False
    done = ms.shared_complete_at(con, agent.token_id)
    if done is not None:
        # The phone finished a pass after these came to be owed and shared nothing for them: its labels
        # do not reach this connection (an account memory under `all`, say). A row it could not open
        # stays owed: the phone never decided about it.
        cannot = ms.unopenable_ids(con)
        waiting = [
            (row, why) for row, why in waiting if why == "self" or row.id in cannot or owed_at(agent, row, why) > done
        ]
    if waiting:
        newest = max(owed_at(agent, row, why) for row, why in waiting)
        elapsed = now - newest
        mine = [row.id for row, why in waiting if why == "self"]
        others = sum(1 for _, why in waiting if why != "self")
        if elapsed < ASK_DAYS * DAY:
            out.update(preparing=mine[:CAP], preparing_others=others)
            retry.append(retry_after(elapsed))
        else:
            last = max(newest + ASK_DAYS * DAY, ms.last_read_ask(con, agent.token_id) or 0.0)
            if now - last >= DAY:  # this read asks the phone once more
                ms.record_read_ask(con, agent.token_id, now)
                out.update(preparing=mine[:CAP], preparing_others=others)
                retry.append(30)
            else:
                failed_state = True
                out.update(
                    failed=mine[:CAP],
                    failed_others=others,
                    recovery="stopped_asking",
                    recovery_description=FAILED_SENTENCE,
                )
        if len(mine) > CAP:
            out.update(preparing_capped=True, preparing_total=len(waiting))
    unknown = _unknown_state(con, agent, wraps, now)
    if unknown is not None:
        kind, base = unknown
        if kind == "shared_complete":
            out.update(shared_complete=True, shared_complete_at=ms.iso(base))
        elif kind == "preparing":
            out["preparing_unknown"] = True
            retry.append(retry_after(now - base))
        else:
            out["failed_unknown"] = True
            if failed_state or retry:
                out["failed_unknown_description"] = UNKNOWN_FAILED_SENTENCE
            else:
                out.update(recovery="stopped_asking", recovery_description=UNKNOWN_FAILED_SENTENCE)
    if retry:
        out.update(retry_after_seconds=min(retry), waiting_on="owner_phone")
        if not failed_state:
            known = bool(out.get("preparing") or out.get("preparing_others"))
            out.update(
                recovery="read_again_later",
                recovery_description=PREPARING_SENTENCE if known else UNKNOWN_PREPARING_SENTENCE,
                do_not=["pair_again", "report_missing"] if known else ["pair_again"],
            )
    return out


def unknown_base(agent: Any) -> float:
    """When the first day of asks for grants the server cannot see into starts: this
    connection's approval, its newest grant or its newest key, whichever is latest."""
    return max(float(agent.newest_grant_at or 0.0), float(agent.approved_at or 0.0), _key_time(agent))


def _unknown_state(con: Any, agent: Any, wraps: dict[str, ms.Wrap], now: float) -> tuple[str, float] | None:
    """("preparing" | "failed" | "shared_complete", since) for grants the server cannot see into."""
    read = agent.access.read
    if not (read.categories or read.topics or read.accounts or read.account_wildcard):
        return None
    fp = ms.key_fp(agent.public_key)
    if any(w.key_fp == fp and any(v != "self" for v in w.via) for w in wraps.values()):
        return None  # something has been shared with its current key under a grant
    base = unknown_base(agent)
    done = ms.shared_complete_at(con, agent.token_id)
    if done is not None and done >= base:
        return ("shared_complete", done)
    if holds_vault_key(agent):  # "there is no first day of asks: … `failed_unknown: true` at once"
        return ("failed", base)
    return ("preparing", base) if now - base < DAY else ("failed", base)


def holds_vault_key(agent: Any) -> bool:
    """A connection granted `everything` holds the whole-vault key."""
    return any("everything" in r.permissions for r in getattr(agent, "rows", ()))


# ── every row as stored ────────────────────────────────────────────────────────────────────


def stored_rows(state: Any) -> list[dict]:
    """Every stored memory row exactly as the server holds it (for `GET /_sandbox/rows`):
    id, kid, rev, ciphertext, owner_wrap, the author's `self_wrap`, every grantee wrap, author."""
    out = []
    with state.store.tx() as con:
        names = _connection_names(con)
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
                    "created_at": ms.iso(row.created_at),
                    "updated_at": ms.iso(row.updated_at),
                }
            )
    return out


rows = stored_rows
