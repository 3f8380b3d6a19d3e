"""What a save says when the topic it names may be among this connection's own rows still on their
way from the owner's phone: "do not save a memory or recreate a topic again because it is not
listed. A new memory for a topic you cannot see yet waits for that read, then is saved." The
refusal says when to read again — the server's `retry_after_seconds`, or "later" when the answer
gives none — and that nothing was made."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import MemoryModelError
from decoy_lab.sandbox.phone import schedule
from decoy_lab.transport import routes
from decoy_lab.wire.crypto import AgentKey

from support.meddler import scripted_pair


@pytest.fixture(scope="module")
def sb(clocked_sb):
    schedule.configure(clocked_sb.state, auto_share_after=None)  # the phone answers only when asked
    return clocked_sb


def without_retry(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """The server's memories answer with its `retry_after_seconds` taken out."""
    response = inner.handle_request(request)
    body = json.loads(response.read())
    body.pop("retry_after_seconds", None)
    return httpx.Response(response.status_code, json=body)


def reconnected(sb, name: str, **options):
    """A connection whose own rows are `preparing`: its client id paired again with a new key
    after it saved "Tiles chosen." under the topic "Bathroom remodel"."""
    cid = f"topic-words-{uuid.uuid4().hex[:6]}"
    first = Connection.pair(
        sb.url, name=name, profile=None, agent_key=AgentKey.generate(), client_id=cid, on_link=lambda *a: None
    )
    first.save("Tiles chosen.", topic="Bathroom remodel")
    return scripted_pair(sb, name, agent_key=AgentKey.generate(), client_id=cid, **options)


def test_the_refusal_names_the_servers_wait_and_the_read_that_comes_first(sb):
    second, meddler = reconnected(sb, "Topic words")
    served = second.load()
    retry = served.answer["retry_after_seconds"]
    assert served.answer["preparing"] and retry
    with pytest.raises(MemoryModelError) as refused:
        second.save("Grout colour: grey.", topic="bathroom REMODEL")
    assert str(refused.value) == (
        "topic 'bathroom REMODEL' is not visible yet, and rows this connection saved are still on their way "
        f"from the owner's phone (preparing); it may be one of them. Read again in {retry} s (conn.load()) "
        "and save then, so no second topic is made"
    )
    assert not meddler.bodies("POST", routes.MEMORIES)  # nothing was sent, so no second topic


def test_without_a_wait_from_the_server_it_says_later(sb):
    second, meddler = reconnected(sb, "Topic words, no wait")
    meddler.plan("GET", routes.MEMORIES, *[without_retry] * 10)
    assert "retry_after_seconds" not in second.load().answer
    with pytest.raises(MemoryModelError) as refused:
        second.save("Grout colour: grey.", topic="Bathroom remodel")
    assert str(refused.value).endswith(
        "it may be one of them. Read again later (conn.load()) and save then, so no second topic is made"
    )
    assert not meddler.bodies("POST", routes.MEMORIES)
