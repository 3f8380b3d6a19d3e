"""What a write whose answer was lost tells its user: done only when the server shows it done.

Against the sandbox over real HTTP. "If the answer is lost (a network error or a 5xx), resend the
same sealed rows […] then read back every row and its usable wrap to confirm completion", and an
edit (`expected_rev`) sent again meets `REV_CONFLICT` whether it landed the first time or another
change won meanwhile: only the served row tells which."""

from __future__ import annotations

import json
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import Meddler, claims_existing, committed_then_lost, lost

PERMS = ["memory.read", "memory.save", "memory.edit", "memory.delete"]


def pair(sb, *, retries: int, transport=None) -> Connection:
    return Connection.pair(
        sb.url,
        name="Outcome test",
        profile=None,
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"outcome-{uuid.uuid4().hex[:8]}",
        retries=retries,
        backoff=0,
        sleep=lambda s: None,
        transport=transport,
    )


def owner_text(sb, memory_id: str) -> str | None:
    row = next((r for r in sb.owner.app_view() if r["id"] == memory_id), None)
    return None if row is None else row["text"]


@pytest.fixture
def faults(sb):
    yield sb.state.faults
    sb.state.faults.configure({})


def test_an_edit_that_landed_before_its_answer_was_lost_is_reported_as_done(sb, faults):
    """Within one call: the PUT committed and its answer was lost; the same PUT sent again meets
    REV_CONFLICT (the rev moved on: by this very edit). The memory shows the edit, so it is done:
    the user is not told it was refused, and nothing is pending."""
    conn = pair(sb, retries=1)
    try:
        mid = conn.save("Runs on Tuesdays.")
        faults.configure({"drop_after_commit": 1.0})
        done = conn.edit(mid, text="Runs on Thursdays.")
        faults.configure({})
        assert done["id"] == mid
        assert owner_text(sb, mid) == "Runs on Thursdays."
        assert conn.pending == []
    finally:
        conn.close()


def test_a_resent_edit_that_had_landed_is_reported_as_committed(sb):
    """The PUT committed and its answer was lost, with no resend left, and the read-back that would
    have confirmed it was lost too: OutcomeUnknown, the PUT kept in the journal. `resend()` sends the same PUT, meets REV_CONFLICT (the rev moved on: by this
    very edit); the served row is this edit's ciphertext, so the outcome is "committed"."""
    meddler = Meddler()
    conn = pair(sb, retries=0, transport=meddler)
    try:
        mid = conn.save("Reads in the evening.")

        def committed_then_lost_and_the_next_read_too(request, inner):
            meddler.plan("GET", routes.MEMORIES, lost)
            return committed_then_lost(request, inner)

        meddler.plan("PUT", routes.MEMORIES, committed_then_lost_and_the_next_read_too)
        with pytest.raises(OutcomeUnknown):
            conn.edit(mid, text="Reads in the morning.")
        assert owner_text(sb, mid) == "Reads in the morning."  # it did land
        (done,) = conn.resend()
        assert done["outcome"] == "committed", done
        assert conn.pending == []
        puts = meddler.bodies("PUT", routes.MEMORIES)
        assert len(puts) == 2 and puts[0] == puts[1]  # the SAME body, never a new one
    finally:
        conn.close()


def test_a_resent_edit_that_another_change_overtook_is_not_reported_as_done(sb):
    """The PUT was lost before it reached the server; meanwhile the owner edited the memory.
    `resend()` sends the same PUT, meets REV_CONFLICT, and the served row is the owner's change,
    not this edit: the outcome says it was not applied, and the owner's text stays."""
    meddler = Meddler()
    conn = pair(sb, retries=0, transport=meddler)
    try:
        mid = conn.save("Cooks on Fridays.")
        meddler.plan("PUT", routes.MEMORIES, lost)
        with pytest.raises(OutcomeUnknown):
            conn.edit(mid, text="Cooks on Sundays.")
        assert [p["kind"] for p in conn.pending] == ["edit"]
        sb.owner.edit(mid, text="Cooks on Saturdays.")
        (done,) = conn.resend()
        assert done["outcome"].startswith("not applied"), done
        assert conn.pending == []
        assert owner_text(sb, mid) == "Cooks on Saturdays."
    finally:
        conn.close()


def test_a_resend_answered_existing_for_a_row_not_served_sends_the_rows_once_more(sb):
    """The first POST is lost; the resend is answered `existing` for every row by something that
    never stored it (a stale front, a lying proxy). The read-back finds the row missing, so the
    same rows go once more, and the memory is there when save returns."""
    meddler = Meddler()
    conn = pair(sb, retries=1, transport=meddler)
    try:
        meddler.plan("POST", routes.MEMORIES, lost, claims_existing)
        mid = conn.save("Takes the 7:40 train.")
        posts = meddler.bodies("POST", routes.MEMORIES)
        assert len(posts) == 3 and posts[0] == posts[1] == posts[2]  # the SAME rows, never new ones
        assert [r["id"] for r in json.loads(posts[0])["rows"]] == [mid]
        gets = [i for i, (m, p, _) in enumerate(meddler.seen) if (m, p) == ("GET", routes.MEMORIES)]
        posted = [i for i, (m, p, _) in enumerate(meddler.seen) if (m, p) == ("POST", routes.MEMORIES)]
        assert any(posted[1] < g < posted[2] for g in gets)  # read back between the lie and the last send
        assert owner_text(sb, mid) == "Takes the 7:40 train."
        assert conn.pending == []
    finally:
        conn.close()


def test_a_resend_that_the_read_back_confirms_is_not_sent_a_third_time(sb):
    """The first POST is lost before it reaches the server, the resend stores the row: the
    read-back finds it, and nothing is sent again."""
    meddler = Meddler()
    conn = pair(sb, retries=1, transport=meddler)
    try:
        meddler.plan("POST", routes.MEMORIES, lost)
        mid = conn.save("Walks the dog at six.")
        assert len(meddler.bodies("POST", routes.MEMORIES)) == 2
        assert owner_text(sb, mid) == "Walks the dog at six."
    finally:
        conn.close()
