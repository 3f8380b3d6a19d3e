"""`decoy-lab check`'s pairing.* rules (conformance/rules/pairing.py) on hand-made records of the
device grant and the tokens after it: polls faster than `interval` or than a slow_down asks, a
refresh token used twice or never used on a 401, a token in a URL, a pairing that names no
permissions, a client_uri that is no public site, a reconnect that refreshes or changes client_id.
Each record breaks (or keeps) one sentence of 001 (the rules quote them: `--rules-md`), e.g. "Poll
(every `interval` seconds, up to `expires_in`) until they approve" and "The host must be a public
domain name: no IP address, `localhost` or internal name, no port and no credentials".
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID

DEVICE, TOKEN = "/oauth/device", "/oauth/token"
DC = "urn:ietf:params:oauth:grant-type:device_code"
NAMED = {"client_id": "my-agent", "name": "My Agent", "authorization_details": [{"permissions": ["memory.save"]}]}


def x(i: int, method: str, path: str, status: int | None = 200, request: Any = None, response: Any = None,
      form: dict | None = None, query: str = "", token: str = "", start: float | None = None) -> Exchange:  # fmt: skip
    t = float(i) if start is None else start
    ended = "answered" if status is not None else "no answer"
    return Exchange(i, method, path, query, status, ended, t, t + 0.1, request, response, form or {}, [], token)


def judge(rule: str, *exchanges: Exchange) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("clean", list(exchanges)))
    for e in result.evidence:  # a line that names an exchange links it first (the report's reproducer)
        named = re.findall(r"#(\d+)", e)
        assert not named or int(named[0]) in e.exchanges, e
    return result.status, [str(e) for e in result.evidence]


def links(rule: str, *exchanges: Exchange) -> list[tuple[int, ...]]:
    return [e.exchanges for e in BY_ID[rule].evaluate(Run("clean", list(exchanges))).evidence]


def device(i: int = 0, code: Any = "dc-1", interval: Any = 5, body: Any = None, **kw: Any) -> Exchange:
    answer = {
        "device_code": code,
        "interval": interval,
        "verification_uri_complete": "https://decoys.me/connect?code=x",
    }
    return x(i, "POST", DEVICE, 200, NAMED if body is None else body, answer, **kw)


def poll(
    i: int, start: float, answer: str = "authorization_pending", code: str = "dc-1", interval: Any = None
) -> Exchange:
    body: dict[str, Any] = {"error": answer}
    if interval is not None:
        body["interval"] = interval
    status = 200 if answer == "ok" else 400
    return x(i, "POST", TOKEN, status, None, body, {"grant_type": DC, "device_code": code}, start=start)


# -- pairing.poll-interval, pairing.slow-down ------------------------------------------------------


def test_polls_every_interval_pass_and_faster_ones_fail():
    status, evidence = judge("pairing.poll-interval", device(), poll(1, 1.0), poll(2, 6.0), poll(3, 10.6, "ok"))
    assert status == PASSED
    assert evidence == [
        f"POST {TOKEN} #2: polled 5.0 s after #1 (interval 5 s)",
        f"POST {TOKEN} #3: polled 4.6 s after #2 (interval 5 s)",
    ]
    status, evidence = judge("pairing.poll-interval", device(), poll(1, 1.0), poll(2, 5.4))
    assert status == FAILED and evidence == [f"POST {TOKEN} #2: polled 4.4 s after #1 (interval 5 s)"]
    assert (
        judge("pairing.poll-interval", device(interval=None), poll(1, 1.0), poll(2, 5.4))[0] == FAILED
    )  # 5 by default
    assert judge("pairing.poll-interval", device(interval=2), poll(1, 1.0), poll(2, 2.6))[0] == PASSED


def test_only_the_polls_of_this_pairings_code_count():
    other = poll(2, 1.5, code="dc-2")
    assert judge("pairing.poll-interval", device(), poll(1, 1.0), other)[0] == NOT_EXERCISED
    refresh = x(
        2,
        "POST",
        TOKEN,
        200,
        None,
        {},
        {"grant_type": "refresh_token", "refresh_token": "r", "device_code": "dc-1"},
        start=1.5,
    )
    assert judge("pairing.poll-interval", device(), poll(1, 1.0), refresh)[0] == NOT_EXERCISED
    codeless = device(code="")
    assert judge("pairing.poll-interval", codeless, poll(1, 1.0, code=""), poll(2, 1.5, code=""))[0] == NOT_EXERCISED
    unanswered = x(0, "POST", DEVICE, 200, NAMED, ["dc-1"])
    assert judge("pairing.poll-interval", unanswered, poll(1, 1.0), poll(2, 1.5))[0] == NOT_EXERCISED
    two = [device(0, code="dc-0"), device(0, code="dc-1"), poll(1, 1.0), poll(2, 1.5)]  # the first pairing never polled
    assert judge("pairing.poll-interval", *two)[0] == FAILED
    many = [device()] + [poll(i, i * 6.0) for i in range(1, 7)]
    assert len(judge("pairing.poll-interval", *many)[1]) == 3
    fast = [device()] + [poll(i, i * 1.0) for i in range(1, 7)]
    assert len(judge("pairing.poll-interval", *fast)[1]) == 3


def test_after_slow_down_the_interval_grows_by_five_seconds():
    seq = [device(), poll(1, 1.0, "slow_down"), poll(2, 11.0), poll(3, 21.0, "ok")]
    status, evidence = judge("pairing.slow-down", *seq)
    assert status == PASSED and evidence == [f"POST {TOKEN} #2: polled 10.0 s after the slow_down of #1 (owed 10 s)"]
    assert judge("pairing.poll-interval", *seq)[1] == [f"POST {TOKEN} #3: polled 10.0 s after #2 (interval 10 s)"]
    status, evidence = judge("pairing.slow-down", device(), poll(1, 1.0, "slow_down"), poll(2, 7.0))
    assert status == FAILED and evidence == [f"POST {TOKEN} #2: polled 6.0 s after the slow_down of #1 (owed 10 s)"]
    # the server may ask for more than five seconds more
    status, evidence = judge("pairing.slow-down", device(), poll(1, 1.0, "slow_down", interval=20), poll(2, 12.0))
    assert status == FAILED and evidence[0].endswith("(owed 20 s)")
    assert judge("pairing.slow-down", device(), poll(1, 1.0, "slow_down", interval=3), poll(2, 10.6))[0] == PASSED
    assert judge("pairing.slow-down", device(), poll(1, 1.0), poll(2, 7.0))[0] == NOT_EXERCISED
    assert judge("pairing.poll-interval", device(), poll(1, 1.0, "slow_down"), poll(2, 7.0))[0] == NOT_EXERCISED
    twice = [device(), poll(1, 1.0, "slow_down"), poll(2, 11.0, "slow_down"), poll(3, 24.0)]
    assert judge("pairing.slow-down", *twice)[1] == [
        f"POST {TOKEN} #3: polled 13.0 s after the slow_down of #2 (owed 15 s)"
    ]
    many = [device(), *(poll(i, i * 40.0, "slow_down") for i in range(1, 6)), poll(6, 240.0)]
    assert len(judge("pairing.slow-down", *many)[1]) == 3
    fast = [device(), *(poll(i, float(i), "slow_down") for i in range(1, 6)), poll(6, 6.0)]
    assert len(judge("pairing.slow-down", *fast)[1]) == 3


# -- pairing.refresh-once --------------------------------------------------------------------------


def refresh(i: int, used: str = "rt-1", status: int | None = 200, **kw: Any) -> Exchange:
    return x(i, "POST", TOKEN, status, None, {}, {"grant_type": "refresh_token", "refresh_token": used}, **kw)


def expired(i: int, token: str = "t1", code: str = "TOKEN_EXPIRED", recovery: Any = "refresh") -> Exchange:
    return x(i, "GET", MEMORIES, 401, None, {"code": code, "recovery": recovery}, token=token)


def test_each_refresh_token_used_once_passes_and_twice_fails():
    status, evidence = judge("pairing.refresh-once", refresh(1, "rt-1"), refresh(2, "rt-2"))
    assert status == PASSED and evidence == [
        f"POST {TOKEN} #1: refreshed with a token used once",
        f"POST {TOKEN} #2: refreshed with a token used once",
    ]
    status, evidence = judge("pairing.refresh-once", refresh(1), refresh(2))
    assert status == FAILED and evidence == [
        f"POST {TOKEN} #2: refresh token rt-1 sent again (already used at #1; they rotate)"
    ]
    lost = refresh(1, status=None)  # its answer was lost: sending it again is the retry
    assert judge("pairing.refresh-once", lost, refresh(2))[0] == PASSED
    assert len(judge("pairing.refresh-once", *(refresh(i, f"rt-{i}") for i in range(1, 6)))[1]) == 3


def test_a_401_asking_for_a_refresh_must_be_met_by_one():
    assert judge("pairing.refresh-once", expired(1), refresh(2))[0] == PASSED
    status, evidence = judge("pairing.refresh-once", expired(1))
    assert status == FAILED
    assert evidence == [
        f"GET {MEMORIES} #1: 401 TOKEN_EXPIRED with recovery: refresh, and the agent never refreshed "
        "(no POST /oauth/token with grant_type=refresh_token after it)"
    ]
    status, evidence = judge("pairing.refresh-once", expired(1), device(2))
    assert status == FAILED and evidence == [
        f"POST {DEVICE} #2: paired again after 401 TOKEN_EXPIRED at #1 instead of refreshing"
    ]
    other = x(2, "POST", "/oauth/revoke", 200, None, {}, {"grant_type": "x"})  # the next /oauth/ call is no refresh
    assert judge("pairing.refresh-once", expired(1), other, refresh(3))[0] == FAILED
    for trigger in (expired(1, code="TOKEN_REPLACED", recovery=None), expired(1, code="X", recovery="refresh")):
        assert judge("pairing.refresh-once", trigger)[0] == FAILED
    assert judge("pairing.refresh-once", expired(1, code="X", recovery="re_pair"))[0] == NOT_EXERCISED
    forbidden = x(1, "GET", MEMORIES, 403, None, {"code": "TOKEN_EXPIRED", "recovery": "refresh"})
    assert judge("pairing.refresh-once", forbidden)[0] == NOT_EXERCISED
    # one trigger per token: the same expired token met twice is one case
    status, evidence = judge("pairing.refresh-once", expired(1), expired(2))
    assert status == FAILED and len(evidence) == 1
    assert len(judge("pairing.refresh-once", expired(1, token="a"), expired(2, token="b"))[1]) == 2
    listed = x(1, "GET", MEMORIES, 401, None, ["refresh"])
    assert judge("pairing.refresh-once", listed)[0] == NOT_EXERCISED


# -- pairing.no-token-in-url -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("access_token=abc", "access_token"),
        ("Refresh_Token=abc&x=1", "Refresh_Token"),
        ("code=1&device_code=2", "code, device_code"),
        ("id_token=", "id_token"),
        ("q=sha256:0123abcd", "q"),
    ],
)
def test_a_secret_in_a_url_fails(query, named):
    status, evidence = judge("pairing.no-token-in-url", x(1, "GET", MEMORIES, query=query, token="t"))
    assert status == FAILED and evidence == [f"GET {MEMORIES} #1: a secret in the URL ({named}=…)"]


def test_tokens_in_the_header_only_pass():
    seq = [
        x(1, "GET", MEMORIES, query="limit=5", token="t"),
        x(2, "GET", MEMORIES, token="t"),
        x(3, "GET", "/oauth/device"),
    ]
    status, evidence = judge("pairing.no-token-in-url", *seq)
    assert status == PASSED and evidence == [
        "2 authenticated requests sent their token in the Authorization header only"
    ]
    assert judge("pairing.no-token-in-url", x(1, "GET", MEMORIES, query="q=sha256:0123"))[0] == NOT_EXERCISED
    many = [x(i, "GET", MEMORIES, query="token=a", token="t") for i in range(1, 6)]
    assert len(judge("pairing.no-token-in-url", *many, x(9, "GET", MEMORIES, token="t"))[1]) == 3


# -- pairing.ask-by-name ---------------------------------------------------------------------------


def test_a_pairing_that_names_its_permissions_passes():
    status, evidence = judge("pairing.ask-by-name", device())
    assert status == PASSED and evidence == [f"POST {DEVICE} #0: asks by name for [{{'permissions': ['memory.save']}}]"]
    par = device(body={"name": "A", "request_uri": "urn:par:1"})
    assert judge("pairing.ask-by-name", par)[1] == [f"POST {DEVICE} #0: asks by name for a PAR request_uri"]
    form = x(
        0,
        "POST",
        DEVICE,
        200,
        None,
        {},
        {"name": "A", "authorization_details": json.dumps([{"permissions": ["memory.read"]}])},
    )
    assert judge("pairing.ask-by-name", form)[0] == PASSED
    assert len(judge("pairing.ask-by-name", *(device(i) for i in range(5)))[1]) == 3


@pytest.mark.parametrize(
    "details",
    [
        None,
        [],
        [{"permissions": []}],
        [{"scope": "memory"}],
        ["memory.save"],
        [{"permissions": "memory.save"}],
        "not json",
        "{}",
    ],
)
def test_a_pairing_that_names_no_permissions_fails(details):
    body: dict[str, Any] = {"client_id": "a", "name": "A"}
    if details is not None:
        body["authorization_details"] = details
    status, evidence = judge("pairing.ask-by-name", x(0, "POST", DEVICE, 200, body, {}))
    assert status == FAILED and evidence[0].startswith(
        f"POST {DEVICE} #0: pairs without naming permissions in authorization_details (sent: ["
    )


def test_a_pairing_without_a_display_name_fails():
    status, evidence = judge("pairing.ask-by-name", device(body={**NAMED, "name": ""}))
    assert status == FAILED and evidence == [
        f"POST {DEVICE} #0: pairs without a display name for the owner's approval screen"
    ]
    status, evidence = judge("pairing.ask-by-name", x(0, "POST", DEVICE, 200, None, {}, {"client_id": "a"}))
    assert evidence == [
        f"POST {DEVICE} #0: pairs without naming permissions in authorization_details (sent: ['client_id'])"
    ]


# -- pairing.client-uri-public ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "fault"),
    [
        ("http://agent.example.com", "http scheme, not https"),
        ("agent.example.com", "no scheme, not https"),
        ("https://", "no host"),
        ("https://me:pw@agent.acme.com", "credentials in it"),
        ("https://me@agent.acme.com", "credentials in it"),
        ("https://agent.acme.com:8443", "a port (8443)"),
        ("https://10.0.0.1", "an IP address"),
        ("https://[::1]/x", "an IP address"),
        ("https://localhost", "'localhost' is not a public domain name"),
        ("https://intranet", "'intranet' is not a public domain name"),
        ("https://box.corp", "'box.corp' is not a public domain name"),
        ("https://Agent.Example./", "'agent.example' is not a public domain name"),
        ("https://agent.acme.com:99999", "not a URL"),
        (7, "not a string"),
    ],
)
def test_a_client_uri_that_is_no_public_site_fails(uri, fault):
    status, evidence = judge("pairing.client-uri-public", device(body={**NAMED, "client_uri": uri}))
    assert status == FAILED and evidence == [f"POST {DEVICE} #0: client_uri {str(uri)[:80]!r}: {fault}"]


def test_a_public_client_uri_passes_unless_the_server_ignored_it():
    status, evidence = judge(
        "pairing.client-uri-public", device(body={**NAMED, "client_uri": "https://agent.acme.com/about"})
    )
    assert status == PASSED and evidence == [
        f"POST {DEVICE} #0: client_uri 'https://agent.acme.com/about' names a public https site"
    ]
    warned = x(
        0,
        "POST",
        "/oauth/par",
        201,
        {"client_uri": "https://agent.acme.com"},
        {"warnings": ["icon_ignored", "client_uri_ignored: no favicon"]},
    )
    status, evidence = judge("pairing.client-uri-public", warned)
    assert status == FAILED
    assert evidence == [
        "POST /oauth/par #0: client_uri 'https://agent.acme.com': refused by the server; the answer warns 'client_uri_ignored: no favicon'"
    ]
    form = x(0, "POST", DEVICE, 200, None, ["x"], {"client_uri": "http://a.acme.com"})
    assert judge("pairing.client-uri-public", form)[1][0].endswith("http scheme, not https")
    assert judge("pairing.client-uri-public", device())[0] == NOT_EXERCISED
    assert (
        judge("pairing.client-uri-public", x(0, "GET", DEVICE, 200, {"client_uri": "http://a"}, {}))[0] == NOT_EXERCISED
    )
    assert (
        judge("pairing.client-uri-public", x(0, "POST", "/oauth/token", 200, {"client_uri": "http://a"}, {}))[0]
        == NOT_EXERCISED
    )
    long = "https://agent.acme.com/" + "p" * 100
    assert judge("pairing.client-uri-public", device(body={**NAMED, "client_uri": long}))[1][0].endswith(
        f"{long[:80]!r} names a public https site"
    )
    many = [device(i, body={**NAMED, "client_uri": "https://a.acme.com"}) for i in range(5)]
    assert len(judge("pairing.client-uri-public", *many)[1]) == 3


# -- pairing.continue-session ----------------------------------------------------------------------


def ended(i: int, recovery: str, token: str = "t1") -> Exchange:
    return x(i, "GET", MEMORIES, 401, None, {"code": "CONNECTION_ENDED", "recovery": recovery}, token=token)


def test_a_continue_is_met_by_reconnecting_as_itself():
    seq = [device(0), ended(1, "continue"), device(2)]
    status, evidence = judge("pairing.continue-session", *seq)
    assert status == PASSED
    assert evidence == [
        f"POST {DEVICE} #2: after GET {MEMORIES} #1 (recovery: continue) reconnected with the same client_id"
    ]
    assert links("pairing.continue-session", *seq) == [(2, 1)]
    status, evidence = judge("pairing.continue-session", ended(1, "re_pair"), device(2))
    assert evidence == [f"POST {DEVICE} #2: after GET {MEMORIES} #1 (recovery: re_pair) reconnected"]
    form_pair = x(2, "POST", DEVICE, 200, None, {}, {"client_id": "my-agent"})
    assert judge("pairing.continue-session", device(0), ended(1, "continue"), form_pair)[0] == PASSED


def test_a_continue_met_by_a_refresh_another_client_or_nothing_fails():
    status, evidence = judge("pairing.continue-session", ended(1, "continue"), refresh(2), device(3))
    assert status == FAILED
    assert evidence == [
        f"POST {TOKEN} #2: refreshed after GET {MEMORIES} #1 (recovery: continue): the spec's recovery is a reconnect, not a refresh"
    ]
    assert links("pairing.continue-session", ended(1, "continue"), refresh(2)) == [(2, 1)]
    other = device(2, body={**NAMED, "client_id": "someone-else"})
    status, evidence = judge("pairing.continue-session", device(0), ended(1, "continue"), other)
    assert status == FAILED
    assert evidence == [
        f"POST {DEVICE} #2: after GET {MEMORIES} #1 (recovery: continue) reconnected as client_id 'someone-else', "
        "not its own 'my-agent': another connection"
    ]
    assert (
        judge("pairing.continue-session", device(0), ended(1, "re_pair"), other)[0] == PASSED
    )  # a new pairing is asked for
    status, evidence = judge("pairing.continue-session", ended(1, "continue"))
    assert status == FAILED and evidence == [
        f"GET {MEMORIES} #1: 401 CONNECTION_ENDED (recovery: continue); the agent never reconnected"
    ]
    assert (
        judge("pairing.continue-session", device(2), ended(3, "continue"))[0] == FAILED
    )  # a pairing before is no reconnect
    first = [device(0), ended(1, "continue"), device(5, body={**NAMED, "client_id": "x"}), refresh(3, start=3.0)]
    assert judge("pairing.continue-session", *first)[1][0].startswith(
        f"POST {TOKEN} #3: refreshed"
    )  # the earliest step


def test_only_a_401_with_a_reconnect_recovery_is_judged_once_per_token():
    assert judge("pairing.continue-session", expired(1))[0] == NOT_EXERCISED
    assert (
        judge("pairing.continue-session", x(1, "GET", MEMORIES, 403, None, {"recovery": "continue"}))[0]
        == NOT_EXERCISED
    )
    assert judge("pairing.continue-session", x(1, "GET", MEMORIES, 401, None, ["continue"]))[0] == NOT_EXERCISED
    twice = [ended(1, "continue"), ended(2, "continue")]
    assert len(judge("pairing.continue-session", *twice)[1]) == 1
    assert len(judge("pairing.continue-session", ended(1, "continue"), ended(2, "re_pair"))[1]) == 2
    many = [e for i in range(5) for e in (ended(10 * i, "re_pair", token=f"t{i}"), device(10 * i + 1))]
    assert len(judge("pairing.continue-session", *many)[1]) == 3
    unnamed = x(0, "POST", DEVICE, 200, None, {}, {})  # its own client_id unknown: any reconnect is its own
    assert judge("pairing.continue-session", unnamed, ended(1, "continue"), device(2))[0] == PASSED


# -- what the first run left alive: each a record a user could send --------------------------------


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_poll_gaps_at_their_limits():
    assert (
        judge("pairing.poll-interval", device(interval=None), poll(1, 1.0), poll(2, 6.0))[0] == PASSED
    )  # 5 s by default
    assert (
        judge("pairing.poll-interval", device(), poll(1, 1.0), poll(2, 5.5))[0] == PASSED
    )  # the interval less its slack
    assert judge("pairing.slow-down", device(), poll(1, 1.0, "slow_down"), poll(2, 10.5))[0] == PASSED
    seq = [device(code=""), device(code="dc-1"), poll(1, 1.0), poll(2, 2.0)]  # a pairing with no code first
    assert judge("pairing.poll-interval", *seq)[0] == FAILED
    seq = [device(), poll(1, 1.0), poll(2, 6.0, "slow_down"), poll(3, 16.0)]  # a plain step, then a slow_down
    assert judge("pairing.slow-down", *seq)[0] == PASSED


def test_a_refresh_without_its_token_and_the_401s_that_ask_for_one():
    bare = [x(i, "POST", TOKEN, 200, None, {}, {"grant_type": "refresh_token"}) for i in (1, 2)]
    status, evidence = judge("pairing.refresh-once", *bare)  # no token named: none seen twice
    assert status == PASSED and evidence == [f"POST {TOKEN} #{i}: refreshed with a token used once" for i in (1, 2)]
    assert (
        judge("pairing.refresh-once", device(0), expired(1), refresh(2))[0] == PASSED
    )  # the pairing before is not the answer
    assert (
        judge("pairing.refresh-once", expired(1), at(refresh(2), 1.0))[0] == FAILED
    )  # sent with the 401: not after it
    no_grant = x(2, "POST", TOKEN, 200, None, {}, {"refresh_token": "rt-1"})
    assert judge("pairing.refresh-once", expired(1), no_grant)[0] == FAILED
    assert (
        judge("pairing.refresh-once", expired(1, recovery=None))[0] == FAILED
    )  # TOKEN_EXPIRED asks for it by its code


def test_a_reconnect_is_judged_against_what_came_before_and_after_the_401():
    assert judge("pairing.continue-session", ended(1, "continue"), device(2))[0] == PASSED  # its own client_id unknown
    assert (
        judge("pairing.continue-session", ended(1, "continue"), at(device(2), 1.0))[0] == FAILED
    )  # with it: no reconnect
    other = device(2, body={**NAMED, "client_id": "someone-else"})
    assert (
        judge("pairing.continue-session", at(device(0), 1.0), ended(1, "continue"), other)[0] == PASSED
    )  # not before it
    long_id = "agent-" + "x" * 60
    seq = [
        device(0, body={**NAMED, "client_id": long_id}),
        ended(1, "continue"),
        device(2, body={**NAMED, "client_id": long_id + "-2"}),
    ]
    status, evidence = judge("pairing.continue-session", *seq)
    assert status == FAILED and f"as client_id {(long_id + '-2')[:40]!r}, not its own {long_id[:40]!r}" in evidence[0]
    assert links("pairing.continue-session", *seq) == [(2, 1)]


def test_client_uri_is_read_on_every_pairing():
    bad = device(1, body={**NAMED, "client_uri": "http://a.acme.com"})
    assert judge("pairing.client-uri-public", x(0, "GET", "/api/agent/policies", 200, None, {}), bad)[0] == FAILED
    assert judge("pairing.client-uri-public", device(0), bad)[0] == FAILED
    long = "http://agent.acme.com/" + "p" * 100
    _, evidence = judge("pairing.client-uri-public", device(1, body={**NAMED, "client_uri": long}))
    assert evidence == [f"POST {DEVICE} #1: client_uri {long[:80]!r}: http scheme, not https"]
