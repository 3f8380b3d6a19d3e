"""A write sent again is held to the same proof as the first send: the save sent once more after a
read-back, and a pending edit sent by `conn.resend()`, are unknown outcomes when their answers do not
account for what was sent — a front that answers for rows it never stored is not believed twice.
A save that met no trouble reads nothing back but the memory itself; a refused save's topic rows
are removed, best effort, and a removal that fails is said in the log; text UTF-8 cannot carry is
refused before anything is sent. Hostile servers over `httpx.MockTransport`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, MemoryModelError, OutcomeUnknown, TransportError
from decoy_lab.transport import routes
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, GOOD, MEMORIES, OWNER, SERVED_GOOD

GRANTEES = {"owner_public_key": OWNER.public_key_b64, "grantees": []}
Answer = Callable[[httpx.Request], httpx.Response]


class Front:
    """A server that serves SERVED_GOOD and the rows saved to it, answers grantees and spaces
    soundly, and answers each route from a script first (then soundly: a save stores its rows and
    answers for every one, an edit answers the next rev)."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[Answer]] = {}
        self.seen: list[tuple[str, str, bytes]] = []
        self.rows = [SERVED_GOOD]

    def save(self, request: httpx.Request) -> httpx.Response:
        rows = json.loads(request.content)["rows"]
        self.rows += [
            dict(SERVED_GOOD, id=r["id"], kid=r["kid"], ciphertext=r["ciphertext"], wrapped_key=r["self_wrap"])
            for r in rows
        ]
        return httpx.Response(201, json={"created": [r["id"] for r in rows]})

    def handler(self, request: httpx.Request) -> httpx.Response:
        route = (request.method, request.url.path)
        self.seen.append((*route, request.content))
        if self.script.get(route):
            return self.script[route].pop(0)(request)
        if route == ("GET", "/api/agent/context/memory-grantees"):
            return httpx.Response(200, json=GRANTEES)
        if route == ("GET", "/api/agent/context/spaces"):
            return httpx.Response(200, json={"spaces": []})
        if route == ("GET", MEMORIES):
            return httpx.Response(200, json={"memories": self.rows})
        if route == ("POST", MEMORIES):
            return self.save(request)
        if route == ("PUT", MEMORIES):
            return httpx.Response(200, json={"id": json.loads(request.content)["id"], "rev": 2})
        return httpx.Response(404, json={"code": "NOT_FOUND", "message": "no such route"})

    def sent(self, method: str, path: str = MEMORIES) -> list[bytes]:
        return [body for m, p, body in self.seen if (m, p) == (method, path)]


def unavailable(request: httpx.Request) -> httpx.Response:
    return httpx.Response(503, json={"code": "UNAVAILABLE", "message": "try again"})


def answering(body: dict) -> Answer:
    return lambda request: httpx.Response(200, json=body)


def vouching(request: httpx.Request) -> httpx.Response:
    """Answers for every row sent, as `existing`, and stores none of them."""
    return httpx.Response(200, json={"existing": [r["id"] for r in json.loads(request.content)["rows"]]})


def connect(front: Front) -> Connection:
    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id="tok-1", access_version=1),
        transport=httpx.MockTransport(front.handler),
        retries=1,
        backoff=0,
        sleep=lambda s: None,
    )


def test_a_save_that_met_no_trouble_sends_once_and_reads_back_once():
    """Only the check that the memory is served reads back: no read-back for a resend that never was."""
    front = Front()
    connect(front).save("Prefers tea.")
    assert len(front.sent("POST")) == 1 and len(front.sent("GET")) == 1


def test_the_save_sent_again_after_a_read_back_must_account_for_its_rows():
    """The first send is unanswered (503), the second is vouched for but the rows are not served: they
    are sent once more, and that answer, which accounts for none of them, is no proof either."""
    front = Front()
    front.script[("POST", MEMORIES)] = [unavailable, vouching, answering({"created": []}), answering({"created": []})]
    conn = connect(front)
    with pytest.raises(OutcomeUnknown, match="accounts for 0 of the 1 rows"):
        conn.save("Prefers tea.")
    posts = front.sent("POST")
    assert len(posts) == 4 and len(set(posts)) == 1, "the same sealed rows every time"
    assert len(front.sent("GET")) == 1 and len(conn.pending) == 1


def _pending_edit(front: Front) -> Connection:
    """An edit whose every send went unanswered: kept in the journal."""
    front.script[("PUT", MEMORIES)] = [unavailable, unavailable]
    conn = connect(front)
    with pytest.raises(OutcomeUnknown):
        conn.edit(GOOD["id"], text="Prefers green tea.")
    assert [p["kind"] for p in conn.pending] == ["edit"]
    return conn


@pytest.mark.parametrize(
    "answer",
    [{}, {"id": GOOD["id"]}, {"id": "another-id", "rev": 2}],
    ids=["empty", "no rev", "another id"],
)
def test_a_resent_edit_must_be_answered_with_its_id_and_new_rev(answer):
    front = Front()
    conn = _pending_edit(front)
    front.script[("PUT", MEMORIES)] = [answering(answer), answering(answer)]
    with pytest.raises(OutcomeUnknown):
        conn.resend()
    assert len(conn.pending) == 1
    assert len(set(front.sent("PUT"))) == 1, "the same body every time"


def test_a_resent_edit_meeting_a_conflict_on_a_memory_no_longer_served_is_not_applied():
    """REV_CONFLICT, and the memory is gone from the answer: this edit did not land, and says so."""
    front = Front()
    conn = _pending_edit(front)
    conflict = httpx.Response(409, json={"code": "REV_CONFLICT", "message": "moved on", "current_rev": 3})
    front.script[("PUT", MEMORIES)] = [lambda request: conflict]
    front.script[("GET", MEMORIES)] = [answering({"memories": []})]
    (done,) = conn.resend()
    assert done["outcome"].startswith("not applied:") and conn.pending == []


def test_a_refused_saves_topic_rows_are_removed_and_a_failed_removal_is_logged(caplog):
    """The save is refused outright (400): the topic rows it would have made are removed, best
    effort; the removal failing is no error for the user, but the log names the rows."""
    front = Front()
    refused = httpx.Response(400, json={"code": "INVALID_ROW", "message": "no"})
    front.script[("POST", MEMORIES)] = [lambda request: refused]
    front.script[("POST", routes.MEMORIES_DELETE)] = [unavailable]
    conn = connect(front)
    with (
        caplog.at_level(logging.INFO, logger="decoy_lab.protocol.writes.sending"),
        pytest.raises(APIError, match="INVALID_ROW"),
    ):
        conn.save("Plays chess.", topic="Chess")
    (sent,) = front.sent("POST", routes.MEMORIES_DELETE)
    ids = json.loads(sent)["ids"]
    assert len(ids) == 2 and ids == [r["id"] for r in json.loads(front.sent("POST")[0])["rows"][:2]]
    said = [r.getMessage() for r in caplog.records if r.name == "decoy_lab.protocol.writes.sending"]
    assert said == [f"could not remove topic rows {ids}: HTTP 503 UNAVAILABLE: try again"]


@pytest.mark.parametrize(
    "text,said",
    [
        (
            "Likes tea \ud800",
            "the text holds a lone surrogate at character 10 (U+D800), which is not text UTF-8 can carry — "
            "it usually comes from decoding bytes wrongly: fix the text first; nothing was sent",
        ),
        (b"\xff\xfe tea", "the text is bytes that are not UTF-8 (byte 0): decode it to text first; nothing was sent"),
        (bytearray(b"tea"), "the text is bytes: pass it as text (str); nothing was sent"),
        (b"tea", "the text is bytes: pass it as text (str); nothing was sent"),
    ],
)
def test_text_utf8_cannot_carry_is_refused_in_words_before_anything_is_sent(text, said):
    front = Front()
    with pytest.raises(MemoryModelError) as err:
        connect(front).save(text)
    assert str(err.value) == said and front.sent("POST") == []


@pytest.mark.parametrize(
    "answer",
    [{"deleted": "abc", "refused": []}, {"deleted": [], "refused": [], "remediation": []}],
    ids=["deleted is text", "remediation is a list"],
)
def test_a_delete_answered_in_another_shape_is_an_unknown_outcome_sent_again(answer):
    """ "missing or ineligible ids are refused": the answer names `deleted` and `refused` lists; one
    in another shape proves nothing (a string's letters are no ids), so the same body goes again."""
    front = Front()
    front.script[("POST", routes.MEMORIES_DELETE)] = [answering(answer), answering(answer)]
    conn = connect(front)
    with pytest.raises(TransportError):
        conn.delete([SERVED_GOOD["id"]])
    sent = front.sent("POST", routes.MEMORIES_DELETE)
    assert len(sent) == 2 and len(set(sent)) == 1
