"""What the API answers for an account and a Decoy address, as one connection may see it.

An account is served with its sealed record (`encrypted_data`, "the server only stores unreadable
ciphertext"), its plain metadata and `rev`, "password presence/last-changed indicators" — "but
**never the passwords themselves**" — and `decoy_id`. `service_name` is the name the server was
given in plain text (by the owner's surface or a plain decoy create), else null: a sealed record's
name is inside `encrypted_data`. The linked address (`decoy_email`) is served to a connection that
may read it, and with it this connection's copy of the address's details exactly as the decoy
reads serve it: the `metadata_seals` entry is "returned to this connection as `metadata_seal` on
`GET /api/agent/decoys`, `GET /api/agent/decoys/{decoyId}` and the account reads" — "one without
[the vault key] reads its own `metadata_seal` (served on the account)".

A decoy is served with its address, label, status, `rev`, its VAULT `encrypted_data` when it has
one, and this connection's copy of its details: `metadata_seal`, or null with a
`metadata_seal_state` — "`preparing` for the first 15 minutes, then `waiting`", and after 7 days
`metadata_seal_code: "not_shared_asking_stopped"`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import iso
from decoy_lab.sandbox.stores import acctstore as acs

PREPARING = 15 * 60.0  # "The state is `preparing` for the first 15 minutes, then `waiting`."
ASKING = 7 * 86400.0  # "… then once a day, for 7 days"
EDIT_TTL = 7 * 86400.0  # "An edit no device applied within 7 days is `expired`."


def account_json(con: sqlite3.Connection, account: sqlite3.Row, agent: Agent, now: float) -> dict[str, Any]:
    decoy = acs.get_decoy(con, account["decoy_id"]) if account["decoy_id"] else None
    out: dict[str, Any] = {
        "id": account["id"],
        "encrypted_data": account["encrypted_data"],
        "service_name": account["service_name"],
        "status": account["status"],
        "agent_label": account["agent_label"],
        "has_password": bool(account["has_password"]),
        "password_last_changed": iso(account["password_last_changed"]),
        "two_factor_enabled": bool(account["two_factor_enabled"]),
        "decoy_id": account["decoy_id"],
        "rev": account["rev"],
        "fields_rev": account["fields_rev"],
        "created_at": iso(account["created_at"]),
        "updated_at": iso(account["updated_at"]),
        "created_by_this_connection": access.created(agent, account),
    }
    if decoy is not None and access.may_read_decoy(agent, decoy, account):
        out["decoy_email"] = decoy["email"]
        out.update(seal_json(con, decoy, agent, now))
    return out


def decoy_json(con: sqlite3.Connection, decoy: sqlite3.Row, agent: Agent, now: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": decoy["id"],
        "decoy_id": decoy["id"],
        "account_id": decoy["account_id"],
        "email": decoy["email"],
        "decoy_email": decoy["email"],
        "label": decoy["label"],
        "status": decoy["status"],
        "forward_enabled": bool(decoy["forward_enabled"]),
        "rev": decoy["rev"],
        "encrypted_data": decoy["encrypted_data"],
        "created_at": iso(decoy["created_at"]),
        "updated_at": iso(decoy["updated_at"]),
    }
    return {**out, **seal_json(con, decoy, agent, now)}


def seal_json(con: sqlite3.Connection, decoy: sqlite3.Row, agent: Agent, now: float) -> dict[str, Any]:
    """This connection's copy of the address's details, the same on the decoy and the account reads:
    the copy sealed to its CURRENT key, else `metadata_seal: null` with a `metadata_seal_state` —
    never another connection's copy, nor one made for a key it no longer holds."""
    seal = acs.decoy_seal(con, decoy["id"], agent.token_id)
    if seal is not None and seal["recipient_key"] == agent.public_key:
        return {"metadata_seal": seal["sealed_envelope"]}
    if decoy["details_mode"] == "vault" and access.has_everything(agent):
        return {"metadata_seal": None}  # the details are `encrypted_data`, and this connection holds the vault key
    return {"metadata_seal": None, **seal_state(decoy["updated_at"], now)}


def seal_state(since: float, now: float) -> dict[str, str]:
    """`metadata_seal_state` while no copy is sealed to this connection (counted from the write)."""
    age = now - since
    if age < PREPARING:
        return {"metadata_seal_state": "preparing", "metadata_seal_code": "waiting_for_owner_device"}
    if age < ASKING:
        return {"metadata_seal_state": "waiting", "metadata_seal_code": "waiting_for_owner_device"}
    return {"metadata_seal_state": "waiting", "metadata_seal_code": "not_shared_asking_stopped"}


def edit_json(edit: sqlite3.Row, now: float) -> dict[str, Any]:
    """A queued decoy edit's status: "`pending` …, `applied` (with `applied_rev` …), `rejected` (with
    `reject_reason` …) or `expired` (no device applied it within 7 days)"."""
    status = "expired" if edit["status"] == "pending" and now - edit["created_at"] > EDIT_TTL else edit["status"]
    out: dict[str, Any] = {"edit_id": edit["id"], "decoy_id": edit["decoy_id"], "status": status}
    if status == "applied":
        out["applied_rev"] = edit["applied_rev"]
    if status == "rejected":
        out["reject_reason"] = edit["reject_reason"]
    return {**out, "created_at": iso(edit["created_at"]), "resolved_at": iso(edit["resolved_at"])}
