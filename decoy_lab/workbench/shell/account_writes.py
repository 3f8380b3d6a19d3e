"""`decoy-lab` sub-commands that write the account family: account-new (an account with its Decoy
address), account-save (one without), account-update, account-delete, password, field-add,
field-set, field-delete, unlock, protect, decoy-rename, decoy-edit, decoy-update, decoy-pause,
decoy-burn, account-burn-decoy and account-import.

A secret (a password, a field's value) is never an argument — a command line lands in the shell's
history and the process list: it is read from a hidden prompt on a terminal, else as one line of
stdin (its newline dropped); an import's passwords are in its file. Unlocked secrets print
masked to their length unless `--reveal`. A burn cannot be undone: on a terminal it asks for the
address (or its id) to be typed back — for several addresses, each listed, their number — and
without one it needs `--yes`.

`--json` prints the outcome as one JSON object on stdout instead (exit codes unchanged, notes
still on stderr): `outcome` first — done; disagrees (reading it back did not agree: `problems`);
partial (some addresses or rows were not done); not ready (an unlock still pending or
preparing: ask again); not given (an unlock that ended without the secrets: denied, expired,
failed …); not applied (an edit rejected or expired); not confirmed (a burn declined at the terminal); refused (with the server's
`status`, `code`, `message` and the `hint`); unknown (with what to `reuse` and the journal
`entry` that resend finishes) — then the ids and status. Never a secret: an unlock's secrets are
their `length`, and their `value` only with --reveal.

Exit codes: 0 when the server's answer proves the write (and reading it back agrees); 1 when the
server refused it (its code and words, and the command that answers it), when the outcome is
unknown (what to reuse, and that `decoy-lab resend` finishes it), when reading it back found it
does not read as sent, when an unlock is not ready, when an address was not paused or burned
or an imported row failed, or when a burn was not confirmed at the terminal; 2 for a mistake
(`error: …`, a burn without `--yes` where nothing can ask, or of more than 20 addresses, among
them).
"""

from __future__ import annotations

import argparse
import functools
import getpass
import shlex
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import APIError, InsufficientGrant, OutcomeUnknown
from decoy_lab.secret import Secret
from decoy_lab.text import escaped
from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.terminal import connection, note, print_json

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
    if args.command == "account-import":
        return verbs.IMPORT_AGAIN
    if args.command == "decoy-burn" and getattr(args, "batch", False):
        return verbs.burn_batch_resend(SH)
    if args.command == "account-save":
        return "Do not save it again: the route has no idempotency key, and a second save could make a second account."
    return None


def _refusal(exc: APIError, args: argparse.Namespace, hint: str | None) -> dict[str, Any]:
    """A refusal as --json gives it: the server's status, code and words, and what answers it."""
    out: dict[str, Any] = {
        "outcome": "refused",
        "verb": args.command,
        "status": exc.status,
        "code": exc.code,
        "message": verbs.front_words(exc.message, SH),
        "recovery": exc.recovery,
    }
    if isinstance(exc, InsufficientGrant) and exc.required_permission:
        out["required_permission"] = exc.required_permission
    return {**out, "hint": hint}


def _unknown_json(exc: OutcomeUnknown, args: argparse.Namespace, said: str) -> dict[str, Any]:
    """An unknown outcome as --json gives it: what to reuse in a second try, the journal entry
    `resend` finishes, and the words."""
    reuse = {k: getattr(args, k) for k in ("idempotency_key", "field_id") if getattr(args, k, None)}
    return {"outcome": "unknown", "verb": args.command, "reuse": reuse, "entry": exc.entry, "said": said}


def answered(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A write's command: a refusal from the server, or an unknown outcome, is said on stderr and
    exits 1 — with --json, also as one object on stdout (`outcome`: refused, unknown). A mistake
    still reaches `guarded`: `error: …`, exit 2, nothing on stdout."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except OutcomeUnknown as exc:
            said = verbs.unknown_said(exc, front=SH, reuse=_reuse(args))
            note(said)
            if getattr(args, "json", False):
                print_json(_unknown_json(exc, args, said))
            return 1
        except APIError as exc:
            note(f"refused: {verbs.front_words(str(exc), SH)}")
            hint = verbs.hint(exc, SH, verb=args.command, profile=args.profile)
            if hint:
                note(f"hint: {hint}")
            if getattr(args, "json", False):
                print_json(_refusal(exc, args, hint))
            return 1

    return run


def _done(
    args: argparse.Namespace,
    data: dict[str, Any],
    lines: list[str],
    *,
    problems: Sequence[str] = (),
    outcome: str | None = None,
) -> int:
    """The outcome on stdout: `lines`, or with --json one object (`outcome` first: done, or
    disagrees when reading it back found `problems`). Problems are said on stderr too; exit 1."""
    if args.json:
        said = outcome or ("disagrees" if problems else "done")
        print_json({"outcome": said, **data, **({"problems": list(problems)} if problems else {})})
    elif lines:
        _print_lines(lines)
    return _checked(problems)


def _print_lines(lines: Sequence[str]) -> None:
    """Lines on stdout, each with its control characters shown, never acted on: they carry what an
    import file or a server says (a row's name, why an address was not burned)."""
    print(escaped("\n".join(lines), newlines=True))


def _checked(problems: Sequence[str]) -> int:
    if problems:
        note(verbs.problems_said(list(problems)))
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
    if made.replayed:
        note("the address an earlier try with this key made: the server answered it again, and made nothing new")
    values = verbs.created_values(made)
    data = {**dict(values), "replayed": bool(made.replayed)}
    return _done(args, data, verbs.named_lines(values), problems=made.verified.problems)


@answered
def cmd_account_save(args: argparse.Namespace) -> int:
    """Save an account without a Decoy address, its record sealed to the owner; prints its id. The
    route has no idempotency key: after an unknown outcome, `decoy-lab resend` reads the account
    list first and sends it again only if it did not land."""
    with connection(args) as conn:
        account = conn.save_account(args.service, url=args.url, username=args.username, label=args.label)
    return _done(args, {"account_id": account}, [account])


@answered
def cmd_account_delete(args: argparse.Namespace) -> int:
    """Delete an account: it is gone from reads, its secret fields with it, and its own Decoy email
    is burned. Needs account.delete on it, even for an account this connection created. The
    memories filed about it stay."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="account-delete", front=SH)
        done = conn.delete_account(account)
    note(verbs.deleted_said(done))
    data = {"account_id": account, **{k: done.get(k) for k in ("deleted", "burned_decoys", "unlinked_decoys", "said")}}
    return _done(args, data, [f"deleted account {account}"])


@answered
def cmd_password(args: argparse.Namespace) -> int:
    """Set an account's password, sealed to the owner's account key, then read back. The password
    is read from a hidden prompt on a terminal, else as one line of stdin — never from the
    command line."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="password", front=SH)
        verified = conn.set_password(account, read_secret("password", "password"))
    data = {"account_id": account, "password_set": True}
    return _done(args, data, [f"password set for account {account}"], problems=verified.problems)


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
    if field.status == "existing":
        note("an earlier try with this id had stored it: the field is stored once")
    data = {"account_id": account, "field_id": field.id, "label": args.label, "status": field.status, "rev": field.rev}
    return _done(args, data, [field.id], problems=field.verified.problems)


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
    data = {"account_id": account, "field_id": field.id, "status": field.status, "rev": field.rev}
    return _done(args, data, [f"{field.status} field {field.id}{rev}"])


@answered
def cmd_field_delete(args: argparse.Namespace) -> int:
    """Delete a secret field (FIELD: its id, the start of it, or its label) — only the version
    read now."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="field-delete", front=SH)
        field_id = verbs.field_id(conn, account, args.field, verb="field-delete", front=SH)
        done = conn.delete_field(account, field_id)
    if done.get("said"):
        note(str(done["said"]))
    data = {"account_id": account, "field_id": field_id, "deleted": True, "said": done.get("said")}
    return _done(args, data, [f"deleted field {field_id}"])


def _secret_json(value: Any, reveal: bool) -> dict[str, Any] | None:
    """A secret as --json gives it: its length, and its text only with --reveal."""
    if value is None:
        return None
    text = value.reveal() if isinstance(value, Secret) else str(value)
    return {"length": len(text), **({"value": text} if reveal else {})}


def _unprintable(got: Any) -> bool:
    """Whether an unlocked secret would print escaped (control characters, bidi controls …)."""
    secrets = [got.password, *got.fields.values()]
    texts = [v.reveal() if isinstance(v, Secret) else str(v) for v in secrets if v is not None]
    return any(escaped(t) != t for t in texts)


@answered
def cmd_unlock(args: argparse.Namespace) -> int:
    """Read an account's secrets back, with the owner's approval: ready at once under a covering
    permission, else pending while the owner decides, or preparing while the owner's phone makes a
    copy sealed to this connection. --wait S follows it for up to S seconds; --request polls a
    pending request an earlier unlock printed. The secrets print masked to their length unless
    --reveal (--json gives each secret's length, and its text only with --reveal). Exit 0 only
    when they were read."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="unlock", front=SH)
        if args.request:  # the request an earlier process made: poll it, never ask the owner again
            conn.account_book.pending[(account, ())] = args.request
        if args.wait:
            note(f"asking for the secrets of account {account}; following the answer for up to {args.wait:g} s")
        got = conn.unlock(account, reason=args.reason, wait=args.wait)
    shown, said = verbs.unlock_said(got, front=SH, account=args.account, wait=args.wait, reveal=args.reveal)
    note(said)
    data: dict[str, Any] = {
        "account_id": account,
        "status": got.status,
        "request_id": got.request_id,
        "retry_after": got.retry_after,
        "said": said,
    }
    if got.status == "ready":
        data["username"] = got.username
        data["password"] = _secret_json(got.password, args.reveal)
        data["fields"] = {label: _secret_json(value, args.reveal) for label, value in got.fields.items()}
    if args.reveal and not args.json and got.status == "ready" and _unprintable(got):
        # the terminal is shown the secret escaped (never acted on), so it is not the value to copy
        note("a secret holds control characters, shown escaped: --json --reveal gives its exact text")
    outcome = "done" if got.status == "ready" else "not given" if got.done else "not ready"
    _done(args, data, verbs.named_lines(shown), outcome=outcome)
    return 0 if got.status == "ready" else 1


@answered
def cmd_protect(args: argparse.Namespace) -> int:
    """Give an account a Decoy address: link --decoy, or mint a fresh one. An account that has one
    keeps it. Prints the account, its address and the address's id."""
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="protect", front=SH)
        decoy = verbs.decoy_id(conn, args.decoy, verb="protect", front=SH) if args.decoy else None
        done = conn.protect(account, decoy)
    if done.already_protected:
        note("the account already had this address: it keeps it")
    values = [("account_id", done.account_id), ("email", done.email or "(unknown)"), ("decoy_id", done.decoy_id)]
    data = {
        "account_id": done.account_id,
        "email": done.email,
        "decoy_id": done.decoy_id,
        "already_protected": done.already_protected,
    }
    return _done(args, data, verbs.named_lines(values))


def _edit_said(args: argparse.Namespace, edit: AddressEdit, decoy: str) -> int:
    """A queued edit's id and status on stdout, what it means on stderr; 1 once it will never apply."""
    said = verbs.edit_said(edit, front=SH, decoy=decoy)
    note(said)
    will = edit.status in ("pending", "applied")
    data = {
        "decoy_id": edit.decoy_id,
        "edit_id": edit.edit_id,
        "status": edit.status,
        "applied_rev": edit.applied_rev,
        "reject_reason": edit.reject_reason,
        "said": said,
    }
    lines = verbs.named_lines([("edit_id", edit.edit_id), ("status", edit.status)])
    _done(args, data, lines, outcome="done" if will else "not applied")
    return 0 if will else 1


@answered
def cmd_decoy_rename(args: argparse.Namespace) -> int:
    """Rename a Decoy address (or change its avatar too): a patch sealed to the owner's key, queued
    for the owner's devices. Prints the edit's id and status (pending, applied, rejected,
    expired); --wait S follows it for up to S seconds."""
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-rename", front=SH)
        edit = conn.rename_decoy(decoy, name=" ".join(args.name), avatar=args.avatar, wait=args.wait)
    return _edit_said(args, edit, args.decoy)


@answered
def cmd_decoy_edit(args: argparse.Namespace) -> int:
    """What became of a queued edit of a Decoy address: pending, applied, rejected or expired."""
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-edit", front=SH)
        edit = conn.decoy_edit(decoy, args.edit)
    return _edit_said(args, edit, args.decoy)


@answered
def cmd_decoy_update(args: argparse.Namespace) -> int:
    """Change a Decoy address's label (--label, --clear-label) or status (--status inactive pauses
    its mail, active resumes it) in place. Its name is sealed: decoy-rename changes it."""
    verbs.check(verbs.BY_NAME["decoy-update"], args, SH)
    with connection(args) as conn:
        decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-update", front=SH)
        done = conn.update_decoy(decoy, **verbs.decoy_changes(args))
    data = {"decoy_id": decoy, "updated": done.get("updated", True), "rev": done.get("rev")}
    return _done(args, data, [verbs.updated_said(done, decoy)])


@answered
def cmd_account_update(args: argparse.Namespace) -> int:
    """Change an account in place, at the rev read now (REV_CONFLICT: read again, apply the same
    change): --service re-seals its record to the owner, whole (with --url and --username: the
    server cannot open the record to change one key of it), --label, --status, --two-factor on|off.
    Prints the account as the server answers it; exit 1 when that answer does not hold a change."""
    verbs.check(verbs.BY_NAME["account-update"], args, SH)
    changes = verbs.account_changes(args)
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="account-update", front=SH)
        done = conn.update_account(account, **changes)
    shown, problems = verbs.account_updated(done, changes)
    data: dict[str, Any] = {"account_id": account, "record_resealed": "record" in changes}
    data.update({k: done.get(k) for k in ("agent_label", "status", "two_factor_enabled", "rev", "said") if k in done})
    return _done(args, data, verbs.named_lines(shown), problems=problems)


def _confirm(args: argparse.Namespace, *, email: str, target: str, given: str) -> bool:
    """Asked on a terminal: the address (or its id) typed back burns it; --yes skips the question."""
    if args.yes:
        return True
    note(verbs.burn_warning(SH, email=email, decoy=target, given=given))
    print(f"type {'the address' if email else 'its id'} to burn it: ", end="", file=sys.stderr, flush=True)
    if verbs.confirmed(sys.stdin.readline(), email, target):
        return True
    note(f"not burned: what was typed is not {email or target}; nothing was sent")
    if args.json:
        print_json({"outcome": "not confirmed", "decoy_id": target, "email": email or None})
    return False


def _confirm_many(args: argparse.Namespace, targets: dict[str, str]) -> bool:
    """Asked on a terminal: each address is listed, and typing how many there are burns them all.
    The count, not each address: typing back twenty addresses invites pasting them, which proves
    nothing, while the count is what a wrong glob or a pasted list gets wrong, and it is read off
    the list just shown (--yes skips the question)."""
    if args.yes:
        return True
    note(verbs.burn_list_warning(SH, targets))
    print(f"type {len(targets)} (how many addresses) to burn them all: ", end="", file=sys.stderr, flush=True)
    if verbs.confirmed_count(sys.stdin.readline(), len(targets)):
        return True
    note(f"not burned: what was typed is not {len(targets)}; nothing was sent")
    if args.json:
        addresses = [{"decoy_id": d, "email": e or None} for d, e in targets.items()]
        print_json({"outcome": "not confirmed", "addresses": addresses})
    return False


def _needs_yes(args: argparse.Namespace, given: str | list[str] | None) -> None:
    """Without a terminal nothing can ask: --yes on the line itself, else a mistake (exit 2)."""
    if not args.yes and not sys.stdin.isatty():
        raise verbs.unconfirmed(args.command, SH, given=given, why="stdin is not a terminal to confirm it at")


@answered
def cmd_decoy_burn(args: argparse.Namespace) -> int:
    """Burn Decoy addresses for good, with all their mail: irreversible (`decoy-lab decoy-update
    DECOY --status inactive` pauses one instead, reversibly). On a terminal it asks first: one
    address is typed back (or its id); for several, each is listed and their number is typed.
    Without a terminal, --yes is needed. Several (at most 20: one confirmation covers one call) go
    in one call, and each id prints with "burned" or why it was not (the server's words); exit 1
    if any was not burned. An account's own Decoy email goes only with its account (`decoy-lab
    account-delete ACCOUNT`); a Personal Alias needs alias.burn. A lost answer is finished by
    `decoy-lab resend`, which reads each address first and burns only those still served."""
    _needs_yes(args, args.decoys)
    with connection(args) as conn:
        targets = verbs.burn_targets(conn, args.decoys, verb="decoy-burn", front=SH)
        args.batch = len(targets) > 1  # what a lost answer's words say to reuse
        if args.batch:
            if not _confirm_many(args, targets):
                return 1
            got = conn.burn_decoys(list(targets))
            return _burned_many(args, targets, got)
        ((decoy, email),) = targets.items()
        if not _confirm(args, email=email, target=decoy, given=args.decoys[0]):
            return 1
        done = conn.burn_decoy(decoy)
    shown, problems = verbs.burned_values(done, email)
    data = {"decoy_id": decoy, "email": email or None, **{k: done.get(k) for k in ("deleted", "burned_at", "said")}}
    return _done(args, data, verbs.named_lines(shown), problems=problems)


def _burned_many(args: argparse.Namespace, targets: dict[str, str], got: dict[str, str]) -> int:
    """Each address of a batch burn and "burned" or why not; exit 1 if any was not burned."""
    outcome = {d: got.get(d, "the answer does not name it") for d in targets}
    return _each_address(args, outcome, "burned", verbs.burn_said(outcome, SH), emails=targets)


def _each_address(
    args: argparse.Namespace, outcome: dict[str, str], word: str, said: str, *, emails: Mapping[str, str] | None = None
) -> int:
    """A batch's outcome (burn, pause): each address and `word` ("burned") or why not, the count
    said on stderr; with --json each address's `word` true or false and its `error`. Exit 1 if any
    was not done."""
    note(said)
    every = all(v == word for v in outcome.values())
    addresses = [
        {
            "decoy_id": d,
            **({"email": emails.get(d) or None} if emails is not None else {}),
            word: v == word,
            **({} if v == word else {"error": v}),
        }
        for d, v in outcome.items()
    ]
    lines = [f"{decoy}  {v}" for decoy, v in verbs.batch_values(outcome)]
    _done(args, {"addresses": addresses}, lines, outcome="done" if every else "partial")
    return 0 if every else 1


@answered
def cmd_account_burn_decoy(args: argparse.Namespace) -> int:
    """Burn the Personal Alias linked to an account (needs alias.burn) and give the account a fresh
    address (needs account.create; --no-replace leaves it without one): irreversible. On a
    terminal it asks you to type the linked address (or its id) back; without one, --yes is
    needed. An account's own Decoy email is never burned this way: it goes only with its account
    (`decoy-lab account-delete ACCOUNT`)."""
    _needs_yes(args, None)  # the line names the account, not its address
    with connection(args) as conn:
        account = verbs.account_id(conn, args.account, verb="account-burn-decoy", front=SH)
        linked, email = verbs.linked_address(conn, account, verb="account-burn-decoy", front=SH)
        if not _confirm(args, email=email, target=linked, given=linked):
            return 1
        done = conn.burn_account_decoy(account, replace=not args.no_replace)
    shown, problems = verbs.linked_burned(done, linked, replace=not args.no_replace)
    data = {
        "account_id": account,
        "burned_decoy_id": done.get("burned_decoy_id", linked),
        "burned_email": email or None,
        **{k: done.get(k) for k in ("new_decoy_id", "new_decoy_email", "said")},
    }
    return _done(args, data, verbs.named_lines(shown), problems=problems)


@answered
def cmd_decoy_pause(args: argparse.Namespace) -> int:
    """Pause inbound mail on Decoy addresses: reversible (`decoy-lab decoy-update DECOY --status
    active` resumes one). More than 20 are sent 20 a call, as the route takes them: pausing a
    paused address changes nothing, so each call stands alone and a lost answer is sent again.
    Prints each id with "paused" or why it was not (the server's words, e.g. "Not permitted");
    exit 1 if any was not paused."""
    with connection(args) as conn:
        ids = verbs.decoy_ids(conn, args.decoys, verb="decoy-pause", front=SH)
        got = conn.pause_decoys(ids)
    outcome = {i: got.get(i, "the answer does not name it") for i in ids}
    return _each_address(args, outcome, "paused", verbs.pause_said(outcome, SH))


def _import_text(path: str) -> str:
    return sys.stdin.read() if path == "-" else verbs.import_text(path, verb="account-import", front=SH)


def _import_json(run: verbs.ImportRun, args: argparse.Namespace, said: str) -> dict[str, Any]:
    """An import as --json gives it: each row's outcome (never a password), the counts, and what
    stopped it (a refusal's code, an unknown outcome's words)."""
    rows: list[dict[str, Any]] = []
    for i, record in enumerate(run.records):
        row: dict[str, Any] = {"row": i + 1, "name": record.get("name")}
        if i in run.created:
            row.update(outcome="created", account_id=run.created[i])
        elif i in run.failed:
            row.update(outcome="failed", error=run.failed[i])
        else:
            row["outcome"] = "unknown" if i in run.unknown else "not sent"
        rows.append(row)
    outcome = "unknown" if run.lost else "refused" if run.refused else "done" if run.ok else "partial"
    out: dict[str, Any] = {
        "outcome": outcome,
        "rows": rows,
        "created": len(run.created),
        "failed": len(run.failed),
        "unknown": len(run.unknown),
        "not_sent": len(run.unsent),
        "said": said,
    }
    if run.refused is not None:
        out.update(code=run.refused.code, status=run.refused.status, message=run.refused.message)
    if run.lost is not None:
        out["entry"] = run.lost.entry
    return out


@answered
def cmd_account_import(args: argparse.Namespace) -> int:
    """Save a password manager's export as accounts, each record sealed with the vault key (the
    connection needs everything) and sent 25 a call. FILE is a JSON array of records, or a CSV
    whose header names the columns (name, username, password, url, notes …); `-` reads stdin.
    The passwords are in the file, never on the command line, and never printed. Prints each
    row's outcome; exit 1 if any row failed or its outcome is unknown. A batch has no idempotency
    key, so a lost answer is never sent again blindly: `decoy-lab accounts` shows what landed, and
    `decoy-lab resend` lists the accounts and sends only the rows it does not find."""
    records = verbs.import_records(
        _import_text(args.file), source="stdin" if args.file == "-" else args.file, verb="account-import", front=SH
    )
    with connection(args) as conn:
        run = verbs.import_rows(conn, records)
    said = run.said(SH)
    note(said)
    if run.refused is not None:
        note(f"refused: {verbs.front_words(str(run.refused), SH)}")
    if run.lost is not None:
        note(verbs.unknown_said(run.lost, front=SH, reuse=_reuse(args)))
    if args.json:
        print_json(_import_json(run, args, said))
    else:
        _print_lines(verbs.named_lines(run.values()))
    return 0 if run.ok else 1


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
    "account-update": cmd_account_update,
    "decoy-burn": cmd_decoy_burn,
    "account-burn-decoy": cmd_account_burn_decoy,
    "decoy-pause": cmd_decoy_pause,
    "account-import": cmd_account_import,
}
