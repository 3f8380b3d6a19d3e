"""A key rotation that leaves out a connection that reads the memory now: `409 HOLDERS_MISSING`.

Against the sandbox over real HTTP. "`409 HOLDERS_MISSING` lists each connection left out …: wrap
the new key to them and send it again". The list of grantees a rotation seals to comes from
`memory-grantees`; here the network serves a stale one (a reader paired since is missing from it),
so the server's refusal is real, not staged."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import HoldersMissing, OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import Meddler, answer, lost, scripted_pair

READS_TRAVEL = [{"permissions": ["memory.read"], "datatypes": ["travel"]}]


def pair(sb, permissions, *, name: str) -> Connection:
    """A connection that sends over the real network (its scripted one unused)."""
    return scripted_pair(sb, name, permissions=permissions)[0]


def grantees_without(*token_ids: str):
    """A stale `memory-grantees` answer: the server's, without these connections."""

    def step(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        response = inner.handle_request(request)
        body = json.loads(response.read())
        response.close()
        body["grantees"] = [g for g in body["grantees"] if g.get("token_id") not in token_ids]
        return answer(200, body)(request, inner)

    return step


def holders_missing(missing: list) -> object:
    return answer(409, {"code": "HOLDERS_MISSING", "message": "wrap it to each one in `missing`", "missing": missing})


@pytest.fixture(scope="module")
def cast(sb):
    """A writer (on a network it can script) and two connections that read travel memories."""
    writer, meddler = scripted_pair(sb, "Writer")
    readers = [pair(sb, READS_TRAVEL, name=f"Reader {i}") for i in (1, 2)]
    yield meddler, writer, readers
    for c in [writer, *readers]:
        c.close()


def puts(meddler: Meddler) -> int:
    return len(meddler.bodies("PUT", routes.MEMORIES))


def test_a_holder_left_out_is_wrapped_to_and_the_edit_sent_again_keeping_the_others(cast, caplog):
    """The rotation forgot one reader: the same PUT goes again with a wrap for it added, and the
    wrap already made for the other reader is kept, so one resend is enough."""
    meddler, writer, (r1, r2) = cast
    mid = writer.save("Gate code is on the booking.", categories=["travel", "misc"])
    assert r1.load().memory(mid) is not None and r2.load().memory(mid) is not None
    meddler.plan("GET", routes.GRANTEES, grantees_without(r2.token_id))
    before = puts(meddler)
    with caplog.at_level(logging.INFO, logger="decoy_lab.protocol.writes.sending"):
        writer.edit(mid, categories=["travel"])  # removing a label rotates the key
    assert puts(meddler) - before == 2
    assert "HOLDERS_MISSING: wrapped the new key to 1 more holders" in caplog.messages
    for reader in (r1, r2):
        assert reader.load().memory(mid).categories == ["travel"], "each reader still reads the rotated memory"


def test_the_resend_after_holders_missing_is_what_the_journal_keeps(sb, cast):
    """The PUT sent again with the added wrap is lost: the journal holds that PUT (not the first,
    which the server refused), so `resend()` finishes the edit."""
    meddler, writer, (r1, _r2) = cast
    mid = writer.save("Locker 12 at the station.", categories=["travel", "misc"])
    meddler.plan("GET", routes.GRANTEES, grantees_without(r1.token_id))
    meddler.plan("PUT", routes.MEMORIES, lambda request, inner: inner.handle_request(request), lost, lost)
    with pytest.raises(OutcomeUnknown):
        writer.edit(mid, categories=["travel"])
    assert [p["kind"] for p in writer.pending] == ["edit"]
    done = writer.resend()
    assert [d["outcome"] for d in done] == ["committed"] and writer.pending == []
    assert r1.load().memory(mid).categories == ["travel"]


def test_three_rounds_of_holders_missing_then_the_fourth_send_lands(cast):
    meddler, writer, (r1, _r2) = cast
    mid = writer.save("Bike rack behind the hostel.", categories=["travel", "misc"])
    row = {"token_id": r1.token_id, "public_key": r1.agent_key.public_key_b64, "via": ["category:travel"]}
    meddler.plan("PUT", routes.MEMORIES, *[holders_missing([row])] * 3)
    before = puts(meddler)
    ans = writer.edit(mid, categories=["travel"])
    assert puts(meddler) - before == 4 and ans["id"] == mid
    assert r1.load().memory(mid).categories == ["travel"]


def test_holders_missing_without_end_is_raised_after_four_sends(cast):
    """Bounded: a server that keeps answering HOLDERS_MISSING is not sent the edit forever."""
    meddler, writer, (r1, _r2) = cast
    mid = writer.save("Ferry leaves at 9.", categories=["travel", "misc"])
    row = {"token_id": r1.token_id, "public_key": r1.agent_key.public_key_b64, "via": ["category:travel"]}
    meddler.plan("PUT", routes.MEMORIES, *[holders_missing([row])] * 6)
    before = puts(meddler)
    with pytest.raises(HoldersMissing):
        writer.edit(mid, categories=["travel"])
    assert puts(meddler) - before == 4
    meddler.plans.pop(("PUT", routes.MEMORIES), None)
    assert writer.pending == [], "a definite refusal: nothing is pending"


def test_a_holder_listed_without_via_is_wrapped_to(cast):
    """`via` may be left out of a listed holder: its token id and public key are what a wrap needs."""
    meddler, writer, (r1, _r2) = cast
    mid = writer.save("Ask for the quiet room.", categories=["travel", "misc"])
    row = {"token_id": r1.token_id, "public_key": r1.agent_key.public_key_b64}
    meddler.plan("PUT", routes.MEMORIES, holders_missing([row]))
    writer.edit(mid, categories=["travel"])
    assert r1.load().memory(mid).categories == ["travel"]


@pytest.mark.parametrize(
    "listed",
    [
        [{"token_id": "t-1"}],  # no public key to wrap to
        [{"public_key": "AAAA"}],  # no token id to name the wrap
        [{"public_key": "AAAA", "via": None}],
        [{"token_id": "t-1", "public_key": "AAAA", "via": "category:travel"}],  # via is not a list
    ],
)
def test_a_listed_holder_a_wrap_cannot_be_made_for_is_the_refusal_as_it_came(cast, listed):
    """Nothing was changed, and no guess is sent: the refusal is raised as the server gave it."""
    meddler, writer, _readers = cast
    mid = writer.save("Pack the adapter.", categories=["travel", "misc"])
    meddler.plan("PUT", routes.MEMORIES, holders_missing(listed))
    before = puts(meddler)
    with pytest.raises(HoldersMissing) as caught:
        writer.edit(mid, categories=["travel"])
    assert caught.value.missing == listed
    assert puts(meddler) - before == 1
    assert sorted(writer.load().memory(mid).categories) == ["misc", "travel"], "nothing was changed"


def test_holders_missing_on_an_edit_that_keeps_its_key_is_the_refusal_as_it_came(cast):
    """A text edit seals no new key (no `self_wrap`): there is nothing to wrap to a holder."""
    meddler, writer, (r1, _r2) = cast
    mid = writer.save("Window seat.", categories=["travel"])
    row = {"token_id": r1.token_id, "public_key": r1.agent_key.public_key_b64, "via": ["category:travel"]}
    meddler.plan("PUT", routes.MEMORIES, holders_missing([row]))
    before = puts(meddler)
    with pytest.raises(HoldersMissing):
        writer.edit(mid, text="Aisle seat.")
    assert puts(meddler) - before == 1
