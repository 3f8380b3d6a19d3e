"""What the owner does in the Decoy app besides approving: edit, re-file and delete memories,
rename topics, change grants, finish key setup, keep the authorized-account list.

Every write is sealed as the owner's app seals (the owner opens the row with the owner key and
re-seals the plaintext, bound to its id, `v` 2) and makes a new revision, so an agent that
edits from an older read meets `409 REV_CONFLICT` ("means it changed since, so re-read and
re-apply"). An edit that keeps every label keeps the key; one that removes a label gets a new
key and every wrap of the old one is dropped (the memory contract's rotation), and the phone
then shares the row with whoever its labels reach now — at once, since the phone made the edit.
A grant change takes effect on the next read: reasons are rechecked against live grants on every
read. Choices where the spec is silent: renaming a topic also renames the memories filed under it
(`observation.entityName` is "the topic's name") and the `relation.to` of links that end at it.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from typing import Any

from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.bearer import bump_access_version
from decoy_lab.sandbox.core import HTTPProblem, SandboxState
from decoy_lab.sandbox.phone import acctopen, schedule, sharepass
from decoy_lab.sandbox.phone.opening import Opened, open_row
from decoy_lab.sandbox.stores import acctstore as acs
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

UNSET: Any = object()


def _opened(con: sqlite3.Connection, state: SandboxState, row_id: str) -> tuple[ms.MemoryRow, Opened]:
    row = ms.get_memory(con, row_id) if isinstance(row_id, str) else None
    if row is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no memory {row_id!r}")
    opened = open_row(row, state.owner.key)
    if not isinstance(opened, Opened):
        raise HTTPProblem(409, "CANNOT_OPEN", f"the owner's app cannot open this row: {opened.reason}")
    return row, opened


def _seal(
    con: sqlite3.Connection, state: SandboxState, row: ms.MemoryRow, key: bytes, obj: dict, *, new_key: bool, now: float
) -> int:
    """Store `obj` as the row's next revision (a new key when `new_key`); returns the new rev."""
    obj = {**obj, "v": 2, "row_id": row.id}
    rev = row.rev + 1
    if new_key:
        key = random_key()
        ms.delete_wraps(con, row.id)
        ms.update_memory(
            con,
            row.id,
            ciphertext=wire.b64encode(sealing.seal_json(key, obj)),
            rev=rev,
            now=now,
            kid=wire.kid(key),
            owner_wrap=wire.b64encode(sealing.wrap_to_owner(key, state.owner.key.public_key_b64)),
            editor_kind="owner",
        )
    else:
        ms.update_memory(
            con, row.id, ciphertext=wire.b64encode(sealing.seal_json(key, obj)), rev=rev, now=now, editor_kind="owner"
        )
    ms.log_change(con, "context_memory", row.id, "updated", now)
    return rev


def _topic_name(con: sqlite3.Connection, state: SandboxState, topic_id: str) -> str:
    _, opened = _opened(con, state, topic_id.removeprefix("topic:"))
    if opened.plain.kind != "topic":
        raise HTTPProblem(400, "NOT_A_TOPIC", f"{topic_id} is not a topic row")
    return opened.plain.name or ""


class OwnerApp:
    """The owner's app's own writes, on `Owner` (self.state is the sandbox state)."""

    state: SandboxState
    _grant: Any  # Owner._grant: store an approved policy (owner.py)

    def _after_write(self) -> None:
        """The phone made the edit: it shares the row with whoever its labels reach now."""
        sharepass.run_sharing_pass(self.state)

    # ── memories ─────────────────────────────────────────────────────────────────────────
    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        categories: list[str] | None = None,
        topic: Any = UNSET,
        expected_rev: int | None = None,
    ) -> dict[str, Any]:
        """Edit a memory as the owner: its text, its categories, and with `topic` its filing
        (a `topic:<id>`, or None for "back to the user"). A removed label rotates the key."""
        now = self.state.now()
        with self.state.store.tx() as con:
            row, opened = _opened(con, self.state, memory_id)
            plain = opened.plain
            if plain.kind != "memory":
                raise HTTPProblem(400, "NOT_A_MEMORY", f"{memory_id} is a {plain.kind} row, not a memory")
            if expected_rev is not None and expected_rev != row.rev:
                raise HTTPProblem(409, "REV_CONFLICT", "the memory changed since it was read", current_rev=row.rev)
            obj = copy.deepcopy(plain.plaintext)
            obs = obj.setdefault("observation", {})
            if text is not None:
                if not isinstance(text, str) or not text.strip():
                    raise HTTPProblem(400, "INVALID_REQUEST", "text must be non-empty text")
                obs["content"] = text
            if categories is not None:
                if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
                    raise HTTPProblem(400, "INVALID_REQUEST", "categories must be a list of names")
                obj["categories"] = list(dict.fromkeys(categories))
            if topic is not UNSET:
                if topic is None or topic == "user":
                    obj["about"], obs["entityName"] = ["user"], memory.USER_ENTITY
                elif isinstance(topic, str) and topic.startswith("topic:"):
                    obj["about"], obs["entityName"] = [topic], _topic_name(con, self.state, topic)
                else:
                    raise HTTPProblem(400, "INVALID_REQUEST", "topic is a topic id (topic:<id>) or None for the user")
            before = set(plain.labels)
            after = set(memory.decode_plaintext({**obj, "v": 2, "row_id": row.id}, row.id).labels)
            rev = _seal(con, self.state, row, opened.key, obj, new_key=bool(before - after), now=now)
        self._after_write()
        return {"id": memory_id, "rev": rev, "rotated": bool(before - after)}

    def refile(self, memory_id: str, topic: str | None) -> dict[str, Any]:
        """File a memory under a topic (`topic:<id>`), or back under the user (None)."""
        return self.edit(memory_id, topic=topic)

    def delete(self, ids: str | list[str]) -> dict[str, Any]:
        """Delete rows as the owner: gone for every connection (their holders see it destroyed)."""
        ids = [ids] if isinstance(ids, str) else list(ids)
        now, deleted, missing = self.state.now(), [], []
        with self.state.store.tx() as con:
            for row_id in dict.fromkeys(ids):
                row = ms.get_memory(con, row_id) if isinstance(row_id, str) else None
                if row is None:
                    missing.append(row_id)
                    continue
                holders = [w.token_id for w in ms.wraps_of(con, row_id)] + (
                    [row.author_token] if row.author_token else []
                )
                ms.delete_memory(con, row_id)
                ms.log_change(con, "context_memory", row_id, "destroyed", now, holders=holders)
                deleted.append(row_id)
        schedule.note_write(self.state)
        return {"deleted": deleted, "missing": missing}

    def rename_topic(self, topic_id: str, name: str) -> dict[str, Any]:
        """Rename a topic: its entity row, the memories filed under it and the links ending at it."""
        if not isinstance(name, str) or not name.strip() or len(name) > memory.MAX_TOPIC_NAME:
            raise HTTPProblem(400, "INVALID_REQUEST", f"a topic name is 1 to {memory.MAX_TOPIC_NAME} characters")
        tid = topic_id if topic_id.startswith("topic:") else f"topic:{topic_id}"
        now, changed = self.state.now(), []
        with self.state.store.tx() as con:
            row, opened = _opened(con, self.state, tid.removeprefix("topic:"))
            if opened.plain.kind != "topic":
                raise HTTPProblem(400, "NOT_A_TOPIC", f"{tid} is not a topic row")
            obj = copy.deepcopy(opened.plain.plaintext)
            obj.setdefault("entity", {})["name"] = name
            _seal(con, self.state, row, opened.key, obj, new_key=False, now=now)
            changed.append(row.id)
            for other in ms.all_memories(con):
                o = open_row(other, self.state.owner.key)
                if not isinstance(o, Opened) or other.id == row.id:
                    continue
                p, new = o.plain, copy.deepcopy(o.plain.plaintext)
                if p.kind == "memory" and p.topic_id == tid:
                    new.setdefault("observation", {})["entityName"] = name
                elif p.kind == "link" and p.endpoints and p.endpoints[-1] == tid:
                    new.setdefault("relation", {})["to"] = name
                elif p.kind == "link" and len(p.endpoints) > 1 and p.endpoints[0] == tid:
                    new.setdefault("relation", {})["from"] = name
                else:
                    continue
                _seal(con, self.state, other, o.key, new, new_key=False, now=now)
                changed.append(other.id)
        self._after_write()
        return {"topic_id": tid, "name": name, "changed": changed}

    # ── grants ───────────────────────────────────────────────────────────────────────────
    def set_grant(self, token_id: str, policy_id: str, rows: list[dict]) -> dict[str, Any]:
        """Narrow or widen one live grant to exactly these permission rows (the next read sees it)."""
        parsed = _parsed_rows(rows)
        now = self.state.now()
        with self.state.store.tx() as con:
            live = {p["id"] for p in grantstore.live_policies(con, token_id, now)}
            if policy_id not in live:
                raise HTTPProblem(404, "NOT_FOUND", "no live grant with that id on this connection")
            con.execute("UPDATE policies SET rows=? WHERE id=?", (json.dumps([r.as_json() for r in parsed]), policy_id))
            version = bump_access_version(con, token_id)
        schedule.note_write(self.state)
        return {
            "token_id": token_id,
            "policy_id": policy_id,
            "rows": [r.as_json() for r in parsed],
            "access_version": version,
        }

    def grants_of(self, token_id: str) -> list[dict[str, Any]]:
        """A connection's live grants as the app lists them: id and permission rows."""
        with self.state.store.tx() as con:
            return [
                {"policy_id": p["id"], "rows": json.loads(p["rows"]), "expires_at": p["expires_at"]}
                for p in grantstore.live_policies(con, token_id, self.state.now())
            ]

    def widen(self, token_id: str, rows: list[dict], *, expires_in_hours: float | None = None) -> dict[str, Any]:
        """Give a connection more: a new grant of these rows, as an approved request would."""
        parsed = _parsed_rows(rows)
        now = self.state.now()
        with self.state.store.tx() as con:
            if con.execute("SELECT 1 FROM connections WHERE token_id=? AND revoked=0", (token_id,)).fetchone() is None:
                raise HTTPProblem(404, "NOT_FOUND", f"no live connection {token_id!r}")
            policy_id = self._grant(con, token_id, parsed, expires_in_hours, now, None, "Given by the owner")
            version = bump_access_version(con, token_id)
        schedule.note_write(self.state)
        return {"token_id": token_id, "policy_id": policy_id, "access_version": version}

    # ── key setup ────────────────────────────────────────────────────────────────────────
    def _meta(self, key: str) -> str | None:
        with self.state.store.tx() as con:
            row = con.execute("SELECT value FROM sandbox_meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        with self.state.store.tx() as con:
            con.execute("INSERT OR REPLACE INTO sandbox_meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def key_ready(self) -> bool:
        """Has the owner finished key setup in the app? Until then no public key is served."""
        return self._meta("owner_key_setup") != "pending"

    def set_key_setup(self, done: bool) -> dict[str, Any]:
        """Finish key setup (True), or put this sandbox's owner back before it (False)."""
        self._set_meta("owner_key_setup", "done" if done else "pending")
        return {"key_setup": "done" if done else "pending"}

    def finish_key_setup(self) -> dict[str, Any]:
        return self.set_key_setup(True)

    # ── the authorized-account list ─────────────────────────────────────────────────────
    def accounts(self) -> list[dict[str, str]]:
        """The owner's accounts (`id`, `service_name`) the owner named: what an `account:<id>`
        label is named by. Accounts an agent sealed without a plain name are not listed here."""
        self._move_old_list()
        with self.state.store.tx() as con:
            return [
                {"id": a["id"], "service_name": a["service_name"]}
                for a in acs.live_accounts(con)
                if a["service_name"] is not None
            ]

    def add_account(self, service_name: str, account_id: str | None = None) -> dict[str, str]:
        """Add an account as the owner's app does (a new id unless one is given): its record
        `{"name"}` sealed under the vault key; the name the owner typed kept for the list."""
        if not isinstance(service_name, str) or not service_name.strip():
            raise HTTPProblem(400, "INVALID_REQUEST", "an account needs a service_name")
        account_id = account_id or grants.new_id()
        if not isinstance(account_id, str) or not grants._UUID_RE.match(account_id):
            raise HTTPProblem(400, "INVALID_ID", "an account id is a UUID")
        name, now = service_name.strip(), self.state.now()
        blob = wire.b64encode(sealing.seal_json(acctopen.vault_key(self.state), {"name": name}))
        with self.state.store.tx() as con:
            if acs.get_account(con, account_id, deleted=True) is not None:
                acs.update_account(con, account_id, service_name=name, encrypted_data=blob, blob_mode="vault")
            else:
                acs.insert_account(
                    con,
                    id=account_id,
                    encrypted_data=blob,
                    blob_mode="vault",
                    service_name=name,
                    created_at=now,
                    updated_at=now,
                )
        return {"id": account_id, "service_name": name}

    def _move_old_list(self) -> None:
        """A database from before the accounts table kept the list in `sandbox_meta`: move it."""
        old = self._meta("accounts")
        if old is None:
            return
        with self.state.store.tx() as con:
            con.execute("DELETE FROM sandbox_meta WHERE key='accounts'")
        for a in json.loads(old):
            self.add_account(a["service_name"], a["id"])


def _parsed_rows(rows: list[dict]) -> list[grants.Row]:
    """Permission rows as the app would send them, or a 400 naming what is wrong."""
    try:
        return grants.parse_rows(rows)
    except grants.RequestError as exc:
        raise HTTPProblem(400, exc.code, exc.message) from None
