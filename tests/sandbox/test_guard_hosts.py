"""`testserver` is the Host name of Starlette's in-process test client, and only its: a page
that reaches the sandbox from this machine under a name `testserver` (a LAN host, a search-domain
name, a rebinding DNS answer) is a web page like any other, refused on the owner surface."""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient

from decoy_lab.sandbox import create_app

OWNER_GETS = ("/_sandbox/pending", "/_sandbox/token", "/connect?code=ABCD")


@pytest.fixture
def app():
    return create_app(":memory:", approve="manual", seed="none")


@pytest.mark.parametrize("path", OWNER_GETS)
def test_host_testserver_from_a_real_peer_over_http_is_refused(sb, path):
    """Over real HTTP from 127.0.0.1, `Host: testserver` (with or without a port) is refused."""
    for host in ("testserver", "testserver:80", "TestServer."):
        r = httpx.get(f"{sb.url}{path}", headers={"Host": host}, timeout=10)
        assert r.status_code == 403 and r.json()["code"] == "HOST_REFUSED", (host, r.status_code)
    token = httpx.post(f"{sb.url}/_sandbox/share", json={}, headers={"Host": "testserver"}, timeout=10)
    assert token.status_code == 403 and token.json()["code"] == "HOST_REFUSED"
    assert httpx.get(f"{sb.url}/_sandbox/pending", timeout=10).status_code == 200  # its own name: served


def test_host_testserver_is_refused_from_any_peer_but_the_in_process_client(app):
    for peer in ("127.0.0.1", "::1", "localhost"):
        client = TestClient(app, base_url="http://testserver", client=(peer, 50000))
        r = client.get("/_sandbox/pending")
        assert r.status_code == 403 and r.json()["code"] == "HOST_REFUSED", peer
    in_process = TestClient(app, base_url="http://testserver")  # its peer is "testclient"
    assert in_process.get("/_sandbox/pending").status_code == 200


def test_the_in_process_peer_name_is_not_a_host_name(app):
    """`testclient` is the in-process client's peer name, never a Host the owner surface answers."""
    for peer in ("testclient", "127.0.0.1"):
        r = TestClient(app, base_url="http://testclient", client=(peer, 50000)).get("/_sandbox/pending")
        assert r.status_code == 403 and r.json()["code"] == "HOST_REFUSED", peer


def test_a_peer_on_another_machine_is_refused_whatever_it_claims(app):
    """A remote peer meets 403 LOOPBACK_ONLY on the owner surface, even under a loopback Host and
    with `X-Forwarded-For: 127.0.0.1`."""
    remote = TestClient(app, base_url="http://127.0.0.1:8787", client=("203.0.113.5", 40000))
    for path in OWNER_GETS:
        r = remote.get(path, headers={"X-Forwarded-For": "127.0.0.1"})
        assert r.status_code == 403, path
        assert r.json()["code"] == "LOOPBACK_ONLY" and "this machine" in r.json()["message"], path


def test_a_page_of_another_local_origin_is_refused(app):
    """Another app on this machine (a loopback origin, another port) is another site."""
    local = TestClient(app, base_url="http://127.0.0.1:8787", client=("127.0.0.1", 50000))
    r = local.post("/_sandbox/share", json={}, headers={"Origin": "http://127.0.0.1:9999"})
    assert r.status_code == 403 and r.json()["code"] == "CROSS_SITE_REFUSED"
    assert "another site" in r.json()["message"]
    same = local.post("/_sandbox/share", json={}, headers={"Origin": "http://127.0.0.1:8787"})
    assert same.status_code == 200


@pytest.mark.parametrize(("site", "status"), [("same-origin", 200), ("none", 200), ("same-site", 403)])
def test_sec_fetch_site_lets_the_owners_own_pages_and_typed_urls_through(app, site, status):
    local = TestClient(app, base_url="http://127.0.0.1:8787", client=("127.0.0.1", 50000))
    r = local.get("/_sandbox/pending", headers={"Sec-Fetch-Site": site})
    assert r.status_code == status
    if status == 403:
        assert r.json()["code"] == "CROSS_SITE_REFUSED" and site in r.json()["message"]
