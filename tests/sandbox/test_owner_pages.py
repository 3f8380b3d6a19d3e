"""The sandbox's owner pages over real HTTP: the home page, the pairing page, the page an Approve
lands on, and what `decoy-lab sandbox` prints. Every page is the owner's alone (guard.py)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent

from support.lab import free_port

ROOT = Path(__file__).resolve().parents[2]
PAGE = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}  # what a browser's form post sends
FORM = {**PAGE, "Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(approve="manual", seed="none") as running:
        yield running


@pytest.fixture
def http(sb):
    with httpx.Client(base_url=sb.url, timeout=10) as client:
        yield client


def _pairing(http, name: str, client_id: str, rows: list[dict] | None = None) -> dict:
    body = {"client_id": client_id, "name": name, "authorization_details": rows or [{"permissions": ["memory.read"]}]}
    r = http.post("/oauth/device", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _text(page: str) -> str:
    """A page as read: tags dropped, entities decoded, spaces folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _token(http) -> str:
    return http.get("/_sandbox/token").json()["token"]


def test_the_home_page_says_what_is_waiting_by_name_and_how_to_pair(sb, http):
    ask = _pairing(http, "Trip planner", "trip-cli-7f3a", [{"permissions": ["memory.read"], "datatypes": ["travel"]}])
    tok = pair_agent(sb.url, None, [{"permissions": ["memory.save"]}], name="Food guide", client_id="food-guide-9")
    more = http.post(
        "/api/agent/grant-request",
        json={"permissions": ["memory.read"], "datatypes": ["food"], "reason": "Suggest dinners"},
        headers={"Authorization": f"Bearer {tok['access_token']}"},
    )
    assert more.status_code == 201, more.text
    for path in ("/", "/_sandbox/"):
        r = http.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), path
        text = _text(r.text)
        assert "Waiting for you (2)" in text
        assert f"“Trip planner” asks to pair · code {ask['user_code']}" in text and "Read memories in travel" in text
        assert "“Food guide” asks for more access: Suggest dinners" in text and "Read memories in food" in text
        assert "trip-cli-7f3a" not in r.text and "food-guide-9" not in r.text, "connections by name, not client id"
        assert "Connections (1 live) Food guide — Saves new memories" in text
        assert f'decoy-lab connect {sb.url} --name "My agent"' in text and f"%decoy connect {sb.url}" in text
        assert f"href='/connect?code={ask['user_code']}'" in r.text
        assert r.text.count(f'name="token" value="{_token(http)}"') == 4, "Approve and Deny for each, with the secret"
    for link in re.findall(r"href='(/_sandbox/[^']+|/connect)'", http.get("/").text):
        assert http.get(link).status_code == 200, f"the home page links {link}, which must answer"
    http.post("/_sandbox/deny", json={"ref": ask["request_id"]})
    http.post("/_sandbox/deny", json={"ref": more.json()["request_id"]})
    assert "Nothing is waiting for you." in _text(http.get("/").text)


def test_the_owner_pages_are_the_owners_alone(sb, http):
    for path in ("/", "/_sandbox/", "/connect"):
        rebound = http.get(path, headers={"Host": "attacker.example"})
        assert rebound.status_code == 403 and rebound.json()["code"] == "HOST_REFUSED", path
        cross = http.get(path, headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403 and cross.json()["code"] == "CROSS_SITE_REFUSED", path
        r = http.get(path)
        assert (
            "frame-ancestors 'none'" in r.headers["content-security-policy"] and r.headers["x-frame-options"] == "DENY"
        )
        assert r.headers["cache-control"] == "no-store", "a page that carries the run's secret is never cached"
    ask = _pairing(http, "<script>alert(1)</script>", "x")
    page = http.get("/").text + http.get("/connect", params={"code": ask["user_code"]}).text
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page, "an agent's name is escaped"
    http.post("/_sandbox/deny", json={"ref": ask["request_id"]})


def test_connect_without_a_code_shows_a_box_and_a_code_shows_the_ask_by_name(http):
    box = http.get("/connect")
    assert box.status_code == 200 and re.search(r"<form method='get' action='/connect'>.*name='code'", box.text)
    unknown = http.get("/connect", params={"code": "ZZZZ-ZZZZ"})
    assert unknown.status_code == 404 and "name='code'" in unknown.text, "a wrong code gets the box again"
    ask = _pairing(http, "Trip planner", "trip-cli-7f3a")
    page = http.get("/connect", params={"code": ask["user_code"].lower().replace("-", "")})  # typed loosely
    text = _text(page.text)
    assert page.status_code == 200 and "Connect “Trip planner”" in text
    assert "“Trip planner” asks for: Read all memories" in text and "trip-cli-7f3a" not in page.text
    http.post("/_sandbox/deny", json={"ref": ask["request_id"]})


def test_approve_and_deny_from_a_browser_land_on_a_page_that_says_what_was_decided(sb, http):
    ask = _pairing(http, "Trip planner", "trip-cli-7f3a", [{"permissions": ["memory.read"], "datatypes": ["travel"]}])
    token = _token(http)
    r = http.post("/_sandbox/approve", content=f"ref={ask['request_id']}&token={token}", headers=FORM)
    text = _text(r.text)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "Approved “Trip planner” Its pairing was approved. It may now: Read memories in travel" in text
    assert "Trip planner" in [c["name"] for c in sb.owner.connections()]
    again = http.post("/_sandbox/approve", content=f"ref={ask['request_id']}&token={token}", headers=FORM)
    assert again.status_code == 409 and "Could not approve" in _text(again.text) and "already approved" in again.text
    spam = _pairing(http, "Spam bot", "spam")
    r = http.post("/_sandbox/deny", content=f"ref={spam['user_code']}&token={token}", headers=FORM)
    assert r.status_code == 200 and "Denied “Spam bot” Its pairing was denied: it was given nothing." in _text(r.text)
    refused = http.post("/_sandbox/approve", content=f"ref={spam['request_id']}", headers=FORM)
    assert refused.status_code == 403 and refused.json()["code"] == "CROSS_SITE_REFUSED", "no secret, no change"


def test_decoy_lab_sandbox_prints_what_to_do_next_and_how_to_stop(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    cmd = [
        sys.executable,
        "-m",
        "decoy_lab.workbench.shell.cli",
        "sandbox",
        "--port",
        str(port),
        "--db",
        ":memory:",
        "--seed",
        "none",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while not lines or lines[-1].strip() != "Ctrl-C to stop.":
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            lines.append(proc.stdout.readline())
        out = "".join(lines)
        url = f"http://127.0.0.1:{port}"
        assert out.startswith(f"Decoy sandbox on {url}  (db: :memory:, approve: auto, owner key: ")
        assert f"give an agent this URL   {url}\n" in out and f"your home page           {url}/\n" in out
        assert f'decoy-lab connect {url} --name "My agent"' in out and f"%decoy connect {url}" in out
        assert "jupyter lab notebooks/01-tour.ipynb" in out
        for _ in range(100):  # printed once it listens; a slow host may still be a moment behind
            try:
                home = httpx.get(f"{url}/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert home.status_code == 200 and "Your Decoy sandbox" in home.text, "the home page it names is there"
    finally:
        proc.terminate()
        proc.wait(15)
