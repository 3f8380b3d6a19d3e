"""`GET /api/agent/accounts`: the owner's authorized-account list, as far as this connection may see it.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." The sandbox keeps the owner's list
(`Owner.add_account`, `POST /_sandbox/accounts`) and serves `id` and `service_name` of each — never
a password.

Who may list (the operation's `x-scope: account.read`, and "A scope with no matching permission
authorizes nothing … List endpoints return only what the permissions cover"):

- a token without the `account.read` scope is refused: `403 SCOPE_MISSING` with `required_scope`
  and `recovery: request_access`, and, as every refusal with something to ask carries,
  `required_permission` and a `permission_request` to send to grant-request unchanged; when a grant
  that ended held the scope, `403 GRANT_EXPIRED` instead ("After it ends, calls answer
  `403 GRANT_EXPIRED` with `permission_request`");
- a token with the scope is served the accounts its permissions cover: an `account.*` row on one
  `account_id`, or without a selection every account, or `everything`. Where the spec is silent,
  memory rows on an account (`acctmem.*`) and mail rows (`acctmail.*`) cover none: "An account's
  details do not bring its email or its memories", and neither brings its details. A `domain`
  selection names no account the sandbox can match (its accounts carry no site), and
  `account.create` covers only what the connection created (here: none), so both cover none.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.core import state_of
from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.auth import Agent, agent_from_request

SCOPE = "account.read"  # the operation's x-scope
PERMISSION = "account.read"  # the named permission that carries it for existing accounts


def _covered(agent: Agent) -> tuple[bool, set[str]]:
    """(every account, the account ids named) that this connection's permissions cover."""
    every, named = False, set()
    for row in agent.rows:
        if "everything" in row.permissions:
            every = True
        elif any(p.startswith("account.") and p != "account.create" for p in row.permissions):
            if not row.sel:
                every = True
            elif isinstance(row.sel.get("account_id"), str):
                named.add(row.sel["account_id"])
    return every, named


async def list_accounts(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        if SCOPE not in agent.scopes:
            ended = SCOPE in grants.scopes_for(grantstore.ended_rows(con, agent.token_id, now))
            raise grantstore.insufficient(
                PERMISSION,
                code="GRANT_EXPIRED" if ended else "SCOPE_MISSING",
                message=(
                    "The grant that let this connection list accounts ended. Send permission_request to ask again."
                    if ended
                    else f"Listing accounts needs the {SCOPE} scope, which comes with the {PERMISSION} permission. "
                    "Send permission_request to POST /api/agent/grant-request, unchanged."
                ),
                required_scope=SCOPE,
            )
    every, named = _covered(agent)
    accounts = [
        {"id": a["id"], "service_name": a["service_name"]} for a in state.owner.accounts() if every or a["id"] in named
    ]
    return JSONResponse({"accounts": accounts, "pagination": {"has_more": False, "next_cursor": None}})


routes = [Route("/api/agent/accounts", list_accounts, methods=["GET"])]
