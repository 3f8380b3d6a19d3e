"""The owner's phone moves legacy space rows to their own keys.

A connection whose permission on a legacy row is only on some categories or topics gets `409
MEMORY_MOVING` (PUT rows) or the row under `moving` (rows/delete): "the owner's phone is asked to
move the row to its own key … Nothing is changed meanwhile." `ask` records the ask and nudges the
phone; the phone's next sharing pass runs `move_asked` first. It reseals each asked row as a
row-keyed memory of the current format — same id, author, revision and first-added time, a new
random key, the owner wrap — and the pass then wraps that key to every connection the row's
labels reach (`sharepass.run_sharing_pass`, as for any memory). The space row is gone afterwards;
the memory carries on in the per-memory store, where the per-memory rule decides every edit.

The spec gives both formats but not the mapping between them; these are the readings an owner
would expect:
- An observation in an account's space is about that account (`account:<id>`, no entityName).
  In the Me space it is about the user when its entityName is the user, otherwise about the topic
  of that name: an existing topic of the same normalized name (the oldest), else the space's entity
  row of that name, moved along as the topic (with the relation rows joining it to the user or to
  a topic), else a new topic from You written by the owner.
- An entity row becomes a topic row of the same id; a relation a link whose endpoints name the
  user, topics or the space's account (an account end keeps an empty name).
- `space_id` is dropped and `v: 2` added; every other key (categories, metadata …) is kept.
A row that cannot be placed (an entity naming the user, say) stays where it is and the pass
reports why (`MoveReport.stuck`); asking again asks again.

The asks live on `state.phone` (core.PhoneLog) like the phone's other bookkeeping.
"""

from __future__ import annotations

import copy
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import DecoyError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import SandboxState
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.phone.opening import Opened, open_row
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key


class Stuck(Exception):
    """A legacy row the phone cannot place in the per-memory store (the message says why)."""


@dataclass
class MoveReport:
    """What one pass moved: the asked rows, the rows moved along with them, and those it could not."""

    moved: list[str] = field(default_factory=list)
    along: list[str] = field(default_factory=list)
    stuck: dict[str, str] = field(default_factory=dict)


def ask(state: SandboxState, row_ids: list[str], now: float) -> None:
    """The owner's phone is asked to move these rows (the ask is kept until a pass answers it)."""
    asked = state.phone.moves_asked
    for rid in row_ids:
        asked.setdefault(rid, now)
    schedule.nudge(state, now)


def asked(state: SandboxState) -> list[str]:
    return list(state.phone.moves_asked)


def move_asked(state: SandboxState) -> MoveReport:
    """Move every asked row now (the phone's pass runs this before it shares keys)."""
    report = MoveReport()
    pending = state.phone.moves_asked
    if not pending:
        return report
    with state.store.tx() as con:
        mover = _Mover(con, state.owner.key, state.owner.key.public_key_b64, float(state.clock()), report)
        for rid in list(pending):
            try:
                mover.move(rid)
            except Stuck as exc:
                report.stuck[rid] = str(exc)
            pending.pop(rid, None)
    report.along = [r for r in report.along if r not in report.moved]
    state.phone.last_moves = report
    return report


class _Mover:
    """One pass's moves, inside one transaction."""

    def __init__(
        self, con: sqlite3.Connection, owner_key: AgentKey, owner_public_key: str, now: float, report: MoveReport
    ):
        self.con, self.owner_key, self.now, self.report = con, owner_key, now, report
        self.owner_public_key = owner_public_key
        self.owner_keys = memory.RecipientKeys(owner_public_key, owner_public_key)  # the owner's own app
        self.space_keys: dict[str, bytes] = {}
        self._topics: dict[str, tuple[str, str]] | None = None  # normalized name -> (topic id, name)

    # -- one row ---------------------------------------------------------------------------------
    def move(self, rid: str, *, along: bool = False) -> None:
        srow = ss.get_space_row(self.con, rid)
        if srow is None:
            return  # deleted, or moved along with an earlier row
        space = ss.get_space(self.con, srow.space_id)
        assert space is not None  # a stored row's space is stored (the tables' foreign key)
        plain = self._convert(self._open(srow, space), space, rid)
        self._store(srow, space, plain)
        (self.report.along if along else self.report.moved).append(rid)
        if "entity" in plain:
            self._topic_index()[memory.normalize_topic_name(plain["entity"]["name"])] = (
                f"topic:{rid}",
                plain["entity"]["name"],
            )
            self._move_links_of(space, plain["entity"]["name"])

    def _open(self, srow: ss.SpaceRow, space: ss.Space) -> dict:
        key = self.space_keys.get(space.id)
        try:
            if key is None:
                key = self.space_keys[space.id] = sealing.unwrap_as_owner(space.owner_wrap, self.owner_key)
            return sealing.open_space_row(srow.ciphertext, key, space_id=space.id, row_id=srow.id)
        except DecoyError as exc:
            raise Stuck(f"the owner's app cannot open this row: {exc}") from None

    def _store(self, srow: ss.SpaceRow, space: ss.Space, plain: dict) -> None:
        key = random_key()
        ciphertext = wire.b64encode(sealing.seal_json(key, plain))
        owner_wrap = wire.b64encode(sealing.wrap_to_owner(key, self.owner_public_key))
        ms.insert_memory(
            self.con,
            ms.MemoryRow(
                srow.id,
                wire.kid(key),
                srow.rev,
                ciphertext,
                owner_wrap,
                srow.author_kind,
                srow.author_token,
                self._connection_of(srow.author_token),
                srow.created_at,
                self.now,
                self.now,
                editor_kind="owner",
            ),
        )  # the owner's phone resealed it: its labels are the approved ones
        ss.delete_space_row(self.con, srow.id)
        ms.log_change(self.con, "context_row", srow.id, "destroyed", self.now, space_id=space.id)
        ms.log_change(self.con, "context_memory", srow.id, "created", self.now)

    def _connection_of(self, token_id: str | None) -> str | None:
        if token_id is None:
            return None
        r = self.con.execute("SELECT connection_id FROM connections WHERE token_id = ?", (token_id,)).fetchone()
        return r[0] if r and r[0] else token_id

    # -- the current format ----------------------------------------------------------------------
    def _convert(self, obj: dict, space: ss.Space, rid: str) -> dict:
        new = {
            "v": 2,
            "row_id": rid,
            **{k: copy.deepcopy(v) for k, v in obj.items() if k not in ("space_id", "row_id", "v")},
        }
        if isinstance(obj.get("observation"), dict):
            self._observation(new, space)
        elif isinstance(obj.get("entity"), dict):
            name = obj["entity"].get("name")
            if not isinstance(name, str) or memory.normalize_topic_name(name) in memory.USER_NAMES:
                raise Stuck(f"the entity {name!r} is the user, never a topic: there is nothing to move it to")
            new["about"] = []
        elif isinstance(obj.get("relation"), dict):
            rel = new["relation"]
            ends = [self._end(space, rel.get("from"), create=True), self._end(space, rel.get("to"), create=True)]
            for side, end in zip(("from", "to"), ends):
                if end is not None and end.startswith("account:"):
                    rel[side] = ""  # an account end carries no name
            new["endpoints"], new["about"] = ends, []
        else:
            raise Stuck("neither an observation, an entity nor a relation")
        try:
            memory.decode_plaintext(new, rid)  # the phone writes only what reads back
        except DecoyError as exc:
            raise Stuck(f"it would not read back in the current format: {exc}") from None
        return new

    def _observation(self, new: dict, space: ss.Space) -> None:
        obs = new["observation"]
        if space.kind == "account":
            obs.pop("entityName", None)  # never the account's name
            new["about"] = [f"account:{space.account_id}"]
            return
        name = obs.get("entityName")
        if not isinstance(name, str) or memory.normalize_topic_name(name) in memory.USER_NAMES:
            obs["entityName"], new["about"] = memory.USER_ENTITY, ["user"]
            return
        found = self._topic(space, name, create=True)
        assert found is not None  # with create=True a topic is found or made
        obs["entityName"], topic_id = found
        new["about"] = [topic_id]

    def _end(self, space: ss.Space, name: Any, *, create: bool) -> str | None:
        """A relation end: the user, a topic, or (in an account's space) the account itself."""
        if not isinstance(name, str) or memory.normalize_topic_name(name) in memory.USER_NAMES:
            return "user" if isinstance(name, str) else None
        if (
            space.kind == "account"
            and self._entity_row(space, name) is None
            and memory.normalize_topic_name(name) not in self._topic_index()
        ):
            return f"account:{space.account_id}"
        found = self._topic(space, name, create=create)
        return found[1] if found else None

    # -- topics ------------------------------------------------------------------------------------
    def _topic(self, space: ss.Space, name: str, *, create: bool) -> tuple[str, str] | None:
        """(current name, topic id) for `name`: an existing topic, or (with `create`) the space's
        entity of that name moved along, else a new topic from You."""
        norm = memory.normalize_topic_name(name)
        index = self._topic_index()
        if norm not in index:
            if not create:
                return None
            entity = self._entity_row(space, name)
            if entity is not None:
                self.move(entity.id, along=True)
            else:
                self._new_topic(name)
        topic_id, current = index[norm]
        return current, topic_id

    def _topic_index(self) -> dict[str, tuple[str, str]]:
        """Every topic the owner's app opens, oldest first per normalized name."""
        if self._topics is None:
            self._topics = {}
            for row in ms.all_memories(self.con):
                opened = open_row(row, self.owner_key)
                if isinstance(opened, Opened) and opened.plain.kind == "topic" and opened.plain.name:
                    self._topics.setdefault(
                        memory.normalize_topic_name(opened.plain.name), (f"topic:{row.id}", opened.plain.name)
                    )
        return self._topics

    def _entity_row(self, space: ss.Space, name: str) -> ss.SpaceRow | None:
        norm = memory.normalize_topic_name(name)
        for srow in ss.space_rows(self.con, space.id):
            ent = self._open(srow, space).get("entity")
            if (
                isinstance(ent, dict)
                and isinstance(ent.get("name"), str)
                and memory.normalize_topic_name(ent["name"]) == norm
            ):
                return srow
        return None

    def _new_topic(self, name: str) -> None:
        made = memory.new_topic_rows(self.owner_keys, name)
        for row in made.rows:
            ms.insert_memory(
                self.con,
                ms.MemoryRow(
                    row["id"],
                    row["kid"],
                    1,
                    row["ciphertext"],
                    row["owner_wrap"],
                    "owner",
                    None,
                    None,
                    self.now,
                    self.now,
                    self.now,
                ),
            )
            ms.log_change(self.con, "context_memory", row["id"], "created", self.now)
        self._topic_index()[memory.normalize_topic_name(name)] = (made.topic_id, made.topic["name"])

    def _move_links_of(self, space: ss.Space, name: str) -> None:
        """The relation rows that place a moved entity on the Map, when every end already resolves."""
        norm = memory.normalize_topic_name(name)
        for srow in ss.space_rows(self.con, space.id):
            rel = self._open(srow, space).get("relation")
            if not isinstance(rel, dict):
                continue
            names = [rel.get("from"), rel.get("to")]
            if not any(isinstance(n, str) and memory.normalize_topic_name(n) == norm for n in names):
                continue
            if all(self._end(space, n, create=False) for n in names):
                try:
                    self.move(srow.id, along=True)
                except Stuck:
                    pass  # it stays in the space; the link can still be moved when asked
