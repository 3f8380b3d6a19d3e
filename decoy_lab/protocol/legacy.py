"""Editing a legacy space row: `PUT /api/agent/context/rows`, and what follows `MEMORY_MOVING`.

- The row keeps its id and first-added time: its whole plaintext is re-sealed under the SAME space
  key, bound to the same `space_id` and `row_id`, with only `observation.content` and `categories`
  changed and every other key kept ("Keep any keys you don't use when you re-seal a row"); the
  body is `{id, expected_rev, ciphertext}`.
- An unknown outcome resends that same body (`Session.send`), never a newly sealed one. A
  `REV_CONFLICT` re-reads: when the row already reads as asked, an earlier unanswered attempt
  landed and nothing is sent again; otherwise the changes are re-applied to the current row.
- `409 MEMORY_MOVING`: nothing changed, and the owner's phone is moving the row to its own key.
  Wait `retry_after_seconds` (at most `MOVING_WAIT_CAP`), reload, and send again while it is still
  in its space, up to `s.retries` times. Once it is served as a memory, `edit` answers None and
  the caller applies the same changes there: "the retry is decided by the per-memory rule" (the
  author changes text and labels; another connection with Read & write corrects the text only).
- A legacy row has no topic of its own to change (its entity is named inside the plaintext), so
  a topic change is refused here; it works once the row is a memory.

Reading legacy rows: `load_spaces` reads every space this connection is granted and its rows,
each opened with its space key (a load shows them next to the memories); `unseal` re-runs the
read of one such row step by step.

Deleting legacy rows: `POST /api/agent/context/rows/delete` (`delete`).
- Only rows this connection wrote (`mine`) can be deleted, and only with `memory.delete` (or
  `acctmem.delete` on the account) covering them; every other id is refused, and each refusal
  says why (another connection's row, a missing permission with the grant request that unlocks
  it, or a row no longer in its space).
- An unknown outcome resends the same ids (`Session.send`). A row of ours the resend reports
  refused, and that the reload no longer finds anywhere, was deleted by the attempt whose answer
  was lost: it counts as deleted, not as refused.
- `moving`: wait `retry_after_seconds` as for an edit (`wait_for_move`), reload, and send again
  the rows still in their space, up to `s.retries` waits. A row served as a memory by then is
  handed back in `moved`, for the caller to delete under the per-memory rule (writes.py); one
  still moving after the last wait is reported refused, with nothing deleted.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import APIError, DecoyError, MemoryModelError, MemoryMoving, NotFound, RevConflict, UnreadableRow
from decoy_lab.memory.build import checked_categories
from decoy_lab.memory.edit import apply_text
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.shapes import fits, json_kind
from decoy_lab.transport import routes
from decoy_lab.vault.decode import space_row, unwrap_space_key
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.wire import layouts as wire

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

ROWS, ROWS_DELETE, SPACES = routes.ROWS, routes.ROWS_DELETE, routes.SPACES
# The members each answer is read for, and their shapes (http.expect_object): an answer that does
# not fit is an unknown outcome, like a lost one.
EDITED = {"id": str, "rev": int}
DELETED = {
    "deleted": list[str],
    "refused": list[str],
    "moving": list[str],
    "remediation": dict,
    "retry_after_seconds": float,
}
MOVING_WAIT_CAP = 60.0


def edited(body: Mapping):
    """The check of an edit's answer: it names the row edited and carries its new rev."""

    def check(ans: dict) -> str | None:
        if ans.get("id") != body.get("id"):
            return "the answer does not name the row edited"
        rev, before = ans.get("rev"), body.get("expected_rev")
        if not fits(rev, int):
            return "the answer carries no new rev"
        if fits(before, int) and rev <= before:
            return f"the answer's rev {rev} is not newer than the rev {before} edited"
        return None

    return check  # seconds: a longer retry_after is waited in steps, each followed by a reload


@dataclass
class SpaceRow:
    """A legacy row as its space serves it now, opened with the space key."""

    space_id: str
    id: str
    rev: int
    key: bytes
    plain: dict


# -- reading ------------------------------------------------------------------------------------
def load_spaces(s: Session) -> list:
    """Every legacy row of the spaces this connection is granted, each opened with its space key
    (vault.space_row). A server without space routes adds none; a listed space that is not an
    object with an id, or whose rows are refused (403/404), is skipped and counted in
    `s.skipped_spaces` (the load's summary says so)."""
    s.skipped_spaces = 0
    try:
        listing = s.get(SPACES, spaces=list)
    except APIError as exc:
        if exc.status in (403, 404, 405):
            return []
        raise
    out: list[DecodedRow] = []
    for space in listing.get("spaces") or []:
        if not isinstance(space, dict) or not isinstance(space.get("id"), str) or not space["id"]:
            s.skipped_spaces += 1
            continue
        key, why = unwrap_space_key(space, s.agent_key, s.key_cache)
        try:
            got = s.get(ROWS, {"space_id": space["id"]}, rows=list)
        except APIError as exc:
            if exc.status in (403, 404):
                s.skipped_spaces += 1
                continue
            raise
        out.extend(space_row(space, r, key, key_reason=why) for r in got.get("rows") or [] if isinstance(r, dict))
    return out


def unseal(s: Session, srow: Any, trace: Trace) -> Trace:
    """The read of one legacy row, step by step: unwrap the space key, check its skid, open the row."""
    spaces = s.get(SPACES, spaces=list).get("spaces") or []
    space = next((x for x in spaces if isinstance(x, dict) and x.get("id") == srow.space_id), None)
    rows = s.get(ROWS, {"space_id": srow.space_id}, rows=list).get("rows") or []
    row = next((r for r in rows if isinstance(r, dict) and r.get("id") == srow.id), None)
    if space is None or row is None or not space.get("wrapped_key"):
        trace.add("find the space row", ok=False, reason="the space or its key is not served to this connection")
        return trace
    try:
        key = sealing.unwrap_as_agent(space["wrapped_key"], s.agent_key, trace=trace)
        with trace.step("skid check", inputs={"served skid": space.get("skid")}) as step:
            step.output = wire.kid(key)
            if step.output != space.get("skid"):
                raise UnreadableRow(srow.id, f"the space key's fingerprint {step.output} is not the served skid")
        sealing.open_space_row(row.get("ciphertext") or "", key, space_id=srow.space_id, row_id=srow.id, trace=trace)
    except DecoyError:
        pass
    return trace


# -- editing ------------------------------------------------------------------------------------
def space_row_ids(s: Session) -> set[str]:
    """The legacy space rows in the last load (loading first when there is none)."""
    vault = s.vault if s.vault is not None else s.load()
    return {r.id for r in vault.space_rows}


def is_space_row(s: Session, row_id: str) -> bool:
    return row_id in space_row_ids(s)


def edit(s: Session, row_id: str, changes: Mapping) -> dict | None:
    """Edit a legacy row in its space. Returns the server's answer, or None once the row has moved
    to the per-memory store (apply `changes` there)."""
    _check(changes)
    conflicts = moving = 0
    current = read(s, row_id)
    while current is not None:
        try:
            body = sealed_edit(current, changes)
            return s.send("PUT", ROWS, body, EDITED, edited(body))
        except RevConflict:
            conflicts += 1
            if conflicts > s.retries:
                raise
            log.info("legacy row %s changed since it was read (REV_CONFLICT): re-reading", row_id)
            current = read(s, row_id)
            if current is not None and reads_as(current.plain, changes):
                return {"id": row_id, "rev": current.rev, "outcome": "already applied"}
        except MemoryMoving as exc:
            moving += 1
            if moving > s.retries:
                raise
            wait_for_move(s, [row_id], exc.retry_after)
            current = read(s, row_id)
        except NotFound as exc:
            vault = s.load()  # moved since it was read, or not a row this connection may edit here
            if vault.served_row(row_id) is not None:
                return None
            exc.message = (
                f"{row_id} is a legacy space row this connection cannot edit: only rows it wrote, and "
                f"the owner has not edited since, can be ({exc.message})"
            )
            raise
    vault = s.vault if s.vault is not None and s.vault.served_row(row_id) is not None else s.load()
    if vault.served_row(row_id) is not None:
        return None
    raise NotFound(404, "NOT_FOUND", f"{row_id} is neither in its legacy space nor served as a memory")


def wait_for_move(s: Session, row_ids: list[str], retry_after: float | None) -> None:
    """Wait the `retry_after_seconds` the server named (at most MOVING_WAIT_CAP), then reload to see
    which rows the owner's phone has moved to their own keys."""
    wait = min(MOVING_WAIT_CAP, max(0.0, float(retry_after or 1)))
    log.info(
        "legacy rows %s are moving to their own keys (MEMORY_MOVING): reading again in %s s", ", ".join(row_ids), wait
    )
    s.sleep(wait)
    s.load()


def _check(changes: Mapping) -> None:
    if "topic" in changes:
        raise MemoryModelError(
            "a legacy space row's topic cannot be changed in its space: change its text or "
            "categories, or its topic once the owner's phone has moved it to its own key"
        )


def read(s: Session, row_id: str) -> SpaceRow | None:
    """The row as its space serves it now (None when the last load holds no such legacy row or its
    space no longer does)."""
    where = next((r for r in s.vault.space_rows if r.id == row_id), None) if s.vault is not None else None
    if where is None or where.space_id is None:
        return None
    spaces = s.get(SPACES, spaces=list).get("spaces") or []
    space = next((s for s in spaces if isinstance(s, dict) and s.get("id") == where.space_id), None)
    if space is None:
        return None
    rows = s.get(ROWS, {"space_id": where.space_id}, rows=list).get("rows") or []
    row = next((r for r in rows if isinstance(r, dict) and r.get("id") == row_id), None)
    if row is None:
        return None
    if not fits(row.get("rev"), int):
        raise UnreadableRow(
            row_id,
            f"its space serves it with a rev that is {json_kind(row.get('rev'))}, "
            "not an integer: it cannot be edited safely",
        )
    key, why = unwrap_space_key(space, s.agent_key, s.key_cache)
    if key is None:
        raise UnreadableRow(row_id, why or "the space key does not open")
    plain = sealing.open_space_row(row.get("ciphertext") or "", key, space_id=where.space_id, row_id=row_id)
    return SpaceRow(where.space_id, row_id, row["rev"], key, plain)


def sealed_edit(row: SpaceRow, changes: Mapping) -> dict:
    """The PUT body: the whole plaintext re-sealed with the space key, only what changed replaced."""
    new = copy.deepcopy(row.plain)
    obs = new.get("observation")
    if not isinstance(obs, dict):
        raise MemoryModelError(
            f"{row.id} is a legacy entity or relation row: only an observation has text and categories to edit"
        )
    apply_text(obs, changes)
    if "categories" in changes:
        cats = checked_categories(changes["categories"])
        if set(cats) != set(new.get("categories") or ()):  # the same set leaves the list as it was
            if cats:
                new["categories"] = cats
            else:
                new.pop("categories", None)
    blob = sealing.seal_space_row(row.key, new, space_id=row.space_id, row_id=row.id)
    return {"id": row.id, "expected_rev": row.rev, "ciphertext": wire.b64encode(blob)}


def reads_as(plain: Mapping, changes: Mapping) -> bool:
    """Whether the row already reads as `changes` asks."""
    got = plain.get("observation")
    obs = got if isinstance(got, dict) else {}
    if "text" in changes and obs.get("content") != changes["text"]:
        return False
    return not (
        "categories" in changes and set(plain.get("categories") or ()) != set(checked_categories(changes["categories"]))
    )


# -- delete -------------------------------------------------------------------------------------
@dataclass
class RowsDeleted:
    """What rows/delete came to: ids deleted, ids refused (id → why), the server's remediation, and
    ids the owner's phone has moved to their own keys (to delete as memories)."""

    deleted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    remediation: dict = field(default_factory=dict)
    moved: list[str] = field(default_factory=list)


def delete(s: Session, row_ids: list[str]) -> RowsDeleted:
    """Delete legacy space rows (ids the last load lists as space rows)."""
    out = RowsDeleted()
    vault = s.vault if s.vault is not None else s.load()
    mine = {r.id: r.mine for r in vault.space_rows}  # as read before anything was deleted
    pending, waits = list(row_ids), 0
    while pending:
        before = s.resends
        ans = s.send("POST", ROWS_DELETE, {"ids": pending}, DELETED)
        out.deleted += list(ans.get("deleted") or [])
        out.remediation.update(ans.get("remediation") or {})
        refused, moving = list(ans.get("refused") or []), list(ans.get("moving") or [])
        waiting = bool(moving) and waits < s.retries
        if waiting:
            waits += 1
            wait_for_move(s, moving, ans.get("retry_after_seconds"))
        elif refused or moving:
            s.load()  # where each refused row is now
        lost_answer = s.resends > before
        in_spaces = space_row_ids(s)
        for rid in refused:
            place = _where(s, rid, in_spaces)
            if place == "memory":
                out.moved.append(rid)  # moved since it was read: the per-memory rule decides
            elif place is None and lost_answer and mine.get(rid):
                out.deleted.append(rid)  # deleted by the attempt whose answer was lost
            else:
                out.refused[rid] = _why_refused(place, mine.get(rid), out.remediation.get(rid))
        pending = []
        for rid in moving:
            place = _where(s, rid, in_spaces)
            if place == "memory":
                out.moved.append(rid)
            elif waiting:
                pending.append(rid)  # still in its space, or seen in neither (a load across the move): ask again
            else:
                out.refused[rid] = (
                    f"still moving to its own key after {waits} waits (the owner's phone has not "
                    f"moved it yet); nothing was deleted: try again in "
                    f"{ans.get('retry_after_seconds') or 'a few'} s"
                )
    return out


def _where(s: Session, row_id: str, in_spaces: set[str]) -> str | None:
    """ "memory", "space" or None: where the last load finds `row_id`. A load that read the spaces and
    the memories either side of a move may find it in both: served as a memory, it has moved."""
    if s.vault is not None and s.vault.served_row(row_id) is not None:
        return "memory"
    return "space" if row_id in in_spaces else None


def _why_refused(place: str | None, mine: bool | None, remediation: Mapping | None) -> str:
    if remediation:
        asked = remediation.get("permissions") if isinstance(remediation, Mapping) else None
        wanted = ", ".join(map(str, asked)) if isinstance(asked, list) and asked else "a permission"
        return (
            f"this connection wrote it but does not hold {wanted} on it: ask the owner with POST "
            f"/api/agent/grant-request {json.dumps(remediation, sort_keys=True)}"
        )
    if mine is False:
        return (
            "written by another connection: only rows this connection wrote may be deleted (the owner can "
            "delete it from their device)"
        )
    if place is None:
        return "no longer in its space, nor served as a memory (deleted or moved by someone else)"
    return "refused: the owner has edited it (it is theirs now), or this connection is no longer granted its space"
