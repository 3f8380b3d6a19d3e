"""`POST /api/agent/unlock` and `GET` / `DELETE /api/agent/unlock/{requestId}`: an account's secrets
read back, sealed to the connection's key by the owner's phone.

"A covering permission answers the request as `ready` at once; otherwise the owner is asked on
their phone and the request is `pending`." A covered read is served from the copy the phone sealed
to this connection's key for the account's current `rev`; without one the answer is `200` with
`available: false`: "`state: "preparing"`: Decoy is asking the owner's phone to make the copy …
send the same request again after `retry_after_seconds`", and "`failed`: the phone was asked for
your connection 7 days ago, the copy has not come". Covering is `account.read` on the account
(`everything` included), or having created it ("To get the password back later, use
`account_unlock`"). A read "that names one kind while your copy holds the whole account" has no
`state`: the phone's copy holds the whole account, so a covered read that names kinds is sent
again without them. The poll: "When `status: ready`, includes the encrypted envelopes on first
fetch — subsequent calls return `ready` with no `items` (envelopes are consumed once)". Only the
token that asked may poll or withdraw; any other gets 404.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import uuid_text
from decoy_lab.sandbox.checks.grants import new_id, sanitize_reason
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.stores import acctstore as acs

DATATYPES = ("basic-auth", "custom-fields", "totp", "note", "address", "credit-card", "passkey")
ASKS_PER_MINUTE = 20  # "`429 RATE_LIMITED` (`retry_after_seconds`) past 20 asks a minute"
PENDING_TTL = 86400.0  # the sandbox's choice: an unanswered (non-passkey) ask expires after a day
STOPPED = 7 * 86400.0


def retry_after(asked_at: float, now: float) -> int:
    """ "5 during the first 15 minutes, 60 during the first hour, 300 during the first 4 hours, then 3600" """
    age = now - asked_at
    return 5 if age < 900 else 60 if age < 3600 else 300 if age < 4 * 3600 else 3600


def _target(body: dict[str, Any]) -> tuple[str, list[str]]:
    target = body.get("target")
    if not isinstance(target, dict) or target.get("kind") not in ("account", "message", "personal"):
        raise bad_request("INVALID_REQUEST", "target is {kind: account|message|personal, id}", "target")
    if target["kind"] != "account":
        raise HTTPProblem(404, "NOT_FOUND", f"the sandbox holds no {target['kind']} records to unlock")
    datatypes = target.get("datatypes") or []
    if not isinstance(datatypes, list) or any(d not in DATATYPES for d in datatypes):
        raise bad_request("INVALID_REQUEST", f"datatypes are among {', '.join(DATATYPES)}", "target.datatypes")
    if "passkey" in datatypes:
        raise HTTPProblem(404, "PASSKEY_NOT_FOUND", "the sandbox's owner has no passkeys")
    return uuid_text(target.get("id"), "target.id"), list(dict.fromkeys(datatypes))


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


def _covered(con: sqlite3.Connection, agent: Agent, account: sqlite3.Row, datatypes: list[str], now: float) -> Any:
    """A read the permission covers: `ready` from the current copy, or `available: false`."""
    if len(datatypes) > 1:
        raise HTTPProblem(422, "ONE_DATATYPE_PER_REQUEST", "name one kind per request")
    copy = acs.get_copy(con, account["id"], agent.token_id)
    current = copy is not None and copy["account_rev"] == account["rev"] and copy["recipient_key"] == agent.public_key
    base = {"available": False, "kind": "account", "auto_approved": True}
    if current and datatypes:
        return base  # the copy holds the whole account: no state
    if copy is not None and current:
        unlock_id = new_id()
        acs.insert_unlock(
            con,
            id=unlock_id,
            token_id=agent.token_id,
            kind="account",
            target_id=account["id"],
            status="ready",
            auto_approved=1,
            created_at=now,
            decided_at=now,
            sealed_envelope=copy["sealed_envelope"],
        )
        return _unlock_json(acs.get_unlock(con, unlock_id), now)  # type: ignore[arg-type]
    asked = acs.ask_copy(con, account["id"], agent.token_id, now)
    if now - asked >= STOPPED:
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
        "retry_after_seconds": retry_after(asked, now),
        "waiting_on": "owner_phone",
        "recovery_description": "Decoy is asking the owner's phone for a copy sealed to this connection; send the same request again after retry_after_seconds.",
    }


async def request_unlock(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account_id, datatypes = _target(body)
        account = acs.get_account(con, account_id)
        if account is None or not access.created(agent, account):
            access.need_scope(con, agent, now, "account.unlock", "account.read", what="unlocking an account")
        account = access.account_or_404(con, account_id)
        if not agent.public_key:
            raise HTTPProblem(422, "NO_AGENT_PUBLIC_KEY", "pair with an agent_public_key: envelopes are sealed to it")
        reason = sanitize_reason(body.get("reason"))[:200]
        recent = acs.unlocks_since(con, agent.token_id, now - 60.0)
        if len(recent) >= ASKS_PER_MINUTE:
            raise HTTPProblem(
                429, "RATE_LIMITED", "past 20 asks a minute", retry_after_seconds=int(recent[0] + 61 - now)
            )
        if access.may(agent, "account.read", account):
            out = _covered(con, agent, account, datatypes, now)
            return JSONResponse(out, status_code=201 if "id" in out else 200)
        unlock_id = new_id()
        acs.insert_unlock(
            con,
            id=unlock_id,
            token_id=agent.token_id,
            kind="account",
            target_id=account["id"],
            datatypes=json.dumps(datatypes),
            reason=reason,
            status="pending",
            created_at=now,
            expires_at=now + PENDING_TTL,
        )
        out = _unlock_json(acs.get_unlock(con, unlock_id), now)  # type: ignore[arg-type]
        if state.approve == "auto":  # the owner's phone answers as it answers pairings
            keeper.decide_unlock(state, unlock_id, allow=True)
    return JSONResponse(out, status_code=201)


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
