"""Whether a load is still waiting for rows, and what that means in words a user can act on.

The answer's waiting states (`preparing`, `failed`, `preparing_unknown`, `failed_unknown`,
`shared_complete`) are saved and on their way, or no longer asked for — never lost, and never a
reason to start over. `wait_for_rows` reads again while rows are on their way, for at most the
spec's 90 seconds, and only then says the owner may be asked once to open Decoy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from decoy_lab.text import plural
from decoy_lab.vault.frames import DecodedRow


class Answered(Protocol):
    """What the waiting checks read of a load: the answer's members other than its rows."""

    @property
    def answer(self) -> Mapping[str, Any]: ...


class Counted(Answered, Protocol):
    """A load whose rows are counted by kind (`Vault.counts`)."""

    def counts(self) -> dict[str, int]: ...


V = TypeVar("V", bound=Answered)


class Reloads(Protocol):
    """What `wait_for_rows` reads again through (a Connection)."""

    def load(self) -> Any: ...


WAITING = "waiting"  # kind of a row the server listed by id only (preparing / failed)

# The waiting members of a memories answer that are counted and shown, and their shapes (http.expect_object).
WAITING_MEMBERS = {
    "preparing": list,
    "failed": list,
    "preparing_others": int,
    "failed_others": int,
    "retry_after_seconds": float,
    "preparing_total": int,
}


# The members that say rows may still arrive, so reading again may bring them (keys shared
# meanwhile log no change in the sync feed).
WAITING_KEYS = ("preparing", "preparing_others", "preparing_unknown")


def answer_waits(answer: Mapping) -> bool:
    """The one check: rows are still on their way (preparing), so reading again may bring them."""
    return any(answer.get(k) for k in WAITING_KEYS)


def own_rows_waiting(answer: Mapping) -> bool:
    """Rows this connection saved are still on their way (the answer lists them under `preparing`)."""
    return bool(answer.get("preparing"))


def on_their_way(answer: Mapping) -> int:
    """How many rows the answer says are on their way (this connection's and others'). Rows, not
    memories: the answer counts topic and link rows with them and never says which is which (their
    labels are sealed), so a count of memories comes only from the rows once they open."""
    return len(answer.get("preparing") or []) + int(answer.get("preparing_others") or 0)


def no_longer_asked(answer: Mapping) -> int:
    """How many rows Decoy has stopped asking the owner's phone for (stopped_asking)."""
    return len(answer.get("failed") or []) + int(answer.get("failed_others") or 0)


def explain_waiting(answer: Mapping) -> list[str]:
    """Sentences for the waiting fields of a memories GET answer (empty when nothing waits)."""
    notes: list[str] = []
    retry = answer.get("retry_after_seconds")
    again = f" Read again in {retry} s and carry on with what is readable meanwhile." if retry else ""
    preparing = answer.get("preparing") or []
    if preparing:
        notes.append(
            f"{plural(len(preparing), 'row')} this connection saved (topic rows included) "
            "are stored and waiting for the owner's phone to share their keys with this connection's "
            "current key; Decoy is asking the phone in the background. Keep their ids and do not save "
            "them again." + again
        )
    others = answer.get("preparing_others") or 0
    if others:
        notes.append(
            f"{plural(others, 'row')} saved by the owner or other connections (memories, topics "
            "and links together: the answer counts rows, and which is which shows once they open) are "
            "granted to this connection and on their way: the owner's phone has not shared their keys "
            "yet." + again
        )
    if answer.get("preparing_unknown"):
        notes.append(
            "This connection holds a grant by category, topic or account, and no key has been shared "
            "under it yet; Decoy is asking the owner's phone during the first day. This says nothing "
            "about whether matching memories exist." + again
        )
    failed = answer.get("failed") or []
    if failed:
        notes.append(
            f"{plural(len(failed), 'row')} this connection saved still have no key for its "
            "current key, and Decoy has stopped asking the owner's phone on its own (stopped_asking). "
            "They are stored: they read normally as soon as the phone shares them, and a later read may "
            "ask the phone once more. Carry on with what is readable; if the task needs them now, ask "
            "the owner once to open Decoy."
        )
    failed_others = answer.get("failed_others") or 0
    if failed_others:
        notes.append(
            f"{plural(failed_others, 'memory', 'memories')} saved by others are granted but unshared, "
            "and Decoy has stopped asking the owner's phone for them on its own (stopped_asking)."
        )
    if answer.get("failed_unknown"):
        notes.append(
            "Nothing has been shared under this connection's category, topic or account grants, and "
            "Decoy is not asking the owner's phone for it on its own (stopped_asking); Decoy cannot "
            "tell whether such memories exist. Carry on with what is readable."
        )
    if answer.get("shared_complete"):
        at = answer.get("shared_complete_at")
        notes.append(
            "The owner's device reports it has shared everything it can under this connection's "
            "grants" + (f" (at {at})." if at else ".")
        )
    if answer.get("preparing_capped"):
        notes.append(f"The id lists were cut to 500 ids each; {answer.get('preparing_total')} rows wait in all.")
    return notes


# a row listed by id only: its status (the answer's key) and what that means for this connection
_LISTED = (
    ("preparing", "saved; waiting for the owner's phone to share its key with this connection"),
    ("failed", "saved; Decoy stopped asking the owner's phone to share its key (stopped_asking)"),
)


def waiting_rows(answer: Mapping) -> list[DecodedRow]:
    """The ids the server listed under `preparing` / `failed`, as rows with a status and reason."""
    return [
        DecodedRow(str(rid), WAITING, status=status, mine=True, reason=reason)
        for status, reason in _LISTED
        for rid in answer.get(status) or []
    ]


def waiting_sentence(
    vault: Answered | None, *, prompt: str = "%decoy", verb: str = "memories", waits: str | None = None
) -> str | None:
    """One sentence on what the last read of `vault` is still waiting for and when to read again
    (None when nothing waits). Every view of a vault shows it: frames, the browser, the map, the
    shell's tables. `prompt` is how the user's front end spells a command, `verb` the one that
    waits with --wait; `waits` the whole command that waits, where it is spelled otherwise (a
    shell's read waits without a flag)."""
    answer = getattr(vault, "answer", None) or {}
    retry = answer.get("retry_after_seconds")
    waits = waits or f"{prompt} {verb} --wait"
    again = f"read again in {retry:g} s ({waits} waits for them)" if retry else "read again soon"
    coming = on_their_way(answer)
    if coming:
        return (
            f"{plural(coming, 'row is', 'rows are')} (memories, topics, links) on their way from the "
            f"owner's phone, which has not shared their keys with this connection yet: {again}."
        )
    if answer.get("preparing_unknown"):
        return (
            "No key has been shared under this connection's category, topic or account grant yet; "
            f"Decoy is asking the owner's phone: {again}."
        )
    stopped = no_longer_asked(answer)
    if stopped:
        return (
            f"{plural(stopped, 'row is', 'rows are')} no longer asked for (stopped_asking): carry on "
            "with what is readable; if the task needs them now, ask the owner once to open Decoy."
        )
    if answer.get("failed_unknown"):
        return (
            "Nothing has been shared under this connection's category, topic or account grants, and Decoy "
            "has stopped asking the owner's phone (stopped_asking)."
        )
    return None


def empty_sentence(
    vault: Counted | None,
    what: str = "memories",
    *,
    filtered: bool = False,
    prompt: str = "%decoy",
    verb: str = "memories",
    waits: str | None = None,
) -> str:
    """Why a view of `vault` shows no `what`: rows on their way, a filter, unreadable rows, or a
    grant that reaches none."""
    waiting = waiting_sentence(vault, prompt=prompt, verb=verb, waits=waits)
    if waiting:
        return f"No {what} yet: {waiting}"
    if filtered:
        return f"No {what} match these filters."
    unreadable = 0
    try:
        unreadable = vault.counts().get("unreadable", 0) if vault is not None else 0
    except AttributeError:
        pass
    if unreadable:
        return f"No {what} could be read: {plural(unreadable, 'row')} did not open ({prompt} rows says why)."
    return f"No {what}: none is stored that this connection's grant reaches ({prompt} access shows the grant)."


def is_waiting(vault: Answered | None) -> bool:
    """Rows are still on their way (preparing), so reading again may bring them."""
    answer = getattr(vault, "answer", None) or {}
    return answer_waits(answer)


WAIT_LIMIT = 90.0  # the spec: "still `preparing` after 60 to 90 seconds of reading, you may ask the owner once"


def wait_for_rows(
    conn: Reloads,
    vault: V,
    *,
    limit: float = WAIT_LIMIT,
    sleep: Callable[[float], Any] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    say: Callable[[str], Any] = print,
    bar: bool = True,
    prompt: str = "%decoy",
    waits: str | None = None,
) -> V:
    """Read again after the server's `retry_after_seconds` while rows are on their way, for at
    most `limit` seconds of reading, with a progress bar; the last Vault. If rows still wait then,
    say once that the owner may be asked to open Decoy (never earlier), in the words of the front
    end (`prompt`, `waits`: waiting_sentence)."""
    start = clock()
    progress = None
    if bar and is_waiting(vault):
        from tqdm.auto import tqdm

        # Seconds waited of the most there is to wait, and no rate: a clock is not a throughput.
        progress = tqdm(
            total=round(limit),
            desc="waiting for the owner's phone",
            bar_format="{desc}: {bar} {n:.0f} of {total:.0f} s",
        )
    try:
        while is_waiting(vault) and clock() - start < limit:
            retry = float(vault.answer.get("retry_after_seconds") or 5.0)
            until = min(start + limit, clock() + max(retry, 0.5))
            while clock() < until:
                sleep(min(0.5, until - clock()))
                if progress is not None:
                    progress.n = min(round(clock() - start), progress.total)
                    progress.refresh()
            vault = conn.load()
    finally:
        if progress is not None:  # the bar ends saying how it ended (a stale 6 % would puzzle)
            took = round(clock() - start)
            arrived = not is_waiting(vault)
            progress.bar_format = f"the rows arrived after {took} s" if arrived else f"still waiting after {took} s"
            progress.reset(total=max(took, 1))  # ends full: a notebook's bar would end red short of its total
            progress.update(max(took, 1))
            progress.close()
    if is_waiting(vault):
        say(
            f"Still waiting after {clock() - start:.0f} s: {waiting_sentence(vault, prompt=prompt, waits=waits)} "
            "If the task needs them "
            "now, ask the owner once to open Decoy on their phone."
        )
    return vault
