"""An account's Decoy addresses and accounts in bulk, under the spec's retry rules: the addresses
listed and named, an account protected, an address renamed through a queued edit, addresses
paused or burned in a batch, accounts imported from another password manager.

Which sends may be repeated after an unknown outcome (network error, timeout, 5xx), and why:

- protect: "Idempotent when already protected (returns the existing decoy)" — sent again
  unchanged; when a repeat answers `already_protected`, the address it minted is read back from the
  account (`decoy_email`), since "Link-existing and already-protected responses return ids only";
- a queued edit: a patch only *sets* keys, so applying it twice changes nothing — sent again
  unchanged, and the edit the answer names is followed ("The call answers `202` at once; poll
  `GET /api/agent/decoys/{decoyId}/edits/{editId}` for `applied`");
- a batch pause: pausing a paused address changes nothing — sent again unchanged;
- a batch burn: NOT repeated as such. A repeat would answer an address the lost send burned as
  one it cannot find, so it is sent once and journaled; `conn.resend()` reads each address first
  (one no longer served was burned) and sends the batch again only for those still served;
- a batch of accounts: NOT repeated. It has no idempotency key, so a repeat after a lost answer
  could create every row twice; an unknown outcome is reported with what to check (the account
  list) before sending that chunk again, and the chunk is journaled: `conn.resend()` reads the
  account list and sends only the rows whose sealed record it does not serve. A 429 created
  nothing and is waited out as told.

Every one of these writes is entered in the pending-writes journal before it is sent
(accounts_pending.py), so an outcome still unknown when the call gives up is finished later, from
any process, by `conn.resend()` / `decoy-lab resend`.

001, `account_create_batch`: "every item must carry `encrypted_data` (a base64 **VAULT**
SealedBlob sealed client-side) … Larger imports send additional chunks" — the vault key comes from
`GET /api/agent/vault-key` ("present only for an `everything` grant"). `decoy_edit_request`: "Plaintext
JSON `{"v":1,"set":{...},"unset":[...]}` … The supported keys are `serviceName` and `avatarUrl`",
sealed to the owner's key from `GET /api/agent/public-key`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from decoy_lab import vocab
from decoy_lab.errors import (
    DecoyError,
    MemoryModelError,
    NotFound,
    OutcomeUnknown,
    RevConflict,
)
from decoy_lab.protocol import accounts_pending as pending
from decoy_lab.protocol.accounts_checks import (
    flag_arg,
    ids_arg,
    label_arg,
    record_arg,
    seconds_arg,
    served_row,
    text_arg,
    whole,
)
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import sealing
from decoy_lab.text import escaped
from decoy_lab.transport import routes
from decoy_lab.wire import layouts as wire

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

__all__ = [
    "Address",
    "AddressEdit",
    "Imported",
    "Protected",
    "burn_address",
    "burn_addresses",
    "burn_linked_address",
    "edit_status",
    "import_accounts",
    "import_rows",
    "list_addresses",
    "pause_addresses",
    "protect",
    "rename_address",
    "update_address",
]

# Paths of this module's operations (transport/routes.py names the rest; these are built from it).
VAULT_KEY = "/api/agent/vault-key"
BATCH = f"{routes.ACCOUNTS}/batch"
PAUSE = f"{routes.DECOYS}/batch/pause"
BURN = f"{routes.DECOYS}/batch/burn"
CHUNK = 25  # "Create up to **25 sealed accounts in one call**"
PAUSE_MAX = 20  # "up to 20 decoys in one call" (a batch pause or burn)
PAGES = 20  # pages of the address list read (of up to 100 each)
EDIT_POLL = 2.0  # seconds between reads of a queued edit's status
EDIT_KEYS = ("serviceName", "avatarUrl")
REV_TRIES = 5  # an address change re-read and re-applied at most this often on REV_CONFLICT
KEEP: Any = object()  # a label left as it is (None clears it: "label … nullable")


@dataclass
class Address:
    """A Decoy address as this connection reads it: its name from the copy of its details sealed
    to this connection (`name_from` says so, or why there is none)."""

    id: str
    email: str
    label: str | None
    status: str
    account_id: str | None
    rev: int | None
    name: str | None
    name_from: str


@dataclass
class Protected:
    """An account with a Decoy address: the one it had (`already_protected`) or the one this call
    linked or minted (`email` is known when minted, or read back)."""

    account_id: str
    decoy_id: str
    email: str | None
    already_protected: bool


@dataclass
class AddressEdit:
    """A queued edit of an address's name or avatar, and what became of it."""

    edit_id: str
    decoy_id: str
    status: str  # pending | applied | rejected | expired
    applied_rev: int | None = None
    reject_reason: str | None = None


@dataclass
class Imported:
    """A bulk import: the id of each account created, by the index of its record, and why each
    failed row failed (the rest were created: "one malformed row fails alone")."""

    created: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


# -- the addresses ------------------------------------------------------------------------------
def _address(s: Session, d: Mapping[str, Any], key: bytes | None) -> Address:
    seal = d.get("metadata_seal")
    name, name_from = None, str(d.get("metadata_seal_state") or "no copy sealed to this connection")
    if isinstance(seal, str) and seal:
        try:
            name = records.open_details(seal, s.agent_key).get("serviceName")
            name_from = "the copy of its details sealed to this connection"
        except DecoyError as exc:
            name_from = f"its copy does not open: {exc}"
    elif d.get("encrypted_data") and key is not None:
        try:
            name = sealing.open_json(key, d["encrypted_data"]).get("serviceName")
            name_from = "its details, opened with the vault key"
        except (DecoyError, AttributeError) as exc:
            name_from = f"its details do not open with the vault key: {exc}"
    rev = d.get("rev")
    return Address(
        id=str(d.get("id")),
        email=str(d.get("email") or ""),
        label=d.get("label") if isinstance(d.get("label"), str) else None,
        status=str(d.get("status") or ""),
        account_id=d.get("account_id") if isinstance(d.get("account_id"), str) else None,
        rev=rev if isinstance(rev, int) else None,
        name=name if isinstance(name, str) else None,
        name_from=name_from,
    )


def list_addresses(
    s: Session, *, status: str = "active", key: bytes | None = None, **filters: str | None
) -> list[Address]:
    """`GET /api/agent/decoys`, every page (at most PAGES of 100): the addresses this connection may
    read, each named from what it opens (its copy, or with the vault `key` when it holds it).
    `filters`: the route's own — `search` ("Search agent_label"), `date_after`, `date_before`."""
    if status not in ("active", "inactive", "all"):
        raise MemoryModelError("status is active, inactive or all")
    unknown = set(filters) - {"search", "date_after", "date_before"}
    if unknown:
        raise MemoryModelError(f"the address list has no filter {', '.join(sorted(unknown))}")
    for name, value in filters.items():
        if value is not None and value != "":
            text_arg(value, f"the address list's filter {name}")
    params: dict[str, Any] = {"limit": 100, "status": status, **{k: v for k, v in filters.items() if v}}
    out: list[Address] = []
    for _ in range(PAGES):
        body = whole(s.get(routes.DECOYS, params=params, decoys=list), f"GET {routes.DECOYS}", decoys=list)
        rows = [d for d in body["decoys"] if isinstance(d, Mapping) and pending.is_id(d.get("id"))]
        if len(rows) < len(body["decoys"]):
            log.warning("decoys: %d rows of the address list name no id: left out", len(body["decoys"]) - len(rows))
        out += [_address(s, d, key) for d in rows]
        page = body.get("pagination")
        cursor = page.get("next_cursor") if isinstance(page, Mapping) and page.get("has_more") else None
        if not isinstance(cursor, str):
            break
        params = {**params, "cursor": cursor}
    return out


# -- protect ------------------------------------------------------------------------------------
def protect(s: Session, account_id: str, *, decoy_id: str | None = None) -> Protected:
    """`POST …/accounts/{id}/protect`: link `decoy_id`, or mint a fresh address (that needs
    `account.create`). Idempotent, so an unknown outcome sends it again."""
    if decoy_id is not None:
        text_arg(decoy_id, "the address id to link")
    body: dict[str, Any] = {} if decoy_id is None else {"decoy_id": decoy_id}
    answer = pending.send_journaled(
        s,
        "protect",
        "POST",
        routes.account(account_id, "protect"),
        body,
        again="Protect it again: an account that has an address keeps it (`already_protected`).",
        target=account_id,
    )
    email = answer.get("decoy_email") if isinstance(answer.get("decoy_email"), str) else None
    if email is None:  # ids only: the address is on the account (an earlier send may have minted it)
        try:
            email = s.get(routes.account(account_id), id=str).get("decoy_email")
        except DecoyError as exc:
            log.info("protect %s: the address could not be read back (%s)", account_id, exc)
    return Protected(account_id, answer["decoy_id"], email if isinstance(email, str) else None,
                     answer.get("already_protected") is True)  # fmt: skip


# -- a queued edit ------------------------------------------------------------------------------
def _edit(answer: Mapping[str, Any], decoy_id: str) -> AddressEdit:
    rev, why = answer.get("applied_rev"), answer.get("reject_reason")
    return AddressEdit(
        str(answer.get("edit_id")),
        decoy_id,
        str(answer.get("status")),
        rev if isinstance(rev, int) else None,
        why if isinstance(why, str) else None,
    )


def edit_status(s: Session, decoy_id: str, edit_id: str) -> AddressEdit:
    """`GET …/decoys/{decoyId}/edits/{editId}`."""
    return _edit(s.get(routes.decoy(decoy_id, "edits", edit_id), status=str), decoy_id)


def rename_address(
    s: Session,
    decoy_id: str,
    *,
    name: str | None = None,
    avatar: str | None = None,
    wait: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
) -> AddressEdit:
    """Queue a change of the address's name and/or avatar for the owner's devices (no vault key):
    the patch sealed to the owner's key, then its status followed for up to `wait` seconds."""
    wait = seconds_arg(wait)
    sets = {k: v for k, v in (("serviceName", name), ("avatarUrl", avatar)) if v is not None}
    if not sets or not all(isinstance(v, str) and v for v in sets.values()):
        raise MemoryModelError("name a new serviceName and/or avatarUrl (text); nothing was sent")
    if name is not None and len(name) > 200:
        raise MemoryModelError("serviceName is at most 200 characters; nothing was sent")
    if name is not None and escaped(name) != name:  # a control, a bidi control or a lone surrogate
        # "`serviceName`: at most 200 characters, with no control or bidirectional-format characters"
        raise MemoryModelError("serviceName holds a control or bidirectional-format character; nothing was sent")
    owner_pk = s.get(routes.OWNER_KEY, public_key=str).get("public_key")
    if not isinstance(owner_pk, str):
        raise MemoryModelError("the owner has no public key on file (GET /api/agent/public-key); nothing was sent")
    body: dict[str, Any] = {"sealed_patch": wire.b64encode(records.seal_patch({"v": 1, "set": sets}, owner_pk))}
    rev = s.get(routes.decoy(decoy_id), id=str).get("rev")
    if isinstance(rev, int) and rev >= 1:
        body["base_rev"] = rev  # "informational only"
    answer = pending.send_journaled(
        s,
        "address edit",
        "POST",
        routes.decoy(decoy_id, "edits"),
        body,
        again="The same sealed patch only sets keys: sending it twice changes nothing more.",
        target=decoy_id,
    )
    edit = _edit(answer, decoy_id)
    end = clock() + max(0.0, wait)
    while edit.status == "pending" and clock() + EDIT_POLL <= end:
        s.sleep(EDIT_POLL)
        edit = edit_status(s, decoy_id, edit.edit_id)
    return edit


# -- a label or status, in place; a burn ---------------------------------------------------------
def update_address(s: Session, decoy_id: str, *, label: Any = KEEP, status: str | None = None) -> dict[str, Any]:
    """`PATCH …/decoys/{decoyId}` with what an agent changes in plain text: its `label` (None
    clears it) and `status` (`active`, or `inactive`: "Use `PATCH` with `status: inactive` for a
    reversible pause"). The name and avatar are sealed ("A plaintext `avatar` or `service_name` …
    is refused"): `rename_address` queues those. Sent with the `rev` read now as `expected_rev`
    ("`label`/`status` changes don't bump `rev`, but are refused the same way when `expected_rev`
    is stale"); REV_CONFLICT: read again, apply again. A repeat sets the same values, so a lost
    answer sends the same body again; `resend()` first reads whether the address holds them.
    Needs `acctmail.edit` on its account (`alias.edit` for a Personal Alias); "Nothing when this
    connection created the decoy". Returns the answer (`decoy_id`, `updated`, `rev`)."""
    change: dict[str, Any] = {}
    if label is not KEEP:
        if label is not None and not isinstance(label, str):
            raise MemoryModelError("an address's label is text, or None to clear it; nothing was sent")
        label_arg(label, "an address's label")
        change["label"] = label
    if status is not None:
        if status not in vocab.STATUSES:
            raise MemoryModelError(f"an address's status is {' or '.join(vocab.STATUSES)}; nothing was sent")
        change["status"] = status
    if not change:
        raise MemoryModelError("name something to change (label, status); nothing was sent")
    path = routes.decoy(decoy_id)
    for attempt in range(REV_TRIES):
        served = served_row(s, path, decoy_id, rev=int)
        if all(served.get(k) == v for k, v in change.items()):  # an earlier unanswered send landed, or no change
            return {"decoy_id": decoy_id, "updated": False, "rev": served.get("rev"), "said": "it holds these already"}
        body = {**change, **({"expected_rev": served["rev"]} if isinstance(served.get("rev"), int) else {})}
        try:
            return pending.send_journaled(
                s,
                "address update",
                "PATCH",
                path,
                body,
                again="Update it again: it is read first, and what it holds already is not sent.",
                target=decoy_id,
                ids=[decoy_id],
                proof={"read": path},
            )
        except RevConflict as exc:
            log.info("address %s changed meanwhile (%s): reading it again (attempt %d)", decoy_id, exc, attempt + 1)
    raise RevConflict(409, "REV_CONFLICT", f"address {decoy_id} kept changing: tried {REV_TRIES} times")


def burn_address(s: Session, decoy_id: str) -> dict[str, Any]:
    """`DELETE …/decoys/{decoyId}`: "Permanently delete a decoy and all its data. **Irreversible.**"
    A Personal Alias needs `alias.burn`; an account's own Decoy email is never burned on its own
    (403 `ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`: delete the account). A repeat can burn only this
    address, so a lost answer sends the same request again; it is done once the address is no
    longer served (a repeat meets 404). Returns the answer (`decoy_id`, `deleted`, `burned_at`)."""
    path = routes.decoy(decoy_id)
    answer = pending.send_journaled(
        s,
        "address burn",
        "DELETE",
        path,
        None,
        again="Read the address: one no longer served is burned.",
        target=decoy_id,
        ids=[decoy_id],
        proof={"read": path},
    )
    return {"decoy_id": decoy_id, "deleted": True, **answer}


def burn_linked_address(s: Session, account_id: str, *, replace: bool = True) -> dict[str, Any]:
    """`POST …/accounts/{accountId}/burn-decoy`: "Permanently deletes (burns) the linked decoy.
    Optionally creates a fresh replacement." For a Personal Alias linked to the account ("needs
    `alias.burn`"); an account's own Decoy email "goes only with its account" (403
    `ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`). "`replace: true` (the default) also needs `account.create`,
    live — otherwise `403 SCOPE_MISSING` … and NOTHING is burned."

    The account is read first: the address linked now is the one this burn is for. A repeat is not
    safe as such (an address linked since would be burned instead), so `resend()` reads the account
    again: still linked to that address — not landed, sent again; another address, and that one no
    longer served — it had landed; that one still served — "not applied". Returns the answer:
    `account_id`, `burned_decoy_id`, `new_decoy_id`, `new_decoy_email`."""
    flag_arg(replace, "replace")
    path = routes.account(account_id)
    linked = served_row(s, path, account_id).get("decoy_id")
    if not isinstance(linked, str) or not linked:
        raise MemoryModelError(f"account {account_id} has no linked address to burn; nothing was sent")
    return pending.send_journaled(
        s,
        "linked burn",
        "POST",
        routes.account(account_id, "burn-decoy"),
        {"replace": replace},
        again="Read the account: an address no longer linked and no longer served is burned.",
        target=account_id,
        ids=[linked],
        proof={"read": path, "decoy": linked, "decoy_read": routes.decoy(linked)},
    )


def burn_addresses(s: Session, decoy_ids: Sequence[str]) -> dict[str, str]:
    """`POST …/decoys/batch/burn`: "Permanently delete up to 20 decoys in one call. Irreversible.
    Burning a Personal Alias address needs `alias.burn`. An account's own Decoy email is never
    burned on its own … listed as "Not permitted". Ids you may not touch are listed in `failed` as
    "Not permitted" and left alone." Returns id → "burned", or why not (the answer's words).

    One call, one request: more than 20 ids are refused before anything is sent (MemoryModelError),
    not split, so a lost answer never hides what other calls of the same ask burned, and the
    caller sees each batch's outcome before burning more. The batch is sent once (see the module
    docstring) and journaled: a lost answer is OutcomeUnknown, and `conn.resend()` reads each
    address first — one no longer served was burned — and sends the batch again only for the rest."""
    ids = ids_arg(decoy_ids, "burn_decoys")
    if len(ids) > PAUSE_MAX:
        raise MemoryModelError(
            f"burn at most {PAUSE_MAX} addresses a call (001: 'Permanently delete up to 20 decoys in one call'), "
            f"not {len(ids)}; nothing was sent: burn them in batches, checking each batch's outcome"
        )
    answer = pending.send_journaled(
        s,
        "batch burn",
        "POST",
        BURN,
        {"decoy_ids": ids},
        again="Read the addresses: one no longer served is burned.",
        ids=ids,
        mode=pending.READ,
    )
    return pending.batch_results(ids, answer, "burned")


# -- pause --------------------------------------------------------------------------------------
def pause_addresses(s: Session, decoy_ids: Sequence[str]) -> dict[str, str]:
    """`POST …/decoys/batch/pause`, 20 at a time: id → "paused" or why not ("Not permitted")."""
    ids = ids_arg(decoy_ids, "pause_decoys")
    out: dict[str, str] = {}
    for start in range(0, len(ids), PAUSE_MAX):
        chunk = ids[start : start + PAUSE_MAX]
        answer = pending.send_journaled(
            s,
            "pause",
            "POST",
            PAUSE,
            {"decoy_ids": chunk},
            again="Pausing a paused address changes nothing.",
            ids=chunk,
        )
        out.update(pending.batch_results(chunk, answer, "paused"))
    return out


# -- accounts in bulk ---------------------------------------------------------------------------
def vault_key(s: Session) -> bytes:
    """The vault key, wrapped to this connection (`everything` only), unwrapped with its key."""
    try:
        answer = whole(s.get(VAULT_KEY, wrapped_vault_key=str), f"GET {VAULT_KEY}", wrapped_vault_key=str)
    except NotFound as exc:
        raise NotFound(
            404,
            exc.code,
            "this connection does not hold the vault key (it comes only with `everything`), which a bulk import "
            "seals with; save accounts one at a time with create_account instead",
            recovery=exc.recovery,
            body=exc.body,
        ) from exc
    return sealing.unwrap_as_agent(answer["wrapped_vault_key"], s.agent_key)


def _send_chunk(s: Session, body: dict[str, Any], where: str) -> dict[str, Any]:
    """One chunk, journaled and sent once: a 429 (nothing created) is waited out; an unknown outcome
    is not resent here (`conn.resend()` lists the accounts first and sends only the rows that did
    not land)."""
    return pending.send_journaled(
        s,
        "import",
        "POST",
        BATCH,
        body,
        again=f"List the accounts before sending these rows ({where}) again: a batch has no idempotency key.",
        target=where,
        mode=pending.CHECK,
    )


def import_rows(accounts: object) -> list[dict[str, Any]]:
    """The records an import takes, as dicts: a list of records each naming its service, or a
    MemoryModelError saying what is wrong before anything (even the vault key) is asked for."""
    if isinstance(accounts, (str, bytes, Mapping)) or not isinstance(accounts, Iterable):
        raise MemoryModelError(
            f"import_accounts takes a list of records, not {type(accounts).__name__}; nothing was sent"
        )
    rows = [record_arg(r, f"record {i} to import") for i, r in enumerate(accounts)]
    if not all(isinstance(r.get("name"), str) and r["name"] for r in rows):
        raise MemoryModelError("every record needs its `name` (the service); nothing was sent")
    return [dict(r) for r in rows]


def import_accounts(
    s: Session,
    accounts: Iterable[Mapping[str, Any]],
    *,
    key: bytes | None = None,
    has_password: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Imported:
    """Save many accounts (each a record: name, username, URLs, notes, …) as VAULT SealedBlobs,
    25 a call, each row's outcome reported. `has_password` says which records hold a password
    ("the writer must flag stored passwords"; default: a non-empty `password` key). `key`: the vault
    key when the caller holds it (else fetched)."""
    rows = import_rows(accounts)
    if not rows:
        return Imported()
    key = key if key is not None else vault_key(s)
    flag = has_password or (lambda r: bool(r.get("password")))
    out = Imported()
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        items = [
            {"encrypted_data": wire.b64encode(sealing.seal_json(key, r)), "has_password": bool(flag(r))} for r in chunk
        ]
        try:
            answer = _send_chunk(s, {"accounts": items}, f"rows {start}–{start + len(chunk) - 1}")
        except OutcomeUnknown as exc:  # stop here: say what is known of the rows before it and after it
            after = start + len(chunk)
            told = f" Rows before it: {len(out.created)} created, {len(out.failed)} failed."
            if after < len(rows):
                told += f" Rows {after}–{len(rows) - 1} were not sent: import them again."
            raise OutcomeUnknown(f"{exc}{told}", entry=exc.entry, ids=exc.ids) from exc
        for result in answer["results"]:
            at = result.get("index") if isinstance(result, Mapping) else None
            if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(chunk):
                continue  # no row of this chunk: an index out of it would name a record never sent
            index = start + at
            if result.get("status") == "created" and pending.is_id(result.get("id")):
                out.created[index] = result["id"]
            else:
                out.failed[index] = str(result.get("error") or "failed")
        missing = set(range(start, start + len(chunk))) - set(out.created) - set(out.failed)
        out.failed.update(dict.fromkeys(missing, "the answer did not report this row"))
    log.info("imported %d accounts, %d rows failed", len(out.created), len(out.failed))
    return out
