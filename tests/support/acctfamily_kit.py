"""Sealing for the account family's sandbox tests, with decoy_lab's recipes (no tests here).

Each helper seals what a client sends, the way 001 lays it out: an account record as an owner
ENVELOPE or a VAULT SealedBlob, a password as the headerless envelope to the owner's key, a
secret field with its owner, self and grantee wraps, a decoy record sealed to a key.
"""

from __future__ import annotations

import uuid
from typing import Any

from decoy_lab.recipes import sealing
from decoy_lab.sandbox.phone import acctopen
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

ACCOUNTS = "/api/agent/accounts"


def owner_pk(peer) -> str:
    r = peer.get(f"{ACCOUNTS}/public-key")
    assert r.status_code == 200, r.text
    return r.json()["public_key"]


def envelope_record(peer, record: dict[str, Any]) -> str:
    """ENVELOPE mode: "sealed to the owner's public key, for a connection without the vault key"."""
    return wire.b64encode(sealing.seal_envelope(sealing.json_bytes(record), owner_pk(peer), owner=True))


def vault_record(lab, record: dict[str, Any]) -> str:
    """VAULT mode, with the owner's vault key (what a vault-key surface seals with)."""
    return wire.b64encode(sealing.seal_json(acctopen.vault_key(lab.state), record))


def password_envelope(public_key_b64: str, password: str) -> str:
    """`[2B keyLen BE][RSA-OAEP-SHA256 wrapped AES key][12B iv][AES-256-GCM ct][16B tag]`, no header."""
    return wire.b64encode(sealing.seal_envelope(password.encode(), public_key_b64, owner=False))


def sealed_to(public_key_b64: str, obj: Any) -> str:
    """UTF-8 JSON in a headerless envelope to `public_key_b64` (sealed_details, a seal, a patch)."""
    return wire.b64encode(sealing.seal_envelope(sealing.json_bytes(obj), public_key_b64, owner=False))


def create(peer, record: dict[str, Any] | None = None, **extra: Any) -> dict:
    """Save an account sealed to the owner (ENVELOPE); its JSON (asserting 201)."""
    body = {"encrypted_data": envelope_record(peer, record or {"name": "Acme", "username": "me@x.test"}), **extra}
    r = peer.post(ACCOUNTS, body)
    assert r.status_code == 201, r.text
    return r.json()


def field_body(
    peer, account_id: str, value: str = "sk-live-123", *, key: bytes | None = None, field_id: str | None = None
) -> tuple[dict, bytes]:
    """A secret field as 001's steps 1–4 build it: (the POST body, the field key)."""
    key = key or random_key()
    field_id = field_id or str(uuid.uuid4())
    g = peer.get(f"{ACCOUNTS}/{account_id}/field-grantees")
    assert g.status_code == 200, g.text
    grantees = g.json()
    plain = {"id": field_id, "account_id": account_id, "fieldType": "concealed-string", "label": "API key"}
    plain["value"] = value
    body = {
        "id": field_id,
        "kid": wire.kid(key),
        "ciphertext": wire.b64encode(sealing.seal_json(key, plain)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, grantees["owner_public_key"])),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, peer.key.public_key_b64)),
        "grantee_wraps": [
            {"token_id": g["token_id"], "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, g["public_key"]))}
            for g in grantees["grantees"]
        ],
    }
    return body, key


def field_and_reader(lab, value: str) -> tuple[Any, dict, Any]:
    """A maker's account holding one secret field (`value`, asserting 201) and a second connection
    granted `account.read` on that account only, which no wrap has reached yet: (maker, the
    account's JSON, reader)."""
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    body, _ = field_body(maker, made["id"], value)
    assert maker.post(f"{ACCOUNTS}/{made['id']}/fields", body).status_code == 201
    reader = lab.pair("reader", {"permissions": ["account.read"], "account_id": made["id"]})
    return maker, made, reader


def open_field(peer, served: dict) -> dict:
    """Read a served field as 001 says: unwrap, check kid, open, check id and account_id."""
    key = sealing.unwrap_as_agent(served["wrapped_key"], peer.key)
    assert wire.kid(key) == served["kid"]
    plain = sealing.open_json(key, served["ciphertext"])
    assert plain["id"] == served["id"] and plain["account_id"] == served["account_id"]
    return plain


def open_sealed(peer, envelope: str) -> Any:
    """A headerless envelope to this connection's key, holding UTF-8 JSON."""
    import json

    return json.loads(sealing.open_envelope(envelope, peer.key, owner=False))


def patch(peer, path: str, body: Any):
    return peer.lab.client.patch(path, json=body, headers=peer.headers)


def delete(peer, path: str, **kw: Any):
    return peer.lab.client.request("DELETE", path, headers=peer.headers, **kw)
