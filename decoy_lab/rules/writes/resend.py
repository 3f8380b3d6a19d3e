"""The pending-writes journal at work: every write entered before it is sent, settled once its
outcome is known. An unknown outcome keeps the entry and raises OutcomeUnknown (what may have
committed, and how to finish); `resend` sends the SAME bodies again, never new ones; a refused
write's topic rows are removed unless a memory is filed under that topic now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError, OutcomeUnknown, RevConflict
from decoy_lab.rules.writes.sending import delete_quietly, log, post_rows, put_journaled
from decoy_lab.store.journal import Journal
from decoy_lab.transport.api import is_unknown_outcome

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.rules.session import Session


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
