"""The simulated owner phone: approvals, denials, revocation, expiry, and the owner's key.

`approve="auto"` grants exactly what was asked the moment it is asked; `"manual"` leaves
pairings and grant requests pending until `approve` / `deny` (Python, or the `/_sandbox/`
surface), by user code or request id, optionally narrowed to other rows. Every change to what a
connection holds bumps its `access_version`.

Choices where the spec is silent:
- **Reconnect.** A pairing approved for the same `client_id` as a live (unrevoked) connection
  continues that connection ("reconnect with the same `client_id`"): same `token_id`, grants and
  memories kept, the new rows added, the name it sent replacing the old one; tokens issued
  before answer `401 TOKEN_SUPERSEDED`. "A reconnect itself sends one push" to the phone. The same public key changes
  nothing else; a different one replaces it and records `key_changed_at` (the memory side
  reports earlier rows as `preparing` until the sharing pass wraps them to the new key).
  A revoked connection is never continued: pairing again makes a new one that inherits nothing.
- **End dates.** A connection has one end date. `approve(..., expires_in_hours=h)` sets it for
  everything it holds; without it new access takes the connection's current end date (none if
  none). A renewal approved without `expires_in_hours` extends access by `renew_hours` (30 days).
- **Narrowing.** Approving with `narrow=[rows]` grants those rows instead; the request then reads
  `resolved` (approved with changes) unless the rows equal what was asked.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.bearer import bump_access_version
from decoy_lab.sandbox.checks.selectors import memory_access_from_rows
from decoy_lab.sandbox.core import HTTPProblem, SandboxState, iso
from decoy_lab.sandbox.phone import appview, keeper, passkeys, schedule, sharepass
from decoy_lab.sandbox.phone.ownerapp import OwnerApp
from decoy_lab.wire.crypto import AgentKey, public_key_fingerprint

RENEW_HOURS = 30 * 24


def _load_key(state: SandboxState, owner_key: Any):
    """The owner key: the one given, else the one this database already holds, else a new one.
    It is kept in the database so a file-backed sandbox reopens with the same owner (the rows'
    owner wraps stay openable across restarts)."""
    if owner_key is not None and not isinstance(owner_key, (AgentKey, str, bytes)):
        raise TypeError("owner_key must be an AgentKey, a PEM string/bytes, or None")
    with state.store.tx() as con:
        if owner_key is None:
            row = con.execute("SELECT value FROM sandbox_meta WHERE key='owner_key'").fetchone()
            key = AgentKey.from_pem(row["value"]) if row else AgentKey.generate()
        else:
            key = owner_key if isinstance(owner_key, AgentKey) else AgentKey.from_pem(owner_key)
        con.execute("INSERT OR REPLACE INTO sandbox_meta (key, value) VALUES ('owner_key', ?)", (key.to_pem(),))
    return key


def normalize_user_code(code: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", code.upper())


class Owner(OwnerApp):
    """The owner's phone, bound to one sandbox state (its own edits, grants and key setup: ownerapp.py)."""

    def __init__(self, state: SandboxState, owner_key: Any = None, *, key_setup: bool = True):
        self.state = state
        self.key = _load_key(state, owner_key)
        self.renew_hours: float = RENEW_HOURS
        if not key_setup:
            self.set_key_setup(False)

    def __repr__(self) -> str:
        return f"Owner(key={self.key.fingerprint}, approve={self.state.approve!r})"

    def check_row(self, row: dict, *, trace: Any = None) -> dict:
        """Would the owner's app open this row (sent or stored)? Answered like an app-view entry;
        with `trace`, every step the app takes is recorded. Reads nothing the owner has not."""
        return appview.check_row(self.state, row, trace=trace)

    @property
    def public_key_b64(self) -> str | None:
        """The owner's public key as served, None until key setup is finished."""
        return self.key.public_key_b64 if self.key_ready else None

    # ── Python surface ────────────────────────────────────────────────────────────────────
    def pending(self) -> list[dict[str, Any]]:
        """Every pairing and grant request waiting for the owner, oldest first."""
        with self.state.store.tx() as con:
            return self._pending(con, self.state.now())

    def approve(
        self, ref: str, narrow: list[dict] | None = None, *, expires_in_hours: float | None = None
    ) -> dict[str, Any]:
        """Approve a pairing (user code or request id) or a grant request (request id)."""
        with self.state.store.tx() as con:
            return self._approve(con, ref, narrow, expires_in_hours, self.state.now())

    def deny(self, ref: str) -> dict[str, Any]:
        """Deny a pairing or a grant request (a denial covers all of a combined request)."""
        with self.state.store.tx() as con:
            return self._deny(con, ref, self.state.now())

    # ── the account family (the phone's side is phone/keeper.py) ─────────────────────────
    def unlocks(self) -> list[dict[str, Any]]:
        """The unlock requests waiting on the Lock Screen: who asks, for which account, why."""
        return keeper.pending_unlocks(self.state)

    def approve_unlock(self, unlock_id: str) -> dict[str, Any]:
        """Allow: the phone seals the account's secrets to the asking connection's key."""
        return keeper.decide_unlock(self.state, unlock_id, allow=True)

    def deny_unlock(self, unlock_id: str) -> dict[str, Any]:
        """Don't Allow: the request reads `denied`, nothing is sealed."""
        return keeper.decide_unlock(self.state, unlock_id, allow=False)

    def add_passkey(self, account_id: str, rp_id: str) -> dict[str, Any]:
        """A passkey the phone holds for `rp_id` on the account: its credential id and public key."""
        return passkeys.add(self.state, account_id, rp_id)

    def decoy_edits(self) -> list[dict[str, Any]]:
        """The decoy edits keyless connections queued, oldest first, each as the phone opens it."""
        return keeper.queued_edits(self.state)

    def apply_edit(self, edit_id: str) -> dict[str, Any]:
        """Apply one queued edit now: open, check, merge into the address's details, re-seal."""
        return keeper.decide_edit(self.state, edit_id, apply=True)

    def reject_edit(self, edit_id: str, reason: str = "patch_invalid") -> dict[str, Any]:
        """Reject one queued edit with one of 001's codes (shown to the agent)."""
        return keeper.decide_edit(self.state, edit_id, apply=False, reason=reason)

    def revoke(self, token_id: str, policy_id: str | None = None) -> dict[str, Any]:
        """Revoke a connection (its tokens answer 401 TOKEN_REVOKED), or one of its policies."""
        with self.state.store.tx() as con:
            conn = self._connection(con, token_id)
            now = self.state.now()
            if policy_id is None:
                con.execute("UPDATE connections SET revoked=1, revoked_at=? WHERE token_id=?", (now, token_id))
                con.execute(
                    "UPDATE requests SET status='denied', decided_at=? WHERE token_id=? AND status='pending'",
                    (now, token_id),
                )
            else:
                cur = con.execute(
                    "UPDATE policies SET revoked_at=? WHERE id=? AND token_id=? AND revoked_at IS NULL",
                    (now, policy_id, token_id),
                )
                if cur.rowcount == 0:
                    raise HTTPProblem(404, "NOT_FOUND", "no live policy with that id on this connection")
            version = bump_access_version(con, conn["token_id"])
            return {"revoked": True, "token_id": token_id, "policy_id": policy_id, "access_version": version}

    def expire(self, token_id: str) -> dict[str, Any]:
        """End the connection's access now (its calls then answer 403 GRANT_EXPIRED)."""
        with self.state.store.tx() as con:
            self._connection(con, token_id)
            now = self.state.now()
            cur = con.execute(
                "UPDATE policies SET expires_at=? WHERE token_id=? AND revoked_at IS NULL"
                " AND (expires_at IS NULL OR expires_at>?)",
                (now, token_id, now),
            )
            version = bump_access_version(con, token_id)
            return {"expired": cur.rowcount, "token_id": token_id, "access_version": version}

    def connections(self) -> list[dict[str, Any]]:
        """Connected apps as the owner's phone lists them."""
        now = self.state.now()
        out = []
        with self.state.store.tx() as con:
            for c in con.execute("SELECT * FROM connections ORDER BY created_at, token_id"):
                rows = grantstore.live_rows(con, c["token_id"], now)
                out.append(
                    {
                        "token_id": c["token_id"],
                        "name": c["name"],
                        "client_id": c["client_id"],
                        "key_fingerprint": public_key_fingerprint(c["public_key"]) if c["public_key"] else None,
                        "key_changed_at": iso(c["key_changed_at"]),
                        "revoked": bool(c["revoked"]),
                        "access_version": c["access_version"],
                        "ends_at": iso(grantstore.connection_ends_at(con, c["token_id"], now)),
                        "permissions": [r.as_json() for r in rows],
                        "memories": memory_access_from_rows(rows).summary(),
                    }
                )
        return out

    # ── the phone's memory side (sharepass.py, appview.py) ───────────────────────────────
    def share(self) -> sharepass.ShareReport:
        """Run the sharing pass the owner's app runs: move the legacy rows it was asked to move to
        their own keys (legacy_rows.py), then wrap keys to every connection they now reach."""
        return sharepass.run_sharing_pass(self.state)

    def app_view(self) -> list[dict]:
        """Every row as the owner's app sees it: its text and labels, or why it cannot open."""
        return appview.app_view(self.state)

    def rows(self) -> list[dict]:
        """Every stored row as stored (ids, kids, ciphertexts and all wraps)."""
        return appview.stored_rows(self.state)

    # ── hooks the routes call inside their transaction ───────────────────────────────────
    def on_pairing(self, con: sqlite3.Connection, request_id: str) -> None:
        if self.state.approve == "auto":
            self._approve(con, request_id, None, None, self.state.now())

    def on_request(self, con: sqlite3.Connection, request_id: str) -> None:
        if self.state.approve == "auto":
            self._approve(con, request_id, None, None, self.state.now())

    # ── the work ─────────────────────────────────────────────────────────────────────────
    def _connection(self, con: sqlite3.Connection, token_id: str) -> sqlite3.Row:
        row = con.execute("SELECT * FROM connections WHERE token_id=?", (token_id,)).fetchone()
        if row is None:
            raise HTTPProblem(404, "NOT_FOUND", f"no connection {token_id!r}")
        return row

    def _find(self, con: sqlite3.Connection, ref: str) -> tuple[str, sqlite3.Row]:
        if not isinstance(ref, str) or not ref:
            raise HTTPProblem(400, "INVALID_REFERENCE", "name a user code or a request id")
        sess = con.execute("SELECT * FROM device_sessions WHERE request_id=?", (ref,)).fetchone()
        if sess is None:
            code = normalize_user_code(ref)
            for s in con.execute("SELECT * FROM device_sessions WHERE status='pending'"):
                if normalize_user_code(s["user_code"]) == code:
                    sess = s
                    break
        if sess is not None:
            return "pairing", sess
        req = con.execute("SELECT * FROM requests WHERE id=?", (ref,)).fetchone()
        if req is not None:
            return "grant", req
        raise HTTPProblem(404, "NOT_FOUND", f"no pending pairing or request {ref!r}")

    def _narrow(self, narrow: list[dict] | None, asked: list[grants.Row]) -> tuple[list[grants.Row], bool]:
        if narrow is None:
            return asked, False
        try:
            rows = grants.parse_rows(narrow)
        except grants.RequestError as exc:
            raise HTTPProblem(400, exc.code, exc.message) from None
        return rows, set(rows) != set(asked)

    def _approve(
        self, con: sqlite3.Connection, ref: str, narrow: list[dict] | None, hours: float | None, now: float
    ) -> dict[str, Any]:
        kind, rec = self._find(con, ref)
        if rec["status"] != "pending":
            raise HTTPProblem(409, "REQUEST_ALREADY_DECIDED", f"this {kind} is already {rec['status']}")
        asked = [grants.Row.from_json(r) for r in json.loads(rec["entries"])]
        rows, changed = self._narrow(narrow, asked)
        status = "resolved" if changed else "approved"
        if kind == "pairing":
            if now >= rec["expires_at"]:
                raise HTTPProblem(409, "PAIRING_EXPIRED", "the pairing link expired; the agent must start again")
            reconnect = (
                con.execute("SELECT 1 FROM connections WHERE client_id=? AND revoked=0", (rec["client_id"],)).fetchone()
                is not None
            )
            token_id = self._connect(con, rec, now)
            if reconnect:  # "a reconnect itself sends one push"
                schedule.nudge(self.state, now)
            policy_id = self._grant(con, token_id, rows, hours, now, rec["request_id"], "Pairing")
            con.execute(
                "UPDATE device_sessions SET status=?, token_id=?, policy_id=? WHERE request_id=?",
                (status, token_id, policy_id, rec["request_id"]),
            )
            request_id = rec["request_id"]
        else:
            token_id = rec["token_id"]
            if rec["renewal"]:
                ends = now + (self.renew_hours if hours is None else hours) * 3600
                grantstore.end_connection_at(con, token_id, ends, now)
                policy_id = None
            else:
                reason = "; ".join(json.loads(rec["reasons"])) or "Request"
                policy_id = self._grant(con, token_id, rows, hours, now, rec["id"], reason)
            con.execute(
                "UPDATE requests SET status=?, decided_at=?, policy_id=? WHERE id=?",
                (status, now, policy_id, rec["id"]),
            )
            request_id = rec["id"]
        version = bump_access_version(con, token_id)
        return {
            "ok": True,
            "kind": kind,
            "request_id": request_id,
            "status": status,
            "token_id": token_id,
            "policy_id": policy_id,
            "permissions": [r.as_json() for r in rows],
            "access_version": version,
        }

    def _deny(self, con: sqlite3.Connection, ref: str, now: float) -> dict[str, Any]:
        kind, rec = self._find(con, ref)
        if rec["status"] != "pending":
            raise HTTPProblem(409, "REQUEST_ALREADY_DECIDED", f"this {kind} is already {rec['status']}")
        if kind == "pairing":
            con.execute("UPDATE device_sessions SET status='denied' WHERE request_id=?", (rec["request_id"],))
            return {"ok": True, "kind": kind, "request_id": rec["request_id"], "status": "denied"}
        con.execute("UPDATE requests SET status='denied', decided_at=? WHERE id=?", (now, rec["id"]))
        return {"ok": True, "kind": kind, "request_id": rec["id"], "status": "denied"}

    def _connect(self, con: sqlite3.Connection, sess: sqlite3.Row, now: float) -> str:
        """The connection a pairing continues ("reconnect with the same `client_id`", not revoked; the
        name it sends replaces the connection's), or a new one."""
        conn = con.execute(
            "SELECT * FROM connections WHERE client_id=? AND revoked=0 ORDER BY created_at DESC LIMIT 1",
            (sess["client_id"],),
        ).fetchone()
        scopes = json.loads(sess["scopes"])
        if conn is None:
            token_id = grants.new_id()
            con.execute(
                "INSERT INTO connections (token_id, connection_id, name, client_id, public_key, created_at,"
                " key_changed_at, revoked, access_version, scopes) VALUES (?,?,?,?,?,?,NULL,0,0,?)",
                (
                    token_id,
                    token_id,
                    sess["name"],
                    sess["client_id"],
                    sess["public_key"],
                    now,
                    json.dumps(sorted(set(scopes))),
                ),
            )
            return token_id
        token_id = conn["token_id"]
        con.execute("UPDATE connections SET name=? WHERE token_id=?", (sess["name"], token_id))
        new_key = sess["public_key"]
        if new_key and new_key != conn["public_key"]:
            changed_at = now if conn["public_key"] else conn["key_changed_at"]
            con.execute(
                "UPDATE connections SET public_key=?, key_changed_at=? WHERE token_id=?",
                (new_key, changed_at, token_id),
            )
        held = set(json.loads(conn["scopes"] or "[]"))
        con.execute(
            "UPDATE connections SET scopes=? WHERE token_id=?", (json.dumps(sorted(held | set(scopes))), token_id)
        )
        con.execute("UPDATE credentials SET state='superseded' WHERE token_id=? AND state='live'", (token_id,))
        return token_id

    def _grant(
        self,
        con: sqlite3.Connection,
        token_id: str,
        rows: list[grants.Row],
        hours: float | None,
        now: float,
        request_id: str | None,
        reason: str,
    ) -> str | None:
        """Store an approved policy (entries already held are not added again); set the end date."""
        held = grantstore.live_rows(con, token_id, now)
        new = [r for r in rows if not grants.covers(held, r)]
        ends: float | None
        if hours is not None:
            ends = now + float(hours) * 3600
            grantstore.end_connection_at(con, token_id, ends, now)
        else:
            ends = grantstore.connection_ends_at(con, token_id, now)
        if not new:
            return None
        policy_id = grants.new_id()
        con.execute(
            "INSERT INTO policies (id, token_id, request_id, reason, created_at, approved_at, expires_at,"
            " revoked_at, rows) VALUES (?,?,?,?,?,?,?,NULL,?)",
            (policy_id, token_id, request_id, reason, now, now, ends, json.dumps([r.as_json() for r in new])),
        )
        return policy_id

    def _pending(self, con: sqlite3.Connection, now: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for s in con.execute(
            "SELECT * FROM device_sessions WHERE status='pending' AND expires_at>? ORDER BY created_at", (now,)
        ):
            rows = [grants.Row.from_json(r) for r in json.loads(s["entries"])]
            existing = con.execute(
                "SELECT token_id FROM connections WHERE client_id=? AND name=? AND revoked=0",
                (s["client_id"], s["name"]),
            ).fetchone()
            out.append(
                {
                    "kind": "pairing",
                    "request_id": s["request_id"],
                    "user_code": s["user_code"],
                    "name": s["name"],
                    "client_id": s["client_id"],
                    "reconnect": existing is not None,
                    "key_fingerprint": public_key_fingerprint(s["public_key"]) if s["public_key"] else None,
                    "permissions": [r.as_json() for r in rows],
                    "headlines": [h for r in rows for h in r.headlines()],
                    "scopes": grants.scopes_for(rows, json.loads(s["scopes"])),
                    "warnings": json.loads(s["warnings"]),
                    "created_at": iso(s["created_at"]),
                    "expires_at": iso(s["expires_at"]),
                }
            )
        for r in con.execute(
            "SELECT r.*, c.name FROM requests r JOIN connections c ON c.token_id=r.token_id"
            " WHERE r.status='pending' ORDER BY r.created_at",
            (),
        ):
            rows = [grants.Row.from_json(e) for e in json.loads(r["entries"])]
            out.append(
                {
                    "kind": "grant",
                    "request_id": r["id"],
                    "token_id": r["token_id"],
                    "name": r["name"],
                    "renewal": bool(r["renewal"]),
                    "ends_at": iso(r["ends_at"]),
                    "reasons": json.loads(r["reasons"]),
                    "permissions": [x.as_json() for x in rows],
                    "headlines": [h for x in rows for h in x.headlines()],
                    "created_at": iso(r["created_at"]),
                }
            )
        return out
