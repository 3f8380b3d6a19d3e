"""An account's saved password: set it, check it, and the full-access read of its ciphertext.

`POST …/credential` (`x-scope: account.write`, `account.edit` on the account or its creator):
"Base64 of a headerless envelope to `public_key` from `GET /api/agent/accounts/public-key` …
No SealedBlob header and no JSON wrapper. The server can't read it to validate it: a wrong format
is stored and the owner's phone can't open it" (the owner's-eye view, `GET
/_sandbox/app-view?account=`, says so). "The write bumps the account's `rev`".

`GET …/credential/status` (`x-scope: account.read`): "Returns metadata only. Never returns plaintext."

`GET …/credential` (`x-scope: account.unlock`): "`account.read` on this account **and** the
wrapped mailbox key (`everything` only). Without the mailbox key the answer is `403
MAILBOX_KEY_REQUIRED` by design; scoped agents read a password with `account_unlock`. A connection
holds the mailbox key only while it holds `everything`; once that ended by its time limit the
answer is `403 GRANT_EXPIRED` with `recovery: request_access`."
"""

from __future__ import annotations

import sqlite3

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks import grantstore
from decoy_lab.sandbox.checks.acctbodies import password_envelope
from decoy_lab.sandbox.checks.bearer import agent_from_request
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.core import HTTPProblem, iso, json_body, state_of
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.stores import acctstore as acs


def _status(account: sqlite3.Row) -> dict:
    return {
        "has_password": bool(account["encrypted_password"]),
        "password_last_changed": iso(account["password_last_changed"]),
    }


async def set_credential(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = access.path_account(
            request, con, agent, now, "account.write", "account.edit", what="setting a password"
        )
        sealed = password_envelope(body.get("encrypted_password"))
        acs.update_account(
            con,
            account["id"],
            encrypted_password=sealed,
            has_password=1,
            password_last_changed=now,
            rev=account["rev"] + 1,
            updated_at=now,
        )
        out = _status(access.account_or_404(con, account["id"]))
    schedule.note_write(state)
    return JSONResponse(out)


async def credential_status(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = access.path_account(
            request, con, agent, now, "account.read", "account.read", what="checking a password"
        )
        return JSONResponse(_status(account))


async def read_credential(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.unlock", "account.read", what="reading a saved password")
        account = access.account_or_404(con, request.path_params["account_id"])
        if not access.has_everything(agent):
            ended = any("everything" in r.permissions for r in grantstore.ended_rows(con, agent.token_id, now))
            if ended:
                raise grantstore.insufficient(
                    "everything",
                    code="GRANT_EXPIRED",
                    message="The mailbox key went with `everything`, which ended. Send permission_request to ask again.",
                )
            raise HTTPProblem(
                403,
                "MAILBOX_KEY_REQUIRED",
                "Reading the saved ciphertext needs the mailbox key, held only with `everything`. "
                "Read the password with POST /api/agent/unlock instead.",
                required_permission="everything",
                recovery="use_unlock",
                alternative="/api/agent/unlock",
                can_request=False,
            )
        access.require(con, agent, now, "account.read", account)
        return JSONResponse({**_status(account), "encrypted_password": account["encrypted_password"]})


routes = [
    Route("/api/agent/accounts/{account_id}/credential", faulty(set_credential), methods=["POST"]),
    Route("/api/agent/accounts/{account_id}/credential", read_credential, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}/credential/status", credential_status, methods=["GET"]),
]
