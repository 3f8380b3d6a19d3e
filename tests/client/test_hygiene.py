"""The client's own hygiene: a saved profile is never silently replaced, text UTF-8 cannot carry is a
clear error before anything is sealed, an existing config directory keeps its mode, and a token is
revoked only at the connection's own origin."""

from __future__ import annotations

import os
import stat
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import MemoryModelError, ProfileError, RevocationUnavailable
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import Profile, ProfileStore
from decoy_lab.transport.api import Api, Tokens

from support.answers import AGENT, OWNER


def pair(url: str, store: ProfileStore, **kw) -> Connection:
    return Connection.pair(
        url, name="Hygiene", profile="work", store=store, on_link=lambda *a: None, client_id=kw.pop("cid", None), **kw
    )


def test_pairing_another_server_under_a_saved_profile_name_refuses_without_force(sb, store):
    """The saved connection stays usable and revocable: pairing elsewhere under its name needs force."""
    first = pair(sb.url, store, cid=f"h-{uuid.uuid4().hex[:6]}")
    with Sandbox.start(seed="none") as other:
        other.state.device_interval = 0
        with pytest.raises(ProfileError, match="would replace it"):
            pair(other.url, store)
        assert Connection.resume("work", store=store).access().policies, "the old connection still works"
        replaced = pair(other.url, store, force=True)
        assert Connection.resume("work", store=store).base_url == other.url
        replaced.close()
    first.close()


def test_pairing_again_with_the_same_server_is_a_reconnect_not_a_refusal(sb, store):
    first = pair(sb.url, store)
    again = pair(sb.url, store)
    assert again.agent_key.fingerprint == first.agent_key.fingerprint
    first.close()
    again.close()


@pytest.mark.parametrize(
    "text, what",
    [("Likes tea \ud800", "lone surrogate"), (b"\xff\xfe tea", "not UTF-8"), (b"tea", "pass it as text")],
)
def test_text_utf8_cannot_carry_is_a_clear_error_and_nothing_is_sent(text, what):
    sent = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        return httpx.Response(200, json={"owner_public_key": OWNER.public_key_b64, "grantees": [], "memories": []})

    conn = Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT"),
        transport=httpx.MockTransport(handler),
    )
    with pytest.raises(MemoryModelError, match=what):
        conn.save(text)
    with pytest.raises(MemoryModelError, match=what):
        conn.edit(str(uuid.uuid4()), text=text)
    assert not [p for p in sent if p.endswith("/memories") or "delete" in p], "nothing was written"


def test_an_existing_config_dir_keeps_its_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    cfg = tmp_path / "shared-config"
    cfg.mkdir(mode=0o755)
    os.chmod(cfg, 0o755)
    store = ProfileStore(cfg)
    store.save(Profile(name="p", base_url="http://x", access_token="AT"))
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o755
    assert stat.S_IMODE(store.profiles_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path("p").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "base, endpoint, ok",
    [
        ("https://decoy.example", "https://evil.example/revoke", False),
        ("https://decoy.example", "https://decoy.example:8443/revoke", False),
        ("http://decoy.example", "http://decoy.example/oauth/revoke", False),
        ("https://decoy.example", "//evil.example/revoke", False),
        ("https://decoy.example", "https://decoy.example/oauth/revoke", True),
        ("http://127.0.0.1:8787", "http://127.0.0.1:8787/oauth/revoke", True),
        ("https://decoy.example", "/oauth/revoke", True),
    ],
)
def test_revoke_sends_the_token_only_to_the_connections_own_origin(base, endpoint, ok):
    """RFC 7009 §2.1 sends the token itself: never to another origin, never over plain http but to
    loopback."""
    hits = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/.well-known"):
            return httpx.Response(200, json={"revocation_endpoint": endpoint})
        hits.append(str(request.url))
        return httpx.Response(200, json={})

    api = Api(base, transport=httpx.MockTransport(handler), tokens=Tokens(access_token="AT", refresh_token="RT"))
    if ok:
        api.revoke()
        assert len(hits) == 1 and api.tokens is None
    else:
        with pytest.raises(RevocationUnavailable, match="not sent"):
            api.revoke()
        assert hits == [] and api.tokens is not None
