"""GET /api/agent/sync?cursor= and /api/agent/sync/head: ids only, narrowed to grants, 410 when pruned."""

from __future__ import annotations

import pytest

from decoy_lab.sandbox.routes import sync
from decoy_lab.sandbox.stores import memstore as ms

PUT = "/api/agent/context/memories"


def head(peer) -> str:
    r = peer.get("/api/agent/sync/head")
    assert r.status_code == 200
    return r.json()["head"]


def changes(peer, cursor):
    r = peer.get("/api/agent/sync", params={"cursor": cursor})
    assert r.status_code == 200, r.text
    return r.json()


def test_head_moves_and_changes_are_ids_only(lab, alpha):
    """ "IDs only, never content"; head is the "Latest change seq" ("0" when nothing was logged)."""
    assert head(alpha) == "0"
    row = alpha.new_row("x")
    alpha.save([row])
    h = head(alpha)
    assert int(h) > 0
    body = changes(alpha, "0")
    assert body == {
        "state": h,
        "hasMore": False,
        "changes": {"context_memory": {"created": [row["id"]], "updated": [], "destroyed": []}},
    }
    assert changes(alpha, h)["changes"] == {}


def test_narrowed_to_what_the_token_reads(lab, alpha):
    """ "narrowed to what this token may see": an id appears once the token reads the memory."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    other = lab.pair("other", {"permissions": ["memory.read"], "datatypes": ["food"]})
    t = alpha.new_row("Lisbon", categories=["travel"])
    f = alpha.new_row("hidden", categories=["music"])
    alpha.save([t, f])
    assert changes(reader, "0")["changes"] == {"context_memory": {"created": [t["id"]], "updated": [], "destroyed": []}}
    assert changes(other, "0")["changes"] == {}


def test_coalesced_into_one_bucket(lab, alpha):
    """ "coalesced so each id appears in exactly one bucket"."""
    from support.memories_kit import reseal_text

    row = alpha.new_row("v1")
    alpha.save([row])
    start = head(alpha)
    alpha.put(PUT, reseal_text(alpha, row["id"], "v2"))
    assert changes(alpha, "0")["changes"]["context_memory"]["created"] == [row["id"]]
    assert changes(alpha, start)["changes"]["context_memory"] == {
        "created": [],
        "updated": [row["id"]],
        "destroyed": [],
    }
    alpha.post("/api/agent/context/memories/delete", {"ids": [row["id"]]})
    assert changes(alpha, start)["changes"]["context_memory"]["destroyed"] == [row["id"]]
    assert changes(alpha, "0")["changes"] == {}  # created and destroyed inside the window


def test_destroyed_only_to_former_holders(lab, alpha):
    """ "Tombstones restrict sync deletion events to former holders."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    bystander = lab.pair("bystander", {"permissions": ["memory.read"], "datatypes": ["food"]})
    row = alpha.new_row("Lisbon", categories=["travel"])
    alpha.save([row])
    cursor = head(alpha)
    alpha.post("/api/agent/context/memories/delete", {"ids": [row["id"]]})
    assert changes(reader, cursor)["changes"]["context_memory"]["destroyed"] == [row["id"]]
    assert changes(bystander, cursor)["changes"] == {}


def test_pruned_cursor_is_410(lab, alpha):
    """ "410 — Cursor predates the pruned floor — full-resync"; `cursor=0` replays the retained window."""
    a, b = alpha.new_row("a"), alpha.new_row("b")
    alpha.save([a])
    old = head(alpha)
    alpha.save([b])
    with lab.state.store.tx() as con:
        floor = ms.prune(con, int(old) + 1)
    r = alpha.get("/api/agent/sync", params={"cursor": old})
    assert r.status_code == 410 and r.json()["code"] == "CURSOR_PRUNED"
    assert changes(alpha, "0")["changes"] == {}  # b's entry was at the floor and is gone too
    assert changes(alpha, str(floor))["state"] == str(floor)


@pytest.mark.parametrize("cursor", [None, "", "-1", "abc", "1.5"])
def test_cursor_is_required_digits(lab, alpha, cursor):
    params = {} if cursor is None else {"cursor": cursor}
    assert alpha.get("/api/agent/sync", params=params).status_code == 400


def test_pages_with_has_more(lab, alpha, monkeypatch):
    """ "`hasMore: true` → call again immediately" with the returned state."""
    monkeypatch.setattr(sync, "PAGE", 2)
    rows = [alpha.new_row(f"m{i}") for i in range(5)]
    alpha.save(rows)
    seen, cursor = [], "0"
    while True:
        body = changes(alpha, cursor)
        seen += body["changes"].get("context_memory", {}).get("created", [])
        cursor = body["state"]
        if not body["hasMore"]:
            break
    assert seen == [r["id"] for r in rows]


def test_unauthenticated_is_401(lab):
    assert lab.client.get("/api/agent/sync/head").status_code == 401
    assert lab.client.get("/api/agent/sync", params={"cursor": "0"}).status_code == 401


def test_legacy_space_changes_follow_coverage(lab):
    """ "**Context** changes arrive as `context_space` … and `context_row`"; "A destroyed context id is sent
    only to a token that can see every space (any personal grant plus every account)."""
    from support.spaces_kit import OBS, make_space, row_body

    writer = lab.pair("writer", {"permissions": ["memory.read"]})
    every = lab.pair(
        "every", {"permissions": ["memory.read"]}, {"permissions": ["memory.delete"]}, {"permissions": ["acctmem.read"]}
    )
    saver = lab.pair("saver", "memory.save")
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    body = row_body(sid, key, OBS)
    # written by the connection that deletes it: "`mine` is true for rows your token wrote — the only
    # rows you may delete"
    every.post("/api/agent/context/rows", {"space_id": sid, "rows": [body]})
    got = changes(writer, "0")["changes"]
    assert got["context_space"]["created"] == [sid] and got["context_row"]["created"] == [body["id"]]
    assert changes(saver, "0")["changes"] == {}
    cursor = head(writer)
    assert every.post("/api/agent/context/rows/delete", {"ids": [body["id"]]}).json()["deleted"] == [body["id"]]
    assert changes(every, cursor)["changes"]["context_row"]["destroyed"] == [body["id"]]
    assert changes(writer, cursor)["changes"] == {}  # not every space: no destroyed context ids
