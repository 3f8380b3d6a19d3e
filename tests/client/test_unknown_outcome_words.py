"""The words of a write whose outcome is unknown (`OutcomeUnknown`), what `conn.pending` keeps of
it, and what `conn.resend()` reports for each entry.

Against the sandbox over real HTTP, the network scripted by `support.meddler`. "If the answer is
lost (a network error or a 5xx), resend the same sealed rows": the error says what each attempt
did, which rows may have committed, where they are kept and how to finish."""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.errors import OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import answer, lost, scripted_pair

KEPT = "The sealed rows are kept in the pending-writes journal (in memory, for this kernel): "
EARLIER = " (an earlier request of this write reached the server)"


@pytest.fixture
def cast(sb):
    conn, meddler = scripted_pair(sb, "Outcome words test")
    yield conn, meddler
    conn.close()


def refused(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The connection is refused: the request never left."""
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def test_each_attempt_answered_5xx_is_said_with_its_status_and_code(cast):
    conn, meddler = cast
    meddler.plan(
        "POST",
        routes.MEMORIES,
        answer(503, {"code": "UNAVAILABLE", "message": "try later"}),
        answer(503, {"message": "busy"}),
    )
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Waters the plants on Sundays.")
    said = str(caught.value)
    assert said.startswith("save: the outcome of this write is unknown — attempt 1: ")
    assert (
        " — attempt 1: sent, answered 503 UNAVAILABLE — may have committed; "
        "attempt 2: sent, answered 503 — may have committed. "
    ) in said
    [row] = caught.value.ids
    assert f"Some, all or none of the 1 row ({row}) may have committed. {KEPT}" in said
    assert said.endswith("conn.resend() — or running the same save again — sends the SAME rows, never new ones")
    [pending] = conn.pending
    assert pending["why"] == "HTTP 503: busy", "the journal keeps the last unknown outcome"


def test_a_refusal_for_now_then_a_lost_answer_is_said_attempt_by_attempt(cast):
    conn, meddler = cast
    meddler.plan("POST", routes.MEMORIES, answer(429, {"code": "RATE_LIMITED", "message": "slow down"}), lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Walks the dog at seven.")
    said = str(caught.value)
    assert said.startswith(
        "save: the outcome of POST /api/agent/context/memories is unknown — attempt 1: sent, refused for now "
        "(RateLimited: HTTP 429 RATE_LIMITED: slow down) — not committed; attempt 2: sent, no answer "
        "(ReadError: the connection dropped before an answer came) — may have committed. "
    )
    assert EARLIER not in said


def test_every_row_of_a_new_topic_save_is_named(cast):
    conn, meddler = cast
    meddler.plan("POST", routes.MEMORIES, lost, lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Learning to sail.", topic="Sailing course")
    ids = caught.value.ids
    assert len(ids) == 3  # the topic's entity and relation, and the memory
    assert f"Some, all or none of the 3 rows ({', '.join(ids)}) may have committed. {KEPT}" in str(caught.value)


def test_resend_reports_each_entry_it_finished(cast):
    conn, meddler = cast
    meddler.plan("POST", routes.MEMORIES, lost, lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Plays chess on Thursdays.")
    [mid] = caught.value.ids
    assert [(p["entry"], p["kind"], p["target"]) for p in conn.pending] == [(caught.value.entry, "save", mid)]
    assert conn.resend() == [
        {"entry": caught.value.entry, "kind": "save", "ids": [mid], "target": mid, "outcome": "committed"}
    ]
    assert conn.pending == [] and conn.load().memory(mid).text == "Plays chess on Thursdays."


def test_an_edit_whose_put_never_left_says_so_and_that_an_earlier_request_reached_the_server(cast):
    """The topic rows were posted; the PUT was refused at connect, and so was the read-back: each
    attempt is 'not sent', yet part of this write did reach the server, and the error says so."""
    conn, meddler = cast
    mid = conn.save("Needs new running shoes.")

    def put_refused_and_the_read_back_too(request, inner):
        meddler.plan("GET", routes.MEMORIES, refused, refused)
        return refused(request, inner)

    meddler.plan("PUT", routes.MEMORIES, put_refused_and_the_read_back_too, refused)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.edit(mid, topic="Marathon training")
    said = str(caught.value)
    not_sent = f"not sent (cannot reach {conn.base_url} (ConnectError: [Errno 111] Connection refused))"
    assert said.startswith(
        f"edit: the outcome of PUT /api/agent/context/memories is unknown — attempt 1: {not_sent}; "
        f"attempt 2: {not_sent}{EARLIER}. Some, all or none of the 3 rows ("
    )
    assert caught.value.sent
    [done] = conn.resend()
    assert done["outcome"] == "committed" and done["kind"] == "edit" and done["target"] == mid
    assert conn.load().memory(mid).topic["name"] == "Marathon training"
