"""The owner's surface for the account family, under `/_sandbox/` — the owner on this machine only.

Guarded as the rest of the owner's surface is (checks/guard.py `check_owner`: a loopback peer
under a loopback name; a change is `application/json` or carries this run's token):

- `POST /_sandbox/keep`: the owner's phone runs its account pass now (phone/keeper.py): copies
  for unlock reads, field keys, decoy names, queued decoy edits. Its report.
- `GET /_sandbox/unlocks`: the unlock requests waiting on the owner's Lock Screen.
- `POST /_sandbox/unlocks/approve` and `/deny` (`{"id"}`): the owner's Allow / Don't Allow.

The owner's-eye check of accounts, credentials and fields is `GET /_sandbox/app-view?account=`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks.guard import check_owner
from decoy_lab.sandbox.core import HTTPProblem, json_object, state_of
from decoy_lab.sandbox.phone import keeper


async def _id(request: Request) -> str:
    check_owner(request, changes=False)
    check_owner(request, changes=True)
    raw = await request.body()
    body = json_object(raw) if raw.strip() else {}
    unlock_id = body.get("id") or body.get("request_id")
    if not isinstance(unlock_id, str) or not unlock_id:
        raise HTTPProblem(400, "INVALID_REFERENCE", 'name the unlock request: {"id": …}')
    return unlock_id


async def keep(request: Request) -> JSONResponse:
    check_owner(request, changes=False)
    check_owner(request, changes=True)
    return JSONResponse(keeper.run_pass(state_of(request)))


async def unlocks(request: Request) -> JSONResponse:
    check_owner(request, changes=False)
    return JSONResponse({"unlocks": keeper.pending_unlocks(state_of(request))})


async def approve_unlock(request: Request) -> JSONResponse:
    return JSONResponse(keeper.decide_unlock(state_of(request), await _id(request), allow=True))


async def deny_unlock(request: Request) -> JSONResponse:
    return JSONResponse(keeper.decide_unlock(state_of(request), await _id(request), allow=False))


routes = [
    Route("/_sandbox/keep", keep, methods=["POST"]),
    Route("/_sandbox/unlocks", unlocks, methods=["GET"]),
    Route("/_sandbox/unlocks/approve", approve_unlock, methods=["POST"]),
    Route("/_sandbox/unlocks/deny", deny_unlock, methods=["POST"]),
]
