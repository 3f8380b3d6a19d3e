"""Concurrency: two connections edit one memory 100 times each, at the same time → no lost update.

Spec: "Use `expected_rev` for edits. On `409 REV_CONFLICT`, read current content and reconcile
rather than overwrite the owner's changes." and "a matching Read & write grant corrects the
text only".

The author (memory.save) and a second connection with Read & write on every memory each append
their own numbered token to the text, read-modify-write: read the served row, open it, append,
re-seal with `edit_memory_row`, PUT with `expected_rev`; on REV_CONFLICT read again and re-apply
to the new text. A lost update would drop a token, so the final text must carry all 200 tokens,
each once and in each writer's own order, and the revision must have moved exactly 200 times.
"""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import RevConflict
from decoy_lab.memory import KeyCache, edit_memory_row, new_memory_row, read_memory_row
from decoy_lab.sandbox import Sandbox
from decoy_lab.transport.api import Api

MEMORIES = "/api/agent/context/memories"
EDITS = 100

pytestmark = pytest.mark.timeout(180)


def _served(api: Api, row_id: str) -> dict:
    return next(r for r in api.request("GET", MEMORIES)["memories"] if r["id"] == row_id)


def _append_loop(
    conn: Connection, api: Api, row_id: str, tag: str, start: threading.Barrier, out: dict, errors: list
) -> None:
    cache = KeyCache()
    conflicts = 0
    try:
        start.wait()
        for i in range(EDITS):
            while True:
                served = _served(api, row_id)
                current = read_memory_row(served, conn.agent_key, key_cache=cache)
                body = edit_memory_row(served, {"text": f"{current.text} {tag}{i}"}, conn.agent_key, conn.keys())
                try:
                    api.request("PUT", MEMORIES, json=body)
                    break
                except RevConflict:
                    conflicts += 1
        out[tag] = conflicts
    except BaseException as exc:  # surfaced by the test, not lost in the thread
        errors.append(exc)


@pytest.fixture(scope="module")
def race():
    with Sandbox.start(seed="none") as sb:

        def pair(name: str, permissions: list[str]) -> Connection:
            return Connection.pair(
                sb.url, name=name, permissions=permissions, profile=None, on_link=lambda link, code: None
            )

        author = pair("author", ["memory.read", "memory.save"])
        editor = pair("editor", ["memory.read", "memory.edit"])
        row = new_memory_row(author.keys(), "start")  # the editor is a grantee: wrapped to it at once
        api_a = Api(sb.url, tokens=author.tokens)
        api_e = Api(sb.url, tokens=editor.tokens)
        api_a.request("POST", MEMORIES, json={"rows": [row]})
        assert _served(api_e, row["id"])["wrapped_key"], "the editor is not served the memory"

        start = threading.Barrier(2)
        conflicts: dict = {}
        errors: list = []
        threads = [
            threading.Thread(target=_append_loop, args=(c, a, row["id"], tag, start, conflicts, errors))
            for c, a, tag in ((author, api_a, "A"), (editor, api_e, "E"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(150)
        final = _served(api_a, row["id"])
        text = read_memory_row(final, author.agent_key).text
        view = next(r for r in sb.owner.app_view() if r["id"] == row["id"])
        yield {
            "text": text,
            "rev": final["rev"],
            "conflicts": conflicts,
            "errors": errors,
            "view": view,
            "alive": [t.is_alive() for t in threads],
        }
        for c in (api_a, api_e):
            c.close()
        author.close()
        editor.close()


def test_both_writers_finished_without_errors(race):
    assert race["alive"] == [False, False]
    assert not race["errors"], f"a writer failed: {race['errors'][0]!r}"
    assert set(race["conflicts"]) == {"A", "E"}
    # The writers really raced: some PUTs met a newer revision and were re-applied.
    assert sum(race["conflicts"].values()) > 0


def test_no_lost_update(race):
    tokens = race["text"].split()
    assert tokens[0] == "start"
    counts = Counter(tokens[1:])
    assert len(tokens) == 1 + 2 * EDITS, f"{2 * EDITS - (len(tokens) - 1)} updates lost"
    for tag in ("A", "E"):
        mine = [int(t[1:]) for t in tokens[1:] if re.fullmatch(rf"{tag}\d+", t)]
        assert mine == list(range(EDITS)), f"writer {tag}'s edits are missing or out of order"
    assert all(n == 1 for n in counts.values())


def test_revision_moved_once_per_edit(race):
    assert race["rev"] == 1 + 2 * EDITS


def test_owner_sees_the_same_final_text(race):
    assert race["view"]["readable"] and race["view"]["text"] == race["text"]
