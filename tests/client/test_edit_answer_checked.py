"""An edit is applied only when the server's answer proves it, and a lost edit is finished from
what the journal kept — whichever send it was.

"Success is proven only by the server's answer": a `PUT` answered 200 that does not name the
memory edited, or carries no newer `rev`, proves nothing, so the outcome is unknown and `resend()`
finishes it with the same sealed body. Against the sandbox over real HTTP; the network in between
is scripted (support/meddler.py)."""

from __future__ import annotations

import json
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import answer, lost, scripted_pair

READS_TRAVEL = [{"permissions": ["memory.read"], "datatypes": ["travel"]}]


@pytest.fixture(scope="module")
def cast(sb):
    """A writer on a network a test scripts, and a connection that reads travel memories."""
    writer, meddler = scripted_pair(sb, "Checked writer")
    reader = Connection.pair(
        sb.url,
        name="Travel reader",
        profile=None,
        permissions=READS_TRAVEL,
        on_link=lambda *a: None,
        client_id=f"reader-{uuid.uuid4().hex[:8]}",
    )
    yield writer, meddler, reader
    writer.close()
    reader.close()


def puts(meddler) -> list[dict]:
    return [json.loads(b) for b in meddler.bodies("PUT", routes.MEMORIES)]


@pytest.mark.parametrize(
    ("served", "why"),
    [
        (lambda mid, rev: {"id": "mem_someone_else", "rev": rev + 1}, "does not name the row edited"),
        (lambda mid, rev: {"id": mid}, "carries no new rev"),
        (lambda mid, rev: {"id": mid, "rev": rev}, "is not newer than the rev"),
    ],
)
def test_an_answer_that_does_not_prove_the_edit_is_an_unknown_outcome_finished_by_resend(cast, served, why):
    writer, meddler, _reader = cast
    mid = writer.save("Check-in opens at 15:00.", categories=["travel"])
    rev = writer.load().memory(mid).rev
    proof = served(mid, rev)
    meddler.plan("PUT", routes.MEMORIES, answer(200, proof), answer(200, proof))
    before = len(puts(meddler))
    with pytest.raises(OutcomeUnknown, match=why):
        writer.edit(mid, text="Check-in opens at 14:00.")
    sent = puts(meddler)[before:]
    assert len(sent) == 2 and sent[0] == sent[1], "the retry sent the same sealed body"
    assert [p["kind"] for p in writer.pending] == ["edit"]
    assert [d["outcome"] for d in writer.resend()] == ["committed"] and writer.pending == []
    assert puts(meddler)[-1] == sent[0], "resend sent the body the journal kept"
    assert writer.load().memory(mid).text == "Check-in opens at 14:00."


def test_a_lost_fourth_send_after_three_rounds_of_holders_missing_is_resent_with_its_wraps(cast):
    """ "`409 HOLDERS_MISSING` lists each connection left out …: wrap the new key to them and send it
    again." Three rounds, then the fourth send's answer is lost: the journal holds that last body
    (with the wraps the rounds added), and `resend()` sends exactly it."""
    writer, meddler, reader = cast
    mid = writer.save("Bike rack behind the hostel.", categories=["travel", "misc"])
    row = {"token_id": reader.token_id, "public_key": reader.agent_key.public_key_b64, "via": ["category:travel"]}
    refusal = {"code": "HOLDERS_MISSING", "message": "wrap it to each one in `missing`", "missing": [row]}
    meddler.plan("PUT", routes.MEMORIES, *[answer(409, refusal)] * 3, lost, lost)
    before = len(puts(meddler))
    with pytest.raises(OutcomeUnknown):
        writer.edit(mid, categories=["travel"])  # removing a label rotates the key
    last = puts(meddler)[-1]
    assert len(puts(meddler)) - before == 5
    assert reader.token_id in [w["token_id"] for w in last["grantee_wraps"]]
    assert [d["outcome"] for d in writer.resend()] == ["committed"]
    assert puts(meddler)[-1] == last
    assert reader.load().memory(mid).categories == ["travel"]


def test_the_fourth_send_after_holders_missing_is_proven_by_its_answer_too(cast):
    """After three rounds of HOLDERS_MISSING the last send's answer is checked like the first's:
    one that carries no new rev proves nothing, and `resend()` finishes the edit."""
    writer, meddler, reader = cast
    mid = writer.save("Spare key under the mat.", categories=["travel", "misc"])
    row = {"token_id": reader.token_id, "public_key": reader.agent_key.public_key_b64, "via": ["category:travel"]}
    refusal = {"code": "HOLDERS_MISSING", "message": "wrap it to each one in `missing`", "missing": [row]}
    meddler.plan(
        "PUT", routes.MEMORIES, *[answer(409, refusal)] * 3, answer(200, {"id": mid}), answer(200, {"id": mid})
    )
    with pytest.raises(OutcomeUnknown, match="carries no new rev"):
        writer.edit(mid, categories=["travel"])
    assert [d["outcome"] for d in writer.resend()] == ["committed"]
    assert reader.load().memory(mid).categories == ["travel"]
