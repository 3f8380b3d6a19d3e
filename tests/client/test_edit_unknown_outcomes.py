"""An edit whose answer never came, and an edit that met `REV_CONFLICT`: what its user is told.

Against the sandbox over real HTTP, the network scripted by `support.meddler`. "If the answer is
lost (a network error or a 5xx), resend the same … then read back … to confirm completion";
"`409 REV_CONFLICT` means it changed since you read it: re-read, re-apply, retry"."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown, RevConflict
from decoy_lab.recipes import sealing
from decoy_lab.transport import routes
from decoy_lab.wire import layouts as wire

from support.meddler import Meddler, answer, committed_then_lost, lost, scripted_pair

CONFLICT = answer(409, {"code": "REV_CONFLICT", "message": "the memory changed since it was read", "current_rev": 9})


def pair(sb, *, retries: int = 0, backoff: float = 0, sleeps: list | None = None) -> tuple[Connection, Meddler]:
    return scripted_pair(
        sb,
        "Edit outcome test",
        retries=retries,
        backoff=backoff,
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
    )


def owner_sees(sb, memory_id: str) -> dict:
    return next(r for r in sb.owner.app_view() if r["id"] == memory_id)


@pytest.fixture(scope="module")
def one(sb):
    """A connection that sends each write once (no resend): a lost answer is read back at once."""
    conn, meddler = pair(sb)
    yield conn, meddler
    conn.close()


def committed_then_conflict(request, inner):
    """The server took the PUT; the answer that came back is a REV_CONFLICT (a stale front)."""
    response = inner.handle_request(request)
    response.read()
    response.close()
    return CONFLICT(request, inner)


@pytest.mark.parametrize(
    "change",
    [
        {"text": "Leaves at seven."},
        {"categories": ["travel"]},
        {"topic": None},
        {"topic": "Morning routine"},
    ],
)
def test_an_edit_that_landed_before_its_answer_was_lost_is_confirmed_by_reading_it_back(sb, one, change):
    conn, meddler = one
    mid = conn.save("Leaves at six.", categories=["travel", "misc"], topic="Commute")
    meddler.plan("PUT", routes.MEMORIES, committed_then_lost)
    done = conn.edit(mid, **change)
    assert done == {"id": mid, "outcome": "applied (confirmed by reading it back)"}
    assert conn.pending == []
    m = conn.load().memory(mid)
    if "text" in change:
        assert m.text == "Leaves at seven."
    if "categories" in change:
        assert m.categories == ["travel"]
    if "topic" in change:
        assert (m.topic or {}).get("name") == change["topic"]


@pytest.mark.parametrize(
    "change",
    [
        {"text": "Leaves at seven."},
        {"categories": ["travel"]},
        {"topic": None},
        {"topic": "Evening routine"},
    ],
)
def test_an_edit_lost_before_the_server_saw_it_is_pending_not_done(sb, one, change):
    """Read back, the memory does not read as asked: the outcome is unknown, the PUT is kept."""
    conn, meddler = one
    mid = conn.save("Leaves at six.", categories=["travel", "misc"], topic="Commute")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.edit(mid, **change)
    assert "may have committed" in str(caught.value) and "conn.resend()" in str(caught.value)
    assert [(p["kind"], p["target"]) for p in conn.pending] == [("edit", mid)]
    assert [r["outcome"] for r in conn.resend()] == ["committed"] and conn.pending == []


@pytest.fixture
def fresh(sb):
    """A connection of its own (its journal starts empty), sending each write once."""
    conn, meddler = pair(sb)
    yield conn, meddler
    conn.close()


def test_an_edit_whose_read_back_is_lost_too_is_pending(sb, fresh):
    """Landed, but its answer and the read-back that would tell were lost: nothing says the edit
    landed, so it is pending."""
    conn, meddler = fresh
    mid = conn.save("Swims on Mondays.")

    def committed_then_lost_and_the_read_back_too(request, inner):
        meddler.plan("GET", routes.MEMORIES, lost)
        return committed_then_lost(request, inner)

    meddler.plan("PUT", routes.MEMORIES, committed_then_lost_and_the_read_back_too)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, text="Swims on Wednesdays.")
    assert [p["target"] for p in conn.pending] == [mid]
    assert owner_sees(sb, mid)["text"] == "Swims on Wednesdays."
    assert [r["outcome"] for r in conn.resend()] == ["committed"] and conn.pending == []


def test_the_same_edit_run_again_finishes_the_pending_one(sb, fresh):
    """Running the same edit again sends the journaled PUT (the SAME body), not a new one."""
    conn, meddler = fresh
    mid = conn.save("Tea, no sugar.")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, text="Tea, one sugar.")
    sent = meddler.bodies("PUT", routes.MEMORIES)[-1]
    done = conn.edit(mid, text="Tea, one sugar.")
    assert done == {"id": mid, "outcome": "applied (the pending edit was sent again)"}
    assert meddler.bodies("PUT", routes.MEMORIES)[-1] == sent
    assert conn.pending == [] and owner_sees(sb, mid)["text"] == "Tea, one sugar."


def test_another_edit_does_not_finish_a_pending_one(sb, fresh):
    """A different edit of the same memory is its own: it is sent as asked, and the pending one
    stays pending."""
    conn, meddler = fresh
    mid = conn.save("Coffee, black.")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, text="Coffee, with milk.")
    done = conn.edit(mid, text="Coffee, with oat milk.")
    assert done["id"] == mid and "rev" in done
    assert owner_sees(sb, mid)["text"] == "Coffee, with oat milk."
    assert [p["target"] for p in conn.pending] == [mid]
    outcome = conn.resend()[0]["outcome"]
    assert outcome.startswith("not applied"), "the pending edit met the newer one: REV_CONFLICT, not applied"
    assert conn.pending == []


def test_a_rev_conflict_rereads_reapplies_and_sends_again(sb, caplog):
    sleeps: list = []
    conn, meddler = pair(sb, retries=2, backoff=0, sleeps=sleeps)
    try:
        mid = conn.save("Budget: 2000 EUR.", categories=["travel", "misc"])
        meddler.plan("PUT", routes.MEMORIES, CONFLICT)
        before = len(meddler.bodies("PUT", routes.MEMORIES))
        with caplog.at_level(logging.INFO, logger="decoy_lab.protocol.writes.sending"):
            done = conn.edit(mid, categories=["travel"])  # a rotation, re-sealed after the conflict
        assert done["id"] == mid and "rev" in done
        assert len(meddler.bodies("PUT", routes.MEMORIES)) - before == 2
        assert f"memory {mid} changed since it was read (REV_CONFLICT): re-reading and re-applying" in caplog.messages
        assert sleeps == [0.0], "no backoff asked for: no wait"
        assert conn.load().memory(mid).categories == ["travel"]
    finally:
        conn.close()


def test_rev_conflicts_are_retried_a_bounded_number_of_times_after_growing_random_waits(sb):
    """`retries` conflicts re-read and re-applied, then the conflict is raised; the n-th wait is a
    random share of n × backoff, so writers racing on one memory take turns."""
    sleeps: list = []
    conn, meddler = pair(sb, retries=5, backoff=0.25, sleeps=sleeps)
    try:
        mid = conn.save("Runs 5 km.")
        meddler.plan("PUT", routes.MEMORIES, *[CONFLICT] * 7)
        before = len(meddler.bodies("PUT", routes.MEMORIES))
        with pytest.raises(RevConflict):
            conn.edit(mid, text="Runs 10 km.")
        assert len(meddler.bodies("PUT", routes.MEMORIES)) - before == 6
        assert len(sleeps) == 5 and all(0 <= w <= 0.25 * n for n, w in enumerate(sleeps, 1))
        # the bound grows: some later wait is longer than a fixed share of backoff would allow
        # (each wait falls under backoff / n with odds 1/n², all four with odds under 1 in 50,000)
        assert any(w > 0.25 / n for n, w in enumerate(sleeps, 1) if n > 1)
        assert conn.pending == [] and owner_sees(sb, mid)["text"] == "Runs 5 km."
    finally:
        meddler.plans.clear()
        conn.close()


def test_a_pending_edit_of_a_memory_gone_meanwhile_is_not_applied(sb, fresh):
    """The resent PUT meets REV_CONFLICT and the memory is no longer served: this edit did not land."""
    conn, meddler = fresh
    mid = conn.save("Feeds the cat at six.")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, text="Feeds the cat at seven.")
    assert conn.delete(mid).deleted == [mid]
    meddler.plan("PUT", routes.MEMORIES, CONFLICT)
    [done] = conn.resend()
    assert done["outcome"].startswith("not applied: ") and conn.pending == []


def test_a_rev_conflict_for_an_edit_that_already_landed_is_already_applied(sb, one):
    """Re-read after the conflict, the memory already reads as asked: done, not sent again."""
    conn, meddler = one
    conn.session.retries = 1
    try:
        mid = conn.save("Bedtime 23:00.")
        meddler.plan("PUT", routes.MEMORIES, committed_then_conflict)
        before = len(meddler.bodies("PUT", routes.MEMORIES))
        done = conn.edit(mid, text="Bedtime 22:30.")
        assert done == {"id": mid, "outcome": "already applied"}
        assert len(meddler.bodies("PUT", routes.MEMORIES)) - before == 1
        assert owner_sees(sb, mid)["text"] == "Bedtime 22:30."
    finally:
        conn.session.retries = 0


def test_a_new_topic_of_an_edit_confirmed_by_reading_back_is_reused_before_the_next_load(sb, fresh):
    conn, meddler = fresh
    mid = conn.save("Cooks on Fridays.")
    meddler.plan("PUT", routes.MEMORIES, committed_then_lost)
    assert conn.edit(mid, topic="Friday dinners")["outcome"] == "applied (confirmed by reading it back)"
    _row, trace = conn.seal_preview("Risotto next week.", topic="friday dinners")
    assert "new topic" not in repr(trace), "the topic just made is found by name, not made again"


def test_topic_rows_whose_answer_never_accounts_for_them_leave_the_edit_pending(sb, fresh):
    """The topic rows' POST is answered, but the answer names none of the rows: an unknown outcome,
    like a lost one. The edit is pending (its topic rows may have committed), nothing is removed."""
    conn, meddler = fresh
    mid = conn.save("Grows tomatoes.")
    meddler.plan("POST", routes.MEMORIES, answer(200, {"created": [], "existing": []}))
    with pytest.raises(OutcomeUnknown, match="accounts for 0 of the 2 rows"):
        conn.edit(mid, topic="Vegetable garden")
    assert [(p["kind"], p["target"]) for p in conn.pending] == [("edit", mid)]
    assert meddler.bodies("POST", routes.MEMORIES_DELETE) == []
    assert [r["outcome"] for r in conn.resend()] == ["committed"]
    assert conn.load().memory(mid).topic["name"] == "Vegetable garden"


def test_a_read_back_that_opens_as_no_memory_confirms_nothing(sb, fresh):
    """The PUT landed and its answer was lost; read back, the row opens but is no memory (neither
    memory, topic nor link): that proves nothing, so the edit is pending, not done."""
    conn, meddler = fresh
    mid = conn.save("Naps after lunch.")

    def served_as_another_kind(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        response = inner.handle_request(request)
        body = json.loads(response.read())
        response.close()
        for row in body["memories"]:
            if row.get("id") == mid:
                key = sealing.unwrap_as_agent(row["wrapped_key"], conn.agent_key)
                plain = sealing.open_json(key, row["ciphertext"])
                del plain["observation"]  # neither a memory, a topic nor a link
                row["ciphertext"] = wire.b64encode(sealing.seal_json(key, plain))
        return answer(200, body)(request, inner)

    def committed_then_lost_and_read_back_as_another_kind(request, inner):
        meddler.plan("GET", routes.MEMORIES, served_as_another_kind)
        return committed_then_lost(request, inner)

    meddler.plan("PUT", routes.MEMORIES, committed_then_lost_and_read_back_as_another_kind)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, text="Naps after dinner.")
    assert [p["target"] for p in conn.pending] == [mid]
