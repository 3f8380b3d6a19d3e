"""What `Connection.delete` tells its user: every id is answered for, deleted or refused, and each
refusal says why in words (and which grant unlocks it, when the server names one).

Against the sandbox over real HTTP. "memories/delete … missing or ineligible ids are refused"; a
refusal may carry the grant request that unlocks it ("`remediation`"); a delete whose answer was
lost is sent again, and an id refused then because it is gone was deleted by the lost attempt."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.transport import routes

from support.meddler import MEMORY_PERMISSIONS as ALL
from support.meddler import answer, committed_then_lost, scripted_pair

MISSING_WHY = "missing, or not a memory this connection may delete (its own, or with memory.delete on it)"
STILL_WHY = "the server's answer named it neither deleted nor refused, and it is still served: not deleted"


def pair(sb, permissions, *, name: str = "Delete test") -> Connection:
    """A connection that sends over the real network (its scripted one unused)."""
    return scripted_pair(sb, name, permissions=permissions)[0]


def served_to_owner(sb) -> set[str]:
    return {r["id"] for r in sb.owner.app_view()}


@pytest.fixture(scope="module")
def writer(sb):
    conn = pair(sb, ALL, name="Writer")
    yield conn
    conn.close()


def test_one_id_given_as_text_is_deleted(sb, writer):
    """`delete` takes one id as well as many: the id, not its characters."""
    mid = writer.save("One id, given as text.")
    res = writer.delete(mid)
    assert res.deleted == [mid] and res.refused == [] and res.why == {}
    assert str(res) == "deleted 1, refused 0"
    assert mid not in served_to_owner(sb)


def test_no_ids_send_nothing(sb):
    conn, meddler = scripted_pair(sb, "Delete test")
    try:
        res = conn.delete([])
        assert (res.deleted, res.refused, res.why, res.remediation) == ([], [], {}, {})
        assert meddler.bodies("POST", routes.MEMORIES_DELETE) == []
    finally:
        conn.close()


def test_a_missing_id_is_refused_and_says_why(writer):
    """ "missing or ineligible ids are refused"."""
    mid = writer.save("Kept while the other id is refused.")
    missing = str(uuid.uuid4())
    res = writer.delete([missing, mid])
    assert res.deleted == [mid] and res.refused == [missing]
    assert res.why == {missing: MISSING_WHY}
    assert str(res) == "deleted 1, refused 1"


def test_deleting_an_id_again_is_a_refusal_not_a_second_delete(writer):
    """Without a lost answer, an id this connection wrote and deleted before is refused now:
    only a resend makes "refused because gone" mean "deleted by the lost attempt"."""
    mid = writer.save("Deleted once.")
    assert writer.delete([mid]).deleted == [mid]
    again = writer.delete([mid])
    assert again.deleted == [] and again.refused == [mid] and again.why == {mid: MISSING_WHY}


def test_a_reader_is_refused_with_the_grant_request_that_unlocks_deleting(sb, writer):
    """A refusal may carry `remediation`: the grant request that unlocks it, named in the why."""
    reader = pair(sb, [{"permissions": ["memory.read"], "datatypes": ["health"]}], name="Health reader")
    try:
        mid = writer.save("Takes iron with orange juice.", categories=["health"])
        assert reader.load().memory(mid) is not None
        res = reader.delete([mid])
        assert res.deleted == [] and res.refused == [mid]
        ask = res.remediation[mid]
        assert "memory.delete" in ask["permissions"] and len(ask) > 1
        assert res.why == {
            mid: "this connection may not delete it: ask the owner with POST /api/agent/grant-request "
            + json.dumps(ask, sort_keys=True)
        }
        assert json.dumps(ask, sort_keys=True) != json.dumps(ask), "the why names the ask in a stable key order"
        assert mid in served_to_owner(sb)
    finally:
        reader.close()


def test_another_connections_memory_never_loaded_here_is_deleted_as_the_server_says(sb, writer):
    """The answer's `deleted` is taken as it is, for ids this connection neither wrote nor read."""
    remover = pair(sb, ALL, name="Remover")
    try:
        remover.load()  # before the memory exists: this connection has never read it
        mid = writer.save("Written by another connection.", categories=["travel"])
        sb.owner.share()
        res = remover.delete([mid])
        assert res.deleted == [mid] and res.refused == [] and res.why == {}
        assert mid not in served_to_owner(sb)
    finally:
        remover.close()


def test_a_lost_answer_counts_what_is_gone_as_deleted_and_the_rest_as_refused(sb, writer):
    """The delete committed and its answer was lost; the same ids sent again are refused (gone
    now). Each id this connection wrote, or read in its last load, and that is no longer served,
    was deleted by the lost attempt; an id it never knew stays refused."""
    conn, meddler = scripted_pair(sb, "Delete test")
    try:
        theirs = writer.save("Read here in a load, then deleted.", categories=["travel"])
        sb.owner.share()
        assert conn.load().memory(theirs) is not None
        mine = conn.save("Written here, then deleted.")
        missing = str(uuid.uuid4())
        meddler.plan("POST", routes.MEMORIES_DELETE, committed_then_lost)
        res = conn.delete([mine, theirs, missing])
        assert conn.resends == 1
        assert sorted(res.deleted) == sorted([mine, theirs]) and res.refused == [missing]
        assert res.why == {missing: MISSING_WHY}
        assert not {mine, theirs} & served_to_owner(sb)
    finally:
        conn.close()


def left_out_after_committing(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The server deletes; the answer that comes back names nothing."""
    response = inner.handle_request(request)
    response.read()
    response.close()
    return answer(200, {"deleted": [], "refused": []})(request, inner)


def test_ids_the_answer_leaves_out_are_settled_by_what_is_served(sb):
    """Every id is answered for: one the answer names neither deleted nor refused is deleted if it
    is gone now, and refused, saying so, if it is still served."""
    conn, meddler = scripted_pair(sb, "Delete test")
    try:
        kept = conn.save("Left out of the answer, still served.")
        meddler.plan("POST", routes.MEMORIES_DELETE, answer(200, {"deleted": [], "refused": []}))
        res = conn.delete([kept])
        assert res.deleted == [] and res.refused == [kept] and res.why == {kept: STILL_WHY}
        assert kept in served_to_owner(sb)

        gone = conn.save("Left out of the answer, deleted.")
        meddler.plan("POST", routes.MEMORIES_DELETE, left_out_after_committing)
        res = conn.delete([gone])
        assert res.deleted == [gone] and res.refused == [] and res.why == {}
    finally:
        conn.close()


def named_one_of_two(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The server deletes both ids; the answer names only the first."""
    ids = json.loads(request.content)["ids"]
    response = inner.handle_request(request)
    response.read()
    response.close()
    return answer(200, {"deleted": ids[:1], "refused": []})(request, inner)


def test_an_answer_naming_one_deleted_id_and_leaving_out_another_gone_reports_both(sb):
    conn, meddler = scripted_pair(sb, "Delete test")
    try:
        a, b = conn.save("Named in the answer."), conn.save("Left out of the answer.")
        meddler.plan("POST", routes.MEMORIES_DELETE, named_one_of_two)
        res = conn.delete([a, b])
        assert res.deleted == [a, b] and res.refused == [] and res.why == {}
    finally:
        conn.close()
