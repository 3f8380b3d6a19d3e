"""The notebook's account verbs: account-new, account-save, account-update, account-delete,
password, field-add, field-set, field-delete, unlock, protect, decoy-rename, decoy-edit,
decoy-update, decoy-pause, decoy-burn, account-burn-decoy and account-import, each over
`Connection` (`RUN`, merged into handlers.py's table).

A secret (a password, a field's value) is never a `%decoy` argument — the line would stay in the
notebook's history and outputs: it is asked for at a hidden prompt (`getpass`, which a kernel
answers with a password box), or, where no one can answer one (a notebook run headless), taken
from a variable of the notebook that `--from NAME` names. What each verb gives back is the library's answer (`made =
%decoy account-new Acme`, then `made.account_id`), shown as the sentence that says what happened;
unlocked secrets show masked to their length unless `--reveal` (`u.password.reveal()` reads one).
A refusal is the server's typed error; an unknown outcome says what to reuse and that `%decoy
resend` finishes it. A burn is irreversible and a notebook has no prompt to confirm it at, so
the line itself must say `--yes`. A pause, a burn of several addresses or an import gives back
each address's or row's outcome, refused ones too: the value holds what was done.
"""

from __future__ import annotations

import getpass
import html
import shlex
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import StdinNotImplementedError

from decoy_lab.errors import DecoyError, OutcomeUnknown
from decoy_lab.secret import Secret
from decoy_lab.workbench import verbs

if TYPE_CHECKING:  # the client loads with the first verb that needs a connection
    from decoy_lab.protocol.accounts_decoys import AddressEdit

NB = verbs.NOTEBOOK


class Notebook(Protocol):
    """What an account verb uses of `DecoyMagics`: the current connection, and the IPython shell
    whose namespace `--from NAME` reads. (`DecoyMagics.reveal` shows raw keys in traces; a password
    is shown only when one unlock asks, with `--reveal`.)"""

    shell: Any

    def conn(self) -> Any: ...


class Answered:
    """What an account verb gives back: the library's answer (`value`; its attributes, or a
    server answer's members, read through this object too), shown as its values by name and the
    sentence that says what happened."""

    def __init__(self, value: Any, shown: list[tuple[str, str]], said: str = ""):
        self.value, self.shown, self.said = value, list(shown), said

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # IPython's display probes (_repr_html_, …) are not the answer's
            raise AttributeError(name)
        if isinstance(self.value, Mapping) and name in self.value:  # a server's answer: its members
            return self.value[name]
        return getattr(self.value, name)

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def __repr__(self) -> str:
        return "\n".join([*verbs.named_lines(self.shown), *([self.said] if self.said else [])])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td><code>{html.escape(v)}</code></td></tr>"
            for k, v in self.shown
        )
        table = f"<table>{rows}</table>" if rows else ""
        return f"{table}<p>{html.escape(self.said)}</p>" if self.said else table


def ask_secret(what: str, verb: str) -> str:
    """A secret from a hidden prompt (a kernel's password box); empty is a mistake."""
    try:
        text = getpass.getpass(f"{what} (not shown): ")
    except EOFError:
        text = ""
    except StdinNotImplementedError:  # a kernel run without a front end to ask (nbconvert, papermill)
        raise verbs.UsageProblem(
            f"this kernel has no front end to ask for the {what} (it runs without input): run the cell in "
            "JupyterLab or a console, or give --from NAME, a variable holding it — a secret is never taken on the "
            "%decoy line",
            verb=verb,
            usage=verbs.BY_NAME[verb].usage(NB),
        ) from None
    if not text:
        raise verbs.UsageProblem(f"the {what} is empty", verb=verb, usage=verbs.BY_NAME[verb].usage(NB))
    return text


def secret_from(m: Notebook, args: Any, what: str, verb: str) -> str:
    """The secret a verb writes: from the notebook's variable `--from NAME` (a str or a Secret),
    else asked for at a hidden prompt. A missing, empty or other-typed variable is a mistake. A
    missing name is not repeated: a password typed there by mistake can look like a name
    (`hunter2`), and the cell's output would keep it."""
    name = args.from_name
    if name is None:
        return ask_secret(what, verb)
    usage = verbs.BY_NAME[verb].usage(NB)
    namespace = getattr(m.shell, "user_ns", None) or {}
    if not name.isidentifier() or name not in namespace:
        raise verbs.UsageProblem(
            f"--from names a variable of this notebook holding the {what}, and no variable of the name given is "
            "set: set one first (e.g. with getpass), then give its name",
            verb=verb,
            usage=usage,
        )
    value = namespace[name]
    text = value.reveal() if isinstance(value, Secret) else value
    if not isinstance(text, str):
        raise verbs.UsageProblem(
            f"--from {name}: it holds a {type(value).__name__}, not a str or a Secret", verb=verb, usage=usage
        )
    if not text:
        raise verbs.UsageProblem(f"--from {name}: the {what} it holds is empty", verb=verb, usage=usage)
    return text


@contextmanager
def _unknown(reuse: str | None = None) -> Iterator[None]:
    """An unknown outcome in the notebook's words: what to reuse, and that `%decoy resend` finishes it."""
    try:
        yield
    except OutcomeUnknown as exc:
        raise DecoyError(verbs.unknown_said(exc, front=NB, reuse=reuse)) from None


def _checked(problems: list[str], where: str) -> None:
    if problems:
        raise DecoyError(f"{where} — {verbs.problems_said(problems)}")


def _account(m: Notebook, given: str, verb: str) -> str:
    return verbs.account_id(m.conn(), given, verb=verb, front=NB)


def _account_new(m: Notebook, args: Any, cell: str | None) -> Answered:
    key = args.idempotency_key or f"decoy-lab-{uuid.uuid4()}"
    reuse = (
        f"Trying again? Give the same key: %decoy account-new {shlex.quote(args.service)} --idempotency-key {key} answers the "
        "address it made, never a second one."
    )
    with _unknown(reuse):
        made = m.conn().create_account(
            args.service, url=args.url, username=args.username, label=args.label, idempotency_key=key
        )
    where = f"account {made.account_id} was made with the address {made.email}"
    _checked(made.verified.problems, where)
    replayed = " (an earlier try with this key made it: the server answered it again)" if made.replayed else ""
    return Answered(
        made, verbs.created_values(made), f"Created account {args.service!r} with its Decoy address{replayed}."
    )


def _account_save(m: Notebook, args: Any, cell: str | None) -> Answered:
    reuse = "Do not save it again: the route has no idempotency key, and a second save could make a second account."
    with _unknown(reuse):
        account = m.conn().save_account(args.service, url=args.url, username=args.username, label=args.label)
    return Answered(account, [("account_id", account)], f"Saved account {args.service!r}, without an address.")


def _account_delete(m: Notebook, args: Any, cell: str | None) -> Answered:
    account = _account(m, args.account, "account-delete")
    with _unknown():
        done = m.conn().delete_account(account)
    return Answered(done, [("account_id", account)], f"Deleted account {account}: {verbs.deleted_said(done)}.")


def _password(m: Notebook, args: Any, cell: str | None) -> Answered:
    account = _account(m, args.account, "password")
    with _unknown():
        verified = m.conn().set_password(account, secret_from(m, args, "password", "password"))
    _checked(verified.problems, f"the password of account {account} was stored")
    return Answered(verified, [], f"Password set for account {account}, sealed to the owner, and read back.")


def _field_add(m: Notebook, args: Any, cell: str | None) -> Answered:
    account = _account(m, args.account, "field-add")
    field_id = args.field_id or str(uuid.uuid4())
    reuse = (
        f"Trying again? Give the same id: %decoy field-add {account} {shlex.quote(args.label)} --field-id {field_id} is "
        "stored once."
    )
    value = secret_from(m, args, f"value of {args.label!r}", "field-add")
    with _unknown(reuse):
        field = m.conn().add_field(account, args.label, value, field_type=args.type, field_id=field_id)
    _checked(field.verified.problems, f"field {field.id} was stored")
    again = " (an earlier try with this id had stored it)" if field.status == "existing" else ""
    return Answered(field, [("field_id", field.id)], f"Added field {args.label!r} to account {account}{again}.")


def _field_set(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    account = _account(m, args.account, "field-set")
    field_id = verbs.field_id(conn, account, args.field, verb="field-set", front=NB)
    with _unknown():
        field = conn.set_field(account, field_id, secret_from(m, args, "new value", "field-set"))
    rev = f" (rev {field.rev})" if field.rev is not None else ""
    return Answered(field, [], f"Field {field.id}: {field.status}{rev}.")


def _field_delete(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    account = _account(m, args.account, "field-delete")
    field_id = verbs.field_id(conn, account, args.field, verb="field-delete", front=NB)
    with _unknown():
        done = conn.delete_field(account, field_id)
    said = f" ({done['said']})" if done.get("said") else ""
    return Answered(done, [], f"Deleted field {field_id} of account {account}{said}.")


def _unlock(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    account = _account(m, args.account, "unlock")
    if args.request:  # a request asked before this kernel: poll it, never ask the owner again
        conn.account_book.pending[(account, ())] = args.request
    got = conn.unlock(account, reason=args.reason, wait=args.wait)
    shown, said = verbs.unlock_said(got, front=NB, account=args.account, wait=args.wait, reveal=args.reveal)
    return Answered(got, shown, said)


def _protect(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    account = _account(m, args.account, "protect")
    decoy = verbs.decoy_id(conn, args.decoy, verb="protect", front=NB) if args.decoy else None
    with _unknown():
        done = conn.protect(account, decoy)
    shown = [("email", done.email or "(unknown)"), ("decoy_id", done.decoy_id)]
    kept = "It already had this address, and keeps it." if done.already_protected else "It has a Decoy address now."
    return Answered(done, shown, f"Protected account {account}. {kept}")


def _decoy_rename(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-rename", front=NB)
    with _unknown():
        edit = conn.rename_decoy(decoy, name=" ".join(args.name), avatar=args.avatar, wait=args.wait)
    return _edit_shown(edit, args.decoy)


def _decoy_edit(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-edit", front=NB)
    return _edit_shown(conn.decoy_edit(decoy, args.edit), args.decoy)


def _decoy_update(m: Notebook, args: Any, cell: str | None) -> Answered:
    conn = m.conn()
    decoy = verbs.decoy_id(conn, args.decoy, verb="decoy-update", front=NB)
    with _unknown():
        done = conn.update_decoy(decoy, **verbs.decoy_changes(args))
    said = verbs.updated_said(done, decoy)
    return Answered(done, [], f"{said[0].upper()}{said[1:]}.")


def _account_update(m: Notebook, args: Any, cell: str | None) -> Answered:
    account = _account(m, args.account, "account-update")
    changes = verbs.account_changes(args)
    with _unknown():
        done = m.conn().update_account(account, **changes)
    shown, problems = verbs.account_updated(done, changes)
    _checked(problems, f"account {account} was updated")
    return Answered(done, shown, f"Updated account {account} at the rev read now.")


def _needs_yes(args: Any, verb: str, given: str | list[str] | None) -> None:
    """A notebook has no prompt to confirm an irreversible burn at: the line itself says --yes."""
    if not args.yes:
        raise verbs.unconfirmed(verb, NB, given=given, why="a notebook has no prompt to confirm it at")


def _decoy_burn(m: Notebook, args: Any, cell: str | None) -> Answered:
    """One address: its burn's answer. Several (at most 20, one call): each address's outcome,
    refused ones too (the value holds which were burned)."""
    _needs_yes(args, "decoy-burn", args.decoys)
    conn = m.conn()
    targets = verbs.burn_targets(conn, args.decoys, verb="decoy-burn", front=NB)
    if len(targets) > 1:
        with _unknown(verbs.burn_batch_resend(NB)):
            got = conn.burn_decoys(list(targets))
        outcome = {d: got.get(d, "the answer does not name it") for d in targets}
        said = verbs.burn_said(outcome, NB)
        return Answered(outcome, verbs.batch_values(outcome), f"{said[0].upper()}{said[1:]}.")
    ((decoy, email),) = targets.items()
    with _unknown():
        done = conn.burn_decoy(decoy)
    shown, problems = verbs.burned_values(done, email)
    _checked(problems, f"the burn of address {decoy} was sent")
    return Answered(done, shown, f"Burned address {email or decoy} for good, with all its mail.")


def _account_burn_decoy(m: Notebook, args: Any, cell: str | None) -> Answered:
    _needs_yes(args, "account-burn-decoy", None)  # the line names the account, not its address
    conn = m.conn()
    account = _account(m, args.account, "account-burn-decoy")
    linked, email = verbs.linked_address(conn, account, verb="account-burn-decoy", front=NB)
    with _unknown():
        done = conn.burn_account_decoy(account, replace=not args.no_replace)
    shown, problems = verbs.linked_burned(done, linked, replace=not args.no_replace)
    _checked(problems, f"the burn of address {linked} was sent")
    fresh = " It has a fresh address now." if not args.no_replace else " It has no address now."
    return Answered(done, shown, f"Burned {email or linked}, the address account {account} had.{fresh}")


def _decoy_pause(m: Notebook, args: Any, cell: str | None) -> Answered:
    """Each address's outcome comes back, refused ones too (the value holds which were paused)."""
    conn = m.conn()
    ids = verbs.decoy_ids(conn, args.decoys, verb="decoy-pause", front=NB)
    with _unknown():
        got = conn.pause_decoys(ids)
    outcome = {i: got.get(i, "the answer does not name it") for i in ids}
    said = verbs.pause_said(outcome, NB)
    return Answered(outcome, verbs.batch_values(outcome), f"{said[0].upper()}{said[1:]}.")


def _account_import(m: Notebook, args: Any, cell: str | None) -> Answered:
    """Each row's outcome comes back, failed ones too (the value holds the ids created)."""
    text = verbs.import_text(args.file, verb="account-import", front=NB)
    records = verbs.import_records(text, source=args.file, verb="account-import", front=NB)
    run = verbs.import_rows(m.conn(), records)
    said = run.said(NB) + "."
    if run.refused is not None:
        said += f" Then refused: {verbs.front_words(str(run.refused), NB)}"
    if run.lost is not None:
        said += " " + verbs.unknown_said(run.lost, front=NB, reuse=verbs.IMPORT_AGAIN)
    return Answered(run, run.values(), said)


def _edit_shown(edit: AddressEdit, decoy: str) -> Answered:
    shown = [("edit_id", edit.edit_id), ("status", edit.status)]
    return Answered(edit, shown, verbs.edit_said(edit, front=NB, decoy=decoy))


RUN: dict[str, Callable[[Notebook, Any, str | None], Any]] = {
    "account-new": _account_new,
    "account-save": _account_save,
    "account-delete": _account_delete,
    "password": _password,
    "field-add": _field_add,
    "field-set": _field_set,
    "field-delete": _field_delete,
    "unlock": _unlock,
    "protect": _protect,
    "decoy-rename": _decoy_rename,
    "decoy-edit": _decoy_edit,
    "decoy-update": _decoy_update,
    "account-update": _account_update,
    "decoy-burn": _decoy_burn,
    "account-burn-decoy": _account_burn_decoy,
    "decoy-pause": _decoy_pause,
    "account-import": _account_import,
}
