"""The spec's write rules, in one place: save, edit, delete and share over a session (session.py).

- An unknown outcome (network error, timeout, 5xx) resends the SAME sealed rows or body, never
  new ones (`Session.send`, up to `retries` times); after a resend the rows are read
  back and sent once more if any is not served yet (the server fills in a missing wrap).
- A definite refusal is never retried. `REV_CONFLICT` re-reads, re-applies and retries after a
  short random wait, so writers racing on one memory take turns (and stops when the served
  memory already reads as asked: an earlier unanswered attempt landed).
- `HOLDERS_MISSING` wraps the rotated key to every listed holder and sends again.
- A legacy space row is edited in its space (legacy.py); once the owner's phone has moved it to
  its own key (`MEMORY_MOVING`), the same changes apply to it here under the per-memory rule.
  Deleting is the same: legacy row ids go to rows/delete, and those moved meanwhile are deleted
  here as memories; one call takes memory ids and legacy row ids mixed.
- Topic rows written for a change that is then definitely refused are deleted (best effort);
  after an unknown outcome they are kept, since a committed memory may already use them.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from decoy_lab import memory
from decoy_lab.errors import (
    DecoyError,
    HoldersMissing,
    KidConflict,
    MemoryModelError,
    OutcomeUnknown,
    RevConflict,
    UnreadableRow,
)
from decoy_lab.recipes import sealing
from decoy_lab.rules import legacy, verify
from decoy_lab.shapes import fits
from decoy_lab.store.journal import Journal, new_entry
from decoy_lab.transport import routes
from decoy_lab.transport.api import is_unknown_outcome
from decoy_lab.wire import layouts as wire

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.rules.session import Session

log = logging.getLogger("decoy_lab.client.connection")

MEMORIES = routes.MEMORIES
UNSET: Any = object()
WRAPS = routes.WRAPS
# Each write's answer, by route: the members read from it and their shapes (http.expect_object). An
# answer that does not fit is an unknown outcome, like a lost one: the same body is sent again.
WRITE_ANSWERS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", MEMORIES): {"created": list[str], "existing": list[str]},
    ("PUT", MEMORIES): legacy.EDITED,
    ("POST", routes.MEMORIES_DELETE): {"deleted": list[str], "refused": list[str], "remediation": dict},
    ("POST", WRAPS): {"added": int},
    ("PUT", legacy.ROWS): legacy.EDITED,
    ("POST", legacy.ROWS_DELETE): legacy.DELETED,
}


def send(s: Session, method: str, path: str, body: Any) -> dict[str, Any]:
    """One write under the retry rules, its answer read for the members its route names and
    checked against what was asked: a POST of rows must account for every id sent (in `created`
    or `existing`), an edit must name the memory and carry its new rev. Any other answer is an
    unknown outcome, like a lost one."""
    check = None
    if (method, path) == ("POST", MEMORIES):
        check = accounts_for([r["id"] for r in body["rows"]])
    elif method == "PUT":
        check = legacy.edited(body)
    return s.send(method, path, body, WRITE_ANSWERS.get((method, path)), check)


def accounts_for(ids: list[str]) -> Callable[[dict[str, Any]], str | None]:
    def check(ans: dict[str, Any]) -> str | None:
        told = {*(ans.get("created") or ()), *(ans.get("existing") or ())}
        missing = [i for i in ids if i not in told]
        if missing:
            return f"the answer accounts for {len(ids) - len(missing)} of the {len(ids)} rows sent (created ∪ existing)"
        return None

    return check


@dataclass
class DeleteResult:
    """What `delete` did: ids deleted, ids refused, why each was refused (id → reason) and the
    server's remediation (id → the grant request that unlocks deleting it), if any."""

    deleted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    remediation: dict[str, Any] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"deleted {len(self.deleted)}, refused {len(self.refused)}"

    def add(self, other: DeleteResult) -> None:
        self.deleted += other.deleted
        self.refused += other.refused
        self.remediation.update(other.remediation)
        self.why.update(other.why)


# -- sending rows -------------------------------------------------------------------------------
def post_rows(s: Session, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """POST rows; after any resend, read back and send the same rows once more if one is not served."""
    before = s.resends
    ans = send(s, "POST", MEMORIES, {"rows": rows})
    if s.resends > before:
        served = {r.get("id") for r in s.served()}
        if any(r["id"] not in served for r in rows):
            ans = send(s, "POST", MEMORIES, {"rows": rows})
    s.written.update(r["id"] for r in rows)
    return ans


def delete_quietly(s: Session, ids: list[str]) -> None:
    """Best effort: remove rows this call wrote for a change that was refused."""
    try:
        s.api.request("POST", routes.MEMORIES_DELETE, json={"ids": ids})
    except DecoyError as exc:
        log.info("could not remove topic rows %s: %s", ids, exc)


# -- topics -------------------------------------------------------------------------------------
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
    return answer if answer.get("preparing") else {}


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


def _topic_name(topic: Any) -> str:
    if isinstance(topic, str) and topic.startswith("topic:"):
        raise MemoryModelError(f"{topic} is not a topic this connection can see")
    name = topic if isinstance(topic, str) else (topic.get("name") if isinstance(topic, Mapping) else None)
    if not isinstance(name, str):
        raise MemoryModelError("topic is a name, a topic:<id>, or {'id', 'name'}")
    return name


def checked_text(value: Any, what: str) -> None:
    """Text must be text that UTF-8 can carry: bytes (undecoded, maybe not UTF-8) or a lone surrogate
    (what a bad decode leaves behind) is refused here, in plain words, before anything is sealed."""
    if isinstance(value, (bytes, bytearray)):
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryModelError(
                f"the {what} is bytes that are not UTF-8 (byte {exc.start}): decode it to text first; nothing was sent"
            ) from None
        raise MemoryModelError(f"the {what} is bytes: pass it as text (str); nothing was sent")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryModelError(
                f"the {what} holds a lone surrogate at character {exc.start} (U+{ord(value[exc.start]):04X}), "
                "which is not text UTF-8 can carry — it usually comes from decoding bytes wrongly: fix the "
                "text first; nothing was sent"
            ) from None


# -- save ---------------------------------------------------------------------------------------
def save(
    s: Session,
    text: str,
    *,
    topic: Any = None,
    topic_type: str = "",
    link: Any = None,
    categories: Iterable[str] = (),
    account: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    checked_text(text, "text")
    checked_text(topic if isinstance(topic, (str, bytes)) else None, "topic name")
    categories = list(categories)
    asked = [text, topic, topic_type, link, sorted(map(str, categories)), account, metadata]
    intent = s.intent("save", asked)
    earlier = s.journal.find(intent) if s.journal is not None else None
    if earlier is not None:  # the same save, cut short before: finish it with the same rows
        log.info("this save is pending from an earlier run: sending its rows again")
        if resend_entry(s, earlier)["outcome"] == "committed":
            return str(earlier["target"])
    keys = s.keys()
    rows: list[dict[str, Any]] = []
    made = None
    ref = None
    if topic is not None:
        found = find_or_refuse_new(s, topic)
        if found is not None:
            ref = {"id": found.id, "name": found.name}
        else:
            made = new_topic(s, keys, _topic_name(topic), topic_type, link)
            rows.extend(made.rows)
            ref = made.topic
    row = memory.new_memory_row(keys, text, topic=ref, categories=categories, account=account, metadata=metadata)
    rows.append(row)
    topic_ids = [r["id"] for r in made.rows] if made is not None else []
    entry = new_entry(
        "save",
        [("POST", MEMORIES, {"rows": rows})],
        ids=[r["id"] for r in rows],
        topic_ids=topic_ids,
        intent=intent,
        target=row["id"],
    )
    run_entry(s, entry)
    if made is not None:
        remember_topic(s, made, topic_type, [row["id"]])
    log.info("saved memory %s", row["id"])
    verify.check(s, row["id"], {"text": text, "categories": list(categories), "topic": ref, "account": account})
    return str(row["id"])


# -- the journal: every write entered before it is sent, settled once its outcome is known --------
def run_entry(s: Session, entry: dict[str, Any]) -> None:
    """Send an entry's requests in order, journaled until the outcome is known. A definite refusal
    settles it (topic rows it wrote are removed); an unknown outcome keeps it and raises
    OutcomeUnknown, which says what may have committed and how to finish."""
    journal = s.journal if s.journal is not None else Journal()
    journal.put(entry)
    reached = s.reached
    try:
        for step in entry["sends"]:
            if step["method"] == "POST":
                post_rows(s, step["body"]["rows"])
            else:
                put_journaled(s, step["body"])
    except DecoyError as exc:
        if is_unknown_outcome(exc):
            raise unsettled(s, journal, entry, exc, maybe_sent=s.reached > reached) from exc
        journal.settle(entry["id"])
        drop_unused_topic(s, entry["topic_ids"])  # no orphan topic once the entry is settled
        raise
    journal.settle(entry["id"])


def drop_unused_topic(s: Session, topic_ids: list[str]) -> None:
    """Delete the topic rows (entity, relation) a refused write made, unless a memory is filed under
    that topic now (an earlier send of the write may have landed, and another filed under it)."""
    if not topic_ids:
        return
    try:
        vault = s.load()
    except DecoyError as exc:
        log.info("could not read back before removing topic rows %s: %s", topic_ids, exc)
        return
    tid = f"topic:{topic_ids[0]}"
    listed = vault.find_topic(tid)
    used = listed is not None and any(
        (m := vault.memory(mid)) is not None and m.topic is not None and m.topic.get("id") == tid
        for mid in listed.memories
    )
    if not used:
        delete_quietly(s, topic_ids)


def unsettled(
    s: Session, journal: Journal, entry: dict[str, Any], exc: BaseException, *, maybe_sent: bool
) -> OutcomeUnknown:
    n = len(entry["ids"])
    rows = f"{n} row{'s' if n != 1 else ''} ({', '.join(entry['ids'])})"
    where = f" in {journal.path}" if journal.path is not None else " (in memory, for this kernel)"
    if maybe_sent:
        said = (
            f"{entry['kind']}: the outcome is unknown after {s.retries + 1} sends; some, all or none of the "
            f"{rows} may have committed"
        )
    else:
        said = f"{entry['kind']}: the server could not be reached, so nothing of the {rows} was sent"
    message = (
        f"{said} (last: {exc}). The sealed rows are kept in the pending-writes journal{where}: "
        "conn.resend() — or running the same save again — sends the SAME rows, never new ones"
    )
    journal.note(entry["id"], str(exc))
    return OutcomeUnknown(message, entry=entry["id"], ids=entry["ids"], sent=maybe_sent)


def resend_entry(s: Session, entry: dict[str, Any]) -> dict[str, Any]:
    """Send a journaled entry again (the same bodies). Returns {'entry', 'kind', 'ids', 'outcome'}:
    "committed", or why it was refused (settled too); an unknown outcome raises OutcomeUnknown."""
    out = {"entry": entry["id"], "kind": entry["kind"], "ids": list(entry["ids"]), "target": entry.get("target")}
    try:
        run_entry(s, entry)
    except OutcomeUnknown:
        raise
    except RevConflict as exc:  # an edit whose memory changed meanwhile, and not by this edit
        out["outcome"] = f"not applied: {exc}"
        return out
    except DecoyError as exc:
        out["outcome"] = f"refused: {exc}"
        return out
    out["outcome"] = "committed"
    return out


def resend(s: Session) -> list[dict[str, Any]]:
    """Send every pending write again, oldest first (see `resend_entry`). The first that still has
    no known outcome raises OutcomeUnknown; what was settled before it stays settled."""
    if s.journal is None:
        return []
    return [resend_entry(s, e) for e in s.journal.entries()]


def settle_pending(s: Session) -> None:
    """Before creating a topic: finish pending writes first (one may hold the topic's rows)."""
    if s.journal is not None and s.journal.entries():
        log.info("pending writes before creating a topic: sending them again first")
        resend(s)


# -- edit ---------------------------------------------------------------------------------------
def edit(
    s: Session, memory_id: str, changes: dict[str, Any], *, topic_type: str = "", link: Any = None
) -> dict[str, Any]:
    if not changes:
        raise MemoryModelError("edit needs text=, topic= or categories=")
    checked_text(changes.get("text"), "text")
    checked_text(changes.get("topic") if isinstance(changes.get("topic"), (str, bytes)) else None, "topic name")
    intent = s.intent("edit", [memory_id, changes, topic_type, link])
    earlier = s.journal.find(intent) if s.journal is not None else None
    if earlier is not None and resend_entry(s, earlier)["outcome"] == "committed":  # the same edit, cut short
        return {"id": memory_id, "outcome": "applied (the pending edit was sent again)"}
    if legacy.is_space_row(s, memory_id):
        done = legacy.edit(s, memory_id, changes)
        if done is not None:
            return done
        log.info("legacy row %s now lives in the per-memory store: editing it there", memory_id)
    keys = s.keys()
    made = None
    sends: list[tuple[str, str, Any]] = []
    if changes.get("topic") is not None:
        found = find_or_refuse_new(s, changes["topic"])
        if found is not None:
            changes["topic"] = {"id": found.id, "name": found.name, "ids": list(found.ids)}
        else:
            made = new_topic(s, keys, _topic_name(changes["topic"]), topic_type, link)
            sends.append(("POST", MEMORIES, {"rows": made.rows}))
            changes["topic"] = made.topic
    topic_ids = [r["id"] for r in made.rows] if made is not None else []
    entry = new_entry("edit", sends, ids=[*topic_ids, memory_id], topic_ids=topic_ids, intent=intent, target=memory_id)
    journal = s.journal if s.journal is not None else Journal()
    body = memory.edit_memory_row(s.served_row(memory_id), changes, s.agent_key, keys)
    entry["sends"].append({"method": "PUT", "path": MEMORIES, "body": body})
    journal.put(entry)  # the topic rows and the PUT, before either is sent
    try:
        if made is not None:
            post_rows(s, made.rows)
        s.editing = (journal, entry)
        ans = edit_loop(s, memory_id, changes, keys, body)
    except DecoyError as exc:
        if is_unknown_outcome(exc) and not isinstance(exc, OutcomeUnknown):
            if has_changes(s, memory_id, changes):
                journal.settle(entry["id"])
                if made is not None:
                    remember_topic(s, made, topic_type, [memory_id])
                return {"id": memory_id, "outcome": "applied (confirmed by reading it back)"}
            raise unsettled(s, journal, entry, exc, maybe_sent=True) from exc
        if not is_unknown_outcome(exc):
            journal.settle(entry["id"])
            if topic_ids:
                delete_quietly(s, topic_ids)
        raise
    finally:
        s.editing = None
    journal.settle(entry["id"])
    if made is not None:
        remember_topic(s, made, topic_type, [memory_id])
    verify.check(s, memory_id, changes)
    return ans


def has_changes(s: Session, memory_id: str, changes: Mapping[str, Any]) -> bool:
    """Whether the served memory already reads as `changes` asks (after an unknown outcome)."""
    try:
        m = memory.read_memory_row(s.served_row(memory_id), s.agent_key, key_cache=s.key_cache)
    except DecoyError:
        return False
    if m is None:
        return False
    if "text" in changes and m.text != changes["text"]:
        return False
    if "categories" in changes and set(m.categories) != set(changes["categories"] or ()):
        return False
    if "topic" in changes:
        want = changes["topic"]
        if want is None:
            return m.topic is None and m.account is None
        return m.topic is not None and memory.same_topic(m.topic, want)
    return True


def edit_loop(
    s: Session,
    memory_id: str,
    changes: Mapping[str, Any],
    keys: memory.RecipientKeys,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """PUT `body` (sealed from the served row when not given) with its `expected_rev`; on
    REV_CONFLICT re-read, re-apply and try again."""
    conflicts = 0
    while True:
        if body is None:
            body = memory.edit_memory_row(s.served_row(memory_id), changes, s.agent_key, keys)
        try:
            return put(s, body)
        except RevConflict:
            conflicts += 1
            if conflicts > s.retries:
                raise
            log.info("memory %s changed since it was read (REV_CONFLICT): re-reading and re-applying", memory_id)
            s.sleep(random.uniform(0, s.backoff * conflicts))  # writers racing on one memory take turns
            if has_changes(s, memory_id, changes):  # an earlier unanswered attempt already applied it
                return {"id": memory_id, "outcome": "already applied"}
            body = None


def put_journaled(s: Session, body: dict[str, Any]) -> dict[str, Any]:
    """Send a journaled PUT again. REV_CONFLICT: when the served row is this very body (the same
    ciphertext), an earlier send landed; otherwise the memory changed meanwhile and it did not."""
    try:
        return send(s, "PUT", MEMORIES, body)
    except RevConflict:
        served = next((r for r in s.served() if r.get("id") == body["id"]), None)
        if served is not None and served.get("ciphertext") == body.get("ciphertext"):
            return {"id": body["id"], "outcome": "already applied"}
        raise


def _journal_put(s: Session, body: dict[str, Any]) -> None:
    """Keep the PUT about to be sent in the edit's journal entry (its last send)."""
    if s.editing is not None:
        journal, entry = s.editing
        entry["sends"][-1] = {"method": "PUT", "path": MEMORIES, "body": body}
        journal.put(entry)


def put(s: Session, body: dict[str, Any]) -> dict[str, Any]:
    """PUT an edit; HOLDERS_MISSING → wrap the new key to each listed holder and send again."""
    for _ in range(3):
        try:
            _journal_put(s, body)
            return send(s, "PUT", MEMORIES, body)
        except HoldersMissing as exc:
            if not body.get("self_wrap") or not exc.missing or not all(map(_wrappable, exc.missing)):
                raise  # still the definite refusal it is: nothing was changed
            key = sealing.unwrap_as_agent(body["self_wrap"], s.agent_key)
            wraps = {w["token_id"]: w for w in body.get("grantee_wraps") or []}
            for m in exc.missing:
                wraps[m["token_id"]] = {
                    "token_id": m["token_id"],
                    "via": list(m.get("via") or []),
                    "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, m["public_key"])),
                }
            body = {**body, "grantee_wraps": list(wraps.values())}
            log.info("HOLDERS_MISSING: wrapped the new key to %d more holders", len(exc.missing))
    _journal_put(s, body)
    return send(s, "PUT", MEMORIES, body)


def _wrappable(holder: Mapping[str, Any]) -> bool:
    """Whether a holder HOLDERS_MISSING lists names what a wrap needs (its token id and public key)."""
    return (
        fits(holder.get("token_id"), str)
        and fits(holder.get("public_key"), str)
        and (holder.get("via") is None or fits(holder.get("via"), list[str]))
    )


# -- delete and share ---------------------------------------------------------------------------
def delete(s: Session, ids: str | Iterable[str]) -> DeleteResult:
    """Delete memories and legacy space rows, in one call."""
    ids = [ids] if isinstance(ids, str) else list(ids)
    if not ids:
        return DeleteResult()
    space_rows = legacy.space_row_ids(s)
    rows = [i for i in ids if i in space_rows]
    memory_ids = [i for i in ids if i not in space_rows]
    result = DeleteResult()
    if memory_ids:
        result.add(delete_memories(s, memory_ids))
    if rows:
        done = legacy.delete(s, rows)
        result.add(DeleteResult(done.deleted, list(done.refused), done.remediation, done.refused))
        if done.moved:
            log.info("legacy rows %s now live in the per-memory store: deleting them there", ", ".join(done.moved))
            result.add(delete_memories(s, done.moved))
    return result


def delete_memories(s: Session, ids: list[str]) -> DeleteResult:
    """POST memories/delete; after a resend, a refused id that was ours and is no longer served was
    deleted by the attempt whose answer was lost."""
    known = set(s.written)
    if s.vault is not None:
        known |= {r["id"] for r in s.vault.served if isinstance(r.get("id"), str)}
    before = s.resends
    ans = send(s, "POST", routes.MEMORIES_DELETE, {"ids": ids})
    result = DeleteResult(
        list(ans.get("deleted") or []), list(ans.get("refused") or []), dict(ans.get("remediation") or {})
    )
    # Every id is answered for: "missing or ineligible ids are refused". One the answer leaves out
    # is settled by reading what is served now, like a refusal after a lost answer.
    unmentioned = [i for i in dict.fromkeys(ids) if i not in result.deleted and i not in result.refused]
    still: set[str] = set()
    if (s.resends > before and result.refused) or unmentioned:
        served = {r.get("id") for r in s.served()}
        gone = [i for i in [*result.refused, *unmentioned] if i not in served and i in known]
        still = {i for i in unmentioned if i in served}
        result.deleted += gone
        result.refused = [i for i in [*result.refused, *unmentioned] if i not in gone]
    result.why = {i: _why_memory_refused(result.remediation.get(i)) for i in result.refused}
    result.why.update(
        dict.fromkeys(
            still, "the server's answer named it neither deleted nor refused, and it is still served: not deleted"
        )
    )
    return result


def _why_memory_refused(remediation: Mapping[str, Any] | None) -> str:
    if remediation:
        return (
            "this connection may not delete it: ask the owner with POST /api/agent/grant-request "
            f"{json.dumps(remediation, sort_keys=True)}"
        )
    return "missing, or not a memory this connection may delete (its own, or with memory.delete on it)"


def share(s: Session, memory_id: str) -> int:
    for attempt in range(2):
        served = s.served_row(memory_id)
        if memory.read_row(served, s.agent_key, key_cache=s.key_cache) is None:
            raise UnreadableRow(memory_id, "opens, but is not a memory, topic or link")
        key = s.key_cache[served["kid"]]
        plain = memory.decode_plaintext(sealing.open_json(key, served["ciphertext"]), memory_id)
        wraps = memory.grantee_wraps(key, plain, s.keys())
        if not wraps:
            return 0
        try:
            ans = send(s, "POST", WRAPS, {"row_id": memory_id, "kid": served["kid"], "wraps": wraps})
            return int(ans.get("added") or 0)
        except KidConflict:
            if attempt:
                raise
    return 0
