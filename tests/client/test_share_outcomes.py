"""What `Connection.share` does and tells: how many wraps were added, nothing sent when no one new
may read the memory, one more read after a stale key id, and a refusal in words for a row that is
not a memory.

Against the sandbox over real HTTP. `memory-wraps`: "the writer wraps it to the newly eligible
connections"; `409 KID_CONFLICT`: the memory's key changed since it was read — read it again."""

from __future__ import annotations

import json

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import KidConflict, UnreadableRow
from decoy_lab.recipes import sealing
from decoy_lab.transport import routes
from decoy_lab.wire import layouts as wire

from support.meddler import MEMORY_PERMISSIONS as ALL
from support.meddler import Meddler, answer, scripted_pair

KID_CONFLICT = answer(409, {"code": "KID_CONFLICT", "message": "the memory's key changed; re-read it before sharing"})


def pair(sb, permissions, *, name: str) -> Connection:
    """A connection that sends over the real network (its scripted one unused)."""
    return scripted_pair(sb, name, permissions=permissions)[0]


@pytest.fixture(scope="module")
def cast(sb):
    writer, meddler = scripted_pair(sb, "Writer")
    yield meddler, writer
    writer.close()


def late_reader(sb, category: str) -> Connection:
    return pair(sb, [{"permissions": ["memory.read"], "datatypes": [category]}], name=f"Late {category} reader")


def shares(meddler: Meddler) -> int:
    return len(meddler.bodies("POST", routes.WRAPS))


def test_no_one_new_may_read_it_so_nothing_is_sent(cast):
    meddler, writer = cast
    mid = writer.save("Keeps a spare key with the neighbour.", categories=["misc"])
    before = shares(meddler)
    assert writer.share(mid) == 0
    assert shares(meddler) == before


def test_a_stale_key_id_is_read_again_once_and_shared(sb, cast):
    """KID_CONFLICT: read the memory again and send once more."""
    meddler, writer = cast
    mid = writer.save("Allergic to penicillin.", categories=["health"])
    late = late_reader(sb, "health")
    try:
        meddler.plan("POST", routes.WRAPS, KID_CONFLICT)
        before = shares(meddler)
        assert writer.share(mid) == 1
        assert shares(meddler) - before == 2
        assert late.load().memory(mid).text == "Allergic to penicillin."
    finally:
        late.close()


def test_a_second_kid_conflict_is_raised(sb, cast):
    """Read again once, not without end."""
    meddler, writer = cast
    mid = writer.save("Sees a physio on Fridays.", categories=["health", "sports"])
    late = late_reader(sb, "sports")
    try:
        meddler.plan("POST", routes.WRAPS, KID_CONFLICT, KID_CONFLICT, KID_CONFLICT)
        before = shares(meddler)
        with pytest.raises(KidConflict):
            writer.share(mid)
        assert shares(meddler) - before == 2
        meddler.plans.clear()
        assert late.load().memory(mid) is None, "nothing was shared"
    finally:
        late.close()


def test_a_row_that_opens_but_is_not_a_memory_is_refused_in_words(sb, cast):
    """A served row whose plaintext is of another kind is not shared: the refusal names the row."""
    meddler, writer = cast
    mid = writer.save("Drinks oat milk.", categories=["food"])

    def served_as_another_kind(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        response = inner.handle_request(request)
        body = json.loads(response.read())
        response.close()
        for row in body["memories"]:
            if row.get("id") == mid:
                key = sealing.unwrap_as_agent(row["wrapped_key"], writer.agent_key)
                plain = sealing.open_json(key, row["ciphertext"])
                del plain["observation"]  # neither a memory, a topic nor a link
                row["ciphertext"] = wire.b64encode(sealing.seal_json(key, plain))
        return answer(200, body)(request, inner)

    meddler.plan("GET", routes.MEMORIES, served_as_another_kind)
    before = shares(meddler)
    with pytest.raises(UnreadableRow) as caught:
        writer.share(mid)
    assert str(caught.value) == f"row {mid}: opens, but is not a memory, topic or link"
    assert caught.value.row_id == mid
    assert shares(meddler) == before


def test_an_editor_that_never_read_the_memory_shares_it(sb, cast):
    """memory-wraps "Needs `memory.edit` on the memory": a connection that edits every memory, and has
    not loaded or read this one before, opens it with its own key and wraps it to a new reader."""
    _meddler, writer = cast
    mid = writer.save("Runs the half marathon in May.", categories=["sports", "milestones"])
    editor = pair(sb, ALL, name="Editor")
    try:
        sb.owner.share()  # the owner's phone wraps the memory to the editor
        late = late_reader(sb, "milestones")
        try:
            assert editor.share(mid) == 1
            assert late.load().memory(mid).text == "Runs the half marathon in May."
        finally:
            late.close()
    finally:
        editor.close()
