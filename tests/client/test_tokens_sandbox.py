"""The client's token handling against the sandbox over real HTTP: ending a pairing
(`Connection.unpair`, RFC 7009) and recovering from `401 TOKEN_REPLACED`."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import ProfileError, TransportError
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport.api import Tokens


def pair(url: str, store: ProfileStore | None, profile: str | None = "work", **kw) -> Connection:
    return Connection.pair(
        url,
        name="Token test",
        profile=profile,
        store=store,
        on_link=lambda link, code: None,
        client_id=f"token-test-{uuid.uuid4().hex[:8]}",
        **kw,
    )


def policies_code(url: str, access_token: str) -> int | str:
    r = httpx.get(f"{url}/api/agent/policies", headers={"Authorization": f"Bearer {access_token}"})
    return r.status_code if r.status_code == 200 else r.json()["code"]


# ── ending a pairing ──────────────────────────────────────────────────────────────────────


def test_unpair_revokes_at_the_server_and_deletes_the_profile(sb, store, caplog):
    """RFC 7009 §2.1: revoking the refresh token ends its tokens; the spec: "`recovery: re_pair`
    (`TOKEN_REVOKED`) → only a new owner-approved pairing, which inherits nothing"."""
    caplog.set_level(logging.DEBUG)
    conn = pair(sb.url, store)
    access, refresh = conn.tokens.access_token.reveal(), conn.tokens.refresh_token.reveal()
    assert store.exists("work")
    conn.unpair()
    assert not store.exists("work") and conn.tokens is None
    assert policies_code(sb.url, access) == "TOKEN_REVOKED"
    r = httpx.post(f"{sb.url}/oauth/token", data={"grant_type": "refresh_token", "refresh_token": refresh})
    assert r.json()["code"] == "TOKEN_REVOKED"
    text = caplog.text + repr(conn)
    assert access not in text and refresh not in text  # fingerprints only
    with pytest.raises(ProfileError):
        Connection.resume("work", store=store)
    conn.close()


def test_unpair_after_the_owner_revoked_still_forgets_the_profile(sb, store):
    """RFC 7009 §2.2: "The authorization server responds with HTTP status code 200 if … the client
    submitted an invalid token" — so a connection the owner already revoked can still be forgotten."""
    conn = pair(sb.url, store)
    sb.owner.revoke(conn.token_id)
    again = Connection.resume("work", store=store, check=False)
    again.unpair()
    assert not store.exists("work")
    conn.close()
    again.close()


def test_unpair_keeps_the_profile_when_the_server_cannot_be_reached(store):
    """When the revocation never reached the server the token is still live, so the profile (and its
    refresh token) is kept to try again."""
    with Sandbox.start(seed="none") as gone:
        gone.state.device_interval = 0
        conn = pair(gone.url, store, retries=1, sleep=lambda s: None)
    with pytest.raises(TransportError, match="cannot reach"):
        conn.unpair()
    assert store.exists("work") and conn.tokens is not None
    conn.close()


# ── TOKEN_REPLACED ────────────────────────────────────────────────────────────────────────


def test_a_token_replaced_by_another_process_is_taken_from_the_saved_profile(sb, store):
    """ "`401`: `recovery: refresh` (`TOKEN_EXPIRED`, `TOKEN_REPLACED`) → `POST /oauth/token` with
    `grant_type=refresh_token` renews the same connection" — when another process sharing the profile
    already renewed it, its newer token is used instead (refreshing again would replace that one)."""
    first = pair(sb.url, store)
    second = Connection.resume("work", store=store)  # e.g. the CLI while the notebook runs
    old = second.tokens.access_token.reveal()
    first.session.api.refresh()  # the notebook renews the connection and saves the profile
    assert policies_code(sb.url, old) == "TOKEN_REPLACED"
    assert second.access().names == first.access().names
    assert second.tokens.access_token == first.tokens.access_token and second.session.api.refreshes == 0
    assert policies_code(sb.url, first.tokens.access_token.reveal()) == 200  # nobody replaced the newest token
    first.close()
    second.close()


def test_a_replaced_token_with_nothing_newer_at_hand_is_refreshed_and_the_call_repeated(sb):
    """The same sentence: with no newer token saved anywhere, the client refreshes once and repeats."""
    conn = pair(sb.url, None, profile=None)
    replaced = conn.tokens.access_token
    conn.session.api.refresh()  # the server replaced `replaced`; this holder kept it with the current refresh token
    current = conn.tokens
    conn.session.api.tokens = Tokens(
        access_token=replaced,
        refresh_token=current.refresh_token,
        token_id=current.token_id,
        access_version=current.access_version,
    )
    assert conn.access().names == {"memory.read", "memory.save"}
    assert conn.session.api.refreshes == 2 and conn.tokens.access_token not in (replaced, current.access_token)
    conn.close()
