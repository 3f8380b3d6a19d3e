"""Edit: a PUT that re-seals only what changed, with `expected_rev`. REV_CONFLICT re-reads,
re-applies and retries after a short random wait (and stops when the served memory already reads
as asked); HOLDERS_MISSING wraps the rotated key to every listed holder and sends again; a legacy
space row is edited in its space until the owner's phone moves it (`MEMORY_MOVING`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from decoy_lab import memory
from decoy_lab.errors import DecoyError, HoldersMissing, MemoryModelError, OutcomeUnknown, RevConflict
from decoy_lab.protocol import legacy, verify
from decoy_lab.protocol.writes.resend import resend_entry, unsettled
from decoy_lab.protocol.writes.sending import MEMORIES, checked_text, delete_quietly, log, post_rows, send
from decoy_lab.protocol.writes.topics import find_or_refuse_new, new_topic, remember_topic, topic_name
from decoy_lab.recipes import sealing
from decoy_lab.shapes import fits
from decoy_lab.store.journal import new_entry
from decoy_lab.transport.api import is_unknown_outcome
from decoy_lab.wire import layouts as wire

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

UNSET: Any = object()


def edit(s: Session, memory_id: str, changes: dict[str, Any], *, topic_type: str, link: Any = None) -> dict[str, Any]:
    if not changes:
        raise MemoryModelError("edit needs text=, topic= or categories=")
    checked_text(changes.get("text"), "text")
    checked_text(changes.get("topic"), "topic name")  # a topic id, name or Topic: only text is checked
    intent = s.intent("edit", [memory_id, changes, topic_type, link])
    earlier = s.journal.find(intent)
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
            made = new_topic(s, keys, topic_name(changes["topic"]), topic_type, link)
            sends.append(("POST", MEMORIES, {"rows": made.rows}))
            changes["topic"] = made.topic
    topic_ids = [r["id"] for r in made.rows] if made is not None else []
    entry = new_entry("edit", sends, ids=[*topic_ids, memory_id], topic_ids=topic_ids, intent=intent, target=memory_id)
    journal = s.journal
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
