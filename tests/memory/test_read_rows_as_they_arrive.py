"""read_rows over a whole answer: rows as JSON text or as the dicts they are, rows still arriving
(an iterator over a streamed answer) read while the rest arrives, progress counted as rows come in,
and `then` / `parse` run for each row — the same results, in served order, serial or on the pool."""

from __future__ import annotations

import json
import threading

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import UnreadableRow
from decoy_lab.memory.read import STREAM_CHUNK

from support.memory_cast import craft

ROWS = 2 * STREAM_CHUNK + 5  # more than two chunks of a streamed answer, and a part-chunk


def _plain(row_id: str) -> dict:
    return {"v": 2, "row_id": row_id, "observation": {"content": f"text of {row_id}"}, "about": ["user"]}


@pytest.fixture(scope="module")
def served(c) -> list[dict]:
    rows = [craft(_plain(f"r{i:02d}"), c.agent, row_id=f"r{i:02d}") for i in range(ROWS)]
    rows[7] = craft(_plain("r07"), c.agent, row_id="r07", kid="ab" * 8)  # one unreadable, in its place
    return rows


def _texts(results) -> list[str]:
    return [r.text if isinstance(r, M.Memory) else type(r).__name__ for r in results]


def _expected(served) -> list[str]:
    return [f"text of {r['id']}" if r["id"] != "r07" else "UnreadableRow" for r in served]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("form", ["dicts", "str", "bytes", "streamed", "streamed str"])
def test_every_form_of_an_answer_reads_the_same_rows_in_served_order(c, served, workers, form):
    rows = {
        "dicts": lambda: list(served),
        "str": lambda: [json.dumps(r) for r in served],
        "bytes": lambda: [json.dumps(r).encode() for r in served],
        "streamed": lambda: iter(served),
        "streamed str": lambda: (json.dumps(r) for r in served),
    }[form]()
    assert _texts(M.read_rows(rows, c.agent, workers=workers)) == _expected(served)


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_each_row_against_the_rows_known(c, served, workers):
    """A list is known whole from the start; a stream counts the rows received so far."""
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            seen.append((done, total))

    M.read_rows(list(served), c.agent, workers=workers, progress=progress)
    assert seen == [(1, ROWS)] * ROWS
    seen.clear()
    M.read_rows(iter(served), c.agent, workers=workers, progress=progress)
    assert len(seen) == ROWS and {d for d, _ in seen} == {1}
    totals = [t for _, t in seen]
    assert min(totals) >= 1 and max(totals) == ROWS


def test_read_serially_each_streamed_row_is_the_last_one_known(c, served):
    seen: list[int] = []
    M.read_rows(iter(served), c.agent, workers=1, progress=lambda done, total: seen.append(total))
    assert seen == list(range(1, ROWS + 1))


def test_a_stream_is_read_while_it_still_arrives(c, served):
    """ "each chunk goes to the pool as soon as it is complete, so reading overlaps receiving": a
    stream that holds its later rows back until a row was read is not stalled by it."""
    first_read = threading.Event()

    def arriving():
        yield from served[:STREAM_CHUNK]
        first_read.wait(timeout=60)  # the event, not a clock: a stalled reader never sets it
        yield from served[STREAM_CHUNK:]

    results = M.read_rows(arriving(), c.agent, workers=2, progress=lambda *_: first_read.set())
    assert first_read.is_set() and _texts(results) == _expected(served)


@pytest.mark.parametrize("workers", [1, 2])
def test_then_runs_on_each_row_and_its_value_takes_the_results_place(c, served, workers):
    def then(row, result):
        assert isinstance(row, dict)  # the row as parsed, also when it came as JSON text
        return (row["id"], type(result).__name__)

    out = M.read_rows([json.dumps(r) for r in served], c.agent, workers=workers, then=then)
    assert out == [(r["id"], "UnreadableRow" if r["id"] == "r07" else "Memory") for r in served]


@pytest.mark.parametrize("workers", [1, 2])
def test_parse_makes_the_row_of_what_was_kept(c, served, workers):
    """A vault keeps each row's index; `parse` makes the row of it, in the worker."""
    got = M.read_rows(range(ROWS), c.agent, workers=workers, parse=lambda i: served[i])
    assert _texts(got) == _expected(served)


def test_a_row_that_is_not_a_json_object_is_unreadable_not_fatal(c, served):
    got = M.read_rows([json.dumps(["not", "a", "row"]), served[0]], c.agent, workers=1)
    assert isinstance(got[0], UnreadableRow) and "a served row is a JSON object, got list" in got[0].reason
    assert got[1].text == "text of r00"


# -- summaries -----------------------------------------------------------------------------------
def test_a_summary_names_one_of_a_kind_in_the_singular_and_counts_other_rows(c, served):
    other = craft({"v": 2, "row_id": "o1", "about": []}, c.agent, row_id="o1")
    s = M.summarize_rows([served[0], other], c.agent)
    assert s.text == "1 memory, 0 topics, 0 links, 0 unreadable, 1 other"


def test_summarize_rows_fills_the_key_cache_it_is_given(c, served):
    cache = M.KeyCache()
    s = M.summarize_rows(served[:3], c.agent, key_cache=cache)
    assert s.memories == 3 and set(cache) == {r["kid"] for r in served[:3]}
