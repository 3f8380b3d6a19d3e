"""`POST /api/agent/unlock` and `GET` / `DELETE /api/agent/unlock/{requestId}`: an account's secrets
read back, sealed to the connection's key by the owner's phone.

"A covering permission answers the request as `ready` at once; otherwise the owner is asked on
their phone and the request is `pending`." A covered read is served from the copy the phone sealed
to this connection's key for the account's current `rev`; without one the answer is `200` with
`available: false`: "`state: "preparing"`: Decoy is asking the owner's phone to make the copy …
send the same request again after `retry_after_seconds`", and "`failed`: the phone was asked for
your connection 7 days ago, the copy has not come", after which "sending the request again later
may ask the phone once more, at most once a day" (phone/keeper.py's `copy_state`). Covering is
`account.read` on the account (`everything` included), or having created it ("To get the
password back later, use `account_unlock`"). A read "that names one kind while your copy holds the
whole account" has no `state`: the phone's copy holds the whole account, so a covered read that
names kinds is sent again without them. The poll: "When `status: ready`, includes the encrypted envelopes on first
fetch — subsequent calls return `ready` with no `items` (envelopes are consumed once)". Only the
token that asked may poll or withdraw; any other gets 404.

A passkey sign-in (`datatypes: ["passkey"]` with `target.passkey`): "Every sign-in is asked of the
owner at that moment … nothing is stored and nothing standing is granted"; checked in the order of
001's table of refusals before the owner is asked, then signed by the phone (phone/passkeys.py).
Kinds `message` and `personal` are 404: the sandbox holds no mail and no personal records. An
account named by `domain` instead of `id` is resolved by the owner's phone, which opens the records
(the server cannot): one match is that account, none `404`, several `422 AMBIGUOUS_DOMAIN`.
"""

from __future__ import annotations

import base64
import binascii
import json
import sqlite3
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import uuid_text
from decoy_lab.sandbox.checks.grants import new_id, sanitize_reason
from decoy_lab.sandbox.core import HTTPProblem, SandboxState, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.stores import acctstore as acs
from decoy_lab.sandbox.stores import passkeystore as pks

DATATYPES = ("basic-auth", "custom-fields", "totp", "note", "address", "credit-card", "passkey")
ASKS_PER_MINUTE = 20  # "`429 RATE_LIMITED` (`retry_after_seconds`) past 20 asks a minute"
PENDING_TTL = 86400.0  # the sandbox's choice: an unanswered (non-passkey) ask expires after a day


def _target(body: dict[str, Any]) -> tuple[str | None, list[str]]:
    target = body.get("target")
    if not isinstance(target, dict) or target.get("kind") not in ("account", "message", "personal"):
        raise bad_request("INVALID_REQUEST", "target is {kind: account|message|personal, id}", "target")
    if target["kind"] != "account":
        raise HTTPProblem(404, "NOT_FOUND", f"the sandbox holds no {target['kind']} records to unlock")
    datatypes = target.get("datatypes") or []
    if not isinstance(datatypes, list) or any(d not in DATATYPES for d in datatypes):
        raise bad_request("INVALID_REQUEST", f"datatypes are among {', '.join(DATATYPES)}", "target.datatypes")
    if target.get("id") is None and isinstance(target.get("domain"), str) and target["domain"].strip():
        return None, list(dict.fromkeys(datatypes))  # "For kind=account only — resolve by hostname match"
    return uuid_text(target.get("id"), "target.id"), list(dict.fromkeys(datatypes))


def _wants_passkey(body: dict[str, Any]) -> bool:
    target = body.get("target")
    datatypes = target.get("datatypes") if isinstance(target, dict) else None
    return isinstance(datatypes, list) and "passkey" in datatypes


def _b64(value: Any) -> bytes | None:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else None
    except (binascii.Error, ValueError):
        return None


def _assertion(target: dict[str, Any]) -> tuple[str, bytes | None, str]:
    """A sign-in's `target.passkey`, checked as 001's table of refusals says: (rp_id, the credential
    id or None, the clientDataJSON as base64)."""
    if target.get("kind") != "account" or target.get("datatypes") != ["passkey"]:
        raise bad_request("PASSKEY_BAD_REQUEST", '`datatypes` is exactly ["passkey"], with kind account')
    asked = target.get("passkey")
    if not isinstance(asked, dict) or not asked.get("rp_id") or not asked.get("client_data_json_b64"):
        raise HTTPProblem(422, "PASSKEY_ASSERT_REQUIRED", "target.passkey needs rp_id and client_data_json_b64")
    rp_id, cred = str(asked["rp_id"]).lower(), asked.get("credential_id_b64")
    credential = _b64(cred) if cred not in (None, "") else None
    if cred not in (None, "") and not credential:
        raise bad_request("PASSKEY_BAD_REQUEST", "credential_id_b64 is not base64", "target.passkey.credential_id_b64")
    raw = _b64(asked["client_data_json_b64"])
    try:
        client = json.loads(raw) if raw else None
    except ValueError:
        client = None
    if (
        not isinstance(client, dict)
        or client.get("type") != "webauthn.get"
        or not isinstance(client.get("challenge"), str)
        or not isinstance(client.get("origin"), str)
    ):
        raise HTTPProblem(422, "PASSKEY_BAD_CLIENT_DATA", "clientDataJSON is not a webauthn.get ceremony")
    origin = urlsplit(client["origin"])
    host = (origin.hostname or "").lower()
    if origin.scheme != "https" or not (host == rp_id or host.endswith("." + rp_id)):
        raise HTTPProblem(
            422, "PASSKEY_ORIGIN_MISMATCH", f"the clientDataJSON origin is not https://{rp_id} or under it"
        )
    return rp_id, credential, str(asked["client_data_json_b64"])


def _passkey(con: sqlite3.Connection, agent: Agent, now: float, body: dict[str, Any]) -> tuple[sqlite3.Row, str]:
    """The passkey a sign-in names, and the clientDataJSON to sign; every refusal before the owner
    is asked ("No Read on the passkey's account; the owner is not asked")."""
    target = body["target"]
    rp_id, credential, client_data = _assertion(target)
    if not agent.public_key:
        raise HTTPProblem(422, "NO_AGENT_PUBLIC_KEY", "pair with an agent_public_key: the assertion is sealed to it")
    account_id = uuid_text(target["id"], "target.id") if target.get("id") else None
    found = [
        p
        for p in pks.passkeys_for(con, rp_id)
        if (credential is None or base64.b64decode(p["credential_id"]) == credential)
        and (account_id is None or p["account_id"] == account_id)
    ]
    if not found:
        raise HTTPProblem(404, "PASSKEY_NOT_FOUND", "no passkey for that site, credential or account: do not retry")
    if len(found) > 1:
        raise HTTPProblem(422, "PASSKEY_AMBIGUOUS", "more than one passkey for the site: name the account (target.id)")
    account = access.account_or_404(con, found[0]["account_id"])
    if not access.created(agent, account):  # its creator reads it without the scope, as for a read
        access.need_scope(con, agent, now, "account.unlock", "account.read", what="a passkey sign-in")
    access.require(con, agent, now, "account.read", account)  # "which only allows asking"
    return found[0], client_data


def _within_rate(con: sqlite3.Connection, agent: Agent, now: float) -> None:
    """429 RATE_LIMITED past ASKS_PER_MINUTE asks of this connection in the last minute."""
    recent = acs.unlocks_since(con, agent.token_id, now - 60.0)
    if len(recent) >= ASKS_PER_MINUTE:
        raise HTTPProblem(429, "RATE_LIMITED", "past 20 asks a minute", retry_after_seconds=int(recent[0] + 61 - now))


def _new_unlock(con: sqlite3.Connection, agent: Agent, account_id: str, now: float, **row: Any) -> str:
    """A new unlock row of this connection on one account; its id."""
    unlock_id = new_id()
    acs.insert_unlock(
        con, id=unlock_id, token_id=agent.token_id, kind="account", target_id=account_id, created_at=now, **row
    )
    return unlock_id


def _asked(state: SandboxState, con: sqlite3.Connection, unlock_id: str, now: float) -> JSONResponse:
    """201 with the pending ask; the simulated owner allows it at once when it answers pairings so."""
    out = _unlock_json(acs.get_unlock(con, unlock_id), now)  # type: ignore[arg-type]
    if state.approve == "auto":
        keeper.decide_unlock(state, unlock_id, allow=True)
    return JSONResponse(out, status_code=201)


def _unlock_json(u: sqlite3.Row, now: float) -> dict[str, Any]:
    return {
        "id": u["id"],
        "status": keeper.status_of(u, now),
        "kind": u["kind"],
        "target_id": u["target_id"],
        "auto_approved": bool(u["auto_approved"]),
        "created_at": iso(u["created_at"]),
        "expires_at": iso(u["expires_at"]),
    }


def _covered(
    state: SandboxState, con: sqlite3.Connection, agent: Agent, account: sqlite3.Row, datatypes: list[str], now: float
) -> Any:
    """A read the permission covers: `ready` from the current copy, or `available: false`."""
    if len(datatypes) > 1:
        raise HTTPProblem(422, "ONE_DATATYPE_PER_REQUEST", "name one kind per request")
    copy = acs.get_copy(con, account["id"], agent.token_id)
    current = copy is not None and copy["account_rev"] == account["rev"] and copy["recipient_key"] == agent.public_key
    base = {"available": False, "kind": "account", "auto_approved": True}
    if current and datatypes:
        return base  # the copy holds the whole account: no state
    if copy is not None and current:
        unlock_id = _new_unlock(
            con,
            agent,
            account["id"],
            now,
            status="ready",
            auto_approved=1,
            decided_at=now,
            sealed_envelope=copy["sealed_envelope"],
        )
        return _unlock_json(acs.get_unlock(con, unlock_id), now)  # type: ignore[arg-type]
    retry = keeper.copy_state(state, con, account["id"], agent.token_id, now)  # after `failed`, asks once a day
    if retry is None:
        return {
            **base,
            "state": "failed",
            "recovery": "stopped_asking",
            "recovery_description": (
                "The copy has not come and Decoy has stopped asking the owner's phone on its own: carry on without it."
            ),
        }
    return {
        **base,
        "state": "preparing",
        "retry_after_seconds": retry,
        "waiting_on": "owner_phone",
        "recovery_description": "Decoy is asking the owner's phone for a copy sealed to this connection; send the same request again after retry_after_seconds.",
    }


async def request_unlock(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        if _wants_passkey(body):
            return _sign_in(state, con, agent, now, body)
        account_id, datatypes = _target(body)
        if account_id is None:
            account_id = keeper.account_for_domain(state, con, body["target"]["domain"])
        account = acs.get_account(con, account_id)
        if account is None or not access.created(agent, account):
            access.need_scope(con, agent, now, "account.unlock", "account.read", what="unlocking an account")
        account = access.account_or_404(con, account_id)
        if not agent.public_key:
            raise HTTPProblem(422, "NO_AGENT_PUBLIC_KEY", "pair with an agent_public_key: envelopes are sealed to it")
        reason = sanitize_reason(body.get("reason"))[:200]
        _within_rate(con, agent, now)
        if access.may(agent, "account.read", account):
            if datatypes == ["basic-auth"] and not (account["encrypted_password"] or account["has_password"]):
                # "a non-credential request can unlock an account that has no stored password": a
                # credential request cannot (told only to a connection that may see `has_password`).
                # An imported record holds its password inside, flagged by its `has_password`.
                raise HTTPProblem(422, "NO_CREDENTIAL", "this account has no stored password to read")
            out = _covered(state, con, agent, account, datatypes, now)
            return JSONResponse(out, status_code=201 if "id" in out else 200)
        unlock_id = _new_unlock(
            con,
            agent,
            account["id"],
            now,
            datatypes=json.dumps(datatypes),
            reason=reason,
            status="pending",
            expires_at=now + PENDING_TTL,
        )
        return _asked(state, con, unlock_id, now)


def _sign_in(
    state: SandboxState, con: sqlite3.Connection, agent: Agent, now: float, body: dict[str, Any]
) -> JSONResponse:
    """ "A passkey sign-in is always asked of the owner": `201 { id, status: "pending", kind: "account",
    expires_at, auto_approved: false }`, expiring 5 minutes after the request."""
    passkey, client_data = _passkey(con, agent, now, body)
    _within_rate(con, agent, now)
    unlock_id = _new_unlock(
        con,
        agent,
        passkey["account_id"],
        now,
        datatypes=json.dumps(["passkey"]),
        reason=sanitize_reason(body.get("reason"))[:200],
        status="pending",
        expires_at=now + keeper.UNLOCK_TTL,
    )
    pks.put_passkey_ask(con, unlock_id, passkey["credential_id"], client_data)
    return _asked(state, con, unlock_id, now)


def _mine(con: sqlite3.Connection, request: Request, agent: Agent) -> sqlite3.Row:
    u = acs.get_unlock(con, request.path_params["request_id"])
    if u is None or u["token_id"] != agent.token_id:
        raise HTTPProblem(404, "NOT_FOUND", "no unlock request of this connection with that id")
    return u


async def poll_unlock(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        u = _mine(con, request, agent)
        out = _unlock_json(u, now)
        if out["status"] == "ready" and not u["consumed"] and u["sealed_envelope"]:
            out["items"] = [{"target_id": u["target_id"], "sealed_envelope": u["sealed_envelope"]}]
            acs.update_unlock(con, u["id"], consumed=1, sealed_envelope=None)  # consumed once
    return JSONResponse(out)


async def withdraw_unlock(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        u = _mine(con, request, agent)
        status = keeper.status_of(u, now)
        if status != "pending":
            refusal = HTTPProblem(409, "NOT_PENDING", f"the request is {status}")
            refusal.extra["status"] = status  # "409 with its `status`" (a name the constructor takes itself)
            raise refusal
        acs.update_unlock(con, u["id"], status="expired", decided_at=now)
    return JSONResponse({"id": u["id"], "status": "expired"})


routes = [
    Route("/api/agent/unlock", request_unlock, methods=["POST"]),
    Route("/api/agent/unlock/{request_id}", poll_unlock, methods=["GET"]),
    Route("/api/agent/unlock/{request_id}", withdraw_unlock, methods=["DELETE"]),
]
