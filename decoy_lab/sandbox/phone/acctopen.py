"""Opening the account family as the owner's app does, naming what fails; the owner's-eye view.

The owner's app holds the owner's private key and the vault key (the sandbox keeps both; the vault
key is made on first use and kept in `sandbox_meta`). It opens:

- an account record: a VAULT SealedBlob with the vault key, or an owner ENVELOPE
  ([0x01][0x02] + envelope) with the owner key — "VAULT mode (sealed with the vault key) or
  ENVELOPE mode (sealed to the owner's public key, for a connection without the vault key)";
- a saved password: "a headerless envelope (`[2-byte BE key length][RSA-OAEP-SHA256 wrapped
  AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]`, plaintext = the password's UTF-8
  bytes) opens with the unwrapped mailbox key; a VAULT SealedBlob (`[0x01][0x01]…`, plaintext = a
  JSON string) opens with the vault key" (the sandbox's mailbox key is the owner key);
- a secret field: `owner_wrap` → the field key (the base64 text), checked against `kid`, then the
  ciphertext, whose plaintext's `id` and `account_id` must be the field's ("A blob that names
  another row must be rejected");
- a decoy's `sealed_details` and a queued edit's `sealed_patch`: headerless envelopes to the owner key.

`account_view` is what `GET /_sandbox/app-view?account=` serves: each account record, its
credential and its fields, readable or not and why.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from typing import Any

from decoy_lab.errors import CryptoError, DecoyError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import SandboxState, iso
from decoy_lab.sandbox.stores import acctstore as acs
from decoy_lab.wire import layouts as wire

Opened = tuple[Any, str | None]  # (what opened, or None; why not, or None)


def vault_key(state: SandboxState) -> bytes:
    """The owner's vault key: made once, kept with the owner's key in `sandbox_meta`."""
    with state.store.tx() as con:
        row = con.execute("SELECT value FROM sandbox_meta WHERE key='vault_key'").fetchone()
        if row is not None:
            return wire.b64decode(row[0], field="vault_key")
        key = secrets.token_bytes(wire.KEY_LEN)
        con.execute("INSERT INTO sandbox_meta (key, value) VALUES ('vault_key', ?)", (wire.b64encode(key),))
        return key


def recorded_fp(state: SandboxState) -> str | None:
    """The fingerprint recorded for the owner's vault key — "first 8 bytes of SHA-256 of the raw
    vault key, lowercase hex" — recorded by the phone when it made the key (its first key), so
    None until the vault key exists."""
    with state.store.tx() as con:
        row = con.execute("SELECT value FROM sandbox_meta WHERE key='vault_key'").fetchone()
    return None if row is None else key_fp(wire.b64decode(row[0], field="vault_key"))


def key_fp(key: bytes) -> str:
    return hashlib.sha256(key).digest()[:8].hex()


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, DecoyError) else f"{type(exc).__name__}: {exc}"


def _json(data: bytes, what: str) -> Opened:
    try:
        return json.loads(data.decode("utf-8")), None
    except (UnicodeDecodeError, ValueError):
        return None, f"{what} opens, but its plaintext is not UTF-8 JSON"


def open_record(state: SandboxState, blob: str | None, mode: str | None) -> Opened:
    """An account record (or a decoy's VAULT details) → its JSON object, or why not."""
    if not blob:
        return None, "no sealed record is stored"
    try:
        if mode == "envelope":
            plain = sealing.open_envelope(blob, state.owner.key, owner=True, field="encrypted_data")
        else:
            plain = sealing.open_vault(vault_key(state), blob, field="encrypted_data")
    except (CryptoError, WireFormatError, ValueError) as exc:
        key = "the owner key" if mode == "envelope" else "the vault key"
        return None, f"the record does not open with {key}: {_why(exc)}"
    record, why = _json(plain, "the record")
    if why is None and not isinstance(record, dict):
        return None, "the record's plaintext is JSON but not an object"
    return record, why


def open_password(state: SandboxState, blob: str | None) -> Opened:
    """A saved password → its text, or why the owner's phone cannot open it."""
    if not blob:
        return None, "no password is stored"
    raw = wire.canonical_b64decode(blob) or b""
    if raw[:2] == wire.VAULT_HEADER:
        try:
            text, why = _json(sealing.open_vault(vault_key(state), raw), "the password blob")
        except (CryptoError, WireFormatError, ValueError) as exc:
            return None, f"the VAULT password blob does not open with the vault key: {_why(exc)}"
        return (text, None) if why is None and isinstance(text, str) else (None, why or "not a JSON string")
    if raw[:2] == wire.OWNER_HEADER:
        hint = " (it starts 01 02: a SealedBlob ENVELOPE header where a headerless envelope belongs)"
    else:
        hint = ""
    try:
        plain = sealing.open_envelope(raw, state.owner.key, owner=False, field="encrypted_password")
    except (CryptoError, WireFormatError, ValueError) as exc:
        return None, f"the password envelope does not open with the owner key{hint}: {_why(exc)}"
    try:
        return plain.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "the password envelope opens, but its plaintext is not UTF-8"


def open_sealed(state: SandboxState, blob: str | None, what: str) -> Opened:
    """A headerless envelope to the owner key holding UTF-8 JSON (sealed_details, sealed_patch)."""
    if not blob:
        return None, f"no {what} is stored"
    try:
        plain = sealing.open_envelope(blob, state.owner.key, owner=False, field=what)
    except (CryptoError, WireFormatError, ValueError) as exc:
        return None, f"{what} does not open with the owner key: {_why(exc)}"
    return _json(plain, what)


def open_field(state: SandboxState, field: sqlite3.Row) -> tuple[dict | None, bytes | None, str | None]:
    """A secret field → (its plaintext, its key, None), or (None, key or None, why not)."""
    try:
        key = sealing.unwrap_as_owner(field["owner_wrap"], state.owner.key)
    except (CryptoError, WireFormatError, ValueError) as exc:
        return None, None, f"owner_wrap does not open with the owner key: {_why(exc)}"
    if wire.kid(key) != field["kid"]:
        return None, key, f"the key in owner_wrap is kid {wire.kid(key)}, not the field's kid {field['kid']}"
    try:
        plain, why = _json(sealing.open_vault(key, field["ciphertext"]), "the field")
    except (CryptoError, WireFormatError, ValueError) as exc:
        return None, key, f"the ciphertext does not open with the field key: {_why(exc)}"
    if why is not None or not isinstance(plain, dict):
        return None, key, why or "the field's plaintext is not a JSON object"
    if plain.get("id") != field["id"] or plain.get("account_id") != field["account_id"]:
        return None, key, "the field's plaintext names another row (its id or account_id differ)"
    return plain, key, None


def record_name(record: dict | None) -> str | None:
    """The account's name in its record, as the apps write it (`name`, `serviceName` or `title`)."""
    if not isinstance(record, dict):
        return None
    for key in ("name", "serviceName", "service_name", "title"):
        if isinstance(record.get(key), str) and record[key].strip():
            return record[key]
    return None


def account_view(state: SandboxState, account_id: str | None = None) -> list[dict]:
    """Every account (or one) as the owner's app sees it: the record, the credential and each
    field, readable or not and why. Reads nothing the owner does not hold."""
    with state.store.tx() as con:
        accounts = [a for a in acs.live_accounts(con) if account_id is None or a["id"] == account_id]
        fields = {a["id"]: acs.fields_of(con, a["id"]) for a in accounts}
    out = []
    for a in accounts:
        record, why = open_record(state, a["encrypted_data"], a["blob_mode"])
        entry: dict[str, Any] = {
            "id": a["id"],
            "kind": "account",
            "readable": why is None,
            "name": record_name(record),
            "blob_mode": a["blob_mode"],
            "rev": a["rev"],
            "status": a["status"],
            "created_by_token_id": a["created_by_token_id"],
            "created_at": iso(a["created_at"]),
        }
        if why is not None:
            entry.update(problem="record", reason=why)
        entry["credential"] = _credential_view(state, a)
        entry["fields"] = [_field_view(state, f) for f in fields[a["id"]]]
        out.append(entry)
    return out


def _credential_view(state: SandboxState, account: sqlite3.Row) -> dict[str, Any]:
    if not account["encrypted_password"]:
        return {"has_password": bool(account["has_password"]), "stored": False}
    text, why = open_password(state, account["encrypted_password"])
    view: dict[str, Any] = {
        "has_password": True,
        "stored": True,
        "readable": why is None,
        "password_last_changed": iso(account["password_last_changed"]),
    }
    if why is not None:
        view.update(problem="credential", reason=why)
    else:
        view["length"] = len(text or "")  # the owner's view names no secret
    return view


def _field_view(state: SandboxState, field: sqlite3.Row) -> dict[str, Any]:
    plain, _, why = open_field(state, field)
    view: dict[str, Any] = {"id": field["id"], "kid": field["kid"], "rev": field["rev"], "readable": why is None}
    if why is not None:
        view.update(problem="field", reason=why)
    else:
        assert plain is not None
        view.update(fieldType=plain.get("fieldType"), label=plain.get("label"))
    return view
