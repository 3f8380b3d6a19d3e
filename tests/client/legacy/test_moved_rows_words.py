"""One `delete` or `edit` over memories and legacy space rows: what it reports for both, and what it
logs when a legacy row has moved to the per-memory store meanwhile.

Over real HTTP against the sandbox. rows/delete: "everything else comes back in `refused`"; a row
the owner's phone moves to its own key (`moving`, `MEMORY_MOVING`) is then deleted or edited under
the per-memory rule."""

from __future__ import annotations

import logging
import uuid

from support.legacy import connect, obs, write_legacy

LOGGER = "decoy_lab.protocol.writes.sending"
EVERY = ["memory.read", "memory.save", "memory.delete"]
FOOD_ONLY = [{"permissions": ["memory.read", "memory.delete", "memory.edit"], "datatypes": ["food"]}]


def test_refusals_from_both_stores_are_reported_together(sb, clock):
    """A missing memory id and another connection's legacy row, in one call: both refused, each
    with its own why."""
    writer = connect(sb, clock, EVERY)
    _space_id, _key, [theirs] = write_legacy(writer, [obs("Likes espresso.")])
    other = connect(sb, clock, EVERY)
    other.load()
    missing = str(uuid.uuid4())
    mine = other.save("Prefers the aisle.", categories=["travel"])
    res = other.delete([missing, theirs, mine])
    assert res.deleted == [mine]
    assert sorted(res.refused) == sorted([missing, theirs])
    assert set(res.why) == {missing, theirs}
    assert "written by another connection" in res.why[theirs] and res.why[missing].startswith("missing")
    writer.close()
    other.close()


def test_a_legacy_row_moved_while_deleting_is_deleted_as_a_memory_and_the_log_says_so(sb, clock, caplog):
    conn = connect(sb, clock, FOOD_ONLY, sleeps=[])
    _space_id, _, rids = write_legacy(conn, [obs("Likes espresso."), obs("Takes it black.")])
    conn.load()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        res = conn.delete(rids)
    assert sorted(res.deleted) == sorted(rids) and res.refused == []
    moved = [m for m in caplog.messages if m.startswith("legacy rows ")]
    assert moved in (
        [f"legacy rows {a}, {b} now live in the per-memory store: deleting them there"] for a, b in (rids, rids[::-1])
    )
    conn.close()


def test_a_legacy_row_moved_while_editing_is_edited_as_a_memory_and_the_log_says_so(sb, clock, caplog):
    conn = connect(sb, clock, FOOD_ONLY, sleeps=[])
    _space_id, _, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        ans = conn.edit(rid, text="Likes ristretto.")
    assert ans["id"] == rid
    assert f"legacy row {rid} now lives in the per-memory store: editing it there" in caplog.messages
    assert conn.load().memory(rid).text == "Likes ristretto."
    conn.close()
