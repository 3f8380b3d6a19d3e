"""`GET /api/agent/policies` and `POST|GET /api/agent/grant-request`.

`access` (the spec's AccessSummary, whose exact shape the spec leaves open) is served as::

    {"version": 7,                                # = access_version
     "summary": "Saves new memories …; reads memories in food.",
     "everything": false,
     "memories": {"save": bool, "read": S, "write": S, "delete": S, "summary": "…"},
     "accounts": {"create": bool, "read": A, "edit": A, "delete": A},
     "mail": {"read"|"mark"|"send"|"edit"|"delete": A, "alias": {verb: {"all", "namespace_ids"}}},
     "personal": {"read"|"edit"|"delete": {"all", "record_types", "personal_ids"}}}

where S is a memory selector `{"all", "categories", "topics", "account_ids", "account_wildcard"}`
(`all`: every memory not about an account; `account_*`: memories about accounts, from
`acctmem.*`; a connection's own memories are reached through `save`, never a selector) and
A is `{"all", "account_ids", "domains"}`. Every part comes from the live rows alone, by the same
checks that allow or refuse a call.

grant-request follows the spec's loop: one open request per connection (later asks join it,
`combined: true`), `200 already_granted` for what is held more than 7 days before the end date,
a renewal (`201 pending, renewal: true`, repeats `200` with the same body) inside those 7 days,
`409 GRANT_ALREADY_REQUESTED` for an ask the open request already holds, `409 REVIEW_FULL` past
200 entries, `429 RATE_LIMITED` past 10 asks a minute. A renewal is its own request, apart from
an open request for more access.

`409 REVIEW_BUSY` ("other asks from this connection were being saved at the same moment; send
this one again"): one ask per connection is saved at a time. The store serializes the writes
themselves, so the window guarded is the whole ask, from its token check through reading its body
to its commit; an ask arriving meanwhile is refused before anything is read or counted (it does
not count toward the 10 a minute).
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.core import HTTPProblem, iso, json_body, state_of

RENEWAL_WINDOW = 7 * 86400
ASKS_PER_MINUTE = 10
MAX_ENTRIES = 200
POLL_HINT = 600


# ── the access summary ────────────────────────────────────────────────────────────────────


def _target(rows: list[grants.Row], name: str, keys: dict[str, str]) -> dict[str, Any]:
    """Which targets rows give `name` on: `{"all": bool, <plural>: [...]}`."""
    out: dict[str, Any] = {"all": False, **{plural: [] for plural in keys.values()}}
    for row in rows:
        if "everything" in row.permissions:
            out["all"] = True
        elif name in row.permissions:
            sel = row.sel
            hit = [k for k in keys if k in sel]
            if not hit:
                out["all"] = True
            for k in hit:
                out[keys[k]] = sorted(set(out[keys[k]]) | {sel[k]})
    return out


def access_summary(agent: Agent) -> dict[str, Any]:
    rows = list(agent.rows)
    acct = {"account_id": "account_ids", "domain": "domains"}
    every = any("everything" in r.permissions for r in rows)
    accounts = {
        "create": every or any("account.create" in r.permissions for r in rows),
        **{v: _target(rows, f"account.{v}", acct) for v in ("read", "edit", "delete")},
    }
    mail: dict[str, Any] = {
        v: _target(rows, f"acctmail.{v}", {"account_id": "account_ids"})
        for v in ("read", "mark", "send", "edit", "delete")
    }
    mail["alias"] = {
        v: _target(rows, f"alias.{v}", {"namespace_id": "namespace_ids"})
        for v in ("read", "mark", "send", "edit", "delete", "burn")
    }
    personal = {
        v: _target(rows, f"personal.{v}", {"record_type": "record_types", "personal_id": "personal_ids"})
        for v in ("read", "edit", "delete")
    }
    memories = agent.access.as_json()
    parts = []
    if every:
        parts.append("Everything in the vault.")
    else:
        if accounts["create"]:
            parts.append("Creates accounts (and reads, edits and sends on what it creates).")
        for label, verb_map in (("account details", accounts), ("account email", mail), ("personal info", personal)):
            verbs = [
                v
                for v, t in verb_map.items()
                if isinstance(t, dict) and "all" in t and (t["all"] or any(t[k] for k in t if k != "all"))
            ]
            if verbs:
                parts.append(f"{', '.join(verbs).capitalize()} {label}.")
        if any(mail["alias"][v]["all"] or mail["alias"][v]["namespace_ids"] for v in mail["alias"]):
            parts.append("Personal Alias email.")
        if memories["summary"] != "No memory access.":
            parts.append(memories["summary"])
    return {
        "version": agent.access_version,
        "summary": " ".join(parts) or "Nothing is granted.",
        "everything": every,
        "memories": memories,
        "accounts": accounts,
        "mail": mail,
        "personal": personal,
    }


IMPLICIT = [
    {
        "type": grants.UNLOCK_TYPE,
        "kind": "account",
        "permissions": ["account.read", "account.edit"],
        "implicit": True,
        "created_by_self": True,
    },
    {
        "type": grants.UNLOCK_TYPE,
        "kind": "message",
        "permissions": ["acctmail.read", "acctmail.mark", "acctmail.send"],
        "implicit": True,
        "created_by_self": True,
    },
]


def _policies(con: sqlite3.Connection, agent: Agent, now: float) -> list[dict[str, Any]]:
    out = []
    for p in con.execute(
        "SELECT * FROM policies WHERE token_id=? AND revoked_at IS NULL ORDER BY approved_at, id", (agent.token_id,)
    ):
        rows = [grants.Row.from_json(r) for r in json.loads(p["rows"])]
        ended = p["expires_at"] is not None and p["expires_at"] <= now
        out.append(
            {
                "id": p["id"],
                "token_id": agent.token_id,
                "token_name": agent.name,
                "status": "expired" if ended else "approved",
                "reason": p["reason"],
                "expires_at": iso(p["expires_at"]),
                "approved_at": iso(p["approved_at"]),
                "revoked_at": None,
                "created_at": iso(p["created_at"]),
                "permissions": [r.policy_json() for r in rows],
            }
        )
    return out


async def policies(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        listed = _policies(con, agent, now)
        ends = grantstore.connection_ends_at(con, agent.token_id, now)
    scopes = list(agent.scopes)
    exp = agent.token_expires_at
    return JSONResponse(
        {
            "access": access_summary(agent),
            "token": {
                "token_id": agent.token_id,
                "name": agent.name,
                "expires_at": iso(exp),
                "expires_in": None if exp is None else max(0, int(exp - now)),
                "key_registered": agent.public_key is not None,
                "scopes": scopes,
            },
            "scopes": scopes,
            "policies": listed,
            "ends_at": iso(ends),
            "access_version": agent.access_version,
            "implicit": IMPLICIT,
            "implicit_scopes": list(grants.IMPLICIT_SCOPES),
        }
    )


# ── grant-request ─────────────────────────────────────────────────────────────────────────


class AsksBeingSaved:
    """The connections whose ask is being saved right now (one sandbox's, on `state.asks_being_saved`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._saving: set[str] = set()

    @classmethod
    def of(cls, state) -> AsksBeingSaved:
        if state.asks_being_saved is None:
            state.asks_being_saved = cls()
        return state.asks_being_saved

    def holds(self, token_id: str) -> bool:
        with self._lock:
            return token_id in self._saving

    @contextlib.contextmanager
    def saving(self, token_id: str) -> Iterator[None]:
        with self._lock:
            if token_id in self._saving:
                raise HTTPProblem(
                    409,
                    "REVIEW_BUSY",
                    "other asks from this connection were being saved at the same moment; send this one again",
                )
            self._saving.add(token_id)
        try:
            yield
        finally:
            with self._lock:
                self._saving.discard(token_id)


def _rate_limit(con: sqlite3.Connection, token_id: str, now: float) -> None:
    recent = [
        r[0] for r in con.execute("SELECT at FROM asks WHERE token_id=? AND at>? ORDER BY at", (token_id, now - 60))
    ]
    if len(recent) >= ASKS_PER_MINUTE:
        wait = max(1, math.ceil(recent[0] + 60 - now))
        raise HTTPProblem(
            429, "RATE_LIMITED", f"at most {ASKS_PER_MINUTE} asks a minute; wait {wait} s", retry_after_seconds=wait
        )
    con.execute("DELETE FROM asks WHERE token_id=? AND at<=?", (token_id, now - 60))
    con.execute("INSERT INTO asks (token_id, at) VALUES (?,?)", (token_id, now))


def _names(rows: list[grants.Row]) -> list[str]:
    return sorted({n for r in rows for n in r.permissions}, key=grants.ORDER.__getitem__)


def _requested_scopes(rows: list[grants.Row], agent: Agent) -> list[str]:
    return [s for s in grants.scopes_for(rows) if s not in agent.scopes]


def _renewal_body(req: sqlite3.Row) -> dict[str, Any]:
    ends = iso(req["ends_at"]) or ""  # a renewal always has the end date it renews
    return {
        "request_id": req["id"],
        "status": "pending",
        "renewal": True,
        "ends_at": ends,
        "expires_in": POLL_HINT,
        "message": f"The owner was asked to keep this access, which ends on {ends[:10]}.",
    }


def _ask(con: sqlite3.Connection, state, agent: Agent, body: dict[str, Any], now: float) -> tuple[int, dict]:
    reason = grants.sanitize_reason(body.pop("reason", None))
    if body.get("permissions") == ["webhook.read"] and set(body) == {"permissions"}:
        return 200, {"status": "already_granted", "permissions": [], "ends_at": None}
    row = grants.parse_row(body)
    held = list(agent.rows)
    if grants.covers(held, row):
        ends = grantstore.connection_ends_at(con, agent.token_id, now)
        if ends is None or ends - now > RENEWAL_WINDOW:
            return 200, {"status": "already_granted", "permissions": list(row.permissions), "ends_at": iso(ends)}
        open_renewal = con.execute(
            "SELECT * FROM requests WHERE token_id=? AND status='pending' AND renewal=1", (agent.token_id,)
        ).fetchone()
        if open_renewal is not None:
            return 200, _renewal_body(open_renewal)
        req_id = grants.new_id()
        con.execute(
            "INSERT INTO requests (id, token_id, status, entries, reasons, renewal, ends_at, created_at)"
            " VALUES (?,?,'pending',?,?,1,?,?)",
            (req_id, agent.token_id, json.dumps([row.as_json()]), json.dumps([reason] if reason else []), ends, now),
        )
        body_out = _renewal_body(con.execute("SELECT * FROM requests WHERE id=?", (req_id,)).fetchone())
        state.owner.on_request(con, req_id)
        return 201, body_out
    open_req = con.execute(
        "SELECT * FROM requests WHERE token_id=? AND status='pending' AND renewal=0", (agent.token_id,)
    ).fetchone()
    if open_req is not None:
        entries = [grants.Row.from_json(e) for e in json.loads(open_req["entries"])]
        if grants.covers(entries, row):
            raise HTTPProblem(
                409,
                "GRANT_ALREADY_REQUESTED",
                "the open request already holds this ask; wait on it",
                request_id=open_req["id"],
            )
        if len(entries) >= MAX_ENTRIES:
            raise HTTPProblem(
                409,
                "REVIEW_FULL",
                "the open request holds the most entries one request may",
                request_id=open_req["id"],
                max_entries=MAX_ENTRIES,
            )
        entries.append(row)
        reasons = json.loads(open_req["reasons"]) + ([reason] if reason else [])
        con.execute(
            "UPDATE requests SET entries=?, reasons=? WHERE id=?",
            (json.dumps([e.as_json() for e in entries]), json.dumps(reasons), open_req["id"]),
        )
        out = {
            "request_id": open_req["id"],
            "status": "pending",
            "combined": True,
            "message": "This ask joined the request already open for this connection; the owner answers them as one.",
            "permissions": _names(entries),
            "expires_in": POLL_HINT,
        }
        scopes = _requested_scopes(entries, agent)
        if scopes:
            out["requested_scopes"] = scopes
        return 201, out
    req_id = grants.new_id()
    con.execute(
        "INSERT INTO requests (id, token_id, status, entries, reasons, renewal, created_at)"
        " VALUES (?,?,'pending',?,?,0,?)",
        (req_id, agent.token_id, json.dumps([row.as_json()]), json.dumps([reason] if reason else []), now),
    )
    out = {"request_id": req_id, "status": "pending", "permissions": list(row.permissions), "expires_in": POLL_HINT}
    scopes = _requested_scopes([row], agent)
    if scopes:
        out["requested_scopes"] = scopes
    state.owner.on_request(con, req_id)
    return 201, out


async def grant_request_create(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    asker = agent_from_request(request)  # a request without a live token is 401 before its body is read
    with AsksBeingSaved.of(state).saving(asker.token_id):
        body = await json_body(request)
        with state.store.tx() as con:  # the ask counts even when it is refused below
            agent = agent_from_request(request, con)
            _rate_limit(con, agent.token_id, now)
        with state.store.tx() as con:
            agent = agent_from_request(request, con)
            try:
                status, out = _ask(con, state, agent, dict(body), now)
            except grants.RequestError as exc:
                raise HTTPProblem(400, exc.code, exc.message) from None
    return JSONResponse(out, status_code=status)


def _status(con: sqlite3.Connection, req: sqlite3.Row, now: float) -> str:
    status = req["status"]
    if status in ("approved", "resolved") and req["policy_id"]:
        p = con.execute("SELECT * FROM policies WHERE id=?", (req["policy_id"],)).fetchone()
        if p is not None and p["revoked_at"] is not None:
            return "revoked"
        if p is not None and p["expires_at"] is not None and p["expires_at"] <= now:
            return "expired"
    return status


async def grant_request_status(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    rid = request.query_params.get("id")
    if not rid:
        raise HTTPProblem(400, "MISSING_ID", "send ?id=<request_id>")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        req = con.execute("SELECT * FROM requests WHERE id=?", (rid,)).fetchone()
        if req is None:
            sess = con.execute("SELECT * FROM device_sessions WHERE request_id=?", (rid,)).fetchone()
            if sess is None:
                raise HTTPProblem(404, "NOT_FOUND", "no such request")
            mine = sess["token_id"] == agent.token_id
            entries = json.loads(sess["entries"])
            status = {"consumed": "approved"}.get(sess["status"], sess["status"]) if mine else "resolved"
            if mine and sess["policy_id"]:
                status = _status(con, {"status": status, "policy_id": sess["policy_id"]}, now)  # type: ignore[arg-type]
        else:
            mine = req["token_id"] == agent.token_id
            entries = json.loads(req["entries"])
            status = _status(con, req, now) if mine else "resolved"
    rows = [grants.Row.from_json(e) for e in entries] if mine else []
    return JSONResponse(
        {"request_id": rid, "status": status, "requested_scopes": grants.scopes_for(rows), "scopes": list(agent.scopes)}
    )


routes = [
    Route("/api/agent/policies", policies, methods=["GET"]),
    Route("/api/agent/grant-request", grant_request_create, methods=["POST"]),
    Route("/api/agent/grant-request", grant_request_status, methods=["GET"]),
]
