"""The sandbox keeps a connection's encoded memories list between reads (sandbox/checks/readcache.py).

The spec's rule it must never bend: "Only row-keyed memories whose wrap this connection may
currently receive. Every via reason is rechecked against live grants." A cached answer is
therefore only ever served while nothing it depends on changed: a write of any kind to the rows or
wraps (through the API or straight into SQLite), the connection's live grants (which can end with
no write at all), its key.
"""

from __future__ import annotations

from decoy_lab.sandbox.checks import readcache
from decoy_lab.wire import layouts as wire

from support.sandbox_kit import saved


def _cache(lab) -> readcache.ReadCache:
    return readcache.of(lab.state)


def test_an_unchanged_read_is_answered_from_the_cache_byte_for_byte(lab, alpha):
    saved(alpha, "one"), saved(alpha, "two")
    first = alpha.get("/api/agent/context/memories")
    hits = _cache(lab).hits
    again = alpha.get("/api/agent/context/memories")
    assert _cache(lab).hits == hits + 1
    assert again.content == first.content and again.headers["content-type"] == "application/json"
    assert [m["id"] for m in again.json()["memories"]] == [m["id"] for m in first.json()["memories"]]


def test_a_write_straight_into_sqlite_is_seen_on_the_next_read(lab, alpha):
    """No cache hides a change, however it was made: SQLite triggers move the generation."""
    row = saved(alpha, "before")
    assert alpha.served(row["id"])["ciphertext"] == row["ciphertext"]
    other = wire.b64encode(b"\x01\x01" + bytes(12) + b"tampered" + bytes(16))
    with lab.state.store.tx() as con:
        con.execute("UPDATE memories SET ciphertext=? WHERE id=?", (other, row["id"]))
    assert alpha.served(row["id"])["ciphertext"] == other
    with lab.state.store.tx() as con:
        con.execute("DELETE FROM memory_wraps WHERE memory_id=? AND token_id=?", (row["id"], alpha.token_id))
    assert alpha.served(row["id"]) is None


def test_a_grant_that_ends_with_no_write_stops_serving_its_rows(lab, alpha):
    """ "Every via reason is rechecked against live grants": a grant passing its end time changes
    nothing in the database, and the next read no longer serves what only it reached."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    lab.ask(reader, {"permissions": ["memory.read"], "datatypes": ["travel"], "reason": "trips"})
    row = saved(alpha, "Window seat on long flights.", categories=["travel"])
    assert reader.served(row["id"])["via"] == ["category:travel"]
    with lab.state.store.tx() as con:
        travel = [
            pid
            for pid, rows in con.execute("SELECT id, rows FROM policies WHERE token_id=?", (reader.token_id,))
            if "travel" in rows
        ]
        assert len(travel) == 1
        con.execute("UPDATE policies SET expires_at=? WHERE id=?", (lab.clock() + 60, travel[0]))
    assert reader.served(row["id"]) is not None, "the grant is still live"
    generation = _generation(lab)
    lab.clock.advance(120)
    assert _generation(lab) == generation, "nothing was written"
    assert reader.served(row["id"]) is None


def test_losing_save_stops_serving_own_rows_by_self(lab):
    """`self` holds only while the author holds memory.save; revoking it is seen at once."""
    writer = lab.pair("writer", "memory.save")
    row = saved(writer, "mine")
    assert writer.served(row["id"])["via"] == ["self"]
    with lab.state.store.tx() as con:
        (pid,) = con.execute("SELECT id FROM policies WHERE token_id=?", (writer.token_id,)).fetchone()
    lab.owner.revoke(writer.token_id, pid)
    answer = writer.get("/api/agent/context/memories")
    assert answer.status_code != 200 or all(m["id"] != row["id"] for m in answer.json()["memories"])


def test_each_connection_gets_its_own_answer(lab, alpha):
    beta = lab.pair("beta", "memory.save")
    a, b = saved(alpha, "alpha's"), saved(beta, "beta's")
    for _ in range(2):
        assert [m["id"] for m in alpha.memories()["memories"]] == [a["id"]]
        assert [m["id"] for m in beta.memories()["memories"]] == [b["id"]]


def test_the_waiting_report_follows_the_clock_while_the_array_is_cached(lab, alpha):
    """The array may come from the cache; `preparing` / `failed` follow the clock: "Decoy asks for
    7 days … After that the memory is listed under `failed` … Reading again later may ask the phone
    once more, at most once a day; the read that asks lists the memory under `preparing`"."""
    row = saved(alpha, "waiting for the phone")
    with lab.state.store.tx() as con:  # its key has not reached this connection's key
        con.execute("DELETE FROM memory_wraps WHERE memory_id=? AND token_id=?", (row["id"], alpha.token_id))
    first = alpha.memories()
    assert first["memories"] == [] and first["preparing"] == [row["id"]]
    hits = _cache(lab).hits
    lab.clock.advance(8 * 86400)
    asks_again, stopped = alpha.memories(), alpha.memories()
    assert _cache(lab).hits == hits + 2, "both answers' arrays came from the cache"
    assert asks_again["preparing"] == [row["id"]] and asks_again["retry_after_seconds"] <= 60
    assert stopped["memories"] == [] and stopped["failed"] == [row["id"]]
    assert stopped["recovery"] == "stopped_asking"


def _generation(lab) -> int:
    from decoy_lab.sandbox.stores import memstore as ms

    with lab.state.store.tx() as con:
        return ms.generation(con)


def test_a_large_answer_is_streamed_and_kept_byte_for_byte(lab, alpha):
    """More rows than one chunk: the streamed answer is one valid JSON object with every row
    once, and the kept answer sent next is the same bytes."""
    from decoy_lab.sandbox.routes.memories import STREAM_ROWS

    keys = alpha.keys()
    n = STREAM_ROWS + 57
    from decoy_lab import memory

    rows = [memory.new_memory_row(keys, f"row {i}") for i in range(n)]
    for start in range(0, n, 200):
        assert alpha.save(rows[start : start + 200]).status_code == 201
    streamed = alpha.get("/api/agent/context/memories")
    assert streamed.headers.get("content-length") is None, "sent in chunks"
    hits = _cache(lab).hits
    kept = alpha.get("/api/agent/context/memories")
    assert _cache(lab).hits == hits + 1
    assert kept.content == streamed.content
    served = [m["id"] for m in streamed.json()["memories"]]
    assert len(served) == n and sorted(served) == sorted(r["id"] for r in rows)


def test_the_row_cache_equals_a_fresh_query_after_every_kind_of_change(lab, alpha):
    """The rows and wraps a read starts from are those SQLite holds now, however a change was
    made: through the API, an owner's edit, or SQL straight into the tables (insert, update,
    delete of rows and of wraps, an id changed)."""
    rows = readcache.of(lab.state).rows
    from decoy_lab.sandbox.stores import memstore as ms

    def check():
        with lab.state.store.tx() as con:
            assert rows.memories(con) == ms.all_memories(con)
            assert rows.wraps(con, alpha.token_id) == ms.wraps_for_token(con, alpha.token_id)

    check()
    first, second = saved(alpha, "one"), saved(alpha, "two")
    check()
    alpha.get("/api/agent/context/memories")  # a read in between: the cache is used and kept
    lab.owner.edit(first["id"], text="one, by the owner")
    check()
    with lab.state.store.tx() as con:
        con.execute("UPDATE memories SET rev = rev + 5, ciphertext = 'x' WHERE id = ?", (second["id"],))
    check()
    with lab.state.store.tx() as con:
        con.execute("UPDATE memory_wraps SET via = '[\"all\"]' WHERE memory_id = ?", (first["id"],))
    check()
    with lab.state.store.tx() as con:
        con.execute("DELETE FROM memory_wraps WHERE memory_id = ?", (second["id"],))
        con.execute("UPDATE memories SET id = 'renamed' WHERE id = ?", (second["id"],))
    check()
    with lab.state.store.tx() as con:
        con.execute("DELETE FROM memories WHERE id = 'renamed'")
    check()
    saved(alpha, "three")
    check()


def test_a_read_after_a_change_judges_only_the_rows_it_touched_and_answers_as_afresh(lab, alpha):
    """After a change the answer is the one a sandbox that kept nothing gives, byte for byte, and
    only the rows the change touched are judged again: an edit, a wrap taken away, a new row."""
    from decoy_lab import memory

    keys = alpha.keys()
    rows = [memory.new_memory_row(keys, f"row {i}") for i in range(300)]
    for start in range(0, 300, 200):
        assert alpha.save(rows[start : start + 200]).status_code == 201
    alpha.get("/api/agent/context/memories")
    lab.owner.edit(rows[7]["id"], text="seven, by the owner")
    with lab.state.store.tx() as con:
        con.execute("DELETE FROM memory_wraps WHERE memory_id=? AND token_id=?", (rows[9]["id"], alpha.token_id))
    assert alpha.save([memory.new_memory_row(keys, "one more")]).status_code == 201
    changed = alpha.get("/api/agent/context/memories")
    listing, _ = _cache(lab).get(alpha.token_id, _listing_stamp(lab, alpha))
    assert listing is not None and listing.afresh == 3, "the edited row, the row whose wrap went, the new row"
    _cache(lab).clear()
    afresh = alpha.get("/api/agent/context/memories")
    assert changed.content == afresh.content
    ids = [m["id"] for m in changed.json()["memories"]]
    assert len(ids) == 300 and rows[9]["id"] not in ids and rows[7]["id"] in ids


def _listing_stamp(lab, client) -> tuple:
    from decoy_lab.sandbox.checks import bearer

    with lab.state.store.tx() as con:
        (agent,) = [a for a in bearer.live_agents(con, lab.clock()) if a.token_id == client.token_id]
        return readcache.stamp(con, agent)


_KEEP_MANY = r"""
import base64, os, sys
from types import SimpleNamespace
from decoy_lab.sandbox.routes.memories import row_json
from decoy_lab.sandbox.checks import readcache
from decoy_lab.sandbox.checks.access_reasons import Reach
from decoy_lab.sandbox.stores import memstore as ms

def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) * 1024

agent = SimpleNamespace(connection_id="c1")
blob = lambda n, i: base64.b64encode(os.urandom(n)).decode()
rows = []
for i in range(20_000):
    row = ms.MemoryRow(f"m{i:08d}", "k" * 16, 1, blob(600, i), blob(300, i), "agent", "t1", "c1", 1.0, 1.0, 1.0)
    wrap = ms.Wrap(row.id, "t1", "fp", row.kid, blob(290, i), ["self"])
    rows.append(readcache.Judged(row, wrap, Reach(row, wrap, ["self"]), None))
before = rss()
size = sum(len(row_json(j, agent)) for j in rows)
print(size, rss() - before)
"""


def test_the_kept_rows_json_costs_about_its_own_bytes(tmp_path):
    """The encoded rows a read keeps (for the next read) hold about their own length: 100,000 of
    them once held ~750 MB for ~145 MB of JSON, because each kept the buffer the encoder grew for
    it. Measured in a new process, so no memory freed by earlier tests hides the growth."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _KEEP_MANY], capture_output=True, text=True, timeout=120, check=True)
    size, grown = map(int, out.stdout.split())
    assert size > 20_000 * 1_000
    assert grown < 2 * size, f"{grown / size:.1f}× the {size:,} bytes of JSON kept"
