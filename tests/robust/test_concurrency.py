"""Concurrency: two connections and the owner edit one memory at the same time → no lost update.

Spec: "Use `expected_rev` for edits. On `409 REV_CONFLICT`, read current content and reconcile
rather than overwrite the owner's changes." and "a matching Read & write grant corrects the
text only".

The author (memory.save) and a second connection with Read & write on every memory each call
`Connection.edit` EDITS times, each time with a text of their own, while the owner's app edits
the same memory as often. `Connection.edit` sends `expected_rev` and, on REV_CONFLICT, re-reads
and re-applies. No edit may be lost or applied twice: every call returns the revision its edit
landed at, the revisions of all 3 × EDITS edits are exactly 2 … 1 + 3 × EDITS, each once, and the
memory's final text is the one of the edit that landed last.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.memory import read_memory_row
from decoy_lab.sandbox import Sandbox

EDITS = 25
WRITERS = ("A", "E", "O")  # the author, the editor, the owner's app

pytestmark = pytest.mark.timeout(180)


def _connection_writer(conn: Connection, mid: str, tag: str, start: threading.Barrier, out: dict, errors: list):
    try:
        start.wait()
        out[tag] = [(conn.edit(mid, text=f"{tag}{i}"), f"{tag}{i}") for i in range(EDITS)]
    except BaseException as exc:  # surfaced by the test, not lost in the thread
        errors.append(exc)


def _owner_writer(sb: Sandbox, mid: str, start: threading.Barrier, out: dict, errors: list):
    try:
        start.wait()
        out["O"] = [(sb.owner.edit(mid, text=f"O{i}"), f"O{i}") for i in range(EDITS)]
    except BaseException as exc:
        errors.append(exc)


@pytest.fixture(scope="module")
def race():
    with Sandbox.start(seed="none") as sb:

        def pair(name: str, permissions: list[str]) -> Connection:
            return Connection.pair(
                sb.url,
                name=name,
                permissions=permissions,
                profile=None,
                on_link=lambda link, code: None,
                retries=200,  # three writers on one memory: many REV_CONFLICTs in a row
                backoff=0.005,
            )

        author = pair("author", ["memory.read", "memory.save"])
        editor = pair("editor", ["memory.read", "memory.edit"])
        mid = author.save("start")
        assert editor.load().memory(mid) is not None, "the editor is not served the memory"

        start = threading.Barrier(len(WRITERS))
        done: dict = {}
        errors: list = []
        threads = [
            threading.Thread(target=_connection_writer, args=(author, mid, "A", start, done, errors)),
            threading.Thread(target=_connection_writer, args=(editor, mid, "E", start, done, errors)),
            threading.Thread(target=_owner_writer, args=(sb, mid, start, done, errors)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(150)
        final = author.session.served_row(mid)
        yield {
            "done": done,
            "errors": errors,
            "alive": [t.is_alive() for t in threads],
            "rev": final["rev"],
            "text": read_memory_row(final, author.agent_key).text,
            "view": next(r for r in sb.owner.app_view() if r["id"] == mid),
        }
        author.close()
        editor.close()


def test_every_writer_finished_every_edit_without_errors(race):
    assert race["alive"] == [False, False, False]
    assert not race["errors"], f"a writer failed: {race['errors'][0]!r}"
    assert {tag: len(race["done"].get(tag, ())) for tag in WRITERS} == dict.fromkeys(WRITERS, EDITS)


def test_each_edit_landed_once_at_a_revision_of_its_own(race):
    """No lost update and no double one: the revisions the edits report are 2 … 1 + 3 × EDITS."""
    revs = [answer["rev"] for tag in WRITERS for answer, _ in race["done"][tag]]
    assert sorted(revs) == list(range(2, 2 + len(WRITERS) * EDITS))
    for tag in WRITERS:
        mine = [answer["rev"] for answer, _ in race["done"][tag]]
        assert mine == sorted(mine), f"writer {tag}'s edits landed out of the order it made them"
    by_rev = sorted((answer["rev"], tag) for tag in WRITERS for answer, _ in race["done"][tag])
    turns = sum(1 for (_, a), (_, b) in itertools.pairwise(by_rev) if a != b)
    assert turns > len(WRITERS), "the writers took turns in blocks: they did not race"


def test_the_final_text_is_the_last_edit_and_the_owner_sees_it(race):
    last = max((answer["rev"], text) for tag in WRITERS for answer, text in race["done"][tag])
    assert race["rev"] == 1 + len(WRITERS) * EDITS == last[0]
    assert race["text"] == last[1]
    assert race["view"]["readable"] and race["view"]["text"] == race["text"]
