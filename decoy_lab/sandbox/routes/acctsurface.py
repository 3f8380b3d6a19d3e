"""The owner's surface for the account family, under `/_sandbox/` — the owner on this machine only.

Guarded as the rest of the owner's surface is (checks/guard.py `check_owner`: a loopback peer
under a loopback name; a change is `application/json` or carries this run's token):

- `POST /_sandbox/keep`: the owner's phone runs its account pass now (phone/keeper.py): copies
  for unlock reads, field keys, decoy names, queued decoy edits. Its report.
- `GET /_sandbox/unlocks`: the unlock requests waiting on the owner's Lock Screen.
- `POST /_sandbox/unlocks/approve` and `/deny` (`{"id"}`): the owner's Allow / Don't Allow; also
  the home page's Allow and Deny forms (`id` and this run's `token`), answered with a page.
- `GET /_sandbox/edits`: the decoy edits waiting on the owner's devices, each as the phone opens it.
- `POST /_sandbox/edits/apply` and `/reject` (`{"id"}`, `{"id", "reason"}`): the owner's app applies
  one queued edit now (opens, checks, re-seals) or rejects it with one of 001's codes.
- `POST /_sandbox/aliases` (`{"name"}`): a Personal Alias — an address with no account of its own.
- `POST /_sandbox/passkeys` (`{"account_id", "rp_id"}`): a passkey the phone holds for a site on an
  account; its credential id and public key (what the site registered).

The owner's-eye check of accounts, credentials and fields is `GET /_sandbox/app-view?account=`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from decoy_lab.sandbox.checks.guard import check_owner
from decoy_lab.sandbox.core import HTTPProblem, form_fields, is_form, optional_json_body, state_of
from decoy_lab.sandbox.phone import keeper, pages, passkeys

#: "`reason` is one of a fixed set of codes, never free text"
REJECT_REASONS = ("patch_unopenable", "patch_invalid", "no_supported_keys", "decoy_unreadable", "decoy_not_found")


async def _body(request: Request) -> dict:
    check_owner(request, changes=False)
    check_owner(request, changes=True)
    return await optional_json_body(request)


async def _id(request: Request, what: str = "unlock request") -> str:
    body = await _body(request)
    named = body.get("id") or body.get("request_id") or body.get("edit_id")
    if not isinstance(named, str) or not named:
        raise HTTPProblem(400, "INVALID_REFERENCE", f'name the {what}: {{"id": …}}')
    return named


async def keep(request: Request) -> JSONResponse:
    check_owner(request, changes=False)
    check_owner(request, changes=True)
    return JSONResponse(keeper.run_pass(state_of(request)))


async def unlocks(request: Request) -> JSONResponse:
    check_owner(request, changes=False)
    return JSONResponse({"unlocks": keeper.pending_unlocks(state_of(request))})


async def _decision(request: Request) -> str:
    """The unlock an Allow or Deny names, once the request is known to be the owner's: a script's
    JSON (as `_id`), or the home page's form, whose secret comes in its `token` field."""
    if not is_form(request):
        return await _id(request)
    check_owner(request, changes=False)
    form = form_fields(await request.body())
    if form is None:
        raise HTTPProblem(400, "INVALID_REQUEST", "the form is not UTF-8")
    check_owner(request, changes=True, form_token=form.pop("token", "") or None)
    named = form.get("id", "")
    if not named:
        raise HTTPProblem(400, "INVALID_REFERENCE", "name the unlock request: id=…")
    return named


async def _decide(request: Request, *, allow: bool) -> Response:
    state = state_of(request)
    unlock_id = await _decision(request)
    if pages.wants_page(request):  # the browser's form: a page saying what was decided
        asked = next((u for u in keeper.pending_unlocks(state) if u["id"] == unlock_id), None)
        return pages.decided_unlock(asked, allow, lambda: keeper.decide_unlock(state, unlock_id, allow=allow))
    return JSONResponse(keeper.decide_unlock(state, unlock_id, allow=allow))


async def approve_unlock(request: Request) -> Response:
    return await _decide(request, allow=True)


async def deny_unlock(request: Request) -> Response:
    return await _decide(request, allow=False)


async def edits(request: Request) -> JSONResponse:
    check_owner(request, changes=False)
    return JSONResponse({"edits": keeper.queued_edits(state_of(request))})


async def apply_edit(request: Request) -> JSONResponse:
    return JSONResponse(keeper.decide_edit(state_of(request), await _id(request, "decoy edit"), apply=True))


async def reject_edit(request: Request) -> JSONResponse:
    body = await _body(request)
    reason = body.get("reason", "patch_invalid")
    if reason not in REJECT_REASONS or not isinstance(body.get("id"), str):
        raise HTTPProblem(400, "INVALID_REQUEST", f'{{"id", "reason"}}, reason one of {", ".join(REJECT_REASONS)}')
    return JSONResponse(keeper.decide_edit(state_of(request), body["id"], apply=False, reason=reason))


async def alias(request: Request) -> JSONResponse:
    body = await _body(request)
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise HTTPProblem(400, "INVALID_REQUEST", '{"name": …}, 1 to 200 characters')
    return JSONResponse(keeper.make_alias(state_of(request), name.strip()), status_code=201)


async def passkey(request: Request) -> JSONResponse:
    body = await _body(request)
    account_id, rp_id = body.get("account_id"), body.get("rp_id")
    if not isinstance(account_id, str) or not isinstance(rp_id, str) or not rp_id.strip():
        raise HTTPProblem(400, "INVALID_REQUEST", '{"account_id": …, "rp_id": "example.com"}')
    return JSONResponse(passkeys.add(state_of(request), account_id, rp_id.strip().lower()), status_code=201)


routes = [
    Route("/_sandbox/keep", keep, methods=["POST"]),
    Route("/_sandbox/unlocks", unlocks, methods=["GET"]),
    Route("/_sandbox/unlocks/approve", approve_unlock, methods=["POST"]),
    Route("/_sandbox/unlocks/deny", deny_unlock, methods=["POST"]),
    Route("/_sandbox/edits", edits, methods=["GET"]),
    Route("/_sandbox/edits/apply", apply_edit, methods=["POST"]),
    Route("/_sandbox/edits/reject", reject_edit, methods=["POST"]),
    Route("/_sandbox/aliases", alias, methods=["POST"]),
    Route("/_sandbox/passkeys", passkey, methods=["POST"]),
]
