"""An account's Decoy email: `POST …/accounts/{accountId}/protect` and `…/burn-decoy`.

Protect: "Attach a decoy alias to an account so it stops exposing the user's real address. Pass
decoy_id to link an existing active decoy (needs `acctmail.edit` or `alias.edit` on that address),
or omit it to auto-generate a fresh one. An account's current Decoy email is never replaced this
way: `403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`. Idempotent when already protected (returns the existing
decoy)"; "**Auto-generating a fresh address mints one, so it also needs `account.create`, live**";
`decoy_email` "Present only when this call MINTED a new alias". A reserved address
(`GET /api/agent/decoys/generate-email`) is minted when sent as `decoy_email`.

Burn-decoy: "Burning a Personal Alias address linked to the account needs `alias.burn`. An
account's own Decoy email is never burned, replaced or rotated by an agent … **`replace: true`
(the default) also needs `account.create`, live** — otherwise `403 SCOPE_MISSING` … and NOTHING
is burned."

Both need the operation's scope (`account.write`) and `account.edit` on the account (its creator
edits it). The sandbox's choices: `decoy_email_hash` is the SHA-256 of the lower-cased address, in
hex; an address minted without `decoy_encrypted_data` is sealed by the server to the owner's key
with the name the server knows (a plain name, else none); linking changes no `rev` (the sealed
record is unchanged); an account with no linked address answers burn-decoy `400 NO_LINKED_DECOY`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import vault_blob
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.checks.grants import new_id
from decoy_lab.sandbox.core import HTTPProblem, SandboxState, bad_request, optional_json_body, state_of
from decoy_lab.sandbox.phone import keeper, schedule
from decoy_lab.sandbox.stores import acctstore as acs

RESERVED_FOR = 86400.0  # "The address is RESERVED for 24 hours"


def email_hash(email: str) -> str:
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def _editable(request: Request, con: sqlite3.Connection, agent: Agent, now: float, what: str) -> sqlite3.Row:
    return access.path_account(request, con, agent, now, "account.write", "account.edit", what=what)


def _reserved(con: sqlite3.Connection, agent: Agent, email: Any, now: float) -> str:
    if not isinstance(email, str):
        raise bad_request("INVALID_REQUEST", "decoy_email is an address from generate-email", "decoy_email")
    held = acs.reservation(con, email)
    if held is None or held["token_id"] != agent.token_id or now - held["reserved_at"] > RESERVED_FOR:
        raise bad_request(
            "DECOY_EMAIL_NOT_RESERVED", "decoy_email is not an address this connection reserved", "decoy_email"
        )
    return email


def mint(
    state: SandboxState, con: sqlite3.Connection, agent: Agent, account: sqlite3.Row, now: float, body: dict[str, Any]
) -> sqlite3.Row:
    """A fresh address, the account's own Decoy email (needs `account.create`, live, and room)."""
    access.need_create(con, agent, now)
    email = _reserved(con, agent, body["decoy_email"], now) if body.get("decoy_email") else acs.new_address(con)
    if body.get("decoy_encrypted_data") is not None:
        details: dict[str, Any] = {
            "details_mode": "vault",
            "encrypted_data": vault_blob(body["decoy_encrypted_data"], "decoy_encrypted_data"),
        }
    else:
        record = {"serviceName": account["service_name"], "serviceURL": None, "avatarUrl": None, "agentCreated": True}
        details = {"details_mode": "sealed", "sealed_details": keeper.seal_to_owner(state, record)}
    access.need_address_room(con, agent, now)
    acs.release(con, email)
    decoy_id = new_id()
    acs.insert_decoy(
        con,
        id=decoy_id,
        account_id=account["id"],
        email=email,
        created_by_token_id=agent.token_id,
        created_at=now,
        updated_at=now,
        **details,
    )
    acs.update_account(con, account["id"], decoy_id=decoy_id, updated_at=now)
    decoy = acs.get_decoy(con, decoy_id)
    assert decoy is not None
    return decoy


async def protect(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await optional_json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = _editable(request, con, agent, now, "protecting an account")
        current = acs.get_decoy(con, account["decoy_id"]) if account["decoy_id"] else None
        wanted = body.get("decoy_id")
        if current is not None:
            if wanted is not None and wanted != current["id"]:
                raise access.goes_with_account()
            out = {
                "account_id": account["id"],
                "decoy_id": current["id"],
                "decoy_email_hash": email_hash(current["email"]),
            }
            return JSONResponse({**out, "decoy_email": None, "already_protected": True})
        if wanted is not None:
            decoy = access.link_decoy(con, agent, now, wanted)
            if not access.is_alias(decoy):
                acs.update_decoy(con, decoy["id"], account_id=account["id"])
            acs.update_account(con, account["id"], decoy_id=decoy["id"], updated_at=now)
            minted = None
        else:
            decoy = mint(state, con, agent, account, now, body)
            minted = decoy["email"]
    keeper.ask(state, now)
    schedule.note_write(state)
    out = {"account_id": account["id"], "decoy_id": decoy["id"], "decoy_email_hash": email_hash(decoy["email"])}
    return JSONResponse({**out, "decoy_email": minted, "already_protected": False})


async def burn_decoy(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await optional_json_body(request)
    now = state.now()
    replace = body.get("replace", True)
    if not isinstance(replace, bool):
        raise bad_request("INVALID_REQUEST", "replace is true or false", "replace")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = _editable(request, con, agent, now, "burning an account's address")
        decoy = acs.get_decoy(con, account["decoy_id"]) if account["decoy_id"] else None
        if decoy is None:
            raise bad_request("NO_LINKED_DECOY", "this account has no linked address to burn")
        if not access.is_alias(decoy):
            raise access.goes_with_account()
        if not access.may_burn_decoy(agent, decoy):
            raise access.refuse_decoy(con, agent, now, decoy, "alias.burn")
        if replace:  # checked before anything is burned: "and NOTHING is burned"
            try:
                access.need_create(con, agent, now)
            except HTTPProblem as refused:
                refused.extra["hint"] = "Send replace: false to burn without a replacement."
                raise
            access.need_address_room(con, agent, now)
        acs.burn_decoy(con, decoy["id"], now)
        acs.update_account(con, account["id"], decoy_id=None, updated_at=now)
        fresh = mint(state, con, agent, acs.get_account(con, account["id"]), now, {}) if replace else None  # type: ignore[arg-type]
    keeper.ask(state, now)
    schedule.note_write(state)
    return JSONResponse(
        {
            "account_id": account["id"],
            "burned_decoy_id": decoy["id"],
            "new_decoy_id": fresh["id"] if fresh is not None else None,
            "new_decoy_email": fresh["email"] if fresh is not None else None,
        }
    )


routes = [
    Route("/api/agent/accounts/{account_id}/protect", faulty(protect), methods=["POST"]),
    Route("/api/agent/accounts/{account_id}/burn-decoy", burn_decoy, methods=["POST"]),
]
