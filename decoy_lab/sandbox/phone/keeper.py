"""The owner's phone for the account family: the copies it seals, the unlocks it answers, the
decoy edits it applies.

- **Copies.** "A read your grant covers has no current copy sealed to your key: none has been made
  yet, or the record changed after the copy was made … `state: "preparing"`: Decoy is asking the
  owner's phone to make the copy". The phone opens the account (record, password, fields) with the
  owner's keys and seals its secrets to the connection's key, for the account's `rev` (`seal_copy`).
- **Field keys.** "`preparing` is present when fields this connection may open have no key for its
  CURRENT key yet … Decoy asks the owner's phone to share the keys": the phone unwraps the field
  key from `owner_wrap` and wraps it to each reader that holds none for its current key.
- **Decoy names.** "The app seals a name for other connections only when the record says
  `"agentCreated": true` and has a `serviceName` string": a `metadata_seal` for each reader.
- **Edits.** A queued `sealed_patch` is opened, checked ("The supported keys are `serviceName` and
  `avatarUrl`"), applied to the sealed details and re-sealed; the decoy's `rev` goes up.
- **Unlocks.** `approve` / `deny` a pending request; an approval seals the copy at once (the phone
  that approves holds the secret).

`run_pass` does the first four; the app's background task runs it once something has been owed
`auto_share_after` seconds (schedule.py's setting; None: only when asked, `POST /_sandbox/keep`).

- **After `failed`.** A copy (or a field key) Decoy asked the phone for during 7 days and did not
  get is `failed`: "Decoy has stopped asking on its own", so the phone is no longer pushed for it.
  A later read asks once more: "sending the request again later may ask the phone once more, at
  most once a day; the request that asks answers `preparing` with a short retry time" ("30 when
  this request itself asked again after `failed`"); `copy_state` and `fields_state` say which
  read that is, and push the phone, which makes the copy on its next pass as for any ask. The
  day is counted from the end of the 7 days, then from the last read that asked.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any
from urllib.parse import urlsplit

from decoy_lab.recipes import sealing
from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.acctshapes import EDIT_TTL
from decoy_lab.sandbox.checks.bearer import Agent, live_agents
from decoy_lab.sandbox.checks.grants import new_id
from decoy_lab.sandbox.core import HTTPProblem, SandboxState
from decoy_lab.sandbox.phone import acctopen, passkeys
from decoy_lab.sandbox.phone.schedule import DAY, key_time
from decoy_lab.sandbox.phone.waiting import retry_after
from decoy_lab.sandbox.stores import acctstore as acs
from decoy_lab.wire import layouts as wire

EDIT_KEYS = ("serviceName", "avatarUrl")  # "The supported keys are `serviceName` and `avatarUrl`"
AVATAR_RE = re.compile(r"^/decoy-variant-[a-z0-9-]+\.png$")
BAD_CHARS = re.compile("[\x00-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
UNLOCK_TTL = 5 * 60.0  # a request "expired (no answer within 5 minutes of the request)"
STOPPED = 7 * DAY  # "the phone was asked for your connection 7 days ago, the copy has not come"
ASKED_AGAIN = 30  # retry_after_seconds: "30 when this request itself asked again after `failed`"


def secrets_of(state: SandboxState, con: sqlite3.Connection, account: sqlite3.Row) -> dict[str, Any]:
    """What the phone seals for an account read: its record, its password and its fields."""
    record, _ = acctopen.open_record(state, account["encrypted_data"], account["blob_mode"])
    password = password_of(state, account, record)
    fields = []
    for f in acs.fields_of(con, account["id"]):
        plain, _, why = acctopen.open_field(state, f)
        if why is None:
            fields.append(plain)
    return {
        "account_id": account["id"],
        "record": record,
        "basic-auth": {"username": (record or {}).get("username"), "password": password},
        "custom-fields": fields,
    }


def password_of(state: SandboxState, account: sqlite3.Row, record: Any) -> str | None:
    """The account's password as the phone gives it: the credential route's, else the one inside
    the record. An import seals each record "with the vault key" holding its password ("imported
    passwords never reach the server readable"); the phone opens the record and reads it there."""
    if account["encrypted_password"]:
        return acctopen.open_password(state, account["encrypted_password"])[0]
    inside = record.get("password") if isinstance(record, dict) else None
    return inside if isinstance(inside, str) and inside else None


def payload(secrets: dict[str, Any], datatypes: list[str]) -> bytes:
    """The unlock envelope's plaintext: every kind asked for (all when none is named)."""
    body = {"account_id": secrets["account_id"], "record": secrets["record"]}
    for kind in datatypes or ["basic-auth", "custom-fields"]:
        body[kind] = secrets.get(kind)
    return sealing.json_bytes(body)


def seal_copy(state: SandboxState, con: sqlite3.Connection, account: sqlite3.Row, agent: Agent, now: float) -> str:
    """Seal the account's secrets (every kind) to this connection's key as its current copy, and
    its login as `sealed-secrets` serves it when it holds a password."""
    assert agent.public_key
    secrets = secrets_of(state, con, account)
    login = secrets["basic-auth"]
    if login.get("password") is not None:  # "`kind: "account"` → `{ host, username, password }`"
        record = secrets["record"] if isinstance(secrets["record"], dict) else {}
        plain_login = sealing.json_bytes({"host": host_of(record), **login})
        envelope = wire.b64encode(sealing.seal_envelope(plain_login, agent.public_key, owner=False))
        acs.put_secret_copy(con, account["id"], agent.token_id, agent.public_key, account["rev"], envelope, now)
    sealed = wire.b64encode(sealing.seal_envelope(payload(secrets, []), agent.public_key, owner=False))
    acs.put_copy(con, account["id"], agent.token_id, agent.public_key, account["rev"], sealed, now)
    return sealed


def account_for_domain(state: SandboxState, con: sqlite3.Connection, domain: str) -> str:
    """The one account whose record's site is `domain` (or under it), matched by the phone, which
    opens the records: `404` when none is, `422 AMBIGUOUS_DOMAIN` when several are."""
    want = domain.strip().lower().removeprefix("www.")
    found = []
    for account in acs.live_accounts(con):
        record, _ = acctopen.open_record(state, account["encrypted_data"], account["blob_mode"])
        host = (host_of(record) if isinstance(record, dict) else None) or ""
        if host == want or host.endswith("." + want):
            found.append(account["id"])
    if not found:
        raise HTTPProblem(404, "NOT_FOUND", f"no account for {domain!r}")
    if len(found) > 1:
        raise HTTPProblem(422, "AMBIGUOUS_DOMAIN", f"{len(found)} accounts are for {domain!r}: name one by target.id")
    return found[0]


def host_of(record: dict[str, Any]) -> str | None:
    """The site a login is for: the host of the record's login URL or site, else none."""
    for key in ("loginUrl", "login_url", "url", "serviceURL", "service_url"):
        value = record.get(key)
        if isinstance(value, str) and "//" in value:
            host = urlsplit(value).hostname
            if host:
                return host
    return None


def run_pass(state: SandboxState) -> dict[str, int]:
    """The phone's pass over the account family; how many copies, wraps, seals and edits it made."""
    now = state.now()
    report = {"copies": 0, "field_wraps": 0, "decoy_seals": 0, "edits": 0}
    state.phone.accounts_asked_at = None
    with state.store.tx() as con:
        agents = {a.token_id: a for a in live_agents(con, now)}
        for ask in acs.asks(con):
            account, agent = acs.get_account(con, ask["account_id"]), agents.get(ask["token_id"])
            if account is not None and agent is not None and agent.public_key:
                seal_copy(state, con, account, agent, now)
                report["copies"] += 1
        report["field_wraps"] = _share_fields(state, con, agents)
        report["decoy_seals"] = _seal_names(state, con, agents, now)
        for edit in acs.pending_edits(con):
            apply_edit(state, con, edit, now)
            report["edits"] += 1
    return report


def ask(state: SandboxState, now: float) -> None:
    """Something of the account family is owed (a field key, a decoy name, a copy asked again after
    `failed`): the phone is asked. An ask Decoy has stopped pushing is replaced by this one."""
    at = state.phone.accounts_asked_at
    if at is None or now - at >= STOPPED:
        state.phone.accounts_asked_at = now


def maybe_pass(state: SandboxState, now: float) -> None:
    """The background task: a pass once the oldest ask Decoy still pushes is `auto_share_after`
    seconds old. Asks older than 7 days are not pushed ("Decoy has stopped asking on its own")
    until a read asks again (`ask`)."""
    after = state.phone.auto_share_after
    if after is None:
        return
    with state.store.tx() as con:
        times = [a["asked_at"] for a in acs.asks(con)] + [e["created_at"] for e in acs.pending_edits(con)]
    times = [t for t in times if now - t < STOPPED]
    if state.phone.accounts_asked_at is not None and now - state.phone.accounts_asked_at < STOPPED:
        times.append(state.phone.accounts_asked_at)
    if times and now - min(times) >= after:
        run_pass(state)


def _asking(
    state: SandboxState, con: sqlite3.Connection, kind: str, target_id: str, token_id: str, since: float, now: float
) -> int | None:
    """The `retry_after_seconds` of a read that finds a copy owed since `since`, or None when it is
    `failed`: Decoy asks for 7 days, then a read asks once more at most once a day."""
    if now - since < STOPPED:
        return retry_after(now - since)
    last = max(since + STOPPED, acs.last_read_ask(con, kind, target_id, token_id) or 0.0)
    if now - last < DAY:
        return None
    acs.record_read_ask(con, kind, target_id, token_id, now)
    ask(state, now)
    return ASKED_AGAIN


def copy_state(state: SandboxState, con: sqlite3.Connection, account_id: str, token_id: str, now: float) -> int | None:
    """A covered read finds no current copy of the account for this connection (unlock,
    sealed-secrets): the phone is asked (the first ask stands) and this is its `preparing` retry
    time, or None when the read answers `failed`."""
    asked = acs.ask_copy(con, account_id, token_id, now)
    return _asking(state, con, "copy", account_id, token_id, asked, now)


def fields_state(
    state: SandboxState,
    con: sqlite3.Connection,
    agent: Agent,
    account: sqlite3.Row,
    waiting: list[sqlite3.Row],
    now: float,
) -> dict[str, Any]:
    """What a fields read says of the fields this connection may open and holds no key for: "Decoy
    asks for 7 days from the moment the newest thing owed to your connection came to be owed. After
    that the field is listed under `failed` (`recovery: "stopped_asking"`) … Reading again later may
    ask the phone once more, at most once a day." Owed since the field's last write, this
    connection's key, or (for another's field) its newest grant, whichever is latest."""
    if not waiting:
        return {}
    mine = [f["id"] for f in waiting if f["writer_token"] == agent.token_id]
    others = len(waiting) - len(mine)
    since = max(
        max(
            float(f["updated_at"]),
            key_time(agent),
            float(agent.newest_grant_at or 0.0) if f["writer_token"] != agent.token_id else 0.0,
        )
        for f in waiting
    )
    retry = _asking(state, con, "fields", account["id"], agent.token_id, since, now)
    if retry is None:
        return {
            "failed": mine,
            "failed_others": others,
            "recovery": "stopped_asking",
            "recovery_description": "Decoy has stopped asking the owner's phone on its own for these fields: carry "
            "on without them; they read normally once the phone shares them, and a later read may ask once more.",
        }
    ask(state, now)
    return {
        "preparing": mine,
        "preparing_others": others,
        "retry_after_seconds": retry,
        "waiting_on": "owner_phone",
        "recovery": "read_again_later",
        "recovery_description": "These fields are saved and are being shared with this connection; read again later.",
        "do_not": ["pair_again", "report_missing"],
    }


def _share_fields(state: SandboxState, con: sqlite3.Connection, agents: dict[str, Agent]) -> int:
    made = 0
    for account in acs.live_accounts(con):
        readers = [a for a in agents.values() if a.public_key and access.may(a, "account.read", account)]
        for field in acs.fields_of(con, account["id"]):
            wraps = acs.field_wraps(con, field["id"])
            owed_to = [
                a for a in readers if a.token_id not in wraps or wraps[a.token_id]["recipient_key"] != a.public_key
            ]
            if not owed_to:
                continue
            _, key, why = acctopen.open_field(state, field)
            if key is None or (why is not None and "kid" in why):
                continue
            for a in owed_to:
                assert a.public_key
                wrapped = wire.b64encode(sealing.wrap_to_agent(key, a.public_key))
                acs.put_field_wrap(con, field["id"], a.token_id, field["kid"], wrapped, a.public_key)
                made += 1
    return made


def _seal_names(state: SandboxState, con: sqlite3.Connection, agents: dict[str, Agent], now: float) -> int:
    made = 0
    for decoy in con.execute("SELECT * FROM decoys WHERE status!='burned'").fetchall():
        details = details_of(state, decoy)
        if (
            not isinstance(details, dict)
            or not details.get("agentCreated")
            or not isinstance(details.get("serviceName"), str)
        ):
            continue
        account = acs.get_account(con, decoy["account_id"]) if decoy["account_id"] else None
        for a in agents.values():
            if not a.public_key or not access.may_read_decoy(a, decoy, account):
                continue
            held = acs.decoy_seal(con, decoy["id"], a.token_id)
            if held is not None and held["recipient_key"] == a.public_key:
                continue
            acs.put_decoy_seal(
                con, decoy["id"], a.token_id, seal_details(state, decoy, a.public_key), a.public_key, now
            )
            made += 1
    return made


def details_of(state: SandboxState, decoy: sqlite3.Row) -> dict | None:
    """The decoy's details as the owner's app opens them (any of the three forms)."""
    mode = decoy["details_mode"]
    if mode == "sealed":
        details, _ = acctopen.open_sealed(state, decoy["sealed_details"], "sealed_details")
    elif mode == "vault":
        details, _ = acctopen.open_record(state, decoy["encrypted_data"], "vault")
    else:
        details = {"serviceName": decoy["service_name"], "serviceURL": decoy["service_url"], "agentCreated": True}
        details["avatarUrl"] = decoy["avatar"]
    if isinstance(details, dict) and decoy["email"]:
        details = {**details, "email": decoy["email"]}
    return details if isinstance(details, dict) else None


def seal_details(state: SandboxState, decoy: sqlite3.Row, public_key: str) -> str:
    """The decoy's details sealed to one connection's key: its `metadata_seal`."""
    return wire.b64encode(sealing.seal_envelope(sealing.json_bytes(details_of(state, decoy)), public_key, owner=False))


def wrapped_vault_key(state: SandboxState, public_key: str) -> str:
    """What the phone delivers to an `everything` connection: the vault key wrapped to its key."""
    return wire.b64encode(sealing.wrap_to_agent(acctopen.vault_key(state), public_key))


def recipients(con: sqlite3.Connection, decoy: sqlite3.Row, now: float, *, but: str | None = None) -> list[Agent]:
    """The connections that may read this address's metadata, each with a key to seal it to."""
    account = acs.get_account(con, decoy["account_id"]) if decoy["account_id"] else None
    return [
        a
        for a in live_agents(con, now)
        if a.public_key and a.token_id != but and access.may_read_decoy(a, decoy, account)
    ]


def seal_to_owner(state: SandboxState, details: dict[str, Any]) -> str:
    """Details the server was given (or knows) sealed to the owner's key — "Absent it, the server
    RSA-seals (iOS-only readable)"."""
    pk = state.owner.public_key_b64
    if not pk:
        raise HTTPProblem(400, "NO_USER_PUBLIC_KEY", "the owner has no public key on file")
    return wire.b64encode(sealing.seal_envelope(sealing.json_bytes(details), pk, owner=False))


def _patch_problem(patch: Any) -> str | None:
    if not isinstance(patch, dict) or patch.get("v") != 1:
        return "patch_invalid"
    sets, unset = patch.get("set") or {}, patch.get("unset") or []
    if not isinstance(sets, dict) or not isinstance(unset, list):
        return "patch_invalid"
    if not any(k in EDIT_KEYS for k in [*sets, *unset]):
        return "no_supported_keys"
    name, avatar = sets.get("serviceName"), sets.get("avatarUrl")
    if "serviceName" in sets and (not isinstance(name, str) or len(name) > 200 or BAD_CHARS.search(name)):
        return "patch_invalid"
    if "avatarUrl" in sets and (not isinstance(avatar, str) or not AVATAR_RE.match(avatar)):
        return "patch_invalid"
    return None


def apply_edit(state: SandboxState, con: sqlite3.Connection, edit: sqlite3.Row, now: float) -> str:
    """Open, check and apply one queued edit; its new status."""
    if now - edit["created_at"] > EDIT_TTL:
        acs.update_edit(con, edit["id"], status="expired", resolved_at=now)
        return "expired"
    decoy = acs.get_decoy(con, edit["decoy_id"])
    patch, why = acctopen.open_sealed(state, edit["sealed_patch"], "sealed_patch")
    reason = "decoy_not_found" if decoy is None else "patch_unopenable" if why is not None else _patch_problem(patch)
    details = details_of(state, decoy) if decoy is not None and reason is None else None
    if reason is None and details is None:
        reason = "decoy_unreadable"
    if reason is not None:
        acs.update_edit(con, edit["id"], status="rejected", reject_reason=reason, resolved_at=now)
        return "rejected"
    assert decoy is not None and details is not None and isinstance(patch, dict)
    details.pop("email", None)
    for k in patch.get("unset") or []:
        if k == "avatarUrl":  # "Unsetting `serviceName` is a no-op: a decoy always has a name."
            details.pop(k, None)
    details.update({k: v for k, v in (patch.get("set") or {}).items() if k in EDIT_KEYS})
    rev = decoy["rev"] + 1
    _write_details(state, con, decoy, details, rev, now)
    acs.update_edit(con, edit["id"], status="applied", applied_rev=rev, resolved_at=now)
    return "applied"


def _write_details(
    state: SandboxState, con: sqlite3.Connection, decoy: sqlite3.Row, details: dict, rev: int, now: float
) -> None:
    """Re-seal the details in the decoy's own form; every connection's copy is made again."""
    mode = decoy["details_mode"]
    values: dict[str, Any] = {"rev": rev, "updated_at": now}
    if mode == "sealed":
        sealed = sealing.seal_envelope(sealing.json_bytes(details), state.owner.key.public_key_b64, owner=False)
        values["sealed_details"] = wire.b64encode(sealed)
    elif mode == "vault":
        values["encrypted_data"] = wire.b64encode(sealing.seal_json(acctopen.vault_key(state), details))
    else:
        values.update(service_name=details.get("serviceName"), avatar=details.get("avatarUrl"))
    acs.update_decoy(con, decoy["id"], **values)
    acs.drop_decoy_seals(con, decoy["id"])


# ── unlocks ────────────────────────────────────────────────────────────────────────────────


def decide_unlock(state: SandboxState, unlock_id: str, *, allow: bool) -> dict[str, Any]:
    """The owner answers a pending unlock: Allow seals the secrets to the asking connection."""
    now = state.now()
    with state.store.tx() as con:
        u = acs.get_unlock(con, unlock_id)
        if u is None:
            raise HTTPProblem(404, "NOT_FOUND", f"no unlock request {unlock_id!r}")
        if u["status"] != "pending" or (u["expires_at"] is not None and now >= u["expires_at"]):
            raise HTTPProblem(409, "REQUEST_ALREADY_DECIDED", f"this unlock is {status_of(u, now)}")
        if not allow:
            acs.update_unlock(con, unlock_id, status="denied", decided_at=now)
            return {"id": unlock_id, "status": "denied"}
        account = acs.get_account(con, u["target_id"])
        agent = next((a for a in live_agents(con, now) if a.token_id == u["token_id"]), None)
        if account is None or agent is None or not agent.public_key:
            raise HTTPProblem(409, "CANNOT_SEAL", "the account or the asking connection is gone")
        if json.loads(u["datatypes"]) == ["passkey"]:  # a sign-in: the phone signs, nothing is read
            signed = passkeys.sign(state, con, u, agent.public_key)
            acs.update_unlock(con, unlock_id, status="ready", decided_at=now, sealed_envelope=signed)
            return {"id": unlock_id, "status": "ready"}
        sealed = sealing.seal_envelope(
            payload(secrets_of(state, con, account), json.loads(u["datatypes"])), agent.public_key, owner=False
        )
        acs.update_unlock(con, unlock_id, status="ready", decided_at=now, sealed_envelope=wire.b64encode(sealed))
        return {"id": unlock_id, "status": "ready"}


def status_of(unlock: sqlite3.Row, now: float) -> str:
    """A pending request past its 5 minutes reads `expired`."""
    if unlock["status"] == "pending" and unlock["expires_at"] is not None and now >= unlock["expires_at"]:
        return "expired"
    return unlock["status"]


def pending_unlocks(state: SandboxState) -> list[dict[str, Any]]:
    """What waits on the owner's Lock Screen: each pending unlock with who asks and why."""
    now = state.now()
    with state.store.tx() as con:
        names = {r["token_id"]: r["name"] for r in con.execute("SELECT token_id, name FROM connections")}
        return [
            {
                "id": u["id"],
                "token_id": u["token_id"],
                "connection": names.get(u["token_id"]),
                "kind": u["kind"],
                "target_id": u["target_id"],
                "account": account_name(state, acs.get_account(con, u["target_id"])),
                "datatypes": json.loads(u["datatypes"]),
                "reason": u["reason"],
            }
            for u in acs.pending_unlocks(con)
            if status_of(u, now) == "pending"
        ]


def account_name(state: SandboxState, account: sqlite3.Row | None) -> str | None:
    """The account's name as the owner's app shows it: from its record, else its plain name."""
    if account is None:
        return None
    record, _ = acctopen.open_record(state, account["encrypted_data"], account["blob_mode"])
    name = record.get("name") if isinstance(record, dict) else None
    return name if isinstance(name, str) and name else account["service_name"]


# ── queued edits, one at a time (the owner's own app, as the panel drives it) ──────────────


def queued_edits(state: SandboxState) -> list[dict[str, Any]]:
    """The edits keyless connections queued, oldest first, each with what the phone opens of it."""
    now = state.now()
    with state.store.tx() as con:
        names = {r["token_id"]: r["name"] for r in con.execute("SELECT token_id, name FROM connections")}
        out = []
        for e in acs.pending_edits(con):
            if now - e["created_at"] > EDIT_TTL:
                continue
            patch, why = acctopen.open_sealed(state, e["sealed_patch"], "sealed_patch")
            decoy = acs.get_decoy(con, e["decoy_id"])
            details = details_of(state, decoy) if decoy is not None else None
            out.append(
                {
                    "id": e["id"],
                    "decoy_id": e["decoy_id"],
                    "account_id": e["account_id"],
                    "token_id": e["token_id"],
                    "connection": names.get(e["token_id"]),
                    "email": decoy["email"] if decoy is not None else None,
                    "current_name": (details or {}).get("serviceName"),
                    "patch": patch if why is None else None,
                    "problem": why if why is not None else _patch_problem(patch),
                }
            )
        return out


def decide_edit(state: SandboxState, edit_id: str, *, apply: bool, reason: str = "patch_invalid") -> dict[str, Any]:
    """The owner applies one queued edit (the phone opens, checks and re-seals it) or rejects it."""
    now = state.now()
    with state.store.tx() as con:
        edit = acs.get_edit(con, edit_id)
        if edit is None:
            raise HTTPProblem(404, "EDIT_NOT_FOUND", f"no decoy edit {edit_id!r}")
        if edit["status"] != "pending":
            refusal = HTTPProblem(409, "ALREADY_RESOLVED", f"this edit is {edit['status']}")
            refusal.extra["status"] = edit["status"]  # a name the constructor takes itself
            raise refusal
        if apply:
            status = apply_edit(state, con, edit, now)
        else:
            acs.update_edit(con, edit_id, status="rejected", reject_reason=reason, resolved_at=now)
            status = "rejected"
        done = acs.get_edit(con, edit_id)
        assert done is not None
        return {
            "id": edit_id,
            "status": status,
            "applied_rev": done["applied_rev"],
            "reject_reason": done["reject_reason"],
        }


def make_alias(state: SandboxState, name: str) -> dict[str, Any]:
    """A Personal Alias on the owner's surface: an address with no account of its own, its details
    sealed to the owner's key (the sandbox has no namespaces)."""
    now = state.now()
    record = {"serviceName": name, "serviceURL": None, "avatarUrl": None}
    with state.store.tx() as con:
        decoy_id, email = new_id(), acs.new_address(con)
        acs.insert_decoy(
            con,
            id=decoy_id,
            email=email,
            details_mode="sealed",
            sealed_details=seal_to_owner(state, record),
            created_at=now,
            updated_at=now,
        )
    return {"id": decoy_id, "email": email, "name": name}
