"""The bearer token on every call and its one refresh, as a server meets them: "`recovery: refresh`
(`TOKEN_EXPIRED`) → POST /oauth/token with grant_type=refresh_token" — either sign alone is enough,
and so is `TOKEN_REPLACED`; any other 401, a body that is no object, or a connection with no
refresh token is the call's answer. The request sent again after a refresh is the same request
(method, body, headers) under the new token. A call with no token, or one a Bearer header cannot
carry, is refused before anything is sent. Hostile and scripted servers over `httpx.MockTransport`."""

from __future__ import annotations

import json
import logging
import threading

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import DecoyError, TokenError
from decoy_lab.secret import Secret
from decoy_lab.transport.auth import Bearer
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, OWNER

ACCESS, REFRESH, NEW = "at-SECRET-0101", "rt-SECRET-0101", "at-SECRET-0102"
POLICIES = {
    "access": {"version": 1, "memories": {"save": True}},
    "policies": [{"id": "p", "expires_at": None, "permissions": [{"permissions": ["memory.save"]}]}],
}
GRANTEES = {"owner_public_key": OWNER.public_key_b64, "grantees": []}


class Server:
    """Answers `/api/agent/policies` and the grantees from scripts (then soundly), refreshes on
    `/oauth/token`, stores a save's rows; records every request."""

    def __init__(self, *first: tuple[int, object]) -> None:
        self.first = list(first)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        path = request.url.path
        if path == "/oauth/token":
            return httpx.Response(200, json={"access_token": NEW, "refresh_token": "rt-SECRET-0102", "expires_in": 900})
        if self.first and path in ("/api/agent/policies", "/api/agent/context/memories"):
            status, body = self.first.pop(0)
            return httpx.Response(
                status, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
            )
        if path == "/api/agent/policies":
            return httpx.Response(200, json=POLICIES)
        if path == "/api/agent/context/memory-grantees":
            return httpx.Response(200, json=GRANTEES)
        if path == "/api/agent/context/spaces":
            return httpx.Response(200, json={"spaces": []})
        if path == "/api/agent/context/memories" and request.method == "POST":
            return httpx.Response(201, json={"created": [r["id"] for r in json.loads(request.content)["rows"]]})
        return httpx.Response(404, json={"code": "NOT_FOUND", "message": "no route"})

    def sent(self, path: str) -> list[httpx.Request]:
        return [r for r in self.seen if r.url.path == path]


def connect(server: Server, *, refresh: str | None = REFRESH, tokens: Tokens | None = None) -> Connection:
    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=tokens if tokens is not None else Tokens(ACCESS, refresh, "tok", access_version=1),
        transport=httpx.MockTransport(server),
        retries=0,
        backoff=0,
        sleep=lambda s: None,
    )


@pytest.mark.parametrize(
    "body",
    [{"code": "TOKEN_EXPIRED"}, {"recovery": "refresh"}, {"code": "TOKEN_REPLACED"}],
    ids=["TOKEN_EXPIRED alone", "recovery refresh alone", "TOKEN_REPLACED"],
)
def test_either_sign_of_an_expired_token_refreshes_it_once_and_sends_again(body, caplog):
    server = Server((401, body))
    conn = connect(server)
    with caplog.at_level(logging.DEBUG, logger="decoy_lab.transport.auth"):
        assert conn.access().version == 1
    said = [r.getMessage() for r in caplog.records if r.name == "decoy_lab.transport.auth"]
    assert said == ["GET /api/agent/policies → 401 (the token expired): refreshing"]
    assert len(server.sent("/oauth/token")) == 1
    auths = [r.headers["authorization"] for r in server.sent("/api/agent/policies")]
    assert auths == [f"Bearer {ACCESS}", f"Bearer {NEW}"]


@pytest.mark.parametrize(
    "body",
    [
        {"code": "TOKEN_REVOKED", "recovery": "re_pair"},
        {"code": "SOMETHING_ELSE"},
        ["TOKEN_EXPIRED"],
        "TOKEN_EXPIRED",
    ],
    ids=["revoked", "another code", "a list", "a string"],
)
def test_any_other_401_is_the_calls_answer_and_nothing_is_refreshed(body):
    server = Server((401, body))
    with pytest.raises(TokenError) as err:
        connect(server).access()
    assert err.value.status == 401 and server.sent("/oauth/token") == []
    assert len(server.sent("/api/agent/policies")) == 1


def test_without_a_refresh_token_an_expired_token_is_the_calls_answer():
    server = Server((401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}))
    with pytest.raises(TokenError) as err:
        connect(server, refresh=None).access()
    assert err.value.code == "TOKEN_EXPIRED", "the server's answer, not a refresh that could not be tried"
    assert server.sent("/oauth/token") == [] and len(server.sent("/api/agent/policies")) == 1


def test_a_write_sent_again_after_a_refresh_is_the_same_request_under_the_new_token():
    """The save's POST meets an expired token: the one sent after the refresh carries the same
    body, the same headers (its JSON type among them), and only the token changed."""
    server = Server((401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}))
    connect(server).save("Prefers tea.")
    first, again = [r for r in server.sent("/api/agent/context/memories") if r.method == "POST"][:2]
    assert again.content == first.content and json.loads(again.content)["rows"]
    assert again.headers["content-type"] == first.headers["content-type"] == "application/json"
    assert {k: v for k, v in again.headers.items() if k != "authorization"} == {
        k: v for k, v in first.headers.items() if k != "authorization"
    }
    assert (first.headers["authorization"], again.headers["authorization"]) == (f"Bearer {ACCESS}", f"Bearer {NEW}")
    assert again.extensions.get("timeout") == first.extensions.get("timeout") is not None


def test_a_call_without_a_token_is_refused_before_anything_is_sent():
    server = Server()
    conn = Connection("http://decoy.invalid", agent_key=AGENT, transport=httpx.MockTransport(server), retries=0)
    with pytest.raises(TokenError) as err:
        conn.access()
    e = err.value
    assert (e.status, e.code, e.recovery) == (401, "NO_TOKEN", "re_pair")
    assert e.message == "this connection has no token yet: pair first"
    assert server.seen == []


def test_a_saved_token_a_bearer_header_cannot_carry_is_refused_before_anything_is_sent():
    """A hand-edited profile: its token is never put in a header."""
    server = Server()
    with pytest.raises(DecoyError) as err:
        connect(server, tokens=Tokens("has a space", REFRESH, "tok", access_version=1)).access()
    assert str(err.value) == "the saved access token holds characters a Bearer token cannot carry: pair again"
    assert server.seen == []


def test_the_bearer_shows_no_token_in_its_repr():
    class Holder:
        tokens = Tokens(ACCESS, REFRESH, "tok", access_version=1)

        def refresh(self, refused: Secret | None = None) -> Tokens:
            raise AssertionError("not asked")

    shown = repr(Bearer(Holder()))
    assert ACCESS not in shown and shown.startswith("<Bearer ")


def test_an_answered_call_is_sent_once():
    server = Server()
    assert connect(server).access().version == 1
    assert len(server.sent("/api/agent/policies")) == 1 and server.sent("/oauth/token") == []


def test_a_refused_refresh_is_raised_and_the_call_is_not_sent_again():
    class Refusing(Server):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/oauth/token":
                self.seen.append(request)
                return httpx.Response(400, json={"error": "invalid_grant"})
            return super().__call__(request)

    server = Refusing((401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}))
    with pytest.raises(TokenError, match="new pairing is needed"):
        connect(server).access()
    assert len(server.sent("/oauth/token")) == 1 and len(server.sent("/api/agent/policies")) == 1


def test_two_calls_refused_the_same_token_refresh_it_once():
    """Two threads' calls meet the same expired token: one refreshes, the other finds the newer
    token at hand and sends nothing to /oauth/token (a refresh token is single-use)."""

    class Both(Server):
        both_refused = threading.Barrier(2, timeout=30)

        def __call__(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/api/agent/policies" and request.headers["authorization"] == f"Bearer {ACCESS}":
                self.both_refused.wait()  # both calls are in flight with the old token
                self.seen.append(request)
                return httpx.Response(401, json={"code": "TOKEN_EXPIRED", "recovery": "refresh"})
            return super().__call__(request)

    server = Both()
    api = connect(server).session.api
    answers: list[object] = []
    calls = [
        threading.Thread(target=lambda: answers.append(api.request("GET", "/api/agent/policies"))) for _ in range(2)
    ]
    for t in calls:
        t.start()
    for t in calls:
        t.join(60)
    assert answers == [POLICIES, POLICIES]
    assert len(server.sent("/oauth/token")) == 1
