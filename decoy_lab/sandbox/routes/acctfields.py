"""An account's secret fields: list, add, change, delete, and who a field must be wrapped to.

Rules, each from its operation in 001:
- Readers: "Readers are the owner, the connection that wrote the field, and any connection that
  can reveal this account's credentials. A writer that cannot reveal the account reads its own
  field only until anyone else edits it (… `edited_by_other`). The owner's own wraps are never
  returned." A field is served with this connection's wrap for its CURRENT key; a field it may
  open and holds none for is `preparing` ("Those fields are missing from `fields`, not gone"), and
  the owner's phone is asked (phone/keeper.py shares the key); `failed` after 7 days, and a later
  read asks once more (keeper's `fields_state`).
- Create: "Sending the same id again answers `existing` with its current `rev` and adds any wrap
  that was missing — it never creates a second field. … Another connection's id answers 409
  `FIELD_ID_CONFLICT`; a deleted one 410. Wraps to other connections are kept only for those that
  can reveal the account right now." `FIELD_LIMIT`: "50 fields per account".
- Change: "both guarded by `expected_rev` … 409 `REV_CONFLICT` with `current_rev`"; "Only the
  connection that wrote the field may rotate its key"; "You must be able to open the field to
  change it (a wrap on its current key)". Delete: the same read rule; `expected_rev` optional.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.acctbodies import (
    expected_rev,
    field_ciphertext,
    field_create,
    grantee_wraps,
    no_field_plaintext,
)
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request, live_agents
from decoy_lab.sandbox.checks.bodies import envelope, kid_text
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.core import HTTPProblem, iso, json_body, optional_json_body, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.stores import acctstore as acs

FIELD_LIMIT = 50


def _account(con: sqlite3.Connection, request: Request) -> sqlite3.Row:
    """The path's account, read once: 404 `ACCOUNT_DELETED` once deleted, 404 `NOT_FOUND` if none."""
    account_id = request.path_params["account_id"]
    row = acs.get_account(con, account_id, deleted=True)
    if row is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no account {account_id!r}")  # as access.account_or_404
    if row["status"] == "deleted":
        raise HTTPProblem(404, "ACCOUNT_DELETED", "the account was deleted; its fields are no longer served")
    return row


def _own_unedited(agent: Agent, field: sqlite3.Row) -> bool:
    """The writer's own field, until another edits it."""
    return field["writer_token"] == agent.token_id and not field["edited_by_other"]


def _may_open(agent: Agent, account: sqlite3.Row, field: sqlite3.Row) -> bool:
    """The read rule: reveal (account.read, or its creator), or the field's writer until another edits it."""
    if access.may(agent, "account.read", account):
        return True
    return _own_unedited(agent, field) and access.may(agent, "account.edit", account)


def _usable_wrap(con: sqlite3.Connection, agent: Agent, field: sqlite3.Row) -> sqlite3.Row | None:
    wrap = acs.field_wraps(con, field["id"]).get(agent.token_id)
    if wrap is None or wrap["kid"] != field["kid"] or wrap["recipient_key"] != agent.public_key:
        return None
    return wrap


def _gate(con: sqlite3.Connection, request: Request, now: float, what: str) -> tuple[Agent, sqlite3.Row]:
    """`x-scope: account.write`, and write (`account.edit`) on the account or its creator."""
    agent = agent_from_request(request, con)
    access.need_scope(con, agent, now, "account.write", "account.edit", what=what)
    account = _account(con, request)
    access.require(con, agent, now, "account.edit", account)
    return agent, account


async def field_grantees(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent, account = _gate(con, request, now, "listing a field's readers")
        others = [
            {"token_id": a.token_id, "public_key": a.public_key, "connection_id": a.connection_id, "reason": "account"}
            for a in live_agents(con, now)
            if a.token_id != agent.token_id and a.public_key and access.may(a, "account.read", account)
        ]
    return JSONResponse(
        {"account_id": account["id"], "owner_public_key": state.owner.public_key_b64, "grantees": others}
    )


def _served(field: sqlite3.Row, agent: Agent) -> dict[str, Any]:
    """A field as served, from a `fields_with_wrap` row carrying this connection's usable wrap."""
    return {
        "id": field["id"],
        "account_id": field["account_id"],
        "kid": field["kid"],
        "rev": field["rev"],
        "ciphertext": field["ciphertext"],
        "wrapped_key": field["wrapped_key"],
        "written_by_self": field["writer_token"] == agent.token_id,
        "edited_by_other": bool(field["edited_by_other"]),
        "created_at": iso(field["created_at"]),
        "updated_at": iso(field["updated_at"]),
    }


async def list_fields(request: Request) -> Response:
    """`x-scope: account.unlock`; the creator and a field's writer pass the scope gate too
    ("the connection that created the account has it implicitly"). "each field it holds a key wrap
    for, re-checked against its grants on every read": the grants are read anew for every request
    (`agent_from_request`); within one request, the account-wide answers are worked out once."""
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = _account(con, request)
        fields_all = acs.fields_with_wrap(con, account["id"], agent.token_id)
        if not (access.created(agent, account) or any(f["writer_token"] == agent.token_id for f in fields_all)):
            access.need_scope(con, agent, now, "account.unlock", "account.read", what="reading secret fields")
        reveal = access.may(agent, "account.read", account)
        edit = reveal or access.may(agent, "account.edit", account)  # `_may_open`, once for the account
        fields = [f for f in fields_all if reveal or (edit and _own_unedited(agent, f))]
        if not fields and not reveal:
            access.require(con, agent, now, "account.read", account)
        served, waiting = [], []
        for f in fields:
            if f["wrap_kid"] == f["kid"] and f["wrap_recipient"] == agent.public_key:  # `_usable_wrap`
                served.append(_served(f, agent))
            else:
                waiting.append(f)
        out: dict[str, Any] = {"account_id": account["id"], "fields_rev": account["fields_rev"], "fields": served}
        out.update(keeper.fields_state(state, con, agent, account, waiting, now))  # preparing, or failed
    return Response(orjson.dumps(out), media_type="application/json")  # ~10x json's speed; only str/int/bool/list


def _keep_grantee_wraps(
    con: sqlite3.Connection, now: float, account: sqlite3.Row, field_id: str, kid: str, wraps: list[tuple[str, str]]
) -> int:
    """Store the wraps for connections that can reveal the account right now; how many."""
    readers = {a.token_id: a for a in live_agents(con, now) if access.may(a, "account.read", account)}
    kept = 0
    for token_id, wrapped in wraps:
        if token_id in readers:
            acs.put_field_wrap(con, field_id, token_id, kid, wrapped, readers[token_id].public_key)
            kept += 1
    return kept


async def create_field(request: Request) -> JSONResponse:
    state = state_of(request)
    raw = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent, account = _gate(con, request, now, "adding a secret field")
        body = field_create(raw, state.owner.public_key_b64, agent.public_key)
        existing = acs.get_field(con, body["id"])
        if existing is not None:
            return _existing(con, agent, account, existing, body, now)
        if len(acs.fields_of(con, account["id"])) >= FIELD_LIMIT:
            raise HTTPProblem(409, "FIELD_LIMIT", f"an account holds at most {FIELD_LIMIT} fields")
        acs.insert_field(
            con,
            id=body["id"],
            account_id=account["id"],
            kid=body["kid"],
            ciphertext=body["ciphertext"],
            owner_wrap=body["owner_wrap"],
            writer_token=agent.token_id,
            created_at=now,
            updated_at=now,
        )
        acs.put_field_wrap(con, body["id"], agent.token_id, body["kid"], body["self_wrap"], agent.public_key)
        kept = _keep_grantee_wraps(con, now, account, body["id"], body["kid"], body["grantee_wraps"])
        acs.bump_fields_rev(con, account["id"])
        rev = access.account_or_404(con, account["id"])["fields_rev"]
    keeper.ask(state, now)
    result = {"id": body["id"], "account_id": account["id"], "status": "created", "rev": 1, "kid": body["kid"]}
    return JSONResponse({**result, "fields_rev": rev, "grantee_wraps_stored": kept}, status_code=201)


def _existing(
    con: sqlite3.Connection, agent: Agent, account: sqlite3.Row, field: sqlite3.Row, body: dict, now: float
) -> JSONResponse:
    if field["deleted"]:
        raise HTTPProblem(410, "FIELD_DELETED", "this id was deleted; a new field needs a new id")
    if field["account_id"] != account["id"] or field["writer_token"] != agent.token_id:
        raise HTTPProblem(409, "FIELD_ID_CONFLICT", "this id belongs to another field")
    completed = []
    if field["kid"] == body["kid"]:
        if _usable_wrap(con, agent, field) is None:
            acs.put_field_wrap(con, field["id"], agent.token_id, field["kid"], body["self_wrap"], agent.public_key)
            completed.append("self_wrap")
        held = acs.field_wraps(con, field["id"])
        missing = [(t, w) for t, w in body["grantee_wraps"] if t not in held]
        if _keep_grantee_wraps(con, now, account, field["id"], field["kid"], missing):
            completed.append("grantee_wraps")
    result = {"id": field["id"], "account_id": account["id"], "status": "existing", "rev": field["rev"]}
    return JSONResponse({**result, "kid": field["kid"], "wraps_completed": completed})


def _field(con: sqlite3.Connection, request: Request, agent: Agent, account: sqlite3.Row) -> sqlite3.Row:
    field = acs.get_field(con, request.path_params["field_id"])
    if field is None or field["deleted"] or field["account_id"] != account["id"]:
        raise HTTPProblem(404, "NOT_FOUND", "no such field on this account")
    if not _may_open(agent, account, field) or _usable_wrap(con, agent, field) is None:
        raise HTTPProblem(
            403,
            "FIELD_KEY_REQUIRED",
            "this connection cannot open the field (no wrap of its current key): it may not change it",
            can_request=False,
        )
    return field


def _check_rev(field: sqlite3.Row, want: int | None) -> None:
    if want is not None and want != field["rev"]:
        raise HTTPProblem(
            409,
            "REV_CONFLICT",
            "the field changed since it was read: re-read, re-apply, retry",
            current_rev=field["rev"],
        )


async def update_field(request: Request) -> JSONResponse:
    state = state_of(request)
    raw = await json_body(request)
    no_field_plaintext(raw)
    now = state.now()
    with state.store.tx() as con:
        agent, account = _gate(con, request, now, "changing a secret field")
        field = _field(con, request, agent, account)
        want = expected_rev(raw.get("expected_rev"))
        if want is None:
            raise HTTPProblem(
                400, "INVALID_REQUEST", "expected_rev is required (the rev you read)", field="expected_rev"
            )
        _check_rev(field, want)
        values: dict[str, Any] = {"ciphertext": field_ciphertext(raw.get("ciphertext")), "rev": field["rev"] + 1}
        kid = kid_text(raw["kid"], "kid") if raw.get("kid") is not None else field["kid"]
        if kid != field["kid"]:
            if field["writer_token"] != agent.token_id:
                raise HTTPProblem(403, "WRITER_ONLY", "only the connection that wrote the field may rotate its key")
            for k in ("owner_wrap", "self_wrap"):
                if raw.get(k) is None:
                    raise HTTPProblem(400, "INVALID_REQUEST", f"a key rotation carries {k}", field=k)
            values.update(kid=kid, owner_wrap=envelope(raw["owner_wrap"], "owner_wrap", "owner_envelope", None))
            acs.delete_field_wraps(con, field["id"])
            self_wrap = envelope(raw["self_wrap"], "self_wrap", "agent_envelope", agent.public_key)
            acs.put_field_wrap(con, field["id"], agent.token_id, kid, self_wrap, agent.public_key)
            _keep_grantee_wraps(con, now, account, field["id"], kid, grantee_wraps(raw.get("grantee_wraps")))
        if field["writer_token"] != agent.token_id:
            values["edited_by_other"] = 1
        acs.update_field(con, field["id"], updated_at=now, **values)
        acs.bump_fields_rev(con, account["id"])
    keeper.ask(state, now)
    return JSONResponse(
        {"id": field["id"], "account_id": account["id"], "status": "updated", **values_out(values, kid)}
    )


def values_out(values: dict[str, Any], kid: str) -> dict[str, Any]:
    return {"rev": values["rev"], "kid": kid, "rotated": "owner_wrap" in values}


async def delete_field(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await optional_json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent, account = _gate(con, request, now, "deleting a secret field")
        field = _field(con, request, agent, account)
        _check_rev(field, expected_rev(request.query_params.get("expected_rev", body.get("expected_rev"))))
        acs.update_field(con, field["id"], deleted=1, rev=field["rev"] + 1, updated_at=now)
        acs.delete_field_wraps(con, field["id"])
        acs.bump_fields_rev(con, account["id"])
    return JSONResponse({"id": field["id"], "deleted": True, "rev": field["rev"] + 1})


routes = [
    Route("/api/agent/accounts/{account_id}/field-grantees", field_grantees, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}/fields", list_fields, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}/fields", faulty(create_field), methods=["POST"]),
    Route("/api/agent/accounts/{account_id}/fields/{field_id}", update_field, methods=["PUT"]),
    Route("/api/agent/accounts/{account_id}/fields/{field_id}", delete_field, methods=["DELETE"]),
]
