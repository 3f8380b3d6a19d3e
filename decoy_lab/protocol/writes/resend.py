"""The pending-writes journal at work: every write entered before it is sent, settled once its
outcome is known. An unknown outcome keeps the entry and raises OutcomeUnknown (what may have
committed, and how to finish); `resend` sends the SAME bodies again, never new ones; a refused
write's topic rows are removed unless a memory is filed under that topic now.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError, OutcomeUnknown, RevConflict, ServerError, TransportError
from decoy_lab.protocol import accounts_pending
from decoy_lab.protocol.writes.sending import delete_quietly, log, post_rows, put_journaled
from decoy_lab.store.journal import Journal
from decoy_lab.transport.api import is_unknown_outcome
from decoy_lab.transport.retry import attempts_of

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session


def run_entry(s: Session, entry: dict[str, Any]) -> None:
    """Send an entry's requests in order, journaled until the outcome is known. A definite refusal
    settles it (topic rows it wrote are removed); an unknown outcome keeps it and raises
    OutcomeUnknown, which says what may have committed and how to finish."""
    journal = s.journal
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
    """The error of a write with no known outcome: what each attempt of its last request did, what
    may have committed, where its sealed rows are kept and how to finish (`conn.resend()`)."""
    n = len(entry["ids"])
    rows = f"{n} row{'s' if n != 1 else ''} ({', '.join(entry['ids'])})"
    where = f" in {journal.path}" if journal.path is not None else " (in memory, for this kernel)"
    tried = attempts_of(exc)
    each = "; ".join(f"attempt {i}: {attempt_said(e)}" for i, e in enumerate(tried, 1))
    route = _route(str(exc))
    sends = f" {route}" if route else " this write"  # a 5xx's error names its status, not its request
    if not maybe_sent:
        said = f"{entry['kind']}: nothing of the {rows} was sent{f' ({route})' if route else ''} — {each}"
        finish = "conn.resend() — or running the same save again — sends them once the server can be reached"
    else:
        earlier = "" if any(_sent(e) for e in tried) else " (an earlier request of this write reached the server)"
        said = (
            f"{entry['kind']}: the outcome of{sends} is unknown — {each}{earlier}. Some, all or none of the "
            f"{rows} may have committed"
        )
        finish = "conn.resend() — or running the same save again — sends the SAME rows, never new ones"
    message = f"{said}. The sealed rows are kept in the pending-writes journal{where}: {finish}"
    journal.note(entry["id"], str(exc))
    return OutcomeUnknown(message, entry=entry["id"], ids=entry["ids"], sent=maybe_sent)


def _sent(exc: BaseException) -> bool:
    return not (isinstance(exc, TransportError) and not exc.sent)


_ROUTE = re.compile(r"(?:POST|PUT|GET|DELETE) /\S*?(?=: |$)")  # "<METHOD> <path>" before ": " or the end


def _route(text: str) -> str:
    """'POST /api/…' from an error's message that begins with the request it is about, else ''."""
    found = _ROUTE.match(text)
    return found.group(0) if found else ""


def attempt_said(exc: BaseException) -> str:
    """One send, in words that never contradict another's: 'sent, <what came back> — may have
    committed', or 'not sent (<why>)' for a connection refused (the request never left)."""
    text = str(exc)
    route = _route(text)
    what = text[len(route) + 2 :] if route else text
    if isinstance(exc, TransportError) and not exc.sent:
        return f"not sent ({what.split('; is the server running?')[0]})"
    if isinstance(exc, ServerError):
        return f"sent, answered {exc.status} {exc.code or ''}".rstrip() + " — may have committed"
    if isinstance(exc, TransportError):
        return f"sent, {what.removesuffix('; the outcome is unknown')} — may have committed"
    return f"sent, refused for now ({type(exc).__name__}: {what}) — not committed"


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
    """Send every pending write again, oldest first (see `resend_entry`; an account write's entry is
    finished by accounts_pending.resend_entry). The first that still has no known outcome raises
    OutcomeUnknown; what was settled before it stays settled. An account write another process
    settled meanwhile is left out (that process reports it)."""
    done: list[dict[str, Any]] = []
    for e in s.journal.entries():
        result = accounts_pending.resend_entry(s, e) if accounts_pending.is_account_entry(e) else resend_entry(s, e)
        if result is not None:
            done.append(result)
    return done


def settle_pending(s: Session) -> None:
    """Before creating a topic: finish pending memory writes first (one may hold the topic's rows);
    an account write's entry holds none, and is left for `resend`."""
    if any(not accounts_pending.is_account_entry(e) for e in s.journal.entries()):
        log.info("pending writes before creating a topic: sending them again first")
        for e in s.journal.entries():
            if not accounts_pending.is_account_entry(e):
                resend_entry(s, e)
