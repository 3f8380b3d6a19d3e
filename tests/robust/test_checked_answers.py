"""Every answer is checked against what was asked: a write answered by a 3xx, a 204, an empty 2xx or
a 2xx that does not account for what was sent is an unknown outcome (never success), and a read
answer without its array is a typed error (never an empty vault). Hostile servers over
`httpx.MockTransport` and a real socket."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown, RateLimited, TransportError
from decoy_lab.transport.answers import retry_after
from decoy_lab.transport.api import Api
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, GOOD, MEMORIES, OWNER, SERVED_GOOD

GRANTEES = {"owner_public_key": OWNER.public_key_b64, "grantees": []}


def connect(handler, **kw: Any) -> Connection:
    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id="tok-1", access_version=1),
        transport=httpx.MockTransport(handler),
        retries=1,
        backoff=0,
        sleep=lambda s: None,
        **kw,
    )


def serving(write: tuple[str, str], answer: httpx.Response | None, sent: list) -> Any:
    """Sound answers everywhere (a save answers for every row), `answer` on the `write` route."""

    def handler(request: httpx.Request) -> httpx.Response:
        route = (request.method, request.url.path)
        if route == ("GET", "/api/agent/context/memory-grantees"):
            return httpx.Response(200, json=GRANTEES)
        if route == ("GET", "/api/agent/context/spaces"):
            return httpx.Response(200, json={"spaces": []})
        if route == ("GET", MEMORIES):
            return httpx.Response(200, json={"memories": [SERVED_GOOD]})
        if route == write:
            sent.append(request.content)
            return answer
        if route == ("POST", MEMORIES):
            return httpx.Response(201, json={"created": [r["id"] for r in json.loads(request.content)["rows"]]})
        return httpx.Response(404, json={"code": "NOT_FOUND"})

    return handler


SAVE, EDIT = ("POST", MEMORIES), ("PUT", MEMORIES)
NOT_PROOF = {
    "a redirect": httpx.Response(302, headers={"location": "http://elsewhere.invalid/"}),
    "307 redirect": httpx.Response(307, headers={"location": "/api/agent/context/memories"}),
    "204 no content": httpx.Response(204),
    "an empty 2xx": httpx.Response(200, content=b""),
    "an empty object": httpx.Response(201, json={}),
}


@pytest.mark.parametrize("answer", NOT_PROOF.values(), ids=NOT_PROOF.keys())
def test_a_save_answered_without_proof_is_an_unknown_outcome(answer):
    """ "an id the server already holds comes back in `existing`": a POST answer must account for
    every id sent (in `created` ∪ `existing`); a 3xx is never success."""
    sent: list = []
    conn = connect(serving(SAVE, answer, sent))
    with pytest.raises(OutcomeUnknown):
        conn.save("Prefers tea.")
    assert len(sent) == 2 and len(set(sent)) == 1, "the same rows, sent again"
    assert len(conn.pending) == 1


def test_a_save_answer_that_leaves_out_a_row_is_an_unknown_outcome():
    """A batch of three rows answered for two: the third may not be stored, so nothing is success."""
    sent: list = []

    def partial(request: httpx.Request) -> httpx.Response:
        ids = [r["id"] for r in json.loads(request.content)["rows"]]
        return httpx.Response(201, json={"created": ids[:1], "existing": ids[1:2]})

    handler = serving(SAVE, None, sent)

    def route(request: httpx.Request) -> httpx.Response:
        if (request.method, request.url.path) == SAVE:
            sent.append(request.content)
            return partial(request)
        return handler(request)

    conn = connect(route)
    with pytest.raises(OutcomeUnknown, match="accounts for 2 of the 3 rows"):
        conn.save("Plays chess.", topic="Chess")


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json={}),
        httpx.Response(200, json={"id": GOOD["id"]}),
        httpx.Response(200, json={"id": "another-id", "rev": 2}),
        httpx.Response(200, json={"id": GOOD["id"], "rev": 1}),
        httpx.Response(204),
        httpx.Response(303, headers={"location": "/"}),
    ],
    ids=["empty", "no rev", "another id", "same rev", "204", "303"],
)
def test_an_edit_answer_must_carry_the_id_and_the_new_rev(answer):
    """`PUT` answers the edited memory's `id` and its new `rev`; without them `edit()` returned `{}`."""
    sent: list = []
    conn = connect(serving(EDIT, answer, sent))
    with pytest.raises(OutcomeUnknown):
        conn.edit(GOOD["id"], text="Prefers green tea.")
    assert len(sent) == 2 and len(set(sent)) == 1


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(200, json={}), httpx.Response(200, json={"preparing": []}), httpx.Response(204)],
    ids=["empty object", "no memories member", "204"],
)
def test_a_read_answer_without_its_array_is_a_typed_error_never_an_empty_vault(answer):
    """A `memories` answer with no `memories` array is not "0 memories … 0 unreadable"."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/agent/context/spaces":
            return httpx.Response(200, json={"spaces": []})
        return answer

    with pytest.raises(TransportError, match="no memories array"):
        connect(handler).load()


def test_an_empty_memories_array_is_an_empty_vault():
    """The check reads the member, not the count: `{"memories": []}` is a sound empty vault."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"spaces": []} if "spaces" in request.url.path else {"memories": []})

    assert len(connect(handler).load()) == 0


@pytest.mark.parametrize("text", ["²", "٣", "1e3", "-5", "9" * 80, "Wed, 21 Oct 2015 07:28:00 GMT", "soon", "\x00"])
def test_retry_after_of_any_text_is_parsed_safely(text):
    """RFC 9110 §10.2.3: `Retry-After` is delta-seconds or an HTTP-date; any other text is ignored."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"code": "RATE_LIMITED"}, headers=[(b"retry-after", text.encode("utf-8"))])

    api = Api("http://decoy.invalid", transport=httpx.MockTransport(handler), tokens=Tokens(access_token="AT"))
    with pytest.raises(RateLimited) as caught:
        api.request("GET", "/api/agent/policies")
    wait = caught.value.retry_after
    assert wait is None or wait >= 0
    assert retry_after("120") == 120 and retry_after("²") is None


def drip_server(body: bytes, every: float) -> tuple[str, threading.Event]:
    """A real socket that answers at once with headers, then its body one byte every `every` s."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            listener.settimeout(0.2)
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.recv(65536)
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            try:
                conn.sendall(head.encode())
                for i in range(len(body)):
                    if stop.is_set():
                        break
                    conn.sendall(body[i : i + 1])
                    time.sleep(every)
            except OSError:
                pass
            conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", stop


@pytest.mark.parametrize("how", ["request", "stream"])
def test_a_server_dripping_its_answer_fails_within_the_deadline(how):
    """Slow-loris: each byte arrives within the read timeout, so only an overall deadline ends the call."""
    url, stop = drip_server(json.dumps({"memories": [], "pad": "x" * 400}).encode(), every=0.05)
    api = Api(url, timeout=5.0, deadline=0.6, tokens=Tokens(access_token="AT"))
    started = time.monotonic()
    try:
        # a stream ends sooner still: no new row (nor member) came within the deadline
        with pytest.raises(TransportError, match="deadline" if how == "request" else "no new row came within 0.06 s"):
            if how == "request":
                api.request("GET", "/api/agent/policies")
            else:
                api.deadline = 0.06  # a stream gets STREAM_DEADLINES times the deadline
                with api.stream_array(MEMORIES, "memories") as answer:
                    list(answer)
    finally:
        stop.set()
        api.close()
    # docs/internals.md: "Every call has an overall deadline … so a server that drips its answer a
    # byte at a time fails within it" (0.6 s here); 3 s of slack for two busy cores
    assert time.monotonic() - started < 0.6 + 3.0
