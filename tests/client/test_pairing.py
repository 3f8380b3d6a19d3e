"""Pairing rules, unit-tested against a scripted server on httpx.MockTransport (no sleeps:
the handle's `wait` and `clock` are injected)."""

from __future__ import annotations

import json
import threading
import urllib.parse

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import PairingCancelled, PairingError
from decoy_lab.protocol.pairing import authorization_details, selection_row
from decoy_lab.wire.crypto import AgentKey


@pytest.fixture(scope="module")
def key() -> AgentKey:
    return AgentKey.generate()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


class FakeOAuth:
    """Answers PAR, device, token and policies from a script of token answers."""

    def __init__(self, token_script: list, *, interval: int = 5, expires_in: int = 600, policies_empty: int = 0):
        self.script = list(token_script)
        self.interval = interval
        self.expires_in = expires_in
        self.policies_empty = policies_empty
        self.calls: list[tuple[str, str, dict]] = []
        self.device_body: dict | None = None
        self.par_body: dict | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body: dict = {}
        if request.content:
            if request.headers.get("content-type", "").startswith("application/json"):
                body = json.loads(request.content)
            else:
                body = dict(urllib.parse.parse_qsl(request.content.decode()))
        self.calls.append((request.method, path, body))
        if path == "/oauth/par":
            self.par_body = body
            return httpx.Response(201, json={"request_uri": "urn:decoy:par:1", "expires_in": 600})
        if path == "/oauth/device":
            self.device_body = body
            return httpx.Response(
                200,
                json={
                    "device_code": "DEV-SECRET",
                    "user_code": "ABCD-EFGH",
                    "verification_uri": "https://sb/connect",
                    "verification_uri_complete": "https://sb/connect?code=ABCD-EFGH",
                    "expires_in": self.expires_in,
                    "interval": self.interval,
                },
            )
        if path == "/oauth/token":
            step = self.script.pop(0) if self.script else "authorization_pending"
            if isinstance(step, Exception):
                raise step
            if isinstance(step, httpx.Response):
                return step
            if step == "ok":
                return httpx.Response(
                    200,
                    json={
                        "access_token": "AT-SECRET",
                        "refresh_token": "RT-SECRET",
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "access_version": 1,
                        "token_id": "tok-1",
                    },
                )
            if isinstance(step, int):
                return httpx.Response(step, json={"error": "server_error"})
            return httpx.Response(400, json={"error": step})
        if path == "/api/agent/policies":
            if self.policies_empty > 0:
                self.policies_empty -= 1
                return httpx.Response(200, json={"access": {"version": 1}, "policies": []})
            return httpx.Response(
                200,
                json={
                    "access": {"version": 1, "memories": {"save": True, "read": {"all": True}}},
                    "policies": [
                        {
                            "id": "p1",
                            "expires_at": None,
                            "permissions": [
                                {"permissions": ["memory.read"], "named": True},
                                {"permissions": ["memory.save"], "named": True},
                            ],
                        }
                    ],
                },
            )
        return httpx.Response(404, json={"code": "NOT_FOUND"})

    def polls(self) -> int:
        return sum(1 for _, p, _ in self.calls if p == "/oauth/token")


def start(server: FakeOAuth, key: AgentKey, clock: FakeClock, **kw):
    return Connection.start_pairing(
        "http://sb",
        name="Test agent",
        transport=httpx.MockTransport(server),
        profile=None,
        agent_key=key,
        wait=clock.wait,
        clock=clock,
        **kw,
    )


# -- what is asked ------------------------------------------------------------------------------
def test_default_ask_is_memory_read_and_memory_save_in_rows_of_their_own():
    """ "`memory.save` … asked alone"; the default is memory.read and memory.save."""
    assert authorization_details() == [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]


def test_plain_names_share_a_row_and_alone_names_get_their_own():
    rows = authorization_details(["memory.read", "memory.edit", "everything", "account.create"])
    assert rows == [
        {"permissions": ["memory.read", "memory.edit"]},
        {"permissions": ["everything"]},
        {"permissions": ["account.create"]},
    ]


def test_full_rows_pass_through_and_bad_rows_are_refused():
    rows = authorization_details([{"permissions": ["memory.read"], "datatypes": ["food"]}])
    assert rows == [{"permissions": ["memory.read"], "datatypes": ["food"]}]
    with pytest.raises(PairingError, match="one selection"):
        authorization_details([{"permissions": ["memory.read"], "datatypes": ["food"], "about": ["topic:x"]}])
    with pytest.raises(PairingError, match="unknown keys"):
        authorization_details([{"permissions": ["memory.read"], "kind": "memory"}])
    with pytest.raises(PairingError, match="asked alone"):
        authorization_details([{"permissions": ["memory.save", "memory.read"]}])
    with pytest.raises(PairingError, match="always ask"):
        authorization_details([])


def test_selection_row_splits_alone_names_and_prefixes_topic_ids():
    rows = selection_row(["memory.read", "memory.save"], about=["abc"])
    assert rows == [{"permissions": ["memory.read"], "about": ["topic:abc"]}, {"permissions": ["memory.save"]}]
    with pytest.raises(PairingError):
        selection_row(["memory.save"], datatypes=["food"])
    assert selection_row(["memory.read", "memory.save"]) == [
        {"permissions": ["memory.read"]},
        {"permissions": ["memory.save"]},
    ]


# -- the device flow ------------------------------------------------------------------------------
def test_pairing_sends_par_rows_and_the_agent_key_and_hands_out_the_link(key):
    server = FakeOAuth(["authorization_pending", "ok"])
    clock = FakeClock()
    links = []
    h = start(server, key, clock, on_link=lambda link, code: links.append((link, code)))
    conn = h.result(5)
    assert links == [("https://sb/connect?code=ABCD-EFGH", "ABCD-EFGH")]
    assert server.par_body["authorization_details"] == [
        {"permissions": ["memory.read"]},
        {"permissions": ["memory.save"]},
    ]
    assert server.device_body["request_uri"] == "urn:decoy:par:1"
    assert server.device_body["agent_public_key"] == key.public_key_b64
    assert server.device_body["name"] == "Test agent"
    assert h.status == "done" and conn.token_id == "tok-1" and conn.access_version == 1
    assert h.waits == [5], "polls at once, then every `interval` seconds"


def test_slow_down_adds_five_seconds_to_the_interval(key):
    """RFC 8628 §3.5: on slow_down the interval MUST be increased by 5 seconds for all later polls."""
    server = FakeOAuth(["authorization_pending", "slow_down", "authorization_pending", "slow_down", "ok"], interval=2)
    clock = FakeClock()
    h = start(server, key, clock)
    h.result(5)
    assert h.waits == [2, 7, 7, 12]


def test_pairing_stops_at_expires_in(key):
    """ "Poll (every `interval` seconds, up to `expires_in`)"."""
    server = FakeOAuth([], interval=5, expires_in=30)
    clock = FakeClock()
    h = start(server, key, clock)
    with pytest.raises(PairingError) as info:
        h.result(5)
    assert info.value.code == "expired_token" and h.status == "expired"
    assert sum(h.waits) == pytest.approx(30) and server.polls() <= 7


def test_pairing_survives_transient_errors(key):
    server = FakeOAuth([503, httpx.ConnectError("boom"), 429, "authorization_pending", "ok"], interval=1)
    clock = FakeClock()
    conn = start(server, key, clock).result(5)
    assert server.polls() == 5 and conn.tokens.access_token == "AT-SECRET"


def test_no_answer_doubles_the_polling_interval(key):
    """RFC 8628 §3.5: "On encountering a connection timeout, clients MUST unilaterally reduce their polling
    frequency before retrying. The use of an exponential backoff algorithm to achieve this, such as
    doubling the polling interval on each such connection timeout, is RECOMMENDED." (The sandbox cannot
    drop a poll's answer, so this runs against a scripted server.)"""
    server = FakeOAuth(
        [httpx.ReadTimeout("slow"), httpx.ConnectError("down"), "authorization_pending", "ok"], interval=2
    )
    h = start(server, key, FakeClock())
    h.result(5)
    assert h.waits == [4, 8, 8] and server.polls() == 4


def test_a_rate_limited_poll_waits_its_retry_after_once(key):
    """A `429` (the spec's `PairingRateLimited`) or a 503 with `Retry-After` delays the next poll that
    long; later polls go back to `interval`. (The spec states no pairing limit the sandbox could enforce.)"""
    limited = httpx.Response(429, headers={"Retry-After": "30"}, json={"error": "rate_limited"})
    busy = httpx.Response(503, json={"error": "unavailable", "retry_after_seconds": 12})
    server = FakeOAuth([limited, "authorization_pending", busy, "ok"], interval=2)
    h = start(server, key, FakeClock())
    h.result(5)
    assert h.waits == [30, 2, 12]


def test_a_rate_limited_pairing_request_waits_the_retry_after_header(key):
    """PAR answers `'429': { $ref: '#/components/responses/PairingRateLimited' }`: wait, then ask again."""
    answers = [httpx.Response(429, headers={"Retry-After": "7"}, json={"code": "RATE_LIMITED"})]
    server = FakeOAuth(["ok"])

    def par_limited_once(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/oauth/par" and answers:
            return answers.pop()
        return server(request)

    clock = FakeClock()
    h = Connection.start_pairing(
        "http://sb",
        name="Test agent",
        transport=httpx.MockTransport(par_limited_once),
        profile=None,
        agent_key=key,
        wait=clock.wait,
        clock=clock,
    )
    h.result(5)
    assert h.waits == [] and clock.now == 1007.0  # the PAR retry waited 7 s; the first poll went at once


def test_denial_is_a_pairing_error_with_the_code(key):
    server = FakeOAuth(["authorization_pending", "access_denied"], interval=1)
    h = start(server, key, FakeClock())
    with pytest.raises(PairingError) as info:
        h.result(5)
    assert info.value.code == "access_denied" and h.status == "denied"
    assert "declined" in str(info.value)


def test_expired_token_from_the_server_ends_the_pairing(key):
    h = start(FakeOAuth(["expired_token"], interval=1), key, FakeClock())
    with pytest.raises(PairingError) as info:
        h.result(5)
    assert info.value.code == "expired_token"


def test_cancel_stops_a_waiting_pairing_and_reports_status(key):
    server = FakeOAuth([], interval=1)
    statuses = []
    gate = threading.Event()

    def wait(seconds: float) -> None:
        gate.wait(2)

    h = Connection.start_pairing(
        "http://sb",
        name="x",
        transport=httpx.MockTransport(server),
        profile=None,
        agent_key=key,
        wait=wait,
        on_status=lambda hd: statuses.append(hd.status),
    )
    while h.status != "waiting":
        threading.Event().wait(0.01)
    assert h.link == "https://sb/connect?code=ABCD-EFGH" and h.user_code == "ABCD-EFGH"
    assert h.expires_at is not None and 590 < h.seconds_left() <= 600
    h.cancel()
    gate.set()
    with pytest.raises(PairingCancelled):
        h.result(5)
    assert statuses[0] == "waiting" and statuses[-1] == "cancelled"


def test_pair_returns_only_once_policies_show_the_grant(key):
    """ "An approved screen is not a working connection until /oauth/token returned a token and
    /policies shows the grant."""
    server = FakeOAuth(["ok"], interval=1, policies_empty=2)
    conn = start(server, key, FakeClock()).result(5)
    policy_calls = [c for c in server.calls if c[1] == "/api/agent/policies"]
    assert len(policy_calls) == 3
    assert conn.access(refresh=False).names == {"memory.read", "memory.save"}


def test_device_code_and_tokens_stay_out_of_reprs(key):
    server = FakeOAuth(["ok"], interval=1)
    h = start(server, key, FakeClock())
    conn = h.result(5)
    for text in (repr(h), repr(h.session), repr(conn), str(conn), repr(conn.tokens)):
        assert "DEV-SECRET" not in text and "AT-SECRET" not in text and "RT-SECRET" not in text


def test_each_new_pairing_gets_its_own_client_id(key):
    """The server continues a live connection paired again with the same client_id (a reconnect)."""
    ids = []
    for _ in range(2):
        server = FakeOAuth(["ok"], interval=1)
        conn = start(server, key, FakeClock()).result(5)
        ids.append(server.device_body["client_id"])
        assert conn.client_id == ids[-1] and server.par_body["client_id"] == ids[-1]
    assert ids[0] != ids[1] and all(i.startswith("decoy-lab-") for i in ids)


def test_a_lost_device_answer_is_asked_again(key):
    server = FakeOAuth(["ok"], interval=1)
    real = server.__call__
    failures = [httpx.ConnectError("down")]

    def flaky(request):
        if request.url.path == "/oauth/device" and failures:
            raise failures.pop()
        return real(request)

    h = Connection.start_pairing(
        "http://sb", name="x", transport=httpx.MockTransport(flaky), profile=None, agent_key=key, wait=FakeClock().wait
    )
    assert h.result(10).token_id == "tok-1"
    assert [p for _, p, _ in server.calls].count("/oauth/device") == 1


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:8787", "ftp://host", "http://"])
def test_a_base_url_that_is_not_http_is_refused_before_anything_starts(key, url):
    """A typo in the server URL gets a plain answer, not a network error from a background thread."""
    with pytest.raises(PairingError, match="http://") as err:
        Connection.start_pairing(url, name="x", agent_key=key, profile=None)
    assert repr(url) in str(err.value) and err.value.code == "invalid_url"
