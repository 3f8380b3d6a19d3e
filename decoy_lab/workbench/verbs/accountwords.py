"""What the account verbs say in both front ends: an id given by its start (as the `accounts` and
`decoys` tables print it) made whole, a secret masked to its length unless revealed, where an
unlock stands and what to run next, and what to reuse after an unknown outcome.

A secret is shown by its length only, as the inspector shows one: a fingerprint of a password
would let anyone who sees it test guesses.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError
from decoy_lab.secret import Secret
from decoy_lab.text import plural
from decoy_lab.workbench.verbs.parsing import UsageProblem
from decoy_lab.workbench.verbs.table import BY_NAME, PROMPT, SHELL

if TYPE_CHECKING:  # the client loads with the first command that needs a connection
    from decoy_lab.client.connection import Connection
    from decoy_lab.protocol.accounts_decoys import AddressEdit
    from decoy_lab.protocol.accounts_unlock import Unlocked
    from decoy_lab.protocol.accounts_write import CreatedAccount

MASK = "••••••"
NAME_WIDTH = 16  # `idempotency_key` and a space: the values line up
Named = list[tuple[str, str]]  # what a verb shows, by name, in order
WHOLE = 36  # a UUID's length: an id this long is taken as given (the server says whether it exists)


def whole_id(given: str, ids: Iterable[str], *, what: str, lists: str, verb: str, front: str) -> str:
    """The one id of `ids` that `given` starts; `given` itself when it is whole. None or several:
    a UsageProblem that says so and which verb lists them (`lists`)."""
    known = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
    if given in known:
        return given
    hits = [i for i in known if i.startswith(given)] if given else []
    if len(hits) == 1:
        return hits[0]
    usage = BY_NAME[verb].usage(front)
    if len(hits) > 1:
        shown = ", ".join(hits[:3]) + (", …" if len(hits) > 3 else "")
        raise UsageProblem(
            f"{given!r} is the start of {len(hits)} {what} ids ({shown}): give more of it", verb=verb, usage=usage
        )
    if len(given) >= WHOLE:
        return given
    raise UsageProblem(
        f"no {what} this connection may see has an id starting {given!r} ({PROMPT[front]} {lists} lists them)",
        verb=verb,
        usage=usage,
    )


def account_id(conn: Connection, given: str, *, verb: str, front: str) -> str:
    """An account's whole id from its start (the account list is read only for a short one)."""
    if len(given) >= WHOLE:
        return given
    from decoy_lab.protocol.accounts_list import pages

    return whole_id(given, (a["id"] for a in pages(conn.session)), what="account", lists="accounts", verb=verb,
                    front=front)  # fmt: skip


def decoy_id(conn: Connection, given: str, *, verb: str, front: str) -> str:
    """A Decoy address's whole id from its start (every address, paused ones too)."""
    if len(given) >= WHOLE:
        return given
    ids = list(conn.decoys("all")["id"])
    return whole_id(given, ids, what="Decoy address", lists="decoys --status all", verb=verb, front=front)


def field_id(conn: Connection, account: str, given: str, *, verb: str, front: str) -> str:
    """A secret field's whole id from its start, or from its label (the `accounts` table lists the
    labels): the fields served to this connection, each label opened with its key."""
    from decoy_lab.recipes.account_records import open_field
    from decoy_lab.transport import routes

    listed = conn.session.get(routes.account(account, "fields"), fields=list).get("fields") or []
    served = [f for f in listed if isinstance(f, dict)]
    ids = [f["id"] for f in served if isinstance(f.get("id"), str)]
    if given in ids or len(given) >= WHOLE:
        return given
    starts = [i for i in ids if i.startswith(given)]
    if len(starts) == 1:
        return starts[0]
    labelled = []
    for f in served:
        try:
            if open_field(f, conn.agent_key).get("label") == given:
                labelled.append(f["id"])
        except DecoyError:
            continue  # a field this connection cannot open has no label it can match
    if len(labelled) == 1:
        return labelled[0]
    if len(labelled) > 1:
        raise UsageProblem(
            f"{len(labelled)} fields are labelled {given!r}: give the id of the one you mean",
            verb=verb,
            usage=BY_NAME[verb].usage(front),
        )
    return whole_id(given, ids, what="field of this account", lists="accounts", verb=verb, front=front)


def masked(value: Secret | str | None, reveal: bool = False) -> str:
    """A secret as a command shows it: its length, or the text itself when revealing."""
    if value is None:
        return "(none)"
    text = value.reveal() if isinstance(value, Secret) else value
    return text if reveal else f"{MASK} ({plural(len(text), 'character')})"


def named_lines(values: Named) -> list[str]:
    """Each (name, value) as one line, the values aligned: what a shell prints, a repr shows."""
    return [f"{name:<{NAME_WIDTH}}{value}" for name, value in values]


def unlock_said(got: Unlocked, *, front: str, account: str, wait: float, reveal: bool) -> tuple[Named, str]:
    """What an unlock shows: the secrets by name (masked unless `reveal`) when it is ready, and
    one sentence of where it stands and what to run next."""
    p = PROMPT[front]
    if got.status == "ready":
        shown_values = [("username", got.username or "(none)"), ("password", masked(got.password, reveal))]
        shown_values += [(label, masked(value, reveal)) for label, value in got.fields.items()]
        shown = "shown" if reveal else "masked to their length (--reveal shows them)"
        return shown_values, f"unlocked account {account}: its secrets, {shown}"
    if got.status == "pending":
        again = (
            f"{p} unlock {account} --request {got.request_id}"
            if front == SHELL
            else f"{p} unlock {account} (this connection remembers the request; --request {got.request_id} in a new kernel)"
        )
        waited = f" after {wait:g} s" if wait else ""
        return [], (
            f"pending: the owner has not decided yet{waited} (request {got.request_id}). {again} polls this same "
            "request, --wait S follows it; asking again without it asks the owner again"
        )
    if got.status == "preparing":
        after = f"{got.retry_after:g}" if got.retry_after is not None else "a few"
        return [], (
            f"preparing: the owner's phone is making a copy of the secrets sealed to this connection; ask again in "
            f"{after} s ({p} unlock {account} --wait {max(30.0, 2 * (got.retry_after or 0)):g} follows it)"
        )
    words = {
        "denied": "the owner declined: do not ask again on your own",
        "expired": "the owner did not answer in time",
    }
    return [], f"{got.status}: {words.get(got.status) or got.note}"


def unknown_said(exc: DecoyError, *, front: str, reuse: str | None) -> str:
    """An unknown outcome in `front`'s words: what happened, what to reuse if trying again
    (`reuse`), and that `resend` finishes it from any process."""
    p = PROMPT[front]
    text, end = str(exc), "it may have committed."
    said = text.split(end, 1)[0] + end if end in text else text  # the library's advice is in Python's words
    words = [f"unknown outcome: {said}"]
    if reuse:
        words.append(reuse)
    words.append(
        f"The sealed body is kept in the pending-writes journal: {p} resend finishes it (the same sealed bytes, "
        "or a read first where a repeat is not safe), also from a new process."
    )
    return " ".join(words)


def problems_said(problems: list[str]) -> str:
    """Reading a write back found it does not read as sent (or the owner's app would not open it)."""
    return "sent, but " + "; ".join(problems)


def created_values(made: CreatedAccount) -> Named:
    """An account made with its address: its ids, its address and the key that makes a repeat the same."""
    return [
        ("account_id", made.account_id),
        ("email", made.email),
        ("decoy_id", made.decoy_id),
        ("idempotency_key", made.idempotency_key),
    ]


def edit_said(edit: AddressEdit, *, front: str, decoy: str) -> str:
    """Where a queued edit of an address stands, and what to run to follow it."""
    if edit.status == "pending":
        return (
            f"queued for the owner's devices, which apply it: {PROMPT[front]} decoy-edit {decoy} {edit.edit_id} "
            "says what became of it"
        )
    if edit.status == "applied":
        rev = f" (the address is now rev {edit.applied_rev})" if edit.applied_rev is not None else ""
        return f"applied by the owner's devices{rev}"
    if edit.status == "rejected":
        return f"rejected: {edit.reject_reason or 'the owner declined it'}"
    return f"{edit.status}: the owner's devices did not apply it"


def deleted_said(done: Mapping[str, Any]) -> str:
    """What went with a deleted account (`burned_decoys` and `unlinked_decoys` are counts)."""

    def count(key: str) -> int:
        n = done.get(key)
        return n if isinstance(n, int) and not isinstance(n, bool) else 0

    parts = [f"{plural(count('burned_decoys'), 'address', 'addresses')} burned with it"]
    if count("unlinked_decoys"):
        parts.append(f"{plural(count('unlinked_decoys'), 'address', 'addresses')} unlinked and kept live")
    said = f" ({done['said']})" if done.get("said") else ""
    return "; ".join(parts) + f"; the memories filed about it stay{said}"


def decoy_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `Connection.update_decoy` that decoy-update's flags mean."""
    changes: dict[str, Any] = {}
    if args.label is not None or args.clear_label:
        changes["label"] = None if args.clear_label else args.label
    if args.status is not None:
        changes["status"] = args.status
    return changes


def updated_said(done: Mapping[str, Any], decoy: str) -> str:
    """An address updated in place, or found to hold these already."""
    rev = f" (rev {done['rev']})" if done.get("rev") is not None else ""
    if done.get("updated") is False:
        return f"address {decoy} holds these already: nothing changed{rev}"
    return f"updated address {decoy}{rev}"
