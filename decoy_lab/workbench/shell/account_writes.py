"""`decoy-lab` sub-commands that write the account family: account-new (an account with its Decoy
address), account-save (one without), account-delete, password, field-add, field-set,
field-delete, unlock, protect, decoy-rename, decoy-edit and decoy-update.

A secret (a password, a field's value) is never an argument — a command line lands in the shell's
history and the process list: it is read from a hidden prompt on a terminal, else as one line of
stdin (its newline dropped). Unlocked secrets print masked to their length unless `--reveal`.

Exit codes: 0 when the server's answer proves the write (and reading it back agrees); 1 when the
server refused it (its code and words, and the command that answers it), when the outcome is
unknown (what to reuse, and that `decoy-lab resend` finishes it), when reading it back found it
does not read as sent, or when an unlock is not ready; 2 for a mistake (`error: …`).
"""

from __future__ import annotations

import argparse
import functools
import getpass
import shlex
import sys
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from decoy_lab.errors import APIError, OutcomeUnknown
from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.terminal import connection, note

if TYPE_CHECKING:  # the client loads with the first command that needs a connection
    from decoy_lab.protocol.accounts_decoys import AddressEdit

SH = verbs.SHELL


def read_secret(what: str, verb: str) -> str:
    """A secret from a hidden prompt on a terminal, else one line of stdin (its newline dropped)."""
    if sys.stdin.isatty():
        try:
            text = getpass.getpass(f"{what} (not shown): ")
        except EOFError:
            text = ""
    else:
        text = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not text:
        raise verbs.UsageProblem(
            f"the {what} is empty: type it at the prompt, or pipe it in as one line",
            verb=verb,
            usage=verbs.BY_NAME[verb].usage(SH),
        )
    return text


def _reuse(args: argparse.Namespace) -> str | None:
    """What to give a second try of this write so it is the same write, in the shell's words."""
    if args.command == "account-new":
        return (
            f"Trying again? Give the same key: decoy-lab account-new {shlex.quote(args.service)} --idempotency-key "
            f"{args.idempotency_key} answers the address it made, never a second one."
        )
    if args.command == "field-add":
        return (
            f"Trying again? Give the same id: decoy-lab field-add {shlex.quote(args.account)} {shlex.quote(args.label)} --field-id "
            f"{args.field_id} is stored once."
        )
    if args.command == "account-save":
        return "Do not save it again: the route has no idempotency key, and a second save could make a second account."
    return None


def answered(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A write's command: a refusal from the server, or an unknown outcome, is said and exits 1
    (a mistake still reaches `guarded`: `error: …`, exit 2)."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except OutcomeUnknown as exc:
            note(verbs.unknown_said(exc, front=SH, reuse=_reuse(args)))
            return 1
        except APIError as exc:
            note(f"refused: {verbs.front_words(str(exc), SH)}")
            hint = verbs.hint(exc, SH, verb=args.command, profile=args.profile)
            if hint:
                note(f"hint: {hint}")
            return 1

    return run


def _checked(problems: list[str]) -> int:
    if problems:
        note(verbs.problems_said(problems))
        return 1
    return 0


@answered
def cmd_account_new(args: argparse.Namespace) -> int:
    """Create an account with its Decoy address in one call, its details sealed to the owner; prints
    its account_id, email, decoy_id and idempotency_key, one per line. After an unknown outcome,
    give the same --idempotency-key again (the server answers the address it made) or run
    `decoy-lab resend`."""
    args.idempotency_key = args.idempotency_key or f"decoy-lab-{uuid.uuid4()}"
    with connection(args) as conn:
        made = conn.create_account(
            args.service, url=args.url, username=args.username, label=args.label, idempotency_key=args.idempotency_key
        )
    print("\n".join(verbs.named_lines(verbs.created_values(made))))
    if made.replayed:
        note("the address an earlier try with this key made: the server answered it again, and made nothing new")
    return _checked(made.verified.problems)


@answered
def cmd_account_save(args: argparse.Namespace) -> int:
    """Save an account without a Decoy address, its record sealed to the owner; prints its id. The
    route has no idempotency key: after an unknown outcome, `decoy-lab resend` reads the account
    list first and sends it again only if it did not land."""
    with connection(args) as conn:
        print(conn.save_account(args.service, url=args.url, username=args.username, label=args.label))
    return 0


@answered
def cmd_account_delete(args: argparse.Namespace) -> int:
    """Delete an account: it is gone from reads, its secret fields with it, and its own Decoy email
    is burned. Needs account.delete on it, even for an account this connection created. The
    memories filed about it stay."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="account-delete", front=SH)
        done = conn.delete_account(account)
    print(f"deleted account {account}")
    note(verbs.deleted_said(done))
    return 0


@answered
def cmd_password(args: argparse.Namespace) -> int:
    """Set an account's password, sealed to the owner's account key, then read back. The password
    is read from a hidden prompt on a terminal, else as one line of stdin — never from the
    command line."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="password", front=SH)
        verified = conn.set_password(account, read_secret("password", "password"))
    print(f"password set for account {account}")
    return _checked(verified.problems)


@answered
def cmd_field_add(args: argparse.Namespace) -> int:
    """Add a secret field (an API key, a recovery code) to an account; prints its id. The value is
    read from a hidden prompt on a terminal, else as one line of stdin — never from the command
    line. After an unknown outcome, give the same --field-id again (it is stored once)."""
    verbs.check(verbs.BY_NAME["field-add"], args, SH)
    args.field_id = args.field_id or str(uuid.uuid4())
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="field-add", front=SH)
        args.account = account
        value = read_secret(f"value of {args.label!r}", "field-add")
        field = conn.add_field(account, args.label, value, field_type=args.type, field_id=args.field_id)
    print(field.id)
    if field.status == "existing":
        note("an earlier try with this id had stored it: the field is stored once")
    return _checked(field.verified.problems)


@answered
def cmd_field_set(args: argparse.Namespace) -> int:
    """Change a secret field's value (FIELD: its id, the start of it, or its label), every other
    part of it kept. The new value is read from a hidden prompt on a terminal, else as one line of
    stdin — never from the command line."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="field-set", front=SH)
        field_id = verbs.field_id(conn, account, args.field, verb="field-set", front=SH)
        field = conn.set_field(account, field_id, read_secret("new value", "field-set"))
    rev = f" (rev {field.rev})" if field.rev is not None else ""
    print(f"{field.status} field {field.id}{rev}")
    return 0


@answered
def cmd_field_delete(args: argparse.Namespace) -> int:
    """Delete a secret field (FIELD: its id, the start of it, or its label) — only the version
    read now."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="field-delete", front=SH)
        field_id = verbs.field_id(conn, account, args.field, verb="field-delete", front=SH)
        done = conn.delete_field(account, field_id)
    print(f"deleted field {field_id}")
    if done.get("said"):
        note(str(done["said"]))
    return 0


@answered
def cmd_unlock(args: argparse.Namespace) -> int:
    """Read an account's secrets back, with the owner's approval: ready at once under a covering
    permission, else pending while the owner decides, or preparing while the owner's phone makes a
    copy sealed to this connection. --wait S follows it for up to S seconds; --request polls a
    pending request an earlier unlock printed. The secrets print masked to their length unless
    --reveal. Exit 0 only when they were read."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="unlock", front=SH)
        if args.request:  # the request an earlier process made: poll it, never ask the owner again
            conn.account_book.pending[(account, ())] = args.request
        if args.wait:
            note(f"asking for the secrets of account {account}; following the answer for up to {args.wait:g} s")
        got = conn.unlock(account, reason=args.reason, wait=args.wait)
    shown, said = verbs.unlock_said(got, front=SH, account=args.account, wait=args.wait, reveal=args.reveal)
    if shown:
        print("\n".join(verbs.named_lines(shown)))
    note(said)
    return 0 if got.status == "ready" else 1


@answered
def cmd_protect(args: argparse.Namespace) -> int:
    """Give an account a Decoy address: link --decoy, or mint a fresh one. An account that has one
    keeps it. Prints the account, its address and the address's id."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="protect", front=SH)
        decoy = verbs.decoy_id(conn, args.decoy, verb="protect", front=SH) if args.decoy else None
        done = conn.protect(account, decoy)
    print(
        "\n".join(
            verbs.named_lines(
                [("account_id", done.account_id), ("email", done.email or "(unknown)"), ("decoy_id", done.decoy_id)]
            )
        )
    )
    if done.already_protected:
        note("the account already had this address: it keeps it")
    return 0


def _edit_said(edit: AddressEdit, decoy: str) -> int:
    """A queued edit's id and status on stdout, what it means on stderr; 1 once it will never apply."""
    print("\n".join(verbs.named_lines([("edit_id", edit.edit_id), ("status", edit.status)])))
    note(verbs.edit_said(edit, front=SH, decoy=decoy))
    return 0 if edit.status in ("pending", "applied") else 1


@answered
def cmd_decoy_rename(args: argparse.Namespace) -> int:
    """Rename a Decoy address (or change its avatar too): a patch sealed to the owner's key, queued
    for the owner's devices. Prints the edit's id and status (pending, applied, rejected,
    expired); --wait S follows it for up to S seconds."""
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-rename", front=SH)
        edit = conn.rename_decoy(decoy, name=" ".join(args.name), avatar=args.avatar, wait=args.wait)
    return _edit_said(edit, args.decoy)


@answered
def cmd_decoy_edit(args: argparse.Namespace) -> int:
    """What became of a queued edit of a Decoy address: pending, applied, rejected or expired."""
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-edit", front=SH)
        edit = conn.decoy_edit(decoy, args.edit)
    return _edit_said(edit, args.decoy)


@answered
def cmd_decoy_update(args: argparse.Namespace) -> int:
    """Change a Decoy address's label (--label, --clear-label) or status (--status inactive pauses
    its mail, active resumes it) in place. Its name is sealed: decoy-rename changes it."""
    verbs.check(verbs.BY_NAME["decoy-update"], args, SH)
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-update", front=SH)
        done = conn.update_decoy(decoy, **verbs.decoy_changes(args))
    print(verbs.updated_said(done, decoy))
    return 0


RUN: dict[str, Callable[[argparse.Namespace], int]] = {
    "account-new": cmd_account_new,
    "account-save": cmd_account_save,
    "account-delete": cmd_account_delete,
    "password": cmd_password,
    "field-add": cmd_field_add,
    "field-set": cmd_field_set,
    "field-delete": cmd_field_delete,
    "unlock": cmd_unlock,
    "protect": cmd_protect,
    "decoy-rename": cmd_decoy_rename,
    "decoy-edit": cmd_decoy_edit,
    "decoy-update": cmd_decoy_update,
}
