"""What a load says is true row by row: a memory without exactly one `about` is unreadable (never
"about You"), one row's bad timestamp never fails the whole load, elements that are not rows and
spaces that cannot be read are counted in the summary, the `topic` column names the listed topic,
and `sync` follows a bounded number of pages. Hostile servers over `httpx.MockTransport`."""

from __future__ import annotations

import os
import uuid
from typing import Any

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.protocol.syncfeed import MAX_SYNC_PAGES
from decoy_lab.recipes import sealing
from decoy_lab.transport.tokens import Tokens
from decoy_lab.wire import layouts as wire

from support.answers import AGENT, SERVED_GOOD

MEMORIES = "/api/agent/context/memories"


def served(plain: dict, **extra: Any) -> dict:
    """A row sealed to this agent around any plaintext (bound to its id, as a writer would)."""
    rid = plain.get("row_id") or str(uuid.uuid4())
    key = os.urandom(32)
    return {
        "id": rid,
        "kid": wire.kid(key),
        "rev": 1,
        "ciphertext": wire.b64encode(sealing.seal_json(key, {"v": 2, **plain, "row_id": rid})),
        "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, AGENT.public_key_b64)),
        "via": ["all"],
        "mine": False,
        "author_kind": "agent",
        "created_at": "2026-11-30T10:00:00.000Z",
        "updated_at": "2026-11-30T10:00:00.000Z",
        **extra,
    }


def connect(routes: dict[str, Any]) -> Connection:
    def handler(request: httpx.Request) -> httpx.Response:
        got = routes.get(request.url.path, {"code": "NOT_FOUND"})
        got = got(request) if callable(got) else got
        return httpx.Response(200 if "code" not in got else 404, json=got)

    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id="t"),
        transport=httpx.MockTransport(handler),
        retries=0,
        sleep=lambda s: None,
    )


def load(rows: list[Any], **routes: Any):
    return connect({MEMORIES: {"memories": rows}, "/api/agent/context/spaces": {"spaces": []}, **routes}).load()


def observation(about: Any, text: str = "a fact") -> dict:
    plain: dict = {"observation": {"entityName": "default_user", "content": text}}
    if about is not None:
        plain["about"] = about
    return plain


@pytest.mark.parametrize("about", [None, [], ["user", "topic:" + str(uuid.uuid4())]], ids=["absent", "empty", "two"])
def test_a_memory_without_exactly_one_about_is_unreadable(about):
    """ "Exactly one `about` value per memory: the user, one account or one topic." """
    row = served(observation(about))
    v = load([row, SERVED_GOOD])
    assert v.memory(row["id"]) is None and "exactly one" in v.unreadable()[row["id"]]
    assert v.memory(SERVED_GOOD["id"]) is not None, "the other rows are read as ever"


@pytest.mark.parametrize("when", [1e20, -1e20, "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_one_rows_bad_timestamp_never_fails_the_whole_load(when):
    """A time out of range leaves that cell empty; the load goes on."""
    row = served(observation(["user"]), created_at=when)
    v = load([row, SERVED_GOOD])
    assert len(v.memories) == 2
    assert v.memory(row["id"]).created_at is None


def test_elements_that_are_not_rows_are_counted_in_the_summary():
    """A `memories` array holding numbers or text among its rows: those are dropped, and said so."""
    v = load([SERVED_GOOD, 7, "x", None])
    assert len(v.memories) == 1 and "3 served elements not a row (dropped)" in v.summary


def test_spaces_that_cannot_be_read_are_counted_in_the_summary():
    space = {"id": str(uuid.uuid4()), "kind": "me", "skid": "00", "wrapped_key": ""}
    v = load(
        [SERVED_GOOD],
        **{"/api/agent/context/spaces": {"spaces": [space, 5, {"kind": "me"}]}},
        **{"/api/agent/context/rows": {"code": "NOT_FOUND"}},
    )
    assert "3 legacy spaces skipped" in v.summary


def test_the_topic_column_is_the_listed_topics_name():
    """Two agents spell one topic differently: the frame shows the topic as listed ("Golf", the oldest
    entity's name) on every row, and each memory's own `entityName` in its own column."""
    tid = str(uuid.uuid4())
    entity = served({"row_id": tid, "entity": {"name": "Golf", "entityType": "hobby"}, "about": []})
    mine = served({"observation": {"entityName": "golf", "content": "Plays on Saturdays."}, "about": [f"topic:{tid}"]})
    df = load([entity, mine]).memories.set_index("id")
    assert df.loc[mine["id"], "topic"] == "Golf" and df.loc[mine["id"], "entity_name"] == "golf"


def test_sync_follows_a_bounded_number_of_pages():
    """A server that always has more (its state moving each time) cannot keep `sync` asking forever."""
    pages = []

    def sync(request: httpx.Request) -> dict:
        pages.append(1)
        return {"state": str(len(pages)), "hasMore": True, "changes": {}}

    conn = connect(
        {
            MEMORIES: {"memories": [SERVED_GOOD]},
            "/api/agent/context/spaces": {"spaces": []},
            "/api/agent/sync": sync,
            "/api/agent/sync/head": {"head": "1"},
        }
    )
    conn.cursor = "0"
    res = conn.sync()
    assert res.full_reload and len(pages) == MAX_SYNC_PAGES and len(res.vault.memories) == 1
