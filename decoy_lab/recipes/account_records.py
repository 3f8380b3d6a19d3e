"""The account family's recipes, one per record kind (wire/layouts.py `RECORDS`), each recording
its steps into an optional Trace like the memory recipes in sealing.py:

    account record   owner ENVELOPE ([0x01][0x02] + envelope) of the record's UTF-8 JSON
    credential       headerless envelope to the owner's account key; plaintext the password's UTF-8
    field            VAULT blob under a fresh field key, bound to its `id` and `account_id`
    sealed details   headerless envelope of a decoy's details to the owner's key
    metadata seal    the same details to this connection's own key
    edit patch       headerless envelope of {"v":1,"set":{…},"unset":[…]} to the owner's key
    unlock answer    headerless envelope to this connection's key holding the account's secrets

The `open_*` recipes are the owner's-eye checks (with the owner's key: what the owner's app
opens) and this connection's reads (with its own key). `open_record` opens any of them by kind,
for a dump.
"""

from __future__ import annotations

import json
from typing import Any

from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace, tracer
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

__all__ = [
    "FIELD_TYPES",
    "open_account_record",
    "open_credential",
    "open_details",
    "open_field",
    "open_record",
    "open_unlock_answer",
    "seal_account_record",
    "seal_credential",
    "seal_details",
    "seal_field",
    "seal_patch",
]

FIELD_TYPES = ("concealed-string", "string")  # `"fieldType":"concealed-string"|"string"`


def _json_step(obj: Any, trace: Trace | None, *, secret: bool = False) -> bytes:
    with tracer(trace).step(
        "JSON encode (UTF-8)",
        inputs={"keys": list(obj) if isinstance(obj, dict) else type(obj).__name__},
        secret_fields=frozenset({"plaintext"}) if secret else frozenset(),
    ) as s:
        plain = sealing.json_bytes(obj)
        s.data = plain
        s.output = f"{len(plain)} bytes"
    return plain


def _decode_json(plain: bytes, what: str, trace: Trace | None, *, secret: bool = False) -> Any:
    """UTF-8 JSON; `secret`: it holds a secret (a field's value, an unlock answer), masked in the trace."""
    masked = frozenset({"plaintext"}) if secret else frozenset()
    with tracer(trace).step("UTF-8 JSON decode", data=plain, secret_fields=masked, secret_output=secret) as s:
        try:
            obj = json.loads(plain.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise UnreadableRow(None, f"{what} opens, but its plaintext is not UTF-8 (byte {exc.start})") from None
        except ValueError as exc:
            raise UnreadableRow(None, f"{what} opens, but its plaintext is not JSON: {exc}") from None
        s.output = obj
    return obj


# -- the account record ------------------------------------------------------------------------
def seal_account_record(record: dict[str, Any], owner_public_key: str, *, trace: Trace | None = None) -> bytes:
    """ENVELOPE mode: the record sealed to the owner's public key (`GET /api/agent/public-key`)."""
    plain = _json_step(record, trace)
    return sealing.seal_envelope(plain, owner_public_key, owner=True, trace=trace, kind="account_record")


def open_account_record(blob: bytes | str, owner_key: AgentKey, *, trace: Trace | None = None) -> dict[str, Any]:
    """The owner's-eye read of an ENVELOPE account record: open it with the owner's key."""
    plain = sealing.open_envelope(
        blob, owner_key, owner=True, trace=trace, field="encrypted_data", kind="account_record"
    )
    record = _decode_json(plain, "the account record", trace)
    if not isinstance(record, dict):
        raise UnreadableRow(None, "the account record's plaintext is JSON but not an object")
    return record


# -- the credential ----------------------------------------------------------------------------
def seal_credential(password: str, owner_public_key: str, *, trace: Trace | None = None) -> bytes:
    """`encrypted_password`: a headerless envelope to the owner's account key whose plaintext is
    the password's UTF-8 bytes ("No SealedBlob header and no JSON wrapper")."""
    if not isinstance(password, str) or not password:
        raise CryptoError("a password is non-empty text", step="credential check")
    return sealing.seal_envelope(
        password.encode("utf-8"), owner_public_key, owner=False, trace=trace, kind="credential"
    )


def open_credential(blob: bytes | str, owner_key: AgentKey, *, trace: Trace | None = None) -> str:
    """The owner's-eye check of a saved password: it opens with the owner's key ("a wrong format
    is stored and the owner's phone can't open it"), and its plaintext is UTF-8 text."""
    t = tracer(trace)
    raw = wire.b64decode(blob, field="encrypted_password") if isinstance(blob, str) else bytes(blob)
    with t.step("header check: no SealedBlob header", data=raw, inputs={"first bytes": raw[:2].hex()}) as s:
        if raw[:2] in (wire.VAULT_HEADER, wire.OWNER_HEADER):
            raise CryptoError(
                f"it starts {raw[:2].hex(' ')}: a SealedBlob header where the headerless envelope belongs",
                step="header check",
            )
        s.output = "headerless"
    plain = sealing.open_envelope(
        raw, owner_key, owner=False, trace=trace, field="encrypted_password", kind="credential"
    )
    with t.step("UTF-8 decode", data=plain, secret_fields=frozenset({"password"})) as s:
        try:
            text = plain.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableRow(None, f"the password opens, but it is not UTF-8 (byte {exc.start})") from None
        s.output = f"{len(text)} characters"
        s.secret_output = True
    return text


# -- a decoy's details, the copy sealed to this connection, a patch ----------------------------
def seal_details(
    details: dict[str, Any], public_key: str, *, kind: str = "sealed_details", trace: Trace | None = None
) -> bytes:
    """`sealed_details` (to the owner's key) or a `metadata_seal` (to this connection's own key):
    the details' UTF-8 JSON in a headerless envelope."""
    if kind not in ("sealed_details", "metadata_seal"):
        raise WireFormatError(f"details are sealed as sealed_details or metadata_seal, not {kind!r}", kind=kind)
    plain = _json_step(details, trace)
    return sealing.seal_envelope(plain, public_key, owner=False, trace=trace, kind=kind, secret_payload=False)


def open_details(
    blob: bytes | str, key: AgentKey, *, kind: str = "metadata_seal", trace: Trace | None = None
) -> dict[str, Any]:
    """A metadata seal with this connection's key (or sealed details with the owner's): its JSON."""
    plain = sealing.open_envelope(blob, key, owner=False, trace=trace, field=kind, kind=kind)
    details = _decode_json(plain, f"the {kind.replace('_', ' ')}", trace)
    if not isinstance(details, dict):
        raise UnreadableRow(None, f"the {kind.replace('_', ' ')} is JSON but not an object")
    return details


def seal_patch(patch: dict[str, Any], owner_public_key: str, *, trace: Trace | None = None) -> bytes:
    """A queued edit: `{"v":1,"set":{…},"unset":[…]}` sealed to the owner's public key."""
    plain = _json_step(patch, trace)
    return sealing.seal_envelope(plain, owner_public_key, owner=False, trace=trace, kind="edit_patch")


# -- a secret field ----------------------------------------------------------------------------
def seal_field(key: bytes, plain: dict[str, Any], *, trace: Trace | None = None) -> bytes:
    """`ciphertext`: the field's JSON as a VAULT SealedBlob under its field key."""
    data = _json_step(plain, trace, secret=True)
    return sealing.seal_vault(key, data, trace=trace, kind="field", secret=True)


def open_field(served: dict[str, Any], agent_key: AgentKey, *, trace: Trace | None = None) -> dict[str, Any]:
    """Read a served field as 001 says: unwrap `wrapped_key` (the raw 32-byte field key), check
    `kid`, open `ciphertext`, and check the plaintext's `id` and `account_id` are this field's
    ("A blob that names another row must be rejected")."""
    t = tracer(trace)
    key = sealing.unwrap_as_agent(served.get("wrapped_key") or "", agent_key, trace=trace)
    with t.step("kid check", inputs={"served kid": served.get("kid")}) as s:
        if wire.kid(key) != served.get("kid"):
            raise CryptoError(f"the unwrapped key is kid {wire.kid(key)}, not {served.get('kid')}", step="kid check")
        s.output = "matches"
    data = sealing.open_vault(key, served.get("ciphertext") or "", trace=trace, kind="field", secret=True)
    plain = _decode_json(data, "the field", trace, secret=True)
    with t.step(
        "bind check: id and account_id", inputs={"served id": served.get("id"), "account_id": served.get("account_id")}
    ) as s:
        if not isinstance(plain, dict):
            raise UnreadableRow(served.get("id"), "the field's plaintext is not a JSON object")
        if plain.get("id") != served.get("id") or plain.get("account_id") != served.get("account_id"):
            raise UnreadableRow(served.get("id"), "the field's plaintext names another row (its id or account_id)")
        s.output = "bound"
    return plain


# -- an unlock answer --------------------------------------------------------------------------
def open_unlock_answer(envelope: bytes | str, agent_key: AgentKey, *, trace: Trace | None = None) -> dict[str, Any]:
    """An unlock's `sealed_envelope`, opened with this connection's key: its JSON object."""
    plain = sealing.open_envelope(
        envelope, agent_key, owner=False, trace=trace, field="sealed_envelope", kind="unlock_answer"
    )
    answer = _decode_json(plain, "the unlock answer", trace, secret=True)
    if not isinstance(answer, dict):
        raise UnreadableRow(None, "the unlock answer is JSON but not an object")
    return answer


# -- any record, by kind (a dump) --------------------------------------------------------------
def open_record(kind: str, blob: bytes | str, *, key: bytes | None = None, private_key: AgentKey | None = None,
                trace: Trace | None = None) -> Any:  # fmt: skip
    """Open a blob as the record kind `kind` names: an envelope with `private_key` (the owner's
    for what is sealed to the owner), a field with its 32-byte `key`."""
    record = wire.RECORDS.get(kind)
    if record is None:
        raise WireFormatError(f"unknown record kind {kind!r}; known: {', '.join(wire.RECORDS)}", kind=kind)
    if record.opens_with == "field_key":
        if key is None:
            raise CryptoError("a field opens with its 32-byte field key", step="read the key")
        plain = sealing.open_vault(key, blob, trace=trace, kind=kind, secret=True)
        return _decode_json(plain, "the field", trace, secret=True)
    if private_key is None:
        who = "the owner's" if record.opens_with == "owner" else "this connection's"
        raise CryptoError(f"{kind.replace('_', ' ')} opens with {who} private key", step="read the key")
    if kind == "credential":
        return open_credential(blob, private_key, trace=trace)
    if kind == "account_record":
        return open_account_record(blob, private_key, trace=trace)
    if kind == "field_owner_wrap":
        return sealing.unwrap_as_owner(blob, private_key, trace=trace)
    if kind == "field_wrap":
        return sealing.unwrap_as_agent(blob, private_key, trace=trace)
    plain = sealing.open_envelope(blob, private_key, owner=False, trace=trace, kind=kind)
    return _decode_json(plain, f"the {kind.replace('_', ' ')}", trace, secret=kind == "unlock_answer")
