"""The account family's writes in the pending-writes journal (store/journal.py): each entered with
its sealed body before it is sent, settled once an answer proves it (or definitely refuses it),
and — when no answer came — kept, so `resend_entry` finishes it from any process
(`conn.resend()`, `%decoy resend`, `decoy-lab resend`). An entry holds what was sent, sealed.

How an entry is finished depends on whether 001 makes its route safe to repeat (`mode`):

- `same` — the SAME bytes again, the answer checked as the first send's would be:
  a Decoy address ("Repeating the same key (same token) returns the ORIGINAL decoy with
  `idempotent_replay: true`"), a secret field ("Sending the same id again answers `existing` …
  it never creates a second field. Reuse the id until you get an answer"), a change guarded by
  `expected_rev` (a field, an account, a field's delete), a password, a queued address edit,
  protect ("Idempotent when already protected"), a pause, an address's label and status (`PATCH
  …/decoys/{id}`: a repeat sets the same values), a burn ("Permanently delete a decoy …
  **Irreversible.**": a repeat can burn only that address, and meets 404), an account's delete (a
  repeat meets 404: "it disappears from reads"), a burn of an account's linked address (read
  first: see below). A resent change that meets
  `REV_CONFLICT` (or a delete that meets 404) is "committed" only when what the server serves
  now proves it — the field's ciphertext is the one sent, the account holds every member the
  update set, the field is gone — and "not applied" otherwise ("If the field changed since, the
  PUT fails 409 `REV_CONFLICT` … and nothing is overwritten").
  Some are read before they are sent again, and settled without a send when what is served
  already answers (`BEFORE`): a delete or burn whose target is no longer served had landed; an
  address that holds every value the update set needs nothing more; a burn of an account's
  linked address is sent again only while that address is still linked (an address linked since
  would be burned instead); and an account whose `rev`
  moved since its delete was asked is NOT deleted again — someone changed it (or restored it:
  "reversible server-side") meanwhile, and 001 asks agents to "obtain fresh confirmation for
  destructive … actions", so it is "not applied" and the caller decides anew.
- `check` — no key makes a repeat safe (an account saved without an address, a batch: "a
  timeout + retry" could create it twice), so it is sent once, and finishing it reads the account
  list first: an account whose sealed record is, byte for byte, one this entry sent is one that
  landed; only the rest are sent (once more), and the result says which.
- `read` — a batch burn ("Permanently delete up to 20 decoys in one call. Irreversible."): a
  repeat would answer an address the lost send burned as one it cannot find, so it is sent once,
  and finishing it reads each address first: one no longer served was burned; the batch is sent
  again for those still served only, and the result says, per address, "burned" or why not.

No two processes send one entry at once (`entry_lock`): a lock file beside the journal for each
entry is held by the first send from before the entry is journaled until it is settled or left
pending, and by a resend from reading what landed until it settles it; a resend that finds the
entry settled once it holds the lock sends nothing. So a lock file whose entry is gone from the
journal (dropped by unpairing, or left by a process that died) guards nothing: `sweep_entry_locks`
removes each one nobody holds — when the journal is opened, and when it is dropped — and leaves a
held one to the process sending it now, which removes it once its entry is settled.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from decoy_lab.errors import (
    APIError,
    DecoyError,
    NotFound,
    OutcomeUnknown,
    RateLimited,
    RevConflict,
    ServerError,
    TransportError,
)
from decoy_lab.store.journal import Journal, new_entry
from decoy_lab.store.profiles import make_private_dirs
from decoy_lab.transport import routes
from decoy_lab.transport.answers import is_unknown_outcome
from decoy_lab.transport.retry import MAX_RATE_LIMIT_WAIT

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

__all__ = [
    "CHECK",
    "FAMILY",
    "READ",
    "SAME",
    "batch_results",
    "is_account_entry",
    "is_id",
    "listed",
    "resend_entry",
    "send_journaled",
    "sweep_entry_locks",
]
FAMILY = "account"
SAME, CHECK, READ = "same", "check", "read"
FINISH = "conn.resend() (`%decoy resend`, `decoy-lab resend`, also from a new process)"
ENTRY_WAIT = 120.0  # seconds a send waits for another process finishing the same entry

Check = Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]  # (body sent, answer) → why not proved


def is_id(value: object) -> bool:
    """Whether a served value can be an id: text that fits one path segment (not 5, null or 100 kB,
    which would be kept, journaled and later overflow the URL of every read of it)."""
    return isinstance(value, str) and 0 < len(value) <= routes.ID_MAX


def _named(key: str) -> Check:
    def check(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
        return None if is_id(answer.get(key)) else f"the answer names no {key}"

    return check


def _address(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    if is_id(answer.get("id")) and is_id(answer.get("account_id")):
        return None
    return "the answer names no decoy and account"


def _password(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    return None if answer.get("has_password") is True else "the answer does not say a password is stored"


def _field(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    if answer.get("id") == body.get("id") and answer.get("status") in ("created", "existing"):
        return None
    return "the answer is not about this field (created or existing)"


def _rev(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    return None if isinstance(answer.get("rev"), int) else "the answer carries no new rev"


def _deleted(what: str) -> Check:
    def check(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
        return None if answer.get("deleted") is True else f"the answer does not say the {what} was deleted"

    return check


def _updated(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    return None if answer.get("updated") is True else "the answer does not say the address was updated"


def _results(body: Mapping[str, Any], answer: Mapping[str, Any]) -> str | None:
    return None if isinstance(answer.get("results"), list) else "the answer has no per-item results"


# What each kind's answer must show (checked the same on the first send and on a resend).
CHECKS: dict[str, Check] = {
    "address": _address,
    "account": _named("id"),
    "account edit": _named("id"),
    "password": _password,
    "field": _field,
    "field edit": _rev,
    "field delete": _deleted("field"),
    "account delete": _deleted("account"),
    "address update": _updated,
    "address burn": _deleted("address"),
    "linked burn": _named("burned_decoy_id"),
    "address edit": _named("edit_id"),
    "protect": _named("decoy_id"),
    "pause": lambda body, answer: None if isinstance(answer.get("succeeded"), list) else "no succeeded list",
    "batch burn": lambda body, answer: None if isinstance(answer.get("succeeded"), list) else "no succeeded list",
    "import": _results,
}


def is_account_entry(entry: Mapping[str, Any]) -> bool:
    return entry.get("family") == FAMILY


def _where(journal: Journal) -> str:
    return f" in {journal.path}" if journal.path is not None else " (in memory, for this kernel)"


# -- one process at a time on an entry -------------------------------------------------------------
_LOCAL_GUARD = threading.Lock()
_LOCAL: dict[tuple[int, str], threading.Lock] = {}  # (journal, entry) → its lock, for an in-memory journal


def _lock_path(journal: Journal, entry_id: str) -> Path:
    assert journal.path is not None
    return journal.path.with_name(f"{journal.path.name}.{entry_id}.lock")


@contextlib.contextmanager
def entry_lock(journal: Journal, entry_id: str, *, wait: float = ENTRY_WAIT) -> Iterator[None]:
    """Hold the entry's own lock: a file beside the journal (`<journal>.<entry id>.lock`, 0600,
    `flock`ed through filelock, as the journal itself is), so that no two processes send the same
    entry at once — the first send holds it until the entry is settled or left pending, a resend
    from reading what landed until it settles it. Another holder is waited for up to `wait`
    seconds (said in the log), then OutcomeUnknown: nothing was sent, the entry stays. An
    in-memory journal (no profile) is one process's: a lock per entry among its threads. The
    file is removed once the entry is settled (a holder that finds it settled sends nothing, so a
    lock file made anew after that guards nothing that can be sent)."""
    local: threading.Lock | None = None
    lock: FileLock | None = None
    if journal.path is None:
        with _LOCAL_GUARD:
            local = _LOCAL.setdefault((id(journal), entry_id), threading.Lock())
    else:
        make_private_dirs(journal.path.parent)
        lock = FileLock(str(_lock_path(journal, entry_id)), mode=0o600)

    def acquire(timeout: float) -> bool:
        if local is not None:
            return local.acquire(timeout=timeout) if timeout > 0 else local.acquire(blocking=False)
        assert lock is not None
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            return False
        return True

    if not acquire(0):
        log.info("pending write %s: another process is finishing it; waiting up to %.0f s", entry_id, wait)
        if not acquire(wait):
            raise OutcomeUnknown(
                f"pending write {entry_id}: another process has been finishing it for {wait:.0f} s; nothing was "
                f"sent, and it stays pending: run {FINISH} again once that process is done",
                entry=entry_id,
                sent=False,
            )
    settled = False
    try:
        yield
    finally:
        try:
            settled = journal.get(entry_id) is None
            if settled and journal.path is not None:
                with contextlib.suppress(FileNotFoundError):
                    _lock_path(journal, entry_id).unlink()
        finally:
            if lock is not None:
                lock.release()
            elif local is not None:
                local.release()
                if settled:
                    with _LOCAL_GUARD:
                        _LOCAL.pop((id(journal), entry_id), None)


_ENTRY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # new_entry's ids


def entry_lock_files(journal: Journal) -> dict[str, Path]:
    """The entries' lock files beside the journal's file, by entry id (none in memory). The
    journal's own lock (`<journal>.lock`) and any file not named for an entry id are not among them."""
    if journal.path is None or not journal.path.parent.is_dir():
        return {}
    prefix = f"{journal.path.name}."
    found = {}
    for path in journal.path.parent.glob(f"{glob.escape(journal.path.name)}.*.lock"):
        entry_id = path.name[len(prefix) : -len(".lock")]
        if _ENTRY_ID.fullmatch(entry_id):
            found[entry_id] = path
    return found


def sweep_entry_locks(journal: Journal) -> tuple[list[str], list[str]]:
    """Remove the lock file of every entry the journal no longer holds (settled, dropped, or left
    by a process that died before settling it), unless another holder has it. Returns (the entry
    ids whose lock file was removed, those left because it is held). A held one is a send in
    flight (a first send locks its entry before journaling it): it is left to that process, which
    removes the file once the entry is settled. Each file is removed while this process holds it,
    and only when the entry is still gone then; filelock's acquire retries on an inode unlinked
    under it, so a waiter never ends up holding a removed file. Another holder is never waited for."""
    removed: list[str] = []
    held: list[str] = []
    for entry_id, path in sorted(entry_lock_files(journal).items()):
        lock = FileLock(str(path), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            held.append(entry_id)
            continue
        try:
            if any(e.get("id") == entry_id for e in journal.everything()):
                continue  # journaled meanwhile: its lock guards it again
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(entry_id)
        finally:
            lock.release()
    if removed:
        log.info("removed the lock files of %d settled or dropped pending writes%s", len(removed), _where(journal))
    return removed, held


# -- the first send ---------------------------------------------------------------------------------
def send_journaled(
    s: Session,
    kind: str,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    *,
    again: str,
    target: str | None = None,
    ids: list[str] | None = None,
    mode: str = SAME,
    proof: Mapping[str, Any] | None = None,
    key: str | None = None,
) -> dict[str, Any]:
    """Enter the write in the journal, send it — under the retry rules (`same`: the same body
    again after an unknown outcome) or once (`check`) — and settle it once an answer proves it or
    refuses it. A `REV_CONFLICT` or 404 that the served row shows this very write caused is its
    success (an earlier send landed). No answer that proves it: OutcomeUnknown, which says what
    to do (`again`, and how resend finishes it); the entry stays. A connection refused every time
    sent nothing: that error is raised as it is, and nothing stays pending. `key`: what makes a
    repeat the same write (an `idempotency_key`, a field's id); an answer for it also settles an
    earlier entry of the same key (the advice "run it again with the same key" was followed)."""
    journal = s.journal
    intent = f"{kind} {method} {path} {key}" if key is not None else None
    entry = new_entry(
        kind,
        [(method, path, body)],
        ids=list(ids or []),
        target=target,
        intent=intent,
        family=FAMILY,
        mode=mode,
        proof=proof,
    )
    with entry_lock(journal, entry["id"]):  # held from before it is listed until it is settled or left
        journal.put(entry)
        before = s.reached
        try:
            answer = _send(s, entry)
        except DecoyError as exc:
            if is_unknown_outcome(exc):
                if s.reached == before and isinstance(exc, TransportError) and not exc.sent:
                    journal.settle(entry["id"])
                    raise  # the connection was refused every time: nothing was sent, and it says so
                raise _unknown(journal, entry, exc, again) from exc
            # Only a refusal after a send that may have landed can be this write's own doing (a refusal is
            # not counted in `reached`).
            proved = _proved(s, entry, exc) if s.reached > before else None
            journal.settle(entry["id"])
            if proved is None:
                raise
            log.info("%s %s: %s", method, path, proved)
            return {"outcome": "already applied", "said": proved}
        journal.settle(entry["id"])
        while intent is not None and (earlier := journal.find(intent)) is not None:
            log.info("%s: the answer for %s settles the earlier pending entry %s", kind, key, earlier["id"])
            journal.settle(earlier["id"])
        return answer


def _send(s: Session, entry: Mapping[str, Any], body: Any = None) -> dict[str, Any]:
    step = entry["sends"][0]
    body = step["body"] if body is None else body
    check = CHECKS[entry["kind"]]
    if entry.get("mode") in (CHECK, READ):
        return send_once(s, step["method"], step["path"], body, lambda a: check(body, a))
    return s.send(step["method"], step["path"], body, None, lambda a: check(body, a))


def send_once(
    s: Session, method: str, path: str, body: Any, check: Callable[[dict[str, Any]], str | None]
) -> dict[str, Any]:
    """One send of a write that is not safe to repeat: a 429 (nothing created) is waited out as
    told; an unknown outcome is raised, never resent."""
    for _ in range(s.retry.retries + 1):
        try:
            answer = s.api.request(method, path, json=body)
        except RateLimited as exc:
            wait = float(exc.retry_after) if isinstance(exc.retry_after, (int, float)) else s.retry.backoff
            if wait > MAX_RATE_LIMIT_WAIT:
                raise
            s.sleep(wait)
            continue
        except TransportError as exc:
            s.reached += exc.sent
            raise
        except ServerError:
            s.reached += 1
            raise
        s.reached += 1
        why = check(answer) if isinstance(answer, dict) else "the answer is not an object"
        if why:
            raise TransportError(f"{method} {path}: {why}; the outcome is unknown")
        return dict(answer)
    raise RateLimited(429, "RATE_LIMITED", f"{method} {path}: still limited after {s.retry.retries} waits")


def _unknown(journal: Journal, entry: dict[str, Any], exc: BaseException, again: str) -> OutcomeUnknown:
    step = entry["sends"][0]
    how = {
        CHECK: "reads the account list first and sends only what did not land",
        READ: "reads each address first and sends the batch again only for those still served",
    }.get(entry.get("mode") or SAME, "sends the same sealed bytes again and checks the answer")
    message = (
        f"{step['method']} {step['path']}: no send got an answer that proves it ({exc}); it may have committed. "
        f"{again + ' ' if again else ''}The sealed body is kept in the pending-writes journal{_where(journal)}: "
        f"{FINISH} {how}."
    )
    journal.note(entry["id"], message)
    return OutcomeUnknown(message, entry=entry["id"], ids=entry["ids"], sent=True)


# -- what the server serves now proves it -----------------------------------------------------------
def _proved(s: Session, entry: Mapping[str, Any], exc: DecoyError) -> str | None:
    """Did this very write land, though its send was now refused (`REV_CONFLICT`, or a 404/410 for
    a delete)? Only what the server serves now can say: the words of the proof, or None."""
    proof = entry.get("proof") or {}
    body = entry["sends"][0]["body"]
    status = exc.status if isinstance(exc, APIError) else None
    try:
        if entry["kind"] == "field edit" and isinstance(exc, RevConflict):
            served = _served_field(s, proof)
            if served is not None and served.get("ciphertext") == body.get("ciphertext"):
                return f"it had landed: the field serves this change (rev {served.get('rev')})"
        elif entry["kind"] == "field delete" and (isinstance(exc, RevConflict) or status in (404, 410)):
            if status in (404, 410) and _served_field(s, proof) is None:
                return "it had landed: the field is no longer served"
        elif entry["kind"] in ("account edit", "address update") and isinstance(exc, RevConflict):
            said = _holds_all(s, entry)
            if said is not None:
                return said
        elif entry["kind"] in GONE and status in (404, 410) and _gone(s, proof["read"]):
            return f"it had landed: the {GONE[entry['kind']]} is no longer served"
        elif entry["kind"] == "linked burn" and status in (400, 403):
            # A repeat meets the replacement (the account's own email: 403) or no linked address (400).
            moved = _unlinked(s, proof)
            if moved is not None and moved[0]:
                return moved[1]
    except DecoyError as read:
        log.info("%s: could not read back whether it landed: %s", entry["kind"], read)
    return None


GONE = {"account delete": "account", "address burn": "address"}  # kinds whose target a 404 shows gone


def _served(s: Session, path: str) -> dict[str, Any] | None:
    """The record at `path` as served now, or None when it is not (404). Any other failure to
    read it is raised."""
    try:
        return s.get(path)
    except NotFound:
        return None


def _gone(s: Session, path: str) -> bool:
    return _served(s, path) is None


def _holds_all(s: Session, entry: Mapping[str, Any]) -> str | None:
    """The words of the proof when the served record (`proof["read"]`) holds every member the
    entry's body set, else None."""
    body = entry["sends"][0]["body"]
    served = s.get(entry["proof"]["read"])
    asked = {k: v for k, v in body.items() if k not in ("expected_rev", "password_changed")}
    if not all(served.get(k) == v for k, v in asked.items()):
        return None
    what = "account" if entry["kind"] == "account edit" else "address"
    return f"it had landed: the {what} holds every member this update set (rev {served.get('rev')})"


def _before(s: Session, entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """Read before a resend (see the module docstring): (outcome, said) when what is served
    settles the entry without a send; None when it is to be sent again."""
    kind, proof = entry["kind"], entry.get("proof") or {}
    if kind in GONE:
        served = _served(s, proof["read"])
        if served is None:
            return "committed", f"it had landed: the {GONE[kind]} is no longer served"
        if kind == "account delete":
            rev = served.get("rev")
            if rev != proof.get("rev"):
                return (
                    f"not applied: the account changed since its delete was asked (rev {rev}, asked at rev "
                    f"{proof.get('rev')}); it was not deleted now — read it and delete it again if it is still to go",
                    "the account is still served, changed meanwhile",
                )
    elif kind == "address update":
        said = _holds_all(s, entry)
        if said is not None:
            return "committed", said
    elif kind == "linked burn":
        moved = _unlinked(s, proof)
        if moved is not None:
            return ("committed", moved[1]) if moved[0] else (f"not applied: {moved[1]}", moved[1])
    return None


def _unlinked(s: Session, proof: Mapping[str, Any]) -> tuple[bool, str] | None:
    """A burn of an account's linked address: None while that address is still linked (not
    landed); else (landed?, the words) — landed when it is no longer served either."""
    linked = s.get(proof["read"]).get("decoy_id")
    if linked == proof["decoy"]:
        return None
    if _gone(s, proof["decoy_read"]):
        now = f"; the account's address is now {linked}" if linked else ""
        return True, f"it had landed: address {proof['decoy']} is no longer served{now}"
    return False, f"address {proof['decoy']} was unlinked meanwhile, not burned by this write, and is still served"


def _served_field(s: Session, proof: Mapping[str, Any]) -> dict[str, Any] | None:
    listed = s.get(proof["read"], fields=list)
    return next((f for f in listed.get("fields") or [] if isinstance(f, dict) and f.get("id") == proof["id"]), None)


# -- finishing it later -----------------------------------------------------------------------------
def resend_entry(s: Session, entry: dict[str, Any]) -> dict[str, Any] | None:
    """Finish a journaled account write (see the module docstring). Returns {'entry', 'kind',
    'ids', 'target', 'outcome', 'said'}: `outcome` "committed" (the answer, or what is served now,
    proves it), "not applied: …" or "refused: …" (settled too); `said` what proved it. Still no
    answer that proves it: OutcomeUnknown, and the entry stays.

    It holds the entry's lock (`entry_lock`) from reading what landed to settling it, and reads the
    entry again once it holds it: another process (or thread) finishing the same entry is waited
    for, and an entry it settled meanwhile is not sent again — None is returned (that process
    reports its outcome)."""
    journal = s.journal
    with entry_lock(journal, entry["id"]):
        held = journal.get(entry["id"])
        if held is None:
            log.info("pending %s %s: settled meanwhile by another process; nothing sent", entry["kind"], entry["id"])
            return None
        return _finish(s, journal, held)


def _finish(s: Session, journal: Journal, entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"entry": entry["id"], "kind": entry["kind"], "ids": list(entry["ids"])}
    out["target"] = entry.get("target")
    try:
        if entry.get("mode") == CHECK:
            out["outcome"], out["said"], landed = _finish_unsure(s, entry)
            out["landed"] = landed
        elif entry.get("mode") == READ:
            out["outcome"], out["said"], out["results"] = _finish_burns(s, entry)
        elif (early := _before(s, entry)) is not None:
            out["outcome"], out["said"] = early
        else:
            answer = _send(s, entry)
            out["outcome"], out["said"] = "committed", _said(entry, answer)
    except OutcomeUnknown as exc:  # whether it landed could not be read: nothing was sent again
        journal.note(entry["id"], str(exc))
        raise
    except DecoyError as exc:
        if is_unknown_outcome(exc):
            raise _unknown(journal, entry, exc, "") from exc
        proved = _proved(s, entry, exc)
        if proved is not None:
            out["outcome"], out["said"] = "committed", proved
        elif isinstance(exc, RevConflict):
            out["outcome"] = f"not applied: it changed meanwhile, and not by this write ({exc})"
        else:  # settled: resending cannot change this answer, and it does not say what the first send did
            out["outcome"] = f"refused: {exc}"
            out["said"] = "refused now; whether an earlier send of it landed is not shown: read the account back"
    journal.settle(entry["id"])
    log.info("pending %s %s: %s", entry["kind"], entry["id"], out["outcome"])
    return out


def batch_results(ids: list[str], answer: Mapping[str, Any], done: str) -> dict[str, str]:
    """A batch's answer per id: `done` for each it lists in `succeeded`, each `failed` entry's
    reason ("Not permitted": "Ids you may not touch are listed in `failed` as "Not permitted" and
    left alone"), and for an id it lists in neither, that it said nothing of it."""
    out = dict.fromkeys(ids, "not in the answer: read the address to see what became of it")
    succeeded, failed = listed(answer, "succeeded"), listed(answer, "failed")
    out.update(
        {i: done for i in succeeded if isinstance(i, str) and i in out}
    )  # an id never sent is no outcome of this batch
    for f in failed:
        if isinstance(f, Mapping) and isinstance(f.get("id"), str) and f["id"] in out:
            out[f["id"]] = str(f.get("error") or f.get("reason") or "failed")
    return out


def listed(answer: Mapping[str, Any], key: str) -> list[Any]:
    """The answer's list `key`; nothing when it is missing or not a list (5 or "x" lists nothing)."""
    value = answer.get(key)
    return value if isinstance(value, list) else []


def _finish_burns(s: Session, entry: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    """A batch burn whose answer was lost: each address read first — never burned blindly. One no
    longer served is done ("burned": a burned address is never served again; an id this
    connection could never read reads the same, and the lost send burned nothing of it either);
    the batch is sent again for those still served only (a repeat burns only what it names)."""
    ids = [i for i in entry["sends"][0]["body"]["decoy_ids"] if isinstance(i, str)]
    served = [i for i in ids if _served(s, routes.decoy(i)) is not None]
    results = {i: "burned" for i in ids if i not in served}
    said = f"{len(results)} no longer served (burned, or never this connection's to read)" if results else ""
    if served:
        results.update(batch_results(served, _send(s, entry, {"decoy_ids": served}), "burned"))
        sent = f"sent again for the {len(served)} still served"
        said = f"{said}; {sent}" if said else sent
    failed = {i: why for i, why in results.items() if why != "burned"}
    if failed:
        said += "; not burned: " + ", ".join(f"{i} ({why})" for i, why in failed.items())
    return "committed", said, results


def _said(entry: Mapping[str, Any], answer: Mapping[str, Any]) -> str:
    if entry["kind"] == "address":
        again = " (the original, replayed: an earlier send had made it)" if answer.get("idempotent_replay") else ""
        return f"account {answer.get('account_id')}, address {answer.get('email')}{again}"
    if entry["kind"] == "field":
        return f"field {answer.get('id')} {answer.get('status')} (rev {answer.get('rev')})"
    if entry["kind"] == "address edit":
        return f"edit {answer.get('edit_id')} {answer.get('status')}"
    if entry["kind"] == "linked burn":
        fresh = f", replaced by {answer['new_decoy_email']}" if answer.get("new_decoy_email") else ""
        return f"address {answer.get('burned_decoy_id')} burned{fresh}"
    if entry["kind"] == "account delete":
        return (
            f"account {answer.get('account_id')} deleted: {answer.get('burned_decoys')} address(es) burned with it, "
            f"{answer.get('unlinked_decoys')} unlinked"
        )
    return "the answer proves it" + (f" (rev {answer['rev']})" if isinstance(answer.get("rev"), int) else "")


LANDED_LIMIT = 100  # accounts a page when reading what landed ("limit", at most 100)
LANDED_PAGES = 50  # pages read at most; a list longer than that, unsettled, sends nothing
CLOCK_SKEW = 86400.0  # seconds this machine's clock may be ahead of the server's, for the early stop


def _created(served: Mapping[str, Any]) -> float | None:
    text = served.get("created_at")
    try:
        return datetime.fromisoformat(text).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None


def landed(s: Session, blobs: list[str], since: float | None = None) -> dict[str, str]:
    """The sealed records among `blobs` that the account list serves now: blob → account id.

    The list is read newest first (`sort_by=created_at`, `order=desc`) until every record is
    found, the list ends, or — `since` being when the entry was first sent — the accounts read are
    older than that (less CLOCK_SKEW): none of what it created can come after. A list that goes on
    past LANDED_PAGES pages without settling it is not guessed at: OutcomeUnknown, nothing sent
    (a record beyond what was read would be created twice)."""
    wanted = set(blobs)
    found: dict[str, str] = {}
    params: dict[str, Any] = {"limit": LANDED_LIMIT, "sort_by": "created_at", "order": "desc"}
    try:
        for _ in range(LANDED_PAGES):
            body = s.get(routes.ACCOUNTS, params=params, accounts=list)
            served = [a for a in body.get("accounts") or [] if isinstance(a, dict) and isinstance(a.get("id"), str)]
            found.update({a["encrypted_data"]: a["id"] for a in served if a.get("encrypted_data") in wanted})
            page = body.get("pagination")
            cursor = page.get("next_cursor") if isinstance(page, dict) and page.get("has_more") else None
            times = [t for t in map(_created, served) if t is not None]
            older = since is not None and bool(times) and min(times) < since - CLOCK_SKEW
            if set(found) == wanted or older or not isinstance(cursor, str) or not cursor:
                return found
            params = {**params, "cursor": cursor}
    except DecoyError as exc:
        raise OutcomeUnknown(
            f"the account list cannot be read ({exc}), so whether the pending write landed is unknown; it stays "
            "pending and nothing was sent again (a repeat could create it twice)",
            sent=False,
        ) from exc
    raise OutcomeUnknown(
        f"the account list goes on past {LANDED_PAGES} pages of {LANDED_LIMIT} newer than this write, and what it "
        "created was not among them, so whether it landed is unknown; it stays pending and nothing was sent again "
        "(a repeat could create it twice)",
        sent=False,
    )


def _finish_unsure(s: Session, entry: dict[str, Any]) -> tuple[str, str, dict[int, str]]:
    """A write that is not safe to repeat: read which of its records landed, send only the rest."""
    body = entry["sends"][0]["body"]
    if entry["kind"] == "account":
        found = landed(s, [body["encrypted_data"]], entry.get("at"))
        if body["encrypted_data"] in found:
            return (
                "committed",
                f"it had landed: account {found[body['encrypted_data']]}",
                {0: found[body["encrypted_data"]]},
            )
        answer = _send(s, entry)
        return "committed", f"it had not landed; sent now: account {answer['id']}", {}
    items = body["accounts"]
    found = landed(s, [i["encrypted_data"] for i in items], entry.get("at"))
    had = {n: found[i["encrypted_data"]] for n, i in enumerate(items) if i["encrypted_data"] in found}
    rest = [n for n in range(len(items)) if n not in had]
    made: dict[int, str] = {}
    failed: dict[int, str] = {}
    if rest:
        answer = _send(s, entry, {**body, "accounts": [items[n] for n in rest]})
        for r in answer["results"]:
            if isinstance(r, Mapping) and isinstance(r.get("index"), int) and 0 <= r["index"] < len(rest):
                n = rest[r["index"]]
                if r.get("status") == "created" and isinstance(r.get("id"), str):
                    made[n] = r["id"]
                else:
                    failed[n] = str(r.get("error") or "failed")
        failed.update(dict.fromkeys((n for n in rest if n not in made and n not in failed), "not reported"))
    said = f"rows {_rows(had)} had landed; rows {_rows(made)} sent now" if rest else f"rows {_rows(had)} had landed"
    if failed:
        why = "; ".join(f"row {n}: {w}" for n, w in sorted(failed.items()))
        return f"refused: {len(failed)} of {len(items)} rows failed ({why})", said, {**had, **made}
    return "committed", said, {**had, **made}


def _rows(rows: Mapping[int, str]) -> str:
    return ", ".join(str(n) for n in sorted(rows)) or "none"
