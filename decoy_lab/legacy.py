"""Editing a legacy space row: `PUT /api/agent/context/rows`, and what follows `MEMORY_MOVING`.

- The row keeps its id and first-added time: its whole plaintext is re-sealed under the SAME space
  key, bound to the same `space_id` and `row_id`, with only `observation.content` and `categories`
  changed and every other key kept ("Keep any keys you don't use when you re-seal a row"); the
  body is `{id, expected_rev, ciphertext}`.
- An unknown outcome resends that same body (`Connection._send`), never a newly sealed one. A
  `REV_CONFLICT` re-reads: when the row already reads as asked, an earlier unanswered attempt
  landed and nothing is sent again; otherwise the changes are re-applied to the current row.
- `409 MEMORY_MOVING`: nothing changed, and the owner's phone is moving the row to its own key.
  Wait `retry_after_seconds` (at most `MOVING_WAIT_CAP`), reload, and send again while it is still
  in its space, up to `conn.retries` times. Once it is served as a memory, `edit` answers None and
  the caller applies the same changes there: "the retry is decided by the per-memory rule" (the
  author changes text and labels; another connection with Read & write corrects the text only).
- A legacy row has no topic of its own to change (its entity is named inside the plaintext), so
  a topic change is refused here; it works once the row is a memory.
"""
from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from . import sealing, wire
from .errors import MemoryModelError, MemoryMoving, NotFound, RevConflict, UnreadableRow
from .memory.build import checked_categories
from .vault import unwrap_space_key

if TYPE_CHECKING:  # pragma: no cover
    from .client import Connection

log = logging.getLogger("decoy_lab.client")

ROWS = "/api/agent/context/rows"
SPACES = "/api/agent/context/spaces"
MOVING_WAIT_CAP = 60.0  # seconds: a longer retry_after is waited in steps, each followed by a reload


@dataclass
class SpaceRow:
    """A legacy row as its space serves it now, opened with the space key."""

    space_id: str
    id: str
    rev: int
    key: bytes
    plain: dict


def is_space_row(conn: "Connection", row_id: str) -> bool:
    """Whether `row_id` is a legacy space row in the last load (loading first when there is none)."""
    vault = conn.vault if conn.vault is not None else conn.load()
    return any(r.id == row_id for r in vault.space_rows)


def edit(conn: "Connection", row_id: str, changes: Mapping) -> dict | None:
    """Edit a legacy row in its space. Returns the server's answer, or None once the row has moved
    to the per-memory store (apply `changes` there)."""
    _check(changes)
    conflicts = moving = 0
    current = read(conn, row_id)
    while current is not None:
        try:
            return conn._send("PUT", ROWS, sealed_edit(current, changes))
        except RevConflict:
            conflicts += 1
            if conflicts > conn.retries:
                raise
            log.info("legacy row %s changed since it was read (REV_CONFLICT): re-reading", row_id)
            current = read(conn, row_id)
            if current is not None and reads_as(current.plain, changes):
                return {"id": row_id, "rev": current.rev, "outcome": "already applied"}
        except MemoryMoving as exc:
            moving += 1
            if moving > conn.retries:
                raise
            wait = min(MOVING_WAIT_CAP, max(0.0, float(exc.retry_after or 1)))
            log.info("legacy row %s is moving to its own key (MEMORY_MOVING): reading again in %s s", row_id, wait)
            conn._sleep(wait)
            conn.load()
            current = read(conn, row_id)
        except NotFound as exc:
            conn.load()  # moved since it was read, or not a row this connection may edit here
            if conn.vault.served_row(row_id) is not None:
                return None
            exc.message = (f"{row_id} is a legacy space row this connection cannot edit: only rows it wrote, and "
                           f"the owner has not edited since, can be ({exc.message})")
            raise
    if conn.vault is None or conn.vault.served_row(row_id) is None:
        conn.load()
    if conn.vault.served_row(row_id) is not None:
        return None
    raise NotFound(404, "NOT_FOUND", f"{row_id} is neither in its legacy space nor served as a memory")


def _check(changes: Mapping) -> None:
    if "topic" in changes:
        raise MemoryModelError("a legacy space row's topic cannot be changed in its space: change its text or "
                               "categories, or its topic once the owner's phone has moved it to its own key")


def read(conn: "Connection", row_id: str) -> SpaceRow | None:
    """The row as its space serves it now (None when the last load holds no such legacy row or its
    space no longer does)."""
    where = next((r for r in conn.vault.space_rows if r.id == row_id), None) if conn.vault is not None else None
    if where is None:
        return None
    space = next((s for s in conn._get(SPACES).get("spaces") or [] if s.get("id") == where.space_id), None)
    if space is None:
        return None
    rows = conn._get(ROWS, {"space_id": where.space_id}).get("rows") or []
    row = next((r for r in rows if isinstance(r, dict) and r.get("id") == row_id), None)
    if row is None:
        return None
    key, why = unwrap_space_key(space, conn.agent_key, conn._key_cache)
    if key is None:
        raise UnreadableRow(row_id, why or "the space key does not open")
    plain = sealing.open_space_row(row.get("ciphertext") or "", key, space_id=where.space_id, row_id=row_id)
    return SpaceRow(where.space_id, row_id, int(row.get("rev") or 0), key, plain)


def sealed_edit(row: SpaceRow, changes: Mapping) -> dict:
    """The PUT body: the whole plaintext re-sealed with the space key, only what changed replaced."""
    new = copy.deepcopy(row.plain)
    obs = new.get("observation")
    if not isinstance(obs, dict):
        raise MemoryModelError(f"{row.id} is a legacy entity or relation row: only an observation has text and "
                               "categories to edit")
    if "text" in changes:
        text = changes["text"]
        if not isinstance(text, str) or not text.strip():
            raise MemoryModelError("a memory needs non-empty text")
        obs["content"] = text
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
    obs = plain.get("observation") if isinstance(plain.get("observation"), dict) else {}
    if "text" in changes and obs.get("content") != changes["text"]:
        return False
    if "categories" in changes and set(plain.get("categories") or ()) != set(checked_categories(changes["categories"])):
        return False
    return True
