"""`409 REVIEW_BUSY` on `POST /api/agent/grant-request`, over real HTTP: the sandbox refuses an ask
while another ask from the same connection is being saved, and the client sends the same ask
again (bounded, with backoff) or says clearly that it gave up.

An ask is held "being saved" by sending its body in two halves and holding the second back."""

from __future__ import annotations

import json
import threading
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import ReviewBusy
from decoy_lab.sandbox.routes.policies import AsksBeingSaved
from decoy_lab.sandbox.testing import bearer, pair_agent

HELD_BODY = {"permissions": ["memory.delete"], "datatypes": ["food"], "reason": "another ask"}


class HeldAsk:
    """An ask whose body stops halfway until `release()`; the sandbox is saving it meanwhile."""

    def __init__(self, sb, access_token: str, token_id: str, body: dict):
        self._go = threading.Event()
        self.response: httpx.Response | None = None
        raw = json.dumps(body).encode()

        def halves():
            yield raw[:5]
            self._go.wait(20)
            yield raw[5:]

        def send() -> None:
            self.response = httpx.post(
                f"{sb.url}/api/agent/grant-request",
                content=halves(),
                timeout=30,
                headers={**bearer(access_token), "Content-Type": "application/json"},
            )

        self._thread = threading.Thread(target=send, daemon=True)
        self._thread.start()
        busy = AsksBeingSaved.of(sb.state)
        for _ in range(400):  # until the sandbox has the ask in hand (no fixed sleep)
            if busy.holds(token_id):
                return
            self._thread.join(0.01)
        raise AssertionError("the held ask never reached the sandbox")

    def release(self) -> httpx.Response:
        self._go.set()
        self._thread.join(20)
        assert self.response is not None
        return self.response


@pytest.fixture
def tok(sb):
    return pair_agent(sb.url, None, [{"permissions": ["memory.save"]}], client_id=f"busy-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def manual_owner(sb):
    """Asks stay pending (the owner does not answer), so later asks join the open request."""
    sb.state.approve = "manual"
    yield
    sb.state.approve = "auto"


def ask(sb, tok: dict, permissions: list[str]):
    return httpx.post(
        f"{sb.url}/api/agent/grant-request",
        headers=bearer(tok),
        json={"permissions": permissions, "reason": "busy test"},
    )


def test_an_ask_while_another_is_being_saved_is_review_busy(sb, tok, manual_owner):
    """ "`REVIEW_BUSY` — other asks from this connection were being saved at the same moment; send this
    one again."""
    held = HeldAsk(sb, tok["access_token"], tok["token_id"], {"permissions": ["memory.read"], "reason": "first"})
    busy = ask(sb, tok, ["memory.edit"])
    assert busy.status_code == 409 and busy.json()["code"] == "REVIEW_BUSY"
    first = held.release()
    assert first.status_code == 201 and first.json()["status"] == "pending"
    again = ask(sb, tok, ["memory.edit"])  # "send this one again": it joins the open request
    assert again.status_code == 201 and again.json()["combined"] is True
    assert again.json()["request_id"] == first.json()["request_id"]


def test_another_connection_is_never_busy_for_it(sb, tok, manual_owner):
    """The guard is per connection: "other asks from this connection"."""
    other = pair_agent(sb.url, None, [{"permissions": ["memory.save"]}], client_id=f"busy-{uuid.uuid4().hex[:8]}")
    held = HeldAsk(sb, tok["access_token"], tok["token_id"], {"permissions": ["memory.read"], "reason": "first"})
    assert ask(sb, other, ["memory.read"]).status_code == 201
    assert held.release().status_code == 201


def test_a_busy_ask_is_not_counted_toward_ten_a_minute(sb, tok, manual_owner):
    """ "At most 10 asks a minute per connection (`429 RATE_LIMITED`, wait `retry_after_seconds`)" — a
    REVIEW_BUSY ask was refused before anything was read, so it is not one of the ten."""
    held = HeldAsk(sb, tok["access_token"], tok["token_id"], {"permissions": ["memory.read"], "reason": "first"})
    for _ in range(12):
        assert ask(sb, tok, ["memory.edit"]).json()["code"] == "REVIEW_BUSY"
    assert held.release().status_code == 201
    names = [["memory.delete"], ["memory.edit"], *[["memory.read"]] * 8]  # 1 + 9 more asks: all within ten
    codes = [ask(sb, tok, n).status_code for n in names[:9]]
    assert 429 not in codes, codes
    assert ask(sb, tok, ["memory.read"]).status_code == 429  # the eleventh ask of the minute


# ── the client ─────────────────────────────────────────────────────────────────────────────


@pytest.fixture
def conn(sb, manual_owner):
    sb.state.approve = "auto"  # the pairing itself is approved at once
    c = Connection.pair(
        sb.url,
        name="Busy client",
        profile=None,
        on_link=lambda link, code: None,
        client_id=f"busy-client-{uuid.uuid4().hex[:8]}",
        retries=3,
        backoff=0.05,
    )
    sb.state.approve = "manual"
    yield c
    c.close()


def test_the_client_sends_the_same_ask_again_after_review_busy(sb, conn):
    """ "`REVIEW_BUSY` — other asks from this connection were being saved at the same moment; send this
    one again."""
    held = HeldAsk(sb, conn.tokens.access_token.reveal(), conn.token_id, HELD_BODY)
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the other ask finishes saving while the client waits
        waits.append(seconds)
        assert held.release().status_code == 201

    conn.session.sleep = sleep
    req = conn.request_access(["memory.edit"], reason="Fix typos")
    assert waits == [0.05]  # one short backoff, then the same ask again
    assert req.status == "pending" and req.combined and "memory.edit" in req.permissions, req.raw


def test_the_client_gives_up_after_its_retries_and_says_so(sb, conn):
    held = HeldAsk(sb, conn.tokens.access_token.reveal(), conn.token_id, HELD_BODY)
    waits: list[float] = []
    conn.session.sleep = waits.append
    try:
        with pytest.raises(ReviewBusy) as info:
            conn.request_access(["memory.edit"], reason="Fix typos")
    finally:
        assert held.release().status_code == 201
    assert waits == [0.05, 0.1, 0.2]  # bounded (retries=3), doubling
    err = info.value
    assert err.status == 409 and err.code == "REVIEW_BUSY" and err.sends == 4
    assert "still busy after 4 sends; this ask was not added: send it again in a moment" in str(err)
