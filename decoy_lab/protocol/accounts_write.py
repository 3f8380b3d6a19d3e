"""The account family's writes under the spec's retry rules: an account with its Decoy address, its
password, a secret field and a change of one.

The rules are the memory writes' (`Session.send`): each body is sealed once, entered in the
pending-writes journal before it is sent (accounts_pending.py), and an unknown outcome (network
error, timeout, 5xx) sends the SAME body again — the address's `idempotency_key` ("Repeating
the same key (same token) returns the ORIGINAL decoy with `idempotent_replay: true`") and a field's
`id` ("Sending the same id again answers `existing` … it never creates a second field") make that
safe; an account saved without an address has no key, so it is sent once; when no send gets an
answer that proves it, the entry stays and `conn.resend()` (`decoy-lab resend`) finishes it from
any process; a definite refusal is never retried; a 429 waits `retry_after_seconds`; `REV_CONFLICT` on a
field change re-reads, re-applies to what it read and sends again. Each write is read back, and
against the sandbox the owner's-eye check is asked too (`GET /_sandbox/app-view?account=`): Decoy
stores what it cannot read, so a password sealed to the wrong key is stored, and only the owner's
app can say it does not open.

001, `decoy_create`: "`sealed_details`, from a connection without the vault key: the record sealed
to the owner's public key … It goes with `metadata_seals`: one entry for this connection"; the
owner's key (`GET /api/agent/public-key`): "Seal the record to this key (SealedBlob ENVELOPE mode …)
and send it as `account_encrypted_data` on `POST /api/agent/decoys`". `account_credential_set`:
"Base64 of a headerless envelope to `public_key` from `GET /api/agent/accounts/public-key`".
`account_field_create`: steps 1–4 (a field key, the VAULT ciphertext, `owner_wrap`, `self_wrap`
and `grantee_wraps` to each connection field-grantees lists).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from decoy_lab import vocab
from decoy_lab.errors import (
    DecoyError,
    KidConflict,
    MemoryModelError,
    RevConflict,
)
from decoy_lab.protocol import accounts_pending as pending
from decoy_lab.protocol.accounts_checks import flag_arg, label_arg, record_arg, served_row, text_arg
from decoy_lab.protocol.accounts_decoys import KEEP
from decoy_lab.protocol.verify import LOOPBACK, Verified
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.transport import routes
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

__all__ = [
    "CreatedAccount",
    "FieldWritten",
    "account_record",
    "add_field",
    "create_account",
    "delete_account",
    "delete_field",
    "owner_view",
    "save_account",
    "set_field",
    "set_password",
    "update_account",
]
REV_TRIES = 5  # a field change re-read and re-applied at most this often on REV_CONFLICT


@dataclass
class CreatedAccount:
    """An account made with its Decoy address: the ids, the address, whether the answer was the
    original one replayed (`replayed`: an earlier send with this `idempotency_key` landed), the
    record this connection sealed (kept in memory only) and what reading it back found."""

    account_id: str
    decoy_id: str
    email: str
    idempotency_key: str
    replayed: bool
    record: dict[str, Any] = field(repr=False)
    verified: Verified


@dataclass
class FieldWritten:
    """A secret field stored: its id, key id and rev, `created` or `existing` (an earlier send of
    this id landed), and what reading it back found."""

    id: str
    account_id: str
    kid: str
    rev: int | None
    status: str
    verified: Verified


# -- reading back -----------------------------------------------------------------------------
def owner_view(s: Session, account_id: str) -> dict[str, Any] | None:
    """Against the sandbox only (a loopback server): the owner's app's view of the account —
    its record, credential and fields, each readable or not and why. None elsewhere."""
    if urlsplit(getattr(s.api, "base_url", "") or "").hostname not in LOOPBACK:
        return None
    try:
        answer = s.api.request("GET", "/_sandbox/app-view", params={"account": account_id})
    except DecoyError:
        return None  # not a sandbox, or its owner surface is not reachable: nothing to ask
    listed = answer.get("accounts") if isinstance(answer, Mapping) else None
    if not isinstance(listed, list) or not listed or not isinstance(listed[0], Mapping):
        return None
    return dict(listed[0])


def _read_back(s: Session, account_id: str, out: Verified, *, part: str | None = None) -> None:
    """Read the account back (it must be served), then ask the owner's eye about `part`."""
    try:
        s.get(routes.account(account_id), id=str)
    except DecoyError as exc:
        out.add(f"reading the account back failed: {exc}")
    view = owner_view(s, account_id)
    if view is None:
        return
    out.owner_view = view
    checked = view if part is None else view.get(part)
    if isinstance(checked, Mapping) and checked.get("readable") is False:
        what = "the account record" if part is None else f"its {part}"
        out.add(f"the owner's app would not open {what}: {checked.get('reason')}")
    for problem in out.problems:
        log.warning("account %s: %s", account_id, problem)
    s.last_verify = out


def _say(trace: Trace | None, out: Verified) -> None:
    """The trace's verdict: what reading the write back found (the owner's eye, against the sandbox)."""
    if trace is None:
        return
    if not out.ok:
        trace.verdict = "sent, but " + "; ".join(out.problems)
    elif out.owner_view is not None:
        trace.verdict = "sent and read back; the owner's app opens it"
    else:
        trace.verdict = "sent and read back"


# -- an account with its Decoy address ---------------------------------------------------------
def account_record(service: str, *, url: str | None = None, username: str | None = None) -> dict[str, Any]:
    """The account record this connection seals for `service` (with or without an address, or
    re-sealed whole by an update): what the owner's app opens, and what this connection holds to
    name the account in this session. A name that is not text, or a URL that is not http(s) — the
    owner's app offers it as a link — is a mistake, and nothing is sent."""
    if not isinstance(service, str) or not service.strip():
        raise MemoryModelError("an account needs its service's name (text); nothing was sent")
    if url is not None and not isinstance(url, str):
        raise MemoryModelError(f"the service URL is text, not {type(url).__name__}; nothing was sent")
    if username is not None and not isinstance(username, str):
        raise MemoryModelError(f"the username is text, not {type(username).__name__}; nothing was sent")
    if url is not None and urlsplit(url).scheme not in ("http", "https"):
        raise MemoryModelError(f"the service URL must be http or https, not {url!r}; nothing was sent")
    return {"name": service.strip(), "username": username, "url": url, "agentCreated": True}


def _token_id(s: Session) -> str:
    """This connection's token id (learnt from the memory-grantees answer when not yet known)."""
    tokens = s.api.tokens
    if tokens is None or not tokens.token_id:
        s.keys()
        tokens = s.api.tokens
    if tokens is None or not tokens.token_id:
        raise MemoryModelError("this connection's token_id is unknown, so its own metadata seal cannot be named")
    return str(tokens.token_id)


def create_account(
    s: Session,
    service: str,
    *,
    url: str | None = None,
    username: str | None = None,
    label: str | None = None,
    idempotency_key: str | None = None,
    trace: Trace | None = None,
) -> CreatedAccount:
    """`POST /api/agent/decoys` with the details sealed (no vault key): `sealed_details` to the
    owner's key, this connection's own copy in `metadata_seals`, and the account record as an
    owner ENVELOPE in `account_encrypted_data`, so the account is born named. One body, sent
    again unchanged after an unknown outcome; the `idempotency_key` (made here when not given)
    answers the original address to a repeat."""
    record = account_record(service, url=url, username=username)
    label_arg(label, "an account's label")
    if idempotency_key is not None:
        text_arg(idempotency_key, "idempotency_key", limit=128)  # "maxLength: 128"
    details: dict[str, Any] = {"serviceName": service.strip(), "serviceURL": url, "agentCreated": True}
    owner_pk = s.get(routes.OWNER_KEY, public_key=str).get("public_key")
    if not isinstance(owner_pk, str):
        raise MemoryModelError("the owner has no public key on file (GET /api/agent/public-key); nothing was sent")
    key = idempotency_key or f"decoy-lab-{uuid.uuid4()}"
    body: dict[str, Any] = {
        "sealed_details": wire.b64encode(records.seal_details(details, owner_pk, trace=trace)),
        "metadata_seals": [
            {
                "token_id": _token_id(s),
                "sealed_envelope": wire.b64encode(
                    records.seal_details(details, s.agent_key.public_key_b64, kind="metadata_seal")
                ),
            }
        ],
        "account_encrypted_data": wire.b64encode(records.seal_account_record(record, owner_pk)),
        "idempotency_key": key,
    }
    if label is not None:
        body["label"] = label
    answer = pending.send_journaled(
        s,
        "address",
        "POST",
        routes.DECOYS,
        body,
        again=f"Run create_account again with idempotency_key={key!r}: the same key answers the address it made.",
        target=f"idempotency_key {key}",
        key=key,
    )
    made = CreatedAccount(
        account_id=answer["account_id"],
        decoy_id=answer["id"],
        email=str(answer.get("email") or ""),
        idempotency_key=key,
        replayed=answer.get("idempotent_replay") is True,
        record=record,
        verified=Verified(answer["account_id"]),
    )
    log.info("created account %s with its address (decoy %s)", made.account_id, made.decoy_id)
    _read_back(s, made.account_id, made.verified)
    _say(trace, made.verified)
    return made


# -- the password -------------------------------------------------------------------------------
def set_password(
    s: Session, account_id: str, password: str, *, public_key: str | None = None, trace: Trace | None = None
) -> Verified:
    """`POST …/credential`: the password sealed to the owner's account key (`GET
    /api/agent/accounts/public-key`, or `public_key` when the caller holds it), sent under the
    retry rules, then read back: the status must say a password is stored, and against the
    sandbox the owner's app must open it."""
    if not isinstance(password, str) or not password:
        raise MemoryModelError("a password is non-empty text; nothing was sent")
    if public_key is None:
        public_key = s.get(routes.ACCOUNT_KEY, public_key=str).get("public_key")
        if not isinstance(public_key, str):
            raise MemoryModelError("the account encryption key is not on file; nothing was sent")
    body = {"encrypted_password": wire.b64encode(records.seal_credential(password, public_key, trace=trace))}
    pending.send_journaled(
        s,
        "password",
        "POST",
        routes.account(account_id, "credential"),
        body,
        again="Set the password again: a password set twice is stored once, the last one.",
        target=account_id,
    )
    out = Verified(account_id)
    try:
        status = s.get(routes.account(account_id, "credential/status"), has_password=bool)
        if status.get("has_password") is not True:
            out.add("reading it back, the account says it holds no password")
    except DecoyError as exc:
        out.add(f"reading the password's status back failed: {exc}")
    _read_back(s, account_id, out, part="credential")
    _say(trace, out)
    return out


# -- a secret field -----------------------------------------------------------------------------
def add_field(
    s: Session,
    account_id: str,
    label: str,
    value: str,
    *,
    field_type: str = "concealed-string",
    field_id: str | None = None,
    trace: Trace | None = None,
) -> FieldWritten:
    """`POST …/fields` as 001's steps 1–4 lay it out: a fresh field key and id, the VAULT
    ciphertext of `{"id","account_id","fieldType","label","value"}`, `owner_wrap`, `self_wrap`,
    and a wrap for each connection `field-grantees` lists. The id makes a resend safe."""
    if field_id is not None:
        text_arg(field_id, "field_id")
    if not isinstance(field_type, str) or field_type not in records.FIELD_TYPES:
        raise MemoryModelError(f"fieldType is one of {', '.join(records.FIELD_TYPES)}; nothing was sent")
    for what, text in (("label", label), ("value", value)):
        if not isinstance(text, str) or not text:
            raise MemoryModelError(f"a field's {what} is non-empty text; nothing was sent")
    readers = s.get(routes.account(account_id, "field-grantees"), owner_public_key=str, grantees=list)
    owner_pk = readers.get("owner_public_key")
    if not isinstance(owner_pk, str):
        raise MemoryModelError("field-grantees names no owner key to wrap the field key to; nothing was sent")
    key, fid = random_key(), field_id or str(uuid.uuid4())
    plain = {"id": fid, "account_id": account_id, "fieldType": field_type, "label": label, "value": value}
    body: dict[str, Any] = {
        "id": fid,
        "kid": wire.kid(key),
        "ciphertext": wire.b64encode(records.seal_field(key, plain, trace=trace)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, owner_pk)),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, s.agent_key.public_key_b64)),
        "grantee_wraps": [
            {"token_id": g["token_id"], "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, g["public_key"]))}
            for g in readers.get("grantees") or []
            if isinstance(g, Mapping) and isinstance(g.get("token_id"), str) and isinstance(g.get("public_key"), str)
        ],
    }
    answer = pending.send_journaled(
        s,
        "field",
        "POST",
        routes.account(account_id, "fields"),
        body,
        again=f"Add it again with field_id={fid!r}: the same id is stored once (`existing`).",
        target=account_id,
        ids=[fid],
        key=fid,
    )
    if answer.get("kid") not in (None, body["kid"]) and not _holds(s, account_id, fid, plain):
        # "If `kid` differs from yours, re-read and PUT instead": the id holds another key.
        raise KidConflict(
            409, "KID_CONFLICT", f"field {fid} exists under another key: re-read it and change it with PUT"
        )
    out = Verified(fid)
    try:
        listed = s.get(routes.account(account_id, "fields"), fields=list)
        served = next((f for f in listed.get("fields") or [] if isinstance(f, dict) and f.get("id") == fid), None)
        if served is None:
            out.add("reading it back, this connection is not served the field")
        elif records.open_field(served, s.agent_key).get("value") != value:
            out.add("reading it back, the field does not hold the value sent")
    except DecoyError as exc:
        out.add(f"reading the field back failed: {exc}")
    _read_back(s, account_id, out, part="fields")  # the field itself is checked just below
    fields = (out.owner_view or {}).get("fields")
    seen = next((f for f in fields or [] if isinstance(f, Mapping) and f.get("id") == fid), None)
    if isinstance(seen, Mapping) and seen.get("readable") is False:
        out.add(f"the owner's app would not open the field: {seen.get('reason')}")
    _say(trace, out)
    rev = answer.get("rev")
    kid = answer["kid"] if isinstance(answer.get("kid"), str) else body["kid"]
    return FieldWritten(fid, account_id, kid, rev if isinstance(rev, int) else None, answer["status"], out)


def _holds(s: Session, account_id: str, field_id: str, plain: dict[str, Any]) -> bool:
    """Does the stored field, as this connection opens it, already hold `plain` (an earlier
    send of this id landed under the key it was sealed with then)?"""
    try:
        listed = s.get(routes.account(account_id, "fields"), fields=list)
        served = next((f for f in listed.get("fields") or [] if isinstance(f, dict) and f.get("id") == field_id), None)
        return served is not None and records.open_field(served, s.agent_key) == plain
    except DecoyError:
        return False


def set_field(s: Session, account_id: str, field_id: str, value: str) -> FieldWritten:
    """`PUT …/fields/{id}` with `expected_rev`: the field read and opened, its `value` changed and
    every other key kept ("Keep every key you do not recognise when you edit it"), sealed under the
    same key. `REV_CONFLICT`: read again, apply the change to what was read, send again."""
    text_arg(field_id, "the field id")
    if not isinstance(value, str) or not value:
        raise MemoryModelError("a field's value is non-empty text; nothing was sent")
    for attempt in range(REV_TRIES):
        listed = s.get(routes.account(account_id, "fields"), fields=list)
        served = next((f for f in listed.get("fields") or [] if isinstance(f, dict) and f.get("id") == field_id), None)
        if served is None:
            raise MemoryModelError(f"this connection is not served field {field_id}: it cannot change it")
        key = sealing.unwrap_as_agent(served["wrapped_key"], s.agent_key)
        plain = records.open_field(served, s.agent_key)
        if plain.get("value") == value:  # an earlier unanswered send landed, or nothing to change
            return FieldWritten(field_id, account_id, served["kid"], served.get("rev"), "unchanged", Verified(field_id))
        body = {
            "expected_rev": served["rev"],
            "ciphertext": wire.b64encode(records.seal_field(key, {**plain, "value": value})),
        }
        try:
            answer = pending.send_journaled(
                s,
                "field edit",
                "PUT",
                routes.account(account_id, "fields", field_id),
                body,
                again="Change it again: it is read first, and a change already made is not made twice.",
                target=account_id,
                ids=[field_id],
                proof={"read": routes.account(account_id, "fields"), "id": field_id},
            )
        except RevConflict as exc:
            log.info("field %s changed meanwhile (%s): reading it again (attempt %d)", field_id, exc, attempt + 1)
            continue
        rev = answer.get("rev")
        return FieldWritten(field_id, account_id, served["kid"], rev if isinstance(rev, int) else None, "changed",
                            Verified(field_id))  # fmt: skip
    raise RevConflict(409, "REV_CONFLICT", f"field {field_id} kept changing: tried {REV_TRIES} times")


def delete_field(s: Session, account_id: str, field_id: str, *, expected_rev: int | None = None) -> dict[str, Any]:
    """`DELETE …/fields/{id}` with `expected_rev` (the rev read now unless given: "Send
    `expected_rev` … to delete only the version you saw"). A resend after a lost answer that meets
    404 is done when the field is no longer served."""
    text_arg(field_id, "the field id")
    if expected_rev is None:
        listed = s.get(routes.account(account_id, "fields"), fields=list)
        served = next((f for f in listed.get("fields") or [] if isinstance(f, dict) and f.get("id") == field_id), None)
        if served is None:
            raise MemoryModelError(f"this connection is not served field {field_id}: it cannot delete it")
        expected_rev = served.get("rev") if isinstance(served.get("rev"), int) else None
    body: dict[str, Any] = {} if expected_rev is None else {"expected_rev": expected_rev}
    answer = pending.send_journaled(
        s,
        "field delete",
        "DELETE",
        routes.account(account_id, "fields", field_id),
        body,
        again="Read the fields: a field no longer served is deleted.",
        target=account_id,
        ids=[field_id],
        proof={"read": routes.account(account_id, "fields"), "id": field_id},
    )
    return {"id": field_id, "deleted": True, **answer}  # an earlier send's answer was lost: `said` tells


# -- an account saved without an address, and changed -----------------------------------------------
def save_account(
    s: Session,
    service: str,
    *,
    url: str | None = None,
    username: str | None = None,
    label: str | None = None,
    trace: Trace | None = None,
) -> str:
    """`POST /api/agent/accounts` ("Save New Account"): the record sealed to the owner's key
    (ENVELOPE mode, for a connection without the vault key), no address. The route has no
    idempotency key, so the body is sent ONCE: after a lost answer it is journaled, and
    `conn.resend()` reads the account list before sending it again. Returns the account's id."""
    record = account_record(service, url=url, username=username)
    label_arg(label, "an account's label")
    owner_pk = s.get(routes.OWNER_KEY, public_key=str).get("public_key")
    if not isinstance(owner_pk, str):
        raise MemoryModelError("the owner has no public key on file (GET /api/agent/public-key); nothing was sent")
    body: dict[str, Any] = {
        "encrypted_data": wire.b64encode(records.seal_account_record(record, owner_pk, trace=trace))
    }
    if label is not None:
        body["agent_label"] = label
    answer = pending.send_journaled(
        s,
        "account",
        "POST",
        routes.ACCOUNTS,
        body,
        again="List the accounts before saving it again: this route has no idempotency key.",
        mode=pending.CHECK,
    )
    log.info("saved account %s", answer["id"])
    return str(answer["id"])


def update_account(
    s: Session,
    account_id: str,
    *,
    record: Mapping[str, Any] | None = None,
    label: Any = KEEP,
    status: str | None = None,
    two_factor: bool | None = None,
) -> dict[str, Any]:
    """`PATCH /api/agent/accounts/{id}` with `expected_rev` (the rev read now): `record` re-sealed
    to the owner's key as `encrypted_data` ("Identity fields … require an accompanying
    `encrypted_data` re-seal"), `agent_label`, `status`, `two_factor_enabled`. `REV_CONFLICT`:
    read again, apply the same change, send again. Returns the account as the server answers it.

    `label`: KEEP (the default) leaves it as it is; None clears it, sent as `agent_label: null`.
    001 says "Provide only the fields you want to change" and names `agent_label` among the
    "Metadata-only updates", as `update_address` clears an address's (`label … nullable`)."""
    change: dict[str, Any] = {
        k: v for k, v in (("status", status), ("two_factor_enabled", two_factor)) if v is not None
    }
    if label is not KEEP:
        if label is not None and not isinstance(label, str):
            raise MemoryModelError("an account's label is text, or None to clear it; nothing was sent")
        label_arg(label, "an account's label")
        change["agent_label"] = label
    if status is not None and status not in vocab.STATUSES:
        raise MemoryModelError(
            f"an account's status is {' or '.join(vocab.STATUSES)}, not {status!r:.40}; nothing was sent"
        )
    if two_factor is not None:
        flag_arg(two_factor, "two_factor")
    if record is not None:
        record = record_arg(record, "record")
    if not change and record is None:
        raise MemoryModelError("name something to change (record, label, status, two_factor); nothing was sent")
    owner_pk = None
    if record is not None:
        owner_pk = s.get(routes.OWNER_KEY, public_key=str).get("public_key")
        if not isinstance(owner_pk, str):
            raise MemoryModelError("the owner has no public key on file (GET /api/agent/public-key); nothing was sent")
    for attempt in range(REV_TRIES):
        served = served_row(s, routes.account(account_id), account_id, rev=int)
        if record is None and all(served.get(k) == v for k, v in change.items()):
            return served  # an earlier unanswered send landed, or nothing to change
        body = {"expected_rev": served.get("rev"), **change}
        if record is not None and owner_pk is not None:
            body["encrypted_data"] = wire.b64encode(records.seal_account_record(dict(record), owner_pk))
        try:
            answer = pending.send_journaled(
                s,
                "account edit",
                "PATCH",
                routes.account(account_id),
                body,
                again="Update it again: it is read first, with the rev it has now.",
                target=account_id,
                ids=[account_id],
                proof={"read": routes.account(account_id)},
            )
        except RevConflict as exc:
            log.info("account %s changed meanwhile (%s): reading it again (attempt %d)", account_id, exc, attempt + 1)
            continue
        if answer.get("outcome") == "already applied":  # an earlier send landed: the account as served now
            return {**s.get(routes.account(account_id), id=str), **answer}
        return answer
    raise RevConflict(409, "REV_CONFLICT", f"account {account_id} kept changing: tried {REV_TRIES} times")


def delete_account(s: Session, account_id: str) -> dict[str, Any]:
    """`DELETE /api/agent/accounts/{id}`: "Soft-delete an account (status becomes `deleted` and it
    disappears from reads; reversible server-side). Needs `account.delete` on the account — its own
    permission … The account's own Decoy email goes with it." A Personal Alias linked to it is
    burned only with `alias.burn`, else unlinked and left live. Its fields go with it ("its fields
    are no longer served"); the memories filed about it are not deleted (that is a memory delete).

    The account is read first: its `rev` names the version asked to delete (001 gives the route no
    `expected_rev`), so `resend()` after a lost answer deletes it only if it is that version still
    — one changed or restored meanwhile is "not applied" — and counts it done once it is no longer
    served. Returns the answer: `account_id`, `deleted`, `burned_decoys`, `unlinked_decoys` (or
    `outcome` "already applied" and `said` when an earlier send's answer was lost)."""
    path = routes.account(account_id)
    rev = served_row(s, path, account_id, rev=int)["rev"]
    answer = pending.send_journaled(
        s,
        "account delete",
        "DELETE",
        path,
        None,
        again="Read the account: one no longer served is deleted.",
        target=account_id,
        ids=[account_id],
        proof={"read": path, "rev": rev},
    )
    log.info("deleted account %s", account_id)
    return {"account_id": account_id, "deleted": True, **answer}
