"""The owner's home page lists the unlocks waiting on the owner, with Allow and Deny, over real HTTP.

001, `unlock_request`: "A covering permission answers the request as `ready` at once; otherwise
the owner is asked on their phone and the request is `pending`", and "`reason` is plain text, at
most 200 characters" — the agent's words, so the page escapes them. The sandbox's home page stands
in for the owner's phone: what waits there is listed (who asks, for which account, why) and decided
with a form that carries this run's secret, as pairings and grant requests are.
"""

from __future__ import annotations

import base64
import html
import json
import re

import httpx
import pytest

from decoy_lab.sandbox import Sandbox

from support.acctfamily_kit import ACCOUNTS, create, open_sealed, owner_pk, password_envelope
from support.sandbox_kit import LoopbackLab, Peer

PAGE = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}  # what a browser's form post sends
FORM = {**PAGE, "Content-Type": "application/x-www-form-urlencoded"}
UNLOCK = "/api/agent/unlock"
OTHER_ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"
REASON = 'Sign in to <b>Acme</b> & "check" the order'


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(approve="manual", seed="none") as running:
        yield running


@pytest.fixture
def lab(sb):
    return LoopbackLab(sb)


def _text(page: str) -> str:
    """A page as read: tags dropped, entities decoded, spaces folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _asked(lab, name: str, password: str) -> tuple[Peer, str]:
    """An account with a password, and a connection whose grant does not cover it asking to unlock
    it: (the asker, the unlock id)."""
    maker = lab.pair(f"maker of {name}", "account.create")
    made = create(maker, {"name": name, "username": "me@acme.test"})
    sealed = password_envelope(owner_pk(maker), password)
    assert maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": sealed}).status_code == 200
    asker = lab.pair(
        f"Shopping <i>helper</i> for {name}", {"permissions": ["account.read"], "account_id": OTHER_ACCOUNT}
    )
    r = asker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}, "reason": REASON})
    assert r.status_code == 201 and r.json()["status"] == "pending", r.text
    return asker, r.json()["id"]


def test_a_pending_unlock_is_listed_with_allow_and_deny_and_allow_serves_it(sb, lab):
    http = httpx.Client(base_url=sb.url, timeout=10)
    assert "Nothing is waiting for you." in _text(http.get("/").text)
    asker, unlock_id = _asked(lab, "Acme", "hunter2")
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = _text(page.text)
    assert "Nothing is waiting" not in text and "Waiting for you (1)" in text
    assert f"“Shopping <i>helper</i> for Acme” asks to unlock Acme : {REASON}" in text
    assert "to read its password and its other secrets Allow Deny" in text
    assert "<b>Acme</b> &" not in page.text and "<i>helper</i>" not in page.text, "the agent's words are escaped"
    token = http.get("/_sandbox/token").json()["token"]
    for action in ("/_sandbox/unlocks/approve", "/_sandbox/unlocks/deny"):
        assert f'action="{action}"><input type="hidden" name="id" value="{unlock_id}">' in page.text
    assert page.text.count(f'name="token" value="{token}"') == 2, "Allow and Deny, each with the secret"
    # The Allow form, as the browser posts it: a page that says what was decided.
    refused = http.post("/_sandbox/unlocks/approve", content=f"id={unlock_id}", headers=FORM)
    assert refused.status_code == 403 and refused.json()["code"] == "CROSS_SITE_REFUSED", "no secret, no change"
    done = http.post("/_sandbox/unlocks/approve", content=f"id={unlock_id}&token={token}", headers=FORM)
    assert done.status_code == 200 and done.headers["content-type"].startswith("text/html"), done.text
    assert "Allowed “Shopping <i>helper</i> for Acme” Your phone sealed Acme to it, once" in _text(done.text)
    ready = asker.get(f"{UNLOCK}/{unlock_id}").json()
    assert ready["status"] == "ready", ready
    assert open_sealed(asker, ready["items"][0]["sealed_envelope"])["basic-auth"]["password"] == "hunter2"
    assert "Nothing is waiting for you." in _text(http.get("/").text)
    again = http.post("/_sandbox/unlocks/approve", content=f"id={unlock_id}&token={token}", headers=FORM)
    assert again.status_code == 409 and "Could not allow" in _text(again.text)
    http.close()


def test_deny_from_the_home_page_serves_nothing(sb, lab):
    http = httpx.Client(base_url=sb.url, timeout=10)
    asker, unlock_id = _asked(lab, "Bank", "s3cret")
    token = http.get("/_sandbox/token").json()["token"]
    done = http.post("/_sandbox/unlocks/deny", content=f"id={unlock_id}&token={token}", headers=FORM)
    assert done.status_code == 200 and "Denied “Shopping <i>helper</i> for Bank”" in _text(done.text)
    polled = asker.get(f"{UNLOCK}/{unlock_id}").json()
    assert polled["status"] == "denied" and "items" not in polled
    assert f'value="{unlock_id}"' not in http.get("/").text
    # A script's post keeps its JSON answer.
    _, other = _asked(lab, "Shop", "pw")
    assert http.post("/_sandbox/unlocks/deny", json={"id": other}).json() == {"id": other, "status": "denied"}
    http.close()


def test_a_passkey_sign_in_is_listed_as_one_sign_in_and_allowed_as_one(sb, lab):
    """ "Every sign-in is asked of the owner at that moment ("Allow once", confirmed with Face ID);
    nothing is stored and nothing standing is granted"."""
    http = httpx.Client(base_url=sb.url, timeout=10)
    maker = lab.pair("Checkout helper", "account.create")
    account = create(maker, {"name": "Shop", "username": "me@shop.example"})
    made = http.post("/_sandbox/passkeys", json={"account_id": account["id"], "rp_id": "shop.example"})
    assert made.status_code == 201, made.text
    client = {"type": "webauthn.get", "challenge": "q1w2e3", "origin": "https://shop.example", "crossOrigin": False}
    passkey = {"rp_id": "shop.example", "client_data_json_b64": base64.b64encode(json.dumps(client).encode()).decode()}
    target = {"kind": "account", "datatypes": ["passkey"], "passkey": passkey}
    asked = maker.post(UNLOCK, {"target": target, "reason": "Sign in to check the order"})
    assert asked.status_code == 201 and asked.json()["status"] == "pending", asked.text
    text = _text(http.get("/").text)
    assert "“Checkout helper” asks to unlock Shop : Sign in to check the order" in text
    assert "to sign in with its passkey, once Allow Deny" in text
    token = http.get("/_sandbox/token").json()["token"]
    done = http.post("/_sandbox/unlocks/approve", content=f"id={asked.json()['id']}&token={token}", headers=FORM)
    assert "Your phone signed this one sign-in to Shop for it; nothing was read or stored." in _text(done.text)
    assert maker.get(f"{UNLOCK}/{asked.json()['id']}").json()["status"] == "ready"
    http.close()
