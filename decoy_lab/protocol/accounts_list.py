"""The accounts this connection may see, each read with what it can open (vault/account_list.py).

`GET /api/agent/accounts` page by page ("Discover which accounts the user has — service name,
username, URL, linked decoy, and whether a password is stored — but **never the passwords
themselves**"); for each account, its name from the copy of its address's details sealed to this
connection: `metadata_seal` on the account read itself ("returned to this connection as
`metadata_seal` on … the account reads"; "one without [the vault key] reads its own
`metadata_seal` (served on the account)"), or its `metadata_seal_state` there when it is null — so
no decoy read per account; `GET /api/agent/decoys/{decoyId}` only for an account served without
the member (a server that does not put it on the account), and its secret fields this
connection may open (`GET …/fields`: unwrap, kid, open, bind), read again only when `fields_rev`
changed ("compare it to skip a refetch").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError, InsufficientGrant
from decoy_lab.protocol.accounts_checks import whole
from decoy_lab.protocol.accounts_pending import is_id
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.transport import routes
from decoy_lab.vault.account_list import AccountEntry, FieldsSeen, entry_of
from decoy_lab.wire import layouts as wire

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

__all__ = ["IN_FLIGHT", "PAGES", "FieldsCache", "list_accounts", "pages", "reads_in_flight", "unseal_account"]
IN_FLIGHT = 2  # accounts read side by side per core, by default (see list_accounts)
PAGES = 20  # pages of the account list read (of up to 100 accounts each); past that, the rest is not listed
FieldsCache = MutableMapping[tuple[str, int], FieldsSeen]  # (account id, fields_rev) → the fields as read


def pages(s: Session) -> Iterator[dict[str, Any]]:
    """Every account the list serves, page by page (at most PAGES pages of 100)."""
    params: dict[str, Any] = {"limit": 100}
    for _ in range(PAGES):
        body = whole(s.get(routes.ACCOUNTS, params=params, accounts=list), f"GET {routes.ACCOUNTS}", accounts=list)
        rows = [a for a in body["accounts"] if isinstance(a, dict) and is_id(a.get("id"))]
        if len(rows) < len(body["accounts"]):
            log.warning("accounts: %d rows of the list name no id: left out", len(body["accounts"]) - len(rows))
        yield from rows
        page = body.get("pagination")
        cursor = page.get("next_cursor") if isinstance(page, dict) and page.get("has_more") else None
        if not isinstance(cursor, str) or not cursor:
            return
        params = {"limit": 100, "cursor": cursor}
    log.warning("accounts: only the first %d pages of the account list were read", PAGES)


def _details(s: Session, served: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The address's details from a copy sealed to this connection, or why there is none."""
    seal = served.get("metadata_seal")
    state = str(served.get("metadata_seal_state") or "")
    decoy_id = served.get("decoy_id")
    if "metadata_seal" not in served and isinstance(decoy_id, str):  # not on the account: ask the address
        try:
            decoy = s.get(routes.decoy(decoy_id), metadata_seal=str)
        except InsufficientGrant as exc:
            return None, f"its address's details cannot be read here ({exc.status} {exc.code})"
        except DecoyError as exc:
            return None, f"its address could not be read ({exc})"
        seal, state = decoy.get("metadata_seal"), str(decoy.get("metadata_seal_state") or "")
    if not isinstance(seal, str):
        if state:
            return (
                None,
                f"the copy of its address's details for this connection is {state} (the owner's phone seals it)",
            )
        return None, "" if decoy_id else "it has no Decoy address whose details are sealed to this connection"
    try:
        return records.open_details(seal, s.agent_key), ""
    except DecoyError as exc:
        return None, f"its metadata_seal does not open with this connection's key: {exc}"


def _read_fields(s: Session, served: Mapping[str, Any], cache: FieldsCache) -> FieldsSeen | dict[str, Any]:
    """The account's fields as served (`GET …/fields`), or what is known without reading them:
    the fields as seen for this `fields_rev`, or why they could not be read."""
    account_id, rev = str(served["id"]), served.get("fields_rev")
    if isinstance(rev, int) and (account_id, rev) in cache:
        return cache[(account_id, rev)]
    try:
        return s.get(routes.account(account_id, "fields"), fields=list)
    except InsufficientGrant as exc:
        return FieldsSeen(
            None,
            f"not read: {exc.status} {exc.code} (reading fields needs {exc.required_permission or 'account.read'})",
        )
    except DecoyError as exc:
        return FieldsSeen(None, f"not read: {exc}")


def _owed(body: Mapping[str, Any], key: str) -> int | None:
    """How many fields the answer says are `key` (its list, plus `{key}_others`), or None when it
    says so in no readable way (a count that is not a count)."""
    listed, others = body.get(key) or [], body.get(f"{key}_others") or 0
    if not isinstance(listed, list) or not isinstance(others, int) or isinstance(others, bool) or others < 0:
        return None
    return len(listed) + others


def _open_fields(s: Session, served: Mapping[str, Any], body: dict[str, Any], cache: FieldsCache) -> FieldsSeen:
    """The labels of the fields this connection opens (kept for this `fields_rev` when complete)."""
    labels, problems = [], []
    for f in body.get("fields") or []:
        if not isinstance(f, dict):
            continue
        try:
            plain = records.open_field(f, s.agent_key)
        except DecoyError as exc:
            problems.append(f"field {f.get('id')} does not open: {exc}")
            continue
        labels.append(str(plain.get("label") or plain.get("id")))
    waiting, failed = _owed(body, "preparing"), _owed(body, "failed")
    for key, count in (("preparing", waiting), ("failed", failed)):
        if count is None:
            problems.append(f"the answer's {key} and {key}_others are not a list and a count")
    if waiting:
        problems.append(f"{waiting} more preparing (the owner's phone shares their keys; read again later)")
    if failed:
        problems.append(f"{failed} more not shared: Decoy stopped asking the owner's phone")
    seen = FieldsSeen(tuple(labels), "; ".join(problems))
    rev = served.get("fields_rev")
    if isinstance(rev, int) and waiting == 0 and failed is not None:
        cache[(str(served["id"]), rev)] = seen
    return seen


def _vault_record(
    served: Mapping[str, Any], vault_key: Callable[[], bytes | None] | None
) -> tuple[dict[str, Any] | None, str, str]:
    """An account record sealed with the vault key (an import, the owner's own apps): opened when
    this connection holds the key — (record, where it came from, why not)."""
    try:
        vault = wire.b64decode(served.get("encrypted_data") or "")[:2] == wire.VAULT_HEADER
    except DecoyError:
        vault = False
    if not vault:
        return None, "", ""
    key = vault_key() if vault_key is not None else None
    if key is None:
        return (
            None,
            "",
            "its record is sealed with the vault key (an import, or the owner's own app), which this connection does not hold",
        )
    try:
        record = sealing.open_json(key, served["encrypted_data"])
    except DecoyError as exc:
        return None, "", f"its record does not open with the vault key: {exc}"
    if not isinstance(record, dict):
        return None, "", "its record, opened with the vault key, is not a JSON object"
    return record, "its record, opened with the vault key", ""


def reads_in_flight(workers: int | None) -> int:
    """How many accounts are read side by side: `workers`, or by default IN_FLIGHT per core."""
    if workers is not None:
        return max(1, workers)
    return IN_FLIGHT * (os.cpu_count() or 1)


def list_accounts(
    s: Session,
    *,
    known: Mapping[str, tuple[dict[str, Any], str]],
    fields_cache: FieldsCache,
    workers: int | None = None,
    vault_key: Callable[[], bytes | None] | None = None,
) -> list[AccountEntry]:
    """Each account this connection may see, read with what it can open, in the list's order;
    `known` holds, by account id, a record this connection holds in memory and where it came from
    (sealed here, an unlock answer), `fields_cache` the fields as read for each `fields_rev`,
    `vault_key` gives the vault key where this connection holds it (asked only for a record sealed
    with it that nothing else names). The accounts are read on `workers` threads (None:
    `reads_in_flight`) while the list's next pages are read."""

    def read(served: dict[str, Any]) -> AccountEntry:
        details, why = _details(s, served)
        got = _read_fields(s, served, fields_cache)
        fields = got if isinstance(got, FieldsSeen) else _open_fields(s, served, got, fields_cache)
        record, record_from = known.get(served["id"], (None, ""))
        if record is None and not (details or {}).get("serviceName") and not served.get("service_name"):
            record, record_from, vault_why = _vault_record(served, vault_key)
            why = vault_why or why
        return entry_of(served, details=details, details_why=why, record=record, record_from=record_from, fields=fields)

    # One account's read is a request to the server (a wait, then Python that holds the GIL) and
    # an RSA unwrap per field (which releases it). Done one after another, every round trip leaves
    # the cores idle while it waits; so several accounts are read at once, each thread sending its
    # request while the others unwrap — as a load opens rows while its stream is still arriving.
    # Nothing here is shared between accounts but `fields_cache` (one key per account and rev).
    with ThreadPoolExecutor(max_workers=reads_in_flight(workers), thread_name_prefix="decoy-accounts") as pool:
        pending = [pool.submit(read, served) for served in pages(s)]
        return [f.result() for f in pending]


def unseal_account(s: Session, account_id: str, trace: Trace | None = None) -> Trace:
    """`Connection.unseal_account`: what this connection opens of one account, step by step — the
    copy of its address's details sealed to it (`metadata_seal`), then each secret field it is
    served (unwrap, kid, open, bind). A step that fails ends the trace, as in every recipe."""
    trace = trace if trace is not None else Trace(f"unseal account {account_id}")
    try:
        served = s.get(routes.account(account_id), id=str)
    except DecoyError as exc:
        trace.add("find the served account", ok=False, inputs={"id": account_id}, reason=str(exc))
        return trace
    trace.add(
        "find the served account",
        inputs={"id": account_id, "rev": served.get("rev"), "decoy_id": served.get("decoy_id")},
        output="served",
    )
    seal = served.get("metadata_seal")
    if "metadata_seal" not in served and isinstance(served.get("decoy_id"), str):  # not on the account
        try:
            seal = s.get(routes.decoy(served["decoy_id"]), metadata_seal=str).get("metadata_seal")
        except DecoyError as exc:
            trace.add("read its address", ok=False, inputs={"decoy_id": served["decoy_id"]}, reason=str(exc))
            return trace
    try:
        if isinstance(seal, str):
            records.open_details(seal, s.agent_key, trace=trace)
        else:
            trace.add("its address's details", output="no copy sealed to this connection (yet)")
        try:
            listed = s.get(routes.account(account_id, "fields"), fields=list)
        except DecoyError as exc:
            trace.add("read its secret fields", output=f"not read: {exc}")
            return trace
        for f in listed.get("fields") or []:
            if isinstance(f, dict):
                records.open_field(f, s.agent_key, trace=trace)
    except DecoyError:
        pass  # the failing step is in the trace, with its reason
    return trace
