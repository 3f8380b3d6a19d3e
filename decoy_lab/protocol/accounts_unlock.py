"""Reading an account's secrets back: `POST /api/agent/unlock`, polled as the spec says.

001, `unlock_request`: "A covering permission answers the request as `ready` at once; otherwise the
owner is asked on their phone and the request is `pending`. Poll `GET /api/agent/unlock/{requestId}`
for the sealed envelope and open it with your agent key"; "`200` with `available: false` and `state`
`preparing` (Decoy is asking the owner's phone for the copy: send the same request again after
`retry_after_seconds`) or `failed` (the copy has not come: carry on without it)"; a passkey's poll
"every 2–3 seconds". `unlock_poll`: "When `status: ready`, includes the encrypted envelopes on first
fetch — subsequent calls return `ready` with no `items` (envelopes are consumed once)."

`unlock` never blocks longer than `wait` seconds (0: ask once and return): a person may take
minutes to decide, and a notebook cell must come back. What it returns says where it stands —
`ready` with the secrets, `pending` with the request's id to poll later, `preparing` with when to
ask again — and its repr never shows a secret.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError, MemoryModelError
from decoy_lab.protocol.accounts_checks import seconds_arg, text_arg, whole
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes.trace import Trace
from decoy_lab.secret import Secret
from decoy_lab.transport import routes

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

__all__ = [
    "DATATYPES",
    "LOGIN_COLUMNS",
    "POLL_EVERY",
    "REASON_MAX",
    "Unlocked",
    "check_ask",
    "poll",
    "saved_logins",
    "unlock",
]
LOGIN_COLUMNS = ["account_id", "host", "username", "password", "state"]
SEALED_SECRETS = "/api/agent/sealed-secrets"
POLL_EVERY = 2.5  # seconds between polls of a pending request ("every 2–3 seconds")
MIN_RETRY = 1.0  # the least wait before asking again for a copy still `preparing`, whatever the answer says
DONE = frozenset({"ready", "denied", "expired", "failed", "unavailable", "consumed"})
#: "datatypes: … enum: [basic-auth, custom-fields, totp, note, address, credit-card, passkey, email, phone, identity]"
DATATYPES = (
    "basic-auth",
    "custom-fields",
    "totp",
    "note",
    "address",
    "credit-card",
    "passkey",
    "email",
    "phone",
    "identity",
)
REASON_MAX = 200  # "`reason` is plain text, at most 200 characters"


@dataclass
class Unlocked:
    """Where an unlock stands. `status`: `ready` (the secrets opened), `pending` (the owner has
    not decided: poll `request_id`), `preparing` (the owner's phone owes a copy: ask again after
    `retry_after`), `denied`, `expired`, `failed` (Decoy stopped asking the phone), `unavailable`
    (no copy and none on its way), `consumed` (ready, but its envelope was fetched before). The
    secrets are held as `Secret`s: shown by fingerprint, `reveal()` for the text."""

    account_id: str
    status: str
    request_id: str | None = None
    retry_after: float | None = None
    note: str = ""
    opened: dict[str, Any] | None = field(default=None, repr=False)  # the envelope's JSON, whole

    @property
    def done(self) -> bool:
        return self.status in DONE

    @property
    def record(self) -> dict[str, Any] | None:
        """The account's record as the owner's phone opened it (its name, username, URL)."""
        rec = (self.opened or {}).get("record")
        return rec if isinstance(rec, dict) else None

    @property
    def username(self) -> str | None:
        basic = (self.opened or {}).get("basic-auth")
        name = basic.get("username") if isinstance(basic, dict) else None
        if isinstance(name, str):
            return name
        name = (self.record or {}).get("username")
        return name if isinstance(name, str) else None

    @property
    def password(self) -> Secret | None:
        basic = (self.opened or {}).get("basic-auth")
        value = basic.get("password") if isinstance(basic, dict) else None
        return Secret(value) if isinstance(value, str) else None

    @property
    def fields(self) -> dict[str, Secret]:
        """Each secret field by its label (its id when it has none)."""
        out: dict[str, Secret] = {}
        custom = (self.opened or {}).get("custom-fields")
        for f in custom if isinstance(custom, list) else []:
            if isinstance(f, dict) and isinstance(f.get("value"), str):
                out[str(f.get("label") or f.get("id"))] = Secret(f["value"])
        return out


def check_ask(account_id: object, datatypes: object, reason: object, wait: object) -> float:
    """An unlock's arguments as 001 takes them, or a MemoryModelError saying which is wrong (before
    anything is sent); returns `wait` as seconds."""
    text_arg(account_id, "the account id")
    if datatypes is not None:
        if isinstance(datatypes, (str, bytes)) or not isinstance(datatypes, Sequence) or len(datatypes) != 1:
            raise MemoryModelError("name one kind per request (ONE_DATATYPE_PER_REQUEST), or none for every kind")
        if datatypes[0] not in DATATYPES:
            raise MemoryModelError(
                f"datatypes are among {', '.join(DATATYPES)}, not {datatypes[0]!r:.40}; nothing was sent"
            )
    if reason is not None and reason != "":
        text_arg(reason, "reason", limit=REASON_MAX)
    return seconds_arg(wait)


def _target(account_id: str, datatypes: Sequence[str] | None, reason: str | None) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "account", "id": account_id}
    if datatypes:
        target["datatypes"] = list(datatypes)
    body: dict[str, Any] = {"target": target}
    if reason:
        body["reason"] = reason
    return body


def _opened(s: Session, account_id: str, answer: dict[str, Any], trace: Trace | None) -> Unlocked:
    """A `ready` poll: open its item with this connection's key (or say it was consumed before)."""
    rid = answer.get("id")
    served = answer.get("items") or []
    items = [i for i in served if isinstance(i, dict) and isinstance(i.get("sealed_envelope"), str)]
    if served and not items:  # items served, none an envelope: a broken answer, not one fetched before
        raise DecoyError("the unlock answer is ready, but its items hold no sealed_envelope (text) to open")
    if not items:
        return Unlocked(account_id, "consumed", rid, note="ready, but its envelope was fetched before (served once)")
    opened = records.open_unlock_answer(items[0]["sealed_envelope"], s.agent_key, trace=trace)
    return Unlocked(account_id, "ready", rid, opened=opened)


def poll(
    s: Session,
    account_id: str,
    request_id: str,
    *,
    wait: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    trace: Trace | None = None,
) -> Unlocked:
    """`GET /api/agent/unlock/{id}` until it is decided or `wait` seconds pass (every POLL_EVERY s)."""
    wait = seconds_arg(wait)
    end = clock() + max(0.0, wait)
    while True:
        answer = s.get(routes.unlock(request_id), status=str, items=list)
        status = answer.get("status")
        if status == "ready":
            return _opened(s, account_id, answer, trace)
        if status in ("denied", "expired"):
            note = "the owner declined: do not ask again on your own" if status == "denied" else "no answer in time"
            return Unlocked(account_id, str(status), request_id, note=note)
        if clock() + POLL_EVERY > end:
            return Unlocked(account_id, "pending", request_id, POLL_EVERY, note="the owner has not decided yet")
        s.sleep(POLL_EVERY)


def unlock(
    s: Session,
    account_id: str,
    *,
    datatypes: Sequence[str] | None = None,
    reason: str | None = None,
    wait: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    trace: Trace | None = None,
) -> Unlocked:
    """Ask for the account's secrets (every kind when `datatypes` is None, else the ONE kind
    named) and follow the answer for up to `wait` seconds: `preparing` → the same request again
    after `retry_after_seconds`; `pending` → poll; `ready` → fetch and open the envelope."""
    wait = check_ask(account_id, datatypes, reason, wait)
    body = _target(account_id, datatypes, reason)
    end = clock() + max(0.0, wait)
    while True:
        answer = s.send("POST", routes.UNLOCK, body, {"status": str, "id": str, "state": str})
        if answer.get("available") is False:
            state = answer.get("state")
            after = answer.get("retry_after_seconds")
            after = float(after) if isinstance(after, (int, float)) and not isinstance(after, bool) else None
            if after is not None:  # a server's 0 (or less, or NaN) must not turn the wait into a loop
                after = max(MIN_RETRY, after) if after == after else MIN_RETRY
            if state == "preparing":
                if after is not None and clock() + after <= end:
                    log.info("unlock %s: the owner's phone is making the copy; asking again in %ss", account_id, after)
                    s.sleep(after)
                    continue
                return Unlocked(account_id, "preparing", None, after, str(answer.get("recovery_description") or ""))
            if state == "failed":
                return Unlocked(
                    account_id, "failed", note=str(answer.get("recovery_description") or "carry on without it")
                )
            note = "no copy is available and none is on its way" + (
                " (the copy holds the whole account: ask with no datatypes)" if datatypes else ""
            )
            return Unlocked(account_id, "unavailable", note=note)
        rid = answer.get("id")
        if not isinstance(rid, str):
            raise DecoyError(f"POST {routes.UNLOCK}: the answer names no request id")
        return poll(s, account_id, rid, wait=max(0.0, end - clock()), clock=clock, trace=trace)


def saved_logins(s: Session) -> list[dict[str, Any]]:
    """`GET /api/agent/sealed-secrets`: each saved login this connection is granted, opened with its
    key (`state` "ready", the password a `Secret`), and each one the owner's phone still owes it
    (`state` "preparing" or "failed", no password): "They are missing from `items`, not gone"."""
    answer = whole(s.get(SEALED_SECRETS, items=list), f"GET {SEALED_SECRETS}", items=list)
    rows: list[dict[str, Any]] = []
    for item in answer.get("items") or []:
        if not isinstance(item, dict) or item.get("kind") != "account":
            continue
        try:
            login = records.open_unlock_answer(str(item.get("sealed_envelope") or ""), s.agent_key)
        except DecoyError as exc:
            log.warning("sealed-secrets: the login of account %s does not open: %s", item.get("target_id"), exc)
            rows.append(dict.fromkeys(LOGIN_COLUMNS) | {"account_id": item.get("target_id"), "state": "unopenable"})
            continue
        password = login.get("password")
        rows.append(
            {
                "account_id": item.get("target_id"),
                "host": login.get("host"),
                "username": login.get("username"),
                "password": Secret(password) if isinstance(password, str) else None,
                "state": "ready",
            }
        )
    for state in ("preparing", "failed"):
        owed = answer.get(state)
        for account_id in owed if isinstance(owed, list) else []:  # a list of ids, or it says nothing
            if isinstance(account_id, str):
                rows.append(dict.fromkeys(LOGIN_COLUMNS) | {"account_id": account_id, "state": state})
    return rows
