"""The owner's passkeys on the simulated phone: made on the owner's surface, and a sign-in an agent
asked for signed once the owner allows it.

001, `unlock_request`: "The owner's phone signs a WebAuthn login for the page; the passkey is never
read or exported. Every sign-in is asked of the owner at that moment"; the answer "opens with your
private key into JSON, every field base64: `{ "credential_id": "…", "authenticator_data": "…",
"signature": "…", "user_handle": "…" }`"; "The phone signs a hash of these exact bytes."

What the phone signs is a WebAuthn assertion (W3C WebAuthn Level 2, §6.1 and §6.3.3):
`authenticatorData` = SHA-256(rp_id) ‖ flags (user present and verified: 0x05) ‖ the signature
counter (4 bytes, big-endian); the signature is ECDSA P-256 with SHA-256 over `authenticatorData ‖
SHA-256(clientDataJSON)`, DER-encoded — what a site verifies with the passkey's public key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sqlite3
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import HTTPProblem, SandboxState
from decoy_lab.sandbox.stores import acctstore as acs
from decoy_lab.sandbox.stores import passkeystore as pks
from decoy_lab.wire import layouts as wire

FLAGS = 0x05  # user present (UP) and user verified (UV): "confirmed with Face ID"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def add(state: SandboxState, account_id: str, rp_id: str, user_handle: bytes | None = None) -> dict[str, Any]:
    """A passkey for `rp_id` on the account: a fresh P-256 key the phone keeps; its credential id
    and public key (SubjectPublicKeyInfo, base64) — what the site registered."""
    key = ec.generate_private_key(ec.SECP256R1())
    credential_id = b64(secrets.token_bytes(16))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with state.store.tx() as con:
        if acs.get_account(con, account_id) is None:
            raise HTTPProblem(404, "NOT_FOUND", f"no account {account_id!r}")
        pks.insert_passkey(
            con,
            credential_id=credential_id,
            account_id=account_id,
            rp_id=rp_id,
            private_key=pem.decode("ascii"),
            user_handle=b64(user_handle) if user_handle else None,
            created_at=state.now(),
        )
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {"credential_id": credential_id, "account_id": account_id, "rp_id": rp_id, "public_key": b64(spki)}


def authenticator_data(rp_id: str, count: int) -> bytes:
    return hashlib.sha256(rp_id.encode()).digest() + bytes([FLAGS]) + count.to_bytes(4, "big")


def sign(state: SandboxState, con: sqlite3.Connection, unlock: sqlite3.Row, public_key: str) -> str:
    """The owner allowed the sign-in: the assertion, sealed to the asking connection's key."""
    ask = pks.passkey_ask(con, unlock["id"])
    passkey = pks.get_passkey(con, ask["credential_id"]) if ask is not None else None
    if ask is None or passkey is None:
        raise HTTPProblem(409, "CANNOT_SIGN", "the passkey this sign-in names is gone")
    key = serialization.load_pem_private_key(passkey["private_key"].encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    data = authenticator_data(passkey["rp_id"], pks.count_signature(con, passkey["credential_id"]))
    client_data = base64.b64decode(ask["client_data_json_b64"])
    signature = key.sign(data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
    answer = {
        "credential_id": passkey["credential_id"],
        "authenticator_data": b64(data),
        "signature": b64(signature),
        "user_handle": passkey["user_handle"],
    }
    return wire.b64encode(sealing.seal_envelope(json.dumps(answer).encode(), public_key, owner=False))
