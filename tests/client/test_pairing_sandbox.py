"""Pairing against the sandbox over real HTTP: slow_down, expiry, manual approval, a narrowed
approval, a denial, token refresh and revocation, profiles. The sandbox runs on a FakeClock
and the client's waits move that clock, so nothing here sleeps."""

from __future__ import annotations

import logging
import os
import stat
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import InsufficientGrant, PairingError, TokenError
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.wire.crypto import AgentKey


@pytest.fixture(scope="module")
def sb(clock):
    with Sandbox.start(approve="manual", seed="none", clock=clock) as sandbox:
        sandbox.state.device_interval = 5
        yield sandbox


@pytest.fixture(scope="module")
def key() -> AgentKey:
    return AgentKey.generate()


def start(sb, clock, key, on_wait=None, **kw):
    """Start a pairing whose waits advance the sandbox clock (and may act as the owner)."""
    handle_box = {}

    def wait(seconds: float) -> None:
        clock.advance(seconds)
        if on_wait is not None:
            on_wait(handle_box["h"])

    kw.setdefault("profile", None)
    kw.setdefault("client_id", f"pairing-test-{uuid.uuid4().hex[:8]}")  # a new connection, not a reconnect
    # the handle reaches `wait` through its first status change (the thread may poll before we return)
    return Connection.start_pairing(
        sb.url,
        name=kw.pop("name", "Pairing test"),
        agent_key=key,
        wait=wait,
        clock=clock,
        on_status=lambda h: handle_box.setdefault("h", h),
        **kw,
    )


def test_manual_approval_after_a_few_polls(sb, clock, key):
    """ "Poll (every `interval` seconds, up to `expires_in`) until they approve, then exchange the code"."""

    def owner(h):
        if h.polls == 2:
            sb.owner.approve(h.user_code)

    h = start(sb, clock, key, on_wait=owner)
    conn = h.result(10)
    assert h.status == "done" and h.polls == 3 and h.waits == [5, 5]
    assert conn.access().names == {"memory.read", "memory.save"}
    assert conn.token_id in {c["token_id"] for c in sb.owner.connections()}


def test_polling_too_fast_gets_slow_down_and_the_client_backs_off(sb, clock, key):
    """RFC 8628: on `slow_down` the interval grows by 5 s for this and all later polls."""

    def owner(h):
        if h.polls == 3:
            sb.owner.approve(h.user_code)

    h = start(sb, clock, key, on_wait=owner, poll_interval=1)  # a client polling faster than asked
    h.result(10)
    assert h.waits[0] == 1 and h.waits[1] >= 6, h.waits
    assert all(b >= a for a, b in zip(h.waits, h.waits[1:]))


def test_pairing_link_expires(sb, clock, key):
    """ "Three clocks … the pairing link (`expires_in`, 600 s)": nobody approves, the link expires."""
    h = start(sb, clock, key)
    with pytest.raises(PairingError) as info:
        h.result(10)
    assert info.value.code == "expired_token" and h.status == "expired"
    assert 590 <= sum(h.waits) <= 600 and h.polls <= 600 / 5 + 1


def test_a_narrowed_approval_is_what_the_connection_holds(sb, clock, key):
    """ "The owner may approve more or less than you asked. Decide from this, never from scopes.\""""

    def owner(h):
        if h.polls == 1:
            sb.owner.approve(h.user_code, narrow=[{"permissions": ["memory.read"], "datatypes": ["food"]}])

    conn = start(sb, clock, key, on_wait=owner).result(10)
    acc = conn.access()
    assert acc.names == {"memory.read"} and not acc.can_save
    assert acc.frame["selection"].tolist() == ["datatypes=food"]
    assert "food" in acc.summary and "nothing" in str(acc)


def test_a_denial_ends_the_pairing(sb, clock, key):
    def owner(h):
        if h.polls == 1:
            sb.owner.deny(h.user_code)

    h = start(sb, clock, key, on_wait=owner)
    with pytest.raises(PairingError) as info:
        h.result(10)
    assert info.value.code == "access_denied" and h.status == "denied"


def approved(sb, clock, key, **kw) -> Connection:
    def owner(h):
        sb.owner.approve(h.user_code)

    return start(sb, clock, key, on_wait=owner, **kw).result(10)


def test_an_expired_token_is_refreshed_once_and_the_call_repeated(sb, clock, key):
    """ "`401` … `recovery: refresh` (`TOKEN_EXPIRED`) → `POST /oauth/token` with `grant_type=refresh_token`\""""
    conn = approved(sb, clock, key)
    before = conn.tokens.access_token
    clock.advance(sb.state.token_ttl + 1)
    assert conn.access().names == {"memory.read", "memory.save"}
    assert conn.session.api.refreshes == 1 and conn.tokens.access_token != before


def test_a_revoked_connection_is_told_to_pair_again(sb, clock, key):
    conn = approved(sb, clock, key)
    sb.owner.revoke(conn.token_id)
    with pytest.raises(TokenError) as info:
        conn.keys()
    assert info.value.code == "TOKEN_REVOKED" and "new pairing is needed" in str(info.value)


def test_profile_is_saved_0600_and_resume_keeps_the_key(sb, clock, key, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    caplog.set_level(logging.DEBUG)
    store = ProfileStore(tmp_path / "cfg")
    conn = approved(sb, clock, key, profile="work", store=store)
    path = store.path("work")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.profiles_dir).st_mode) == 0o700
    again = Connection.resume("work", store=store)
    assert again.agent_key == conn.agent_key and again.token_id == conn.token_id
    assert again.access().names == conn.access().names
    text = caplog.text + repr(conn) + repr(again) + repr(store.load("work"))
    pem_line = conn.agent_key.to_pem().splitlines()[2]
    for secret in (conn.tokens.access_token.reveal(), conn.tokens.refresh_token.reveal(), pem_line):
        assert secret not in text


def test_pairing_again_under_a_saved_profile_keeps_the_key_and_the_memories(sb, clock, tmp_path, monkeypatch):
    """ "Approved reconnect with the same key keeps memories and their keys."""
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    store = ProfileStore(tmp_path / "cfg")

    def owner(h):
        sb.owner.approve(h.user_code)

    def pair_once():
        def wait(seconds):
            clock.advance(seconds)

        h = Connection.start_pairing(
            sb.url,
            name="Reconnect",
            profile="home",
            store=store,
            wait=wait,
            clock=clock,
            on_status=lambda h: owner(h) if h.status == "waiting" else None,
        )
        return h.result(10)

    first = pair_once()
    mid = first.save("Kept across a reconnect.")
    second = pair_once()
    assert second.agent_key == first.agent_key and second.client_id == first.client_id
    v = second.load()
    assert v.memory(mid) is not None and not v.answer.get("preparing")


def test_a_grant_request_waits_for_the_owner(sb, clock, key):
    """ "Poll `GET /api/agent/grant-request?id=` … then read `GET /api/agent/policies` for what you now hold"."""
    conn = approved(sb, clock, key)
    req = conn.request_access(["memory.edit"], datatypes=["travel"], reason="Fix travel notes")
    assert req.status == "pending" and "memory.edit" in req.permissions
    statuses = []
    req.wait(
        timeout=60,
        interval=3,
        sleep=lambda s: sb.owner.approve(req.request_id),
        on_status=lambda r: statuses.append(r.status),
    )
    assert statuses[-1] in ("approved", "resolved") and req.granted
    assert "memory.edit" in conn.access(refresh=False).names
    again = conn.request_access(["memory.edit"], datatypes=["travel"], reason="Fix travel notes")
    assert again.status == "already_granted" and again.granted


def test_a_denied_grant_request_leaves_access_unchanged(sb, clock, key):
    conn = approved(sb, clock, key)
    before = conn.access().names
    req = conn.request_access(["memory.delete"], reason="Tidy up")
    req.wait(timeout=60, interval=3, sleep=lambda s: sb.owner.deny(req.request_id))
    assert req.status == "denied" and not req.granted and conn.access().names == before


def test_access_ends_and_grant_expired_asks_again(sb, clock, key):
    """ "After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`: send it and the owner is asked."""

    def owner(h):
        sb.owner.approve(h.user_code, expires_in_hours=48)

    conn = start(sb, clock, key, on_wait=owner).result(10)
    frame = conn.access().frame
    assert str(frame["expires_at"].dt.tz) == "UTC" and frame["expires_at"].notna().all()
    assert "no end date" not in conn.access().summary
    sb.owner.expire(conn.token_id)
    with pytest.raises(InsufficientGrant) as info:
        conn.save("After the end date.")
    assert info.value.code == "GRANT_EXPIRED" and info.value.permission_request
    req = info.value.request(conn)
    req.wait(timeout=60, interval=3, sleep=lambda s: sb.owner.approve(req.request_id))
    assert req.granted and conn.save("After the renewal.")


def test_a_new_access_version_on_refresh_rereads_policies(sb, clock, key):
    """ "Re-read it … whenever the `access_version` you hold differs from the one a token response gives you"."""
    conn = approved(sb, clock, key)
    assert "memory.edit" not in conn.access().names
    req = conn.send_grant_request({"permissions": ["memory.edit"], "reason": "Fix typos"})
    sb.owner.approve(req.request_id)  # the owner changes the grant; the client has not looked yet
    clock.advance(sb.state.token_ttl + 1)
    conn.keys()  # any call: 401 → refresh → a new access_version → policies read again
    assert conn.session.api.refreshes == 1
    assert "memory.edit" in conn.access(refresh=False).names
