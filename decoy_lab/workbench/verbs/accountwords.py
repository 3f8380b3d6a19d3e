"""What the account verbs say in both front ends: an id given by its start (as the `accounts` and
`decoys` tables print it) made whole, a secret masked to its length unless revealed, where an
unlock stands and what to run next, and what to reuse after an unknown outcome.

A secret is shown by its length only, as the inspector shows one: a fingerprint of a password
would let anyone who sees it test guesses.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import APIError, DecoyError, OutcomeUnknown
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
    if not [i for i in ids if i.startswith(given)]:  # neither an id, nor its start, nor a label
        where = "decoy-lab accounts --json lists" if front == SHELL else "%decoy accounts gives"
        raise UsageProblem(
            f"no field of this account this connection may see has the id, the start of an id, or the label "
            f"{given!r} ({where} each account's field_labels)",
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
    return [f"{name:<{NAME_WIDTH - 1}} {value}" for name, value in values]  # a longer name: one space


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


# -- account-update ---------------------------------------------------------------------------------
def account_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of `Connection.update_account` that account-update's flags mean. The
    record is sealed to the owner, so the server cannot change one key of it: `--service` re-seals
    it whole from what is given (`parsing.check` made sure it is given with --url / --username)."""
    changes: dict[str, Any] = {}
    if args.service is not None:
        from decoy_lab.protocol.accounts_write import account_record

        changes["record"] = account_record(args.service, url=args.url, username=args.username)
    if args.label is not None or getattr(args, "clear_label", False):
        changes["label"] = None if args.clear_label else args.label
    if args.status is not None:
        changes["status"] = args.status
    if args.two_factor is not None:
        changes["two_factor"] = args.two_factor == "on"
    return changes


# What the server answers for each change account-update asks (`agent_label`, …), and its flag.
_ANSWERED = (
    ("label", "agent_label", "--label"),
    ("status", "status", "--status"),
    ("two_factor", "two_factor_enabled", "--two-factor"),
)


def _shown(value: Any) -> str:
    """A served value as a line shows it: true/false as typed on the line, none as (none)."""
    if value is None:
        return "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def account_updated(done: Mapping[str, Any], changes: Mapping[str, Any]) -> tuple[Named, list[str]]:
    """What an account-update shows (the account as the server answered it) and the problems: a
    change asked for that the answer does not hold."""
    if done.get("outcome") == "already applied":  # an earlier send landed: the read proved it
        return [("account_id", str(done.get("id") or "")), ("said", str(done.get("said") or ""))], []
    shown: Named = [("account_id", str(done.get("id") or ""))]
    problems = []
    for key, served, flag in _ANSWERED:
        if key in changes:
            shown.append((served, _shown(done.get(served))))
            if done.get(served) != changes[key]:
                problems.append(
                    f"the server answers {served} {done.get(served)!r}, not the {flag} asked ({changes[key]!r})"
                )
    if "record" in changes:
        parts = ", ".join(f"{k} {v}" for k, v in changes["record"].items() if k != "agentCreated" and v is not None)
        shown.append(("record", f"re-sealed to the owner ({parts})"))
    if done.get("rev") is not None:
        shown.append(("rev", str(done["rev"])))
    return shown, problems


# -- burning: asked first ---------------------------------------------------------------------------
BURN_MAX = 20  # 001, `decoy_burn_batch`: "Permanently delete up to 20 decoys in one call"


def burn_targets(conn: Connection, given: Iterable[str], *, verb: str, front: str) -> dict[str, str]:
    """Each address's whole id → its email (empty when the list does not hold it), each once in
    the order given, from the list of every address (paused ones too): what a burn names before
    it is done. More than BURN_MAX is a mistake, and nothing is sent: one confirmation covers one
    call of the batch route, and burning is irreversible, so the next batch is asked for after
    this one's outcome is seen (`Connection.burn_decoys` refuses more too)."""
    frame = conn.decoys("all")
    ids = list(frame["id"])
    emails = {i: e for i, e in zip(ids, frame["email"]) if isinstance(i, str) and isinstance(e, str)}
    out: dict[str, str] = {}
    for g in dict.fromkeys(given):
        decoy = whole_id(g, ids, what="Decoy address", lists="decoys --status all", verb=verb, front=front)
        out.setdefault(decoy, emails.get(decoy, ""))
    if len(out) > BURN_MAX:
        raise UsageProblem(
            f"{verb} burns at most {BURN_MAX} addresses at a time, not {len(out)}: burning is irreversible, so one "
            f"confirmation covers one call of {BURN_MAX} — burn them in batches, seeing each one's outcome; "
            "nothing was sent",
            verb=verb,
            usage=BY_NAME[verb].usage(front),
        )
    return out


def burn_list_warning(front: str, targets: Mapping[str, str]) -> str:
    """What burning several addresses is, each one named, said before it is done, and the
    reversible pause it is not."""
    named = "\n".join(f"  {f'{email} ({decoy})' if email else decoy}" for decoy, email in targets.items())
    return (
        f"burning these {len(targets)} addresses deletes each one and all its mail for good: it is irreversible.\n"
        f"{named}\n{PROMPT[front]} decoy-pause DECOY… pauses them instead, reversibly"
    )


def confirmed_count(typed: str, count: int) -> bool:
    """What was typed back at the prompt is the number of addresses about to be burned."""
    return typed.strip() == str(count)


def batch_values(outcome: Mapping[str, str]) -> Named:
    """Each address of a batch (burn, pause) and "burned" / "paused", or why it was not (the
    server's words: "Not permitted")."""
    return list(outcome.items())


def _batch_said(outcome: Mapping[str, str], word: str, how: str = "") -> str:
    """How many addresses of a batch are `word` ("burned"), and that each of the rest says why."""
    done = sum(v == word for v in outcome.values())
    said = f"{done} of {plural(len(outcome), 'address', 'addresses')} {word}{how}"
    if len(outcome) > done:
        said += f"; {len(outcome) - done} not (each says why, and was left alone)"
    return said


def burn_said(outcome: Mapping[str, str], front: str) -> str:
    """How many of a batch were burned, and why an address may not have been."""
    said = _batch_said(outcome, "burned", " for good")
    if any(v == "Not permitted" for v in outcome.values()):
        said += (
            f". Not permitted: an account's own Decoy email goes only with its account ({PROMPT[front]} "
            "account-delete ACCOUNT), and a Personal Alias needs alias.burn"
        )
    return said


def burn_batch_resend(front: str) -> str:
    """After a batch burn's answer was lost: never burn them again by hand."""
    return (
        f"Do not burn them again by hand: {PROMPT[front]} resend reads each address first — one no longer served "
        "was burned — and burns only the rest."
    )


def burn_warning(front: str, *, email: str, decoy: str, given: str) -> str:
    """What a burn is, said before it is done, and the reversible pause it is not."""
    what = f"{email} ({decoy})" if email else decoy
    return (
        f"burning {what} deletes it and all its mail for good: it is irreversible. "
        f"{PROMPT[front]} decoy-update {given} --status inactive pauses it instead, reversibly"
    )


def unconfirmed(verb: str, front: str, *, given: str | list[str] | None, why: str) -> UsageProblem:
    """A burn asked without --yes where nothing can ask to confirm it (a pipe, a notebook cell).
    Several addresses (`given` a list of more than one) are paused with decoy-pause instead. None:
    the line names no address (account-burn-decoy names its account), so the pause names none."""
    words = ["DECOY"] if given is None else [given] if isinstance(given, str) else list(dict.fromkeys(given))
    if len(words) > 1:
        it, pause = "them", f"decoy-pause {' '.join(words)} pauses them instead, reversibly"
    else:
        it, pause = "it", f"decoy-update {words[0]} --status inactive pauses an address instead, reversibly"
    return UsageProblem(
        f"{verb} is irreversible and {why}: give --yes to burn {it} ({PROMPT[front]} {pause}); nothing was sent",
        verb=verb,
        usage=BY_NAME[verb].usage(front),
    )


def confirmed(typed: str, *answers: str) -> bool:
    """What was typed back at the prompt is the address, or its id (any case, spaces around ignored)."""
    text = typed.strip().casefold()
    return bool(text) and text in {a.casefold() for a in answers if a}


def burned_values(done: Mapping[str, Any], email: str) -> tuple[Named, list[str]]:
    """What a decoy-burn shows, and a problem when the answer does not say the address is deleted."""
    shown: Named = [("decoy_id", str(done.get("decoy_id") or "")), ("email", email or "(unknown)")]
    if done.get("burned_at"):
        shown.append(("burned_at", str(done["burned_at"])))
    if done.get("said"):
        shown.append(("said", str(done["said"])))
    problems = [] if done.get("deleted") is True else ["the answer does not say the address is deleted"]
    return shown, problems


def linked_address(conn: Connection, account: str, *, verb: str, front: str) -> tuple[str, str]:
    """The id and email of the address linked to an account now: the one its burn is for."""
    from decoy_lab.transport import routes

    served = conn.session.get(routes.account(account), id=str)
    linked, email = served.get("decoy_id"), served.get("decoy_email")
    if not isinstance(linked, str) or not linked:
        raise UsageProblem(
            f"account {account} has no linked address to burn ({PROMPT[front]} protect {account} gives it one); "
            "nothing was sent",
            verb=verb,
            usage=BY_NAME[verb].usage(front),
        )
    return linked, email if isinstance(email, str) else ""


def linked_burned(done: Mapping[str, Any], linked: str, *, replace: bool) -> tuple[Named, list[str]]:
    """What an account-burn-decoy shows: the address burned and its replacement; problems when the
    answer names another address, or no replacement when one was asked."""
    if done.get("outcome") == "already applied":  # an earlier send landed: the read proved it
        return [("burned_decoy_id", linked), ("said", str(done.get("said") or ""))], []
    shown: Named = [
        ("account_id", str(done.get("account_id") or "")),
        ("burned_decoy_id", str(done.get("burned_decoy_id"))),
    ]
    problems = []
    if done.get("burned_decoy_id") != linked:
        problems.append(f"the answer names {done.get('burned_decoy_id')!r} burned, not the linked {linked}")
    if replace:
        shown += [
            ("new_decoy_id", str(done.get("new_decoy_id"))),
            ("new_decoy_email", str(done.get("new_decoy_email"))),
        ]
        if not done.get("new_decoy_id"):
            problems.append("the answer names no fresh address, though one was asked")
    return shown, problems


# -- decoy-pause ------------------------------------------------------------------------------------
def decoy_ids(conn: Connection, given: Iterable[str], *, verb: str, front: str) -> list[str]:
    """Many addresses' whole ids from their starts (the list read once, only when one is short),
    each once, in the order given."""
    given = list(dict.fromkeys(given))
    ids = list(conn.decoys("all")["id"]) if any(len(g) < WHOLE for g in given) else []
    what, lists = "Decoy address", "decoys --status all"
    return list(dict.fromkeys(whole_id(g, ids, what=what, lists=lists, verb=verb, front=front) for g in given))


def pause_said(outcome: Mapping[str, str], front: str) -> str:
    """How many were paused, and what resumes one."""
    return _batch_said(outcome, "paused") + f": {PROMPT[front]} decoy-update DECOY --status active resumes one"


# -- account-import ---------------------------------------------------------------------------------
# A password manager's export names its columns its own way: each spelling, and the record's key.
IMPORT_KEYS = {
    "name": "name", "title": "name", "service": "name",
    "username": "username", "login_username": "username", "user": "username", "login": "username",
    "password": "password", "login_password": "password",
    "url": "url", "login_uri": "url", "website": "url", "uri": "url",
    "urls": "urls",
    "notes": "notes", "note": "notes", "extra": "notes",
    "totp": "totp", "login_totp": "totp",
}  # fmt: skip


def import_text(path: str, *, verb: str, front: str) -> str:
    """An export file's text (UTF-8); one that cannot be read is a mistake naming it."""
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise UsageProblem(
            f"{path}: cannot be read as text ({why})", verb=verb, usage=BY_NAME[verb].usage(front)
        ) from None


IMPORT_AGAIN = (
    "Do not import the file again: a batch has no idempotency key, so a second import could make every row twice."
)


def _header_said(header: Sequence[str]) -> str:
    """What a first line with no name column holds: its cells when each is a column IMPORT_KEYS
    knows, else only how many — a file with no header line has a record there, password and all."""
    if all(f.strip().lower() in IMPORT_KEYS for f in header):
        return f"it names {', '.join(header)}"
    return f"its first line has {plural(len(header), 'cell')}, not all of them column names: is it a header line?"


TEXT_KEYS = ("username", "password", "url", "notes", "totp")  # IMPORT_KEYS' values that hold text


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (never the value: it may be a password)."""
    if isinstance(value, bool):
        return "true or false"
    return {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), "null")


def _no_constant(word: str) -> Any:
    """NaN and Infinity are Python's JSON, not JSON: a record sealed with one is one the owner's
    apps cannot open."""
    raise ValueError(f"{word} is not a JSON value")


def import_records(text: str, *, source: str, verb: str, front: str) -> list[dict[str, Any]]:
    """The records of a password manager's export: a JSON array of objects, or a CSV whose first
    line names the columns (IMPORT_KEYS maps the usual spellings; an empty cell is left out; other
    columns are kept as they are named). Every record needs its `name`; a mistake names the row,
    and nothing is sent."""
    usage = BY_NAME[verb].usage(front)

    def mistake(message: str) -> UsageProblem:
        return UsageProblem(f"{source}: {message}; nothing was sent", verb=verb, usage=usage)

    body = text.lstrip("\ufeff")  # a spreadsheet's byte order mark
    records: list[dict[str, Any]] = []
    if body.lstrip().startswith(("[", "{")):
        try:
            rows = json.loads(body, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise mistake(f"not JSON ({exc.msg}, line {exc.lineno})") from None
        except (ValueError, RecursionError) as exc:  # NaN, a number too long to read, nesting too deep
            raise mistake(f"not JSON the import reads ({str(exc).split(';')[0]})") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise mistake("JSON must be an array of objects, one record each")
        records = [{IMPORT_KEYS.get(str(k).strip().lower(), str(k)): v for k, v in r.items()} for r in rows]
    else:
        reader = csv.DictReader(io.StringIO(body), strict=True)  # an unterminated quote is a mistake, not a name
        try:
            if not reader.fieldnames:
                raise mistake("empty: a CSV needs a header line (name, username, password, url, notes …)")
            keys = {f: IMPORT_KEYS.get(f.strip().lower(), f.strip()) for f in reader.fieldnames if f}
            if "name" not in keys.values():
                raise mistake(f"the CSV header has no name column ({_header_said(reader.fieldnames)})")
            for r in reader:
                records.append({keys[k]: v for k, v in r.items() if k in keys and isinstance(v, str) and v != ""})
        except csv.Error as exc:  # a cell past csv's size limit
            raise mistake(f"not a CSV the import reads (row {len(records) + 1}: {exc})") from None
    if not records:
        raise mistake("no records in it")
    for n, r in enumerate(records, 1):
        if not isinstance(r.get("name"), str) or not r["name"].strip():
            raise mistake(f"row {n} has no name (the service): every record needs one")
        for k in TEXT_KEYS:  # sealed as given, a number or an object there is not what the owner's apps read
            if r.get(k) is not None and not isinstance(r[k], str):
                raise mistake(f"row {n}'s {k} is {_json_kind(r[k])}, not text")
        if r.get("urls") is not None and not (
            isinstance(r["urls"], list) and all(isinstance(u, str) for u in r["urls"])
        ):
            raise mistake(f"row {n}'s urls is {_json_kind(r['urls'])}, not a list of text")
        try:  # JSON's "\ud800" escape reads as a lone surrogate, which no UTF-8 record can hold
            json.dumps(r, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise mistake(
                f"row {n} holds a lone surrogate escape (\\ud800–\\udfff): not text a record can hold"
            ) from None
    return records


def import_values(
    records: list[dict[str, Any]],
    created: Mapping[int, str],
    failed: Mapping[int, str],
    unknown: Iterable[int] = (),
    unsent: Iterable[int] = (),
) -> Named:
    """Each row (numbered from 1) and its outcome: created with its id, failed and why, unknown
    (sent, no answer), or not sent. Never a password: a row is named by its service."""
    said: dict[int, str] = {i: f"created {a}" for i, a in created.items()}
    said.update({i: f"failed: {why}" for i, why in failed.items()})
    said.update(dict.fromkeys(unknown, "unknown: sent, and no answer proves it"))
    said.update(dict.fromkeys(unsent, "not sent"))
    return [(f"row {i + 1}", f"{said[i]} ({records[i]['name']})") for i in sorted(said)]


def import_said(total: int, created: int, failed: int, unknown: int, front: str, unsent: int = 0) -> str:
    """The import in one sentence: how many rows were created and how many were not, and what
    finishes those not sent (the file is not imported again: its created rows would be made twice)."""
    said = f"{created} of {plural(total, 'row')} created"
    if failed:
        said += f", {failed} failed (each says why{'; the rest were created' if created + failed == total else ''})"
    if unknown:
        said += (
            f", {unknown} unknown: a batch has no idempotency key, so it is never sent again blindly — "
            f"{PROMPT[front]} accounts shows what landed, {PROMPT[front]} resend sends only the rows it does not find"
        )
    if unsent:
        said += (
            f", {unsent} not sent (the import stopped before them): once the rest is settled, import a file of "
            "those rows alone"
        )
    return said


IMPORT_CHUNK = 25  # 001, `account_create_batch`: "Create up to **25 sealed accounts in one call**"


@dataclass
class ImportRun:
    """What an account-import did, row by row (indexes into its records): created (the id),
    failed (why), unknown (sent, no answer proves it), not sent; and the unknown outcome or the
    refusal that stopped it."""

    records: list[dict[str, Any]] = field(repr=False)  # the file's rows, passwords and all
    created: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    unknown: list[int] = field(default_factory=list)
    unsent: list[int] = field(default_factory=list)
    lost: OutcomeUnknown | None = None
    refused: APIError | None = None

    @property
    def ok(self) -> bool:
        return len(self.created) == len(self.records)

    def values(self) -> Named:
        return import_values(self.records, self.created, self.failed, self.unknown, self.unsent)

    def said(self, front: str) -> str:
        counts = len(self.created), len(self.failed), len(self.unknown)
        return import_said(len(self.records), *counts, front, unsent=len(self.unsent))


def import_rows(conn: Connection, records: list[dict[str, Any]]) -> ImportRun:
    """Send the records IMPORT_CHUNK a call, each call's rows reported as it answers. A batch has no
    idempotency key, so after an unknown outcome nothing more is sent (those rows are unknown, the
    rest not sent). A refusal before any row was answered is raised as it is; after, it stops the
    run and is kept, so the rows already created are still said."""
    run = ImportRun(records)
    for start in range(0, len(records), IMPORT_CHUNK):
        rows = range(start, min(start + IMPORT_CHUNK, len(records)))
        if run.lost is not None or run.refused is not None:
            run.unsent += rows
            continue
        try:
            done = conn.import_accounts(records[rows.start : rows.stop])
        except OutcomeUnknown as exc:
            run.lost, run.unknown = exc, list(rows)
            continue
        except APIError as exc:
            if not run.created and not run.failed:
                raise
            run.refused = exc
            run.unsent += rows
            continue
        run.created.update({start + i: a for i, a in done.created.items()})
        run.failed.update({start + i: why for i, why in done.failed.items()})
    return run
