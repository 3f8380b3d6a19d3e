"""`GET /api/agent/accounts`: the owner's authorized-account list, as far as this connection sees it.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." The sandbox keeps the owner's list
(`Owner.add_account`, `POST /_sandbox/accounts`) and serves `id` and `service_name` of each — never
a password. Where the spec is silent on which accounts a connection is told of, the sandbox lists
those its grants name (an `account_id` selection, or acctmem / account rows without one: all).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .core import state_of
from .reach import agent_of


async def list_accounts(request: Request) -> JSONResponse:
    agent = await agent_of(request)
    named = {r.sel.get("account_id") for r in agent.rows}
    every = agent.access.read.account_wildcard or any(
        not r.sel and any(p.startswith(("account.", "acctmem.")) for p in r.permissions) for r in agent.rows
    )
    accounts = [
        {"id": a["id"], "service_name": a["service_name"]}
        for a in state_of(request).owner.accounts()
        if every or a["id"] in named or a["id"] in agent.access.read.accounts
    ]
    return JSONResponse({"accounts": accounts, "pagination": {"has_more": False, "next_cursor": None}})


routes = [Route("/api/agent/accounts", list_accounts, methods=["GET"])]
