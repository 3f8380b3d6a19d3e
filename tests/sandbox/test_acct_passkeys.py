"""A passkey sign-in through `POST /api/agent/unlock`, over HTTP against the sandbox: asked of the
owner every time, signed on the phone, and every refusal of 001's table.

001, `unlock_request`: "The owner's phone signs a WebAuthn login for the page; the passkey is never
read or exported. Every sign-in is asked of the owner at that moment"; "`201 { id, status:
"pending", kind: "account", expires_at, auto_approved: false }`"; the envelope "opens with your
private key into JSON, every field base64: `{ "credential_id": "…", "authenticator_data": "…",
"signature": "…", "user_handle": "…" }`"; "`expired` (no answer within 5 minutes of the request)";
and the refusals: `PASSKEY_BAD_REQUEST`, `PASSKEY_ASSERT_REQUIRED`, `PASSKEY_BAD_CLIENT_DATA`,
`PASSKEY_ORIGIN_MISMATCH`, `PASSKEY_NOT_FOUND`, `PASSKEY_AMBIGUOUS`, `INSUFFICIENT_GRANT`.
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from support.acctfamily_kit import create, open_sealed

UNLOCK = "/api/agent/unlock"
OTHER = "3f1c2a4e-0000-4000-8000-000000000001"


def _client_data(origin: str = "https://shop.example", kind: str = "webauthn.get") -> bytes:
    return json.dumps({"type": kind, "challenge": "q1w2e3", "origin": origin, "crossOrigin": False}).encode()


def _ask(agent, *, rp_id="shop.example", client=None, account_id=None, **passkey):
    target = {"kind": "account", "datatypes": ["passkey"]}
    target["passkey"] = {"rp_id": rp_id, "client_data_json_b64": base64.b64encode(client or _client_data()).decode()}
    target["passkey"].update(passkey)
    if account_id:
        target["id"] = account_id
    return agent.post(UNLOCK, {"target": target, "reason": "Sign in to check the order"})


def _setup(lab):
    maker = lab.pair("maker", "account.create")
    account = create(maker, {"name": "Shop", "username": "me@shop.example"})
    made = lab.client.post("/_sandbox/passkeys", json={"account_id": account["id"], "rp_id": "shop.example"})
    assert made.status_code == 201, made.text
    lab.state.approve = "manual"
    return maker, account, made.json()


def test_a_sign_in_is_asked_then_signed_on_the_phone(lab):
    maker, account, passkey = _setup(lab)
    r = _ask(maker)
    assert r.status_code == 201, r.text
    asked = r.json()
    assert asked["status"] == "pending" and asked["auto_approved"] is False, "asked even of its creator"
    assert asked["kind"] == "account" and asked["target_id"] == account["id"]
    (waiting,) = lab.client.get("/_sandbox/unlocks").json()["unlocks"]
    assert waiting["datatypes"] == ["passkey"] and waiting["reason"] == "Sign in to check the order"
    assert lab.client.post("/_sandbox/unlocks/approve", json={"id": asked["id"]}).json()["status"] == "ready"
    polled = maker.get(f"{UNLOCK}/{asked['id']}").json()
    answer = open_sealed(maker, polled["items"][0]["sealed_envelope"])
    assert set(answer) == {"credential_id", "authenticator_data", "signature", "user_handle"}
    assert answer["credential_id"] == passkey["credential_id"]
    data = base64.b64decode(answer["authenticator_data"])
    assert data[:32] == hashlib.sha256(b"shop.example").digest() and data[32] & 0x01, "rpIdHash, user present"
    public = serialization.load_der_public_key(base64.b64decode(passkey["public_key"]))
    assert isinstance(public, ec.EllipticCurvePublicKey)
    signed = data + hashlib.sha256(_client_data()).digest()
    public.verify(base64.b64decode(answer["signature"]), signed, ec.ECDSA(hashes.SHA256()))  # the site's check
    with pytest.raises(InvalidSignature):
        public.verify(base64.b64decode(answer["signature"]), signed + b"x", ec.ECDSA(hashes.SHA256()))
    assert "items" not in maker.get(f"{UNLOCK}/{asked['id']}").json(), "served once"


def test_an_unanswered_sign_in_expires_after_five_minutes(lab):
    maker, _account, _passkey = _setup(lab)
    asked = _ask(maker).json()
    lab.clock.advance(5 * 60)
    assert maker.get(f"{UNLOCK}/{asked['id']}").json()["status"] == "expired"
    assert lab.client.post("/_sandbox/unlocks/approve", json={"id": asked["id"]}).status_code == 409


def test_each_refusal_of_the_table(lab):
    maker, account, _passkey = _setup(lab)
    both = {"kind": "account", "datatypes": ["passkey", "totp"], "passkey": {"rp_id": "shop.example"}}
    assert maker.post(UNLOCK, {"target": both}).json()["code"] == "PASSKEY_BAD_REQUEST"
    bare = {"kind": "account", "datatypes": ["passkey"], "id": account["id"]}
    r = maker.post(UNLOCK, {"target": bare})
    assert r.status_code == 422 and r.json()["code"] == "PASSKEY_ASSERT_REQUIRED", r.text
    r = _ask(maker, client=_client_data(kind="webauthn.create"))
    assert r.status_code == 422 and r.json()["code"] == "PASSKEY_BAD_CLIENT_DATA"
    r = _ask(maker, client=_client_data(origin="https://evil.example"))
    assert r.status_code == 422 and r.json()["code"] == "PASSKEY_ORIGIN_MISMATCH"
    assert _ask(maker, client=_client_data(origin="https://www.shop.example")).status_code == 201, "a subdomain"
    r = _ask(maker, rp_id="nowhere.example", client=_client_data(origin="https://nowhere.example"))
    assert r.status_code == 404 and r.json()["code"] == "PASSKEY_NOT_FOUND"
    assert _ask(maker, credential_id_b64="!!").json()["code"] == "PASSKEY_BAD_REQUEST"
    second = create(maker, {"name": "Shop (work)"})
    lab.client.post("/_sandbox/passkeys", json={"account_id": second["id"], "rp_id": "shop.example"})
    r = _ask(maker)
    assert r.status_code == 422 and r.json()["code"] == "PASSKEY_AMBIGUOUS"
    assert _ask(maker, account_id=second["id"]).status_code == 201, "named by target.id"
    stranger = lab.pair("stranger", {"permissions": ["account.read"], "account_id": OTHER})
    r = _ask(stranger, account_id=account["id"])
    assert r.status_code == 403 and r.json()["required_permission"] == "account.read", r.text
    assert r.json()["permission_request"]["account_id"] == account["id"]
