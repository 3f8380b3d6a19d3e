"""`GET /api/agent/sealed-secrets` for saved passwords: each covered login sealed to this
connection's key by the owner's phone.

001, `sealed_secrets_list`: "`account.read` on each account …, implied creator access, or
`everything`; the scope is derived from the permission. Records you're not covered for are
omitted, never a 403." "`kind: "account"` → `{ host, username, password }`". "**A granted record
with no copy for your connection yet is listed under `preparing`, never left out.** … the record's
id (a password's account id …) is listed under `preparing` with `waiting_on: "owner_phone"`,
`retry_after_seconds` and `recovery: read_again_later`"; "When the phone was asked for your
connection 7 days ago and the copy has not come, the id is listed under `failed` (`recovery:
"stopped_asking"`)"; "A connection that holds the vault key is owed no copy and has nothing
listed."

The sandbox's choices: only accounts that hold a password are listed (the copy is a login); a
copy is current for the account's `rev` and this connection's key (a new password bumps `rev`);
the phone makes it on the pass that makes unlock copies (phone/keeper.py); a connection paired
without a key is `422 NO_AGENT_PUBLIC_KEY`, as for unlock; the sandbox holds no personal records;
after `failed` a read asks the phone once more at most once a day ("Reading again later may ask
the phone once more, at most once a day; the read that asks lists the id under `preparing` with a
short retry time"), as for unlock (phone/keeper.py's `copy_state`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.bearer import agent_from_request
from decoy_lab.sandbox.core import HTTPProblem, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.stores import acctstore as acs


async def sealed_secrets(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    items: list[dict[str, Any]] = []
    preparing: list[str] = []
    failed: list[str] = []
    waits: list[int] = []
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        if access.has_everything(agent):  # "owed no copy and has nothing listed"
            return JSONResponse({"items": []})
        if not agent.public_key:
            raise HTTPProblem(422, "NO_AGENT_PUBLIC_KEY", "pair with an agent_public_key: copies are sealed to it")
        for account in acs.live_accounts(con):
            held = account["encrypted_password"] or account["has_password"]  # an import's is in its record
            if not held or not access.may(agent, "account.read", account):
                continue  # "Records you're not covered for are omitted, never a 403."
            copy = acs.get_secret_copy(con, account["id"], agent.token_id)
            if copy is not None and copy["account_rev"] == account["rev"] and copy["recipient_key"] == agent.public_key:
                items.append(
                    {
                        "kind": "account",
                        "target_id": account["id"],
                        "datatype": None,
                        "sealed_envelope": copy["sealed_envelope"],
                        "source_version": account["rev"],
                    }
                )
                continue
            retry = keeper.copy_state(state, con, account["id"], agent.token_id, now)  # after `failed`: once a day
            if retry is None:
                failed.append(account["id"])
            else:
                preparing.append(account["id"])
                waits.append(retry)
    out: dict[str, Any] = {"items": items}
    if preparing:
        keeper.ask(state, now)  # "Decoy asks the owner's phone to make a new copy in the background"
        out.update(
            preparing=preparing,
            retry_after_seconds=min(waits),
            waiting_on="owner_phone",
        )
    if failed:
        out.update(
            failed=failed,
            recovery="stopped_asking",
            recovery_description="Some copies have not come and Decoy has stopped asking the owner's phone on its "
            "own: carry on without them.",
        )
    elif preparing:
        out.update(
            recovery="read_again_later",
            recovery_description="These passwords are saved and are being shared with this connection: read again "
            "after retry_after_seconds and carry on with what you can read meanwhile.",
            do_not=["pair_again", "report_missing"],
        )
    return JSONResponse(out)


routes = [Route("/api/agent/sealed-secrets", sealed_secrets, methods=["GET"])]
