"""The owner surface is for the owner alone, and no web page speaks on the agent API.

Where the spec is silent the project's standard decides: "Secrets stay secret" and the owner's
approval is the owner's. A DNS-rebinding page reaches the sandbox under its own Host name, a
cross-site page sends its own Origin (or a form without this run's token), and a remote peer may
send `X-Forwarded-For: 127.0.0.1`: each is refused."""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient

from decoy_lab.sandbox import Sandbox, create_app

LOCAL = "http://127.0.0.1:8787"


@pytest.fixture
def app():
    return create_app(":memory:", approve="manual", seed="none")


@pytest.fixture
def local(app) -> TestClient:
    return TestClient(app, base_url=LOCAL, client=("127.0.0.1", 50000))


def test_a_dns_rebinding_host_is_refused(app):
    rebound = TestClient(app, base_url="http://attacker.example:8787", client=("127.0.0.1", 50000))
    for path in ("/_sandbox/pending", "/_sandbox/token", "/connect?code=ABCD"):
        r = rebound.get(path)
        assert r.status_code == 403 and r.json()["code"] == "HOST_REFUSED", path
    assert rebound.post("/_sandbox/share", json={}).json()["code"] == "HOST_REFUSED"
    for name in ("http://localhost:8787", "http://127.0.0.1:8787", "http://[::1]:8787"):
        assert TestClient(app, base_url=name, client=("127.0.0.1", 1)).get("/_sandbox/pending").status_code == 200


def test_a_cross_site_post_is_refused(local):
    """An Origin of another site, a cross-site Sec-Fetch-Site, or a form (a "simple" request any
    page can send) without this run's token: 403 CROSS_SITE_REFUSED, nothing changes."""
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        r = local.post("/_sandbox/share", json={}, headers=headers)
        assert r.status_code == 403 and r.json()["code"] == "CROSS_SITE_REFUSED", headers
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = local.post("/_sandbox/key-setup", content=b"done=false", headers=form)
    assert r.status_code == 403 and r.json()["code"] == "CROSS_SITE_REFUSED"
    plain = local.post("/_sandbox/share", content=b"{}", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 403
    token = local.get("/_sandbox/token").json()["token"]
    ok = local.post("/_sandbox/share", content=b"", headers={"X-Sandbox-Token": token, "Origin": LOCAL})
    assert ok.status_code == 200


def test_the_connect_page_carries_the_token_its_forms_need(local):
    body = {"client_id": "bot", "name": "Bot", "scopes": ["profile.read"]}
    code = local.post("/oauth/device", json=body).json()["user_code"]
    page = local.get(f"/connect?code={code}").text
    token = local.get("/_sandbox/token").json()["token"]
    assert f'name="token" value="{token}"' in page
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = local.post("/_sandbox/approve", content=f"ref={code}&token={token}".encode(), headers=form)
    assert r.status_code == 200 and r.json()["status"] == "approved"


def test_the_agent_api_refuses_what_a_web_page_sends(local):
    """No page can queue a pairing named "Your bank" before the owner."""
    body = {"client_id": "bank", "name": "Your bank", "scopes": ["profile.read"]}
    r = local.post("/oauth/device", json=body, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and r.json()["code"] == "CROSS_SITE_REFUSED"
    assert local.get("/_sandbox/pending").json()["pending"] == []
    assert local.post("/oauth/device", json=body, headers={"Origin": "http://localhost:8888"}).status_code == 200


@pytest.mark.parametrize("path", ["/oauth/device", "/_sandbox/approve", "/api/agent/context/memories"])
def test_malformed_bodies_are_400_with_a_code(local, path):
    deep = b"[" * 5_000 + b"]" * 5_000  # past json's nesting limit, under every route's body cap (16 KiB at least)
    r = local.post(path, content=deep, headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
    assert r.status_code in (400, 401) and r.json()["code"], r.text


def test_narrow_that_is_not_json_is_400(local):
    token = local.get("/_sandbox/token").json()["token"]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = local.post("/_sandbox/approve", content=f"ref=X&narrow=not-json&token={token}".encode(), headers=form)
    assert r.status_code == 400 and r.json()["code"] == "INVALID_REQUEST" and r.json()["field"] == "narrow"


def test_x_forwarded_for_never_decides_who_the_peer_is():
    """The sandbox runs with proxy headers off: the peer's own address decides. (With them on,
    uvicorn would take this header from a loopback peer and refuse it as remote; a remote peer
    sending `127.0.0.1` would look local.)"""
    with Sandbox.start(seed="none") as sb:
        assert sb._server.config.proxy_headers is False
        r = httpx.get(f"{sb.url}/_sandbox/pending", headers={"X-Forwarded-For": "203.0.113.7"})
        assert r.status_code == 200
