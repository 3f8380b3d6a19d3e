"""The HTTP boundary: typed errors, token refresh, the write retry rules, secrets kept out of
logs. Scripted answers on httpx.MockTransport; sleeps are injected and recorded."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import (
    DecoyError,
    InsufficientGrant,
    NotFound,
    RateLimited,
    RevConflict,
    ServerError,
    TokenError,
    TransportError,
)
from decoy_lab.transport.api import Api
from decoy_lab.transport.retry import MAX_RATE_LIMIT_WAIT, send_with_retries
from decoy_lab.transport.tokens import Tokens
from decoy_lab.wire.crypto import AgentKey

from support.answers import OWNER

ACCESS, REFRESH = "at-SECRET-0001", "rt-SECRET-0001"


@pytest.fixture(scope="module")
def key() -> AgentKey:
    return AgentKey.generate()


def policies(version: int) -> dict:
    return {
        "access": {"version": version, "memories": {"save": True}},
        "policies": [{"id": "p", "expires_at": None, "permissions": [{"permissions": ["memory.save"]}]}],
    }


class Script:
    """Answers each path from a list of (status, body) or exceptions; records every request."""

    def __init__(self, **routes):
        self.routes = {k.replace("__", "/"): list(v) for k, v in routes.items()}
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answers = self.routes.get(request.url.path)
        if not answers:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "no route"})
        step = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(step, Exception):
            raise step
        status, body = step
        return httpx.Response(status, json=body)

    def bodies(self, path: str) -> list[bytes]:
        return [r.content for r in self.seen if r.url.path == path]


def conn_for(script: Script, key: AgentKey, **kw) -> Connection:
    sleeps: list[float] = []
    conn = Connection(
        "http://api",
        agent_key=key,
        tokens=Tokens(ACCESS, REFRESH, "tok", access_version=1),
        transport=httpx.MockTransport(script),
        sleep=sleeps.append,
        backoff=0.5,
        **kw,
    )
    conn.sleeps = sleeps  # type: ignore[attr-defined]
    return conn


# -- errors -------------------------------------------------------------------------------------
def test_every_error_answer_becomes_a_typed_error_with_code_and_recovery():
    script = Script(
        **{
            "/a": [
                (
                    403,
                    {
                        "code": "INSUFFICIENT_GRANT",
                        "message": "needs memory.save",
                        "recovery": "request_access",
                        "permission_request": {"permissions": ["memory.save"]},
                    },
                )
            ],
            "/b": [(409, {"code": "REV_CONFLICT", "current_rev": 4})],
            "/c": [(404, {"code": "NOT_FOUND"})],
            "/d": [(503, {"code": "UNAVAILABLE"})],
            "/e": [httpx.ReadTimeout("slow")],
        }
    )
    api = Api("http://api", transport=httpx.MockTransport(script), tokens=Tokens(ACCESS))
    with pytest.raises(InsufficientGrant) as e:
        api.request("POST", "/a", json={})
    assert e.value.permission_request == {"permissions": ["memory.save"]} and e.value.recovery == "request_access"
    with pytest.raises(RevConflict) as e2:
        api.request("PUT", "/b", json={})
    assert e2.value.current_rev == 4
    with pytest.raises(NotFound):
        api.request("GET", "/c")
    with pytest.raises(ServerError):
        api.request("GET", "/d")
    with pytest.raises(TransportError, match="outcome is unknown"):
        api.request("GET", "/e")


def test_insufficient_grant_request_sends_the_permission_request_unchanged(key):
    """ "Send `permission_request` as the body of `grant-request`, unchanged"."""
    ask = {"permissions": ["memory.save"], "reason": "Save what you tell me"}
    script = Script(
        **{
            "/api/agent/context/memory-grantees": [(403, {"code": "INSUFFICIENT_GRANT", "permission_request": ask})],
            "/api/agent/grant-request": [
                (201, {"request_id": "r1", "status": "pending", "permissions": ["memory.save"]})
            ],
        }
    )
    conn = conn_for(script, key)
    with pytest.raises(InsufficientGrant) as e:
        conn.keys()
    req = e.value.request(conn)
    assert json.loads(script.bodies("/api/agent/grant-request")[0]) == ask
    assert (req.request_id, req.status) == ("r1", "pending")


# -- tokens -------------------------------------------------------------------------------------
def test_401_with_recovery_refresh_refreshes_once_and_retries(key, tmp_path):
    """ "`recovery: refresh` (`TOKEN_EXPIRED`) → POST /oauth/token with grant_type=refresh_token"."""
    script = Script(
        **{
            "/api/agent/policies": [(401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}), (200, policies(1))],
            "/oauth/token": [
                (
                    200,
                    {
                        "access_token": "at-SECRET-0002",
                        "refresh_token": "rt-SECRET-0002",
                        "expires_in": 3600,
                        "access_version": 1,
                    },
                )
            ],
        }
    )
    conn = conn_for(script, key)
    conn.access()
    assert conn.tokens.access_token == "at-SECRET-0002" and conn.session.api.refreshes == 1
    form = script.bodies("/oauth/token")[0].decode()
    assert "grant_type=refresh_token" in form and REFRESH in form
    auths = [r.headers["authorization"] for r in script.seen if r.url.path == "/api/agent/policies"]
    assert auths == [f"Bearer {ACCESS}", "Bearer at-SECRET-0002"]


def test_a_second_401_is_not_refreshed_again(key):
    script = Script(
        **{
            "/api/agent/policies": [(401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"})],
            "/oauth/token": [(200, {"access_token": "at-SECRET-0003", "expires_in": 10})],
        }
    )
    with pytest.raises(TokenError):
        conn_for(script, key).access()
    assert len(script.bodies("/oauth/token")) == 1


def test_token_revoked_says_a_new_pairing_is_needed(key):
    script = Script(**{"/api/agent/policies": [(401, {"code": "TOKEN_REVOKED", "recovery": "re_pair"})]})
    with pytest.raises(TokenError) as e:
        conn_for(script, key).access()
    assert e.value.code == "TOKEN_REVOKED" and "new pairing is needed" in str(e.value)
    assert not script.bodies("/oauth/token"), "a revoked token is never refreshed"


def test_policies_are_read_again_when_the_refresh_brings_a_new_access_version(key):
    """ "Re-read it … whenever the `access_version` you hold differs from the one a token response gives you"."""
    script = Script(
        **{
            "/api/agent/policies": [(200, policies(1)), (200, policies(2))],
            "/api/agent/context/memory-grantees": [
                (401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}),
                (200, {"owner_public_key": None, "grantees": []}),
            ],
            "/oauth/token": [(200, {"access_token": "at-SECRET-0004", "access_version": 2})],
        }
    )
    conn = conn_for(script, key)
    assert conn.access().version == 1
    conn.keys()
    assert len([r for r in script.seen if r.url.path == "/api/agent/policies"]) == 2
    assert conn.access(refresh=False).version == 2 and conn.access_version == 2


# -- retries --------------------------------------------------------------------------------------
def test_unknown_outcomes_resend_the_same_body_with_backoff(key):
    """ "If the answer is lost (a network error or a 5xx), resend the same sealed rows": each resend's
    bytes are the first send's bytes, never a body sealed again (a new nonce would differ)."""
    sent, sleeps = [], []

    def send():
        sent.append(1)
        if len(sent) < 4:
            raise [TransportError("dropped"), ServerError(503, "X"), TransportError("timeout")][len(sent) - 1]
        return {"ok": True}

    assert send_with_retries(send, retries=5, backoff=0.5, sleep=sleeps.append) == {"ok": True}
    assert len(sent) == 4 and sleeps == [0.5, 1.0, 2.0]

    # the same three unknown outcomes for a real save, over HTTP: the bytes on the wire are compared
    memories = "/api/agent/context/memories"
    lost = [httpx.ReadError("dropped"), (503, {"code": "UNAVAILABLE"}), httpx.ReadTimeout("timeout")]
    posted: list[bytes] = []
    stored: list[dict] = []

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/agent/context/memory-grantees":
            return httpx.Response(200, json={"owner_public_key": OWNER.public_key_b64, "grantees": []})
        if request.url.path != memories:
            return httpx.Response(404, json={"code": "NOT_FOUND", "message": "no route"})
        if request.method == "GET":  # the read-back after a resend, and the save's verify
            return httpx.Response(200, json={"memories": stored, "spaces": []})
        posted.append(request.content)
        if len(posted) <= len(lost):
            step = lost[len(posted) - 1]
            if isinstance(step, Exception):
                raise step
            return httpx.Response(step[0], json=step[1])
        rows = json.loads(request.content)["rows"]
        stored.extend(rows)
        return httpx.Response(201, json={"created": [r["id"] for r in rows]})

    conn = conn_for(server, key, retries=5)
    mid = conn.save("Waters the plants on Fridays.")
    assert len(posted) == 4 and conn.sleeps == [0.5, 1.0, 2.0]
    assert all(body == posted[0] for body in posted[1:]), "a resend sent other bytes: the rows were sealed again"
    assert [r["id"] for r in json.loads(posted[0])["rows"]] == [mid] and conn.pending == []


def test_retries_stop_after_conn_retries_and_raise_the_last_unknown_outcome():
    sent = []

    def send():
        sent.append(1)
        raise TransportError("dropped")

    with pytest.raises(TransportError):
        send_with_retries(send, retries=3, sleep=lambda s: None)
    assert len(sent) == 4  # the first send and three resends


def test_a_definite_refusal_is_never_retried():
    sent = []

    def send():
        sent.append(1)
        raise RevConflict(409, "REV_CONFLICT", current_rev=2)

    with pytest.raises(RevConflict):
        send_with_retries(send, retries=5, sleep=lambda s: None)
    assert len(sent) == 1


def test_429_waits_retry_after_seconds():
    """ "`429`: wait `retry_after_seconds`"."""
    sent, sleeps = [], []

    def send():
        sent.append(1)
        if len(sent) == 1:
            raise RateLimited(429, "RATE_LIMITED", retry_after=7)
        return "done"

    assert send_with_retries(send, retries=2, sleep=sleeps.append) == "done" and sleeps == [7]


def test_a_429_wait_too_long_for_one_call_is_reported_at_once():
    """A server asking for hours (or for 1e9 s) is not slept through inside a call: the
    RateLimited error carries the wait, and nothing was sent twice."""
    sent, sleeps = [], []

    def send():
        sent.append(1)
        raise RateLimited(429, "RATE_LIMITED", retry_after=MAX_RATE_LIMIT_WAIT + 1)

    with pytest.raises(RateLimited) as got:
        send_with_retries(send, retries=3, sleep=sleeps.append)
    assert got.value.retry_after == MAX_RATE_LIMIT_WAIT + 1 and sent == [1] and sleeps == []


def test_grant_request_waits_on_429_and_joins_an_open_request(key):
    script = Script(
        **{
            "/api/agent/grant-request": [
                (429, {"code": "RATE_LIMITED", "retry_after_seconds": 12}),
                (409, {"code": "GRANT_ALREADY_REQUESTED", "request_id": "r9"}),
            ]
        }
    )
    conn = conn_for(script, key)
    req = conn.send_grant_request({"permissions": ["memory.read"], "reason": "x"})
    assert conn.sleeps == [12] and (req.request_id, req.status) == ("r9", "pending")


# -- secrets ------------------------------------------------------------------------------------
def test_no_log_line_or_repr_shows_a_token_or_the_key(key, caplog):
    script = Script(
        **{
            "/api/agent/policies": [(401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}), (200, policies(1))],
            "/oauth/token": [(200, {"access_token": "at-SECRET-0005", "refresh_token": "rt-SECRET-0005"})],
        }
    )
    caplog.set_level(logging.DEBUG)
    conn = conn_for(script, key)
    conn.access()
    text = caplog.text + repr(conn) + str(conn) + repr(conn.session.api) + repr(conn.tokens) + repr(conn.agent_key)
    pem_body = "".join(conn.agent_key.to_pem().splitlines()[1:-1])
    for secret in (ACCESS, REFRESH, "at-SECRET-0005", "rt-SECRET-0005", pem_body[:40]):
        assert secret not in text
    assert "Bearer" not in caplog.text and "/api/agent/policies" in caplog.text


def test_a_refused_refresh_token_says_a_new_pairing_is_needed(key):
    script = Script(
        **{
            "/api/agent/policies": [(401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"})],
            "/oauth/token": [(400, {"error": "invalid_grant"})],
        }
    )
    with pytest.raises(TokenError) as e:
        conn_for(script, key).access()
    assert e.value.recovery == "re_pair" and "new pairing is needed" in str(e.value)


def test_a_session_that_ended_is_continued_not_re_paired(key):
    """ "`recovery: continue` → `SESSION_ENDED` … the connection lives on"."""
    script = Script(**{"/api/agent/policies": [(401, {"code": "SESSION_ENDED", "recovery": "continue"})]})
    with pytest.raises(TokenError) as e:
        conn_for(script, key).access()
    assert "do not pair anew" in str(e.value) and not script.bodies("/oauth/token")


def test_an_unreachable_server_is_named_with_what_to_do(key):
    """A refused connection never reached the server: say which server and what to check,
    instead of calling a read's outcome "unknown"."""
    conn = conn_for(Script(__api__agent__policies=[httpx.ConnectError("[Errno 111] Connection refused")]), key)
    with pytest.raises(TransportError) as err:
        conn.access()
    text = str(err.value)
    assert "cannot reach http://api" in text and "Connection refused" in text
    assert "is the server running" in text and "outcome is unknown" not in text
    # a dropped answer after sending is still an unknown outcome
    conn = conn_for(Script(__api__agent__policies=[httpx.ReadError("reset")]), key)
    with pytest.raises(TransportError, match="the outcome is unknown"):
        conn.access()


def test_unpair_without_an_advertised_revocation_endpoint_says_where_to_end_it(key):
    """RFC 8414 §2: `revocation_endpoint` is OPTIONAL metadata. Without it nothing is sent, the token
    and the profile stay, and the user is told to end the connection in the Decoy app. (The sandbox
    always advertises one, so this runs against a scripted server.)"""
    from decoy_lab.errors import RevocationUnavailable

    script = Script(**{"/.well-known/oauth-authorization-server": [(200, {"issuer": "http://api"})]})
    conn = conn_for(script, key)
    with pytest.raises(RevocationUnavailable, match="Connected Apps"):
        conn.unpair()
    assert conn.tokens is not None and [r.url.path for r in script.seen] == ["/.well-known/oauth-authorization-server"]


# -- token answers a Bearer header cannot carry; answers nested too deeply ---------------------
@pytest.mark.parametrize("bad", ["\u0080", "a b", "tab\there", "bell\x07", "ok==x"])
@pytest.mark.parametrize("member", ["access_token", "refresh_token"])
def test_a_token_a_bearer_header_cannot_carry_is_a_typed_error(key, member, bad):
    """RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    A refresh answer whose token is not one ends in a TokenError, never a UnicodeEncodeError."""
    answer = {"access_token": "at-NEW", "refresh_token": "rt-NEW", "expires_in": 900, member: bad}
    script = Script(
        **{
            "/api/agent/policies": [(401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"}), (200, policies(1))],
            "/oauth/token": [(200, answer)],
        }
    )
    conn = conn_for(script, key)
    with pytest.raises(DecoyError, match=member):
        conn.access()
    assert not any(r.headers.get("authorization", "").endswith(bad) for r in script.seen[1:] if bad)


def test_an_answer_nested_too_deeply_is_a_typed_error_not_a_recursion_error():
    """A success that cannot be read is no success: its outcome is unknown (a TransportError)."""
    deep = b"[" * 100_000 + b"]" * 100_000

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200 if request.url.path == "/ok" else 400, content=deep)

    api = Api("http://api", transport=httpx.MockTransport(handler), tokens=Tokens(ACCESS))
    with pytest.raises(TransportError, match="not JSON"):
        api.request("GET", "/ok")
    with pytest.raises(Exception) as refused:
        api.request("GET", "/bad")
    assert not isinstance(refused.value, RecursionError)
    assert isinstance(refused.value, DecoyError)
