"""Request bodies of the account family, checked on what the server can see.

The server never decrypts. An account record is "a base64 SealedBlob … VAULT mode (sealed with the
vault key) or ENVELOPE mode (sealed to the owner's public key …), and non-empty: an empty blob
carries no name and is rejected with 400" (≤64 KB, the batch's "Same validation as single create:
VAULT mode, non-empty, ≤64 KB"). A saved password is a headerless envelope that "The server can't
read … to validate it: a wrong format is stored and the owner's phone can't open it" — so it is
checked for base64 and size only. A secret field's body carries no plaintext: "a body carrying
`value`, `label`, `secret` or similar keys is refused with 400 `PLAINTEXT_REJECTED`".
"""

from __future__ import annotations

from typing import Any

from decoy_lab import vocab
from decoy_lab.errors import WireFormatError
from decoy_lab.sandbox.checks.bodies import b64, envelope, kid_text, looks_like_json, uuid_text, vault_blob
from decoy_lab.sandbox.core import HTTPProblem, bad_request, need_fields
from decoy_lab.wire import layouts as wire

MAX_RECORD = 64 * 1024  # "VAULT mode, non-empty, ≤64 KB"
MAX_SEALED = 16384  # "at most 16384 bytes" (sealed_details, a metadata seal)
MAX_PASSWORD = 16384  # the sandbox's cap on a password envelope (001 gives none)
MAX_FIELD = 16 * 1024  # a field's ciphertext: "At most 16 KB."
MAX_PATCH = 8192  # "At most 8192 bytes sealed (`413 SEALED_PATCH_TOO_LARGE`)."

#: keys a secret-field body never carries ("`value`, `label`, `secret` or similar keys")
FIELD_PLAINTEXT = frozenset(
    {"value", "label", "secret", "fieldtype", "field_type", "plaintext", "password", "token", "api_key", "note"}
)


def sealed_record(value: Any, field: str = "encrypted_data") -> tuple[str, str]:
    """An account record as sent: (the base64 text, "vault" | "envelope"). 400 otherwise."""
    if value is None or value == "":
        raise bad_request(
            "ACCOUNT_BLOB_REQUIRED",
            f"{field} is required: the account record (name, username, URLs, notes, tags) sealed as a "
            "base64 SealedBlob; the server never stores it in plain text",
            field,
        )
    data = b64(value, field)
    if not data:
        raise bad_request("ACCOUNT_BLOB_REQUIRED", f"{field} is empty: an empty blob carries no name", field)
    if len(data) > MAX_RECORD:
        raise bad_request("BLOB_TOO_LARGE", f"{field} decodes to {len(data)} bytes; at most {MAX_RECORD}", field)
    if looks_like_json(data):
        raise bad_request("PLAINTEXT_REJECTED", f"{field} is base64 of plaintext JSON, not a SealedBlob", field)
    for kind, mode in (("vault", "vault"), ("owner_envelope", "envelope")):
        try:
            wire.parse(data, kind)
        except WireFormatError:
            continue
        return value, mode
    raise bad_request(
        "INVALID_ENCRYPTED_DATA",
        f"{field} is neither a VAULT SealedBlob ([0x01][0x01]…) nor an owner ENVELOPE ([0x01][0x02]…)",
        field,
    )


def password_envelope(value: Any) -> str:
    """`encrypted_password`: base64 and a size the server accepts; its layout is not checked."""
    if value is None:
        raise bad_request("INVALID_REQUEST", "encrypted_password is required", "encrypted_password")
    data = b64(value, "encrypted_password")
    if not data:
        raise bad_request("INVALID_REQUEST", "encrypted_password is empty", "encrypted_password")
    if len(data) > MAX_PASSWORD:
        raise bad_request(
            "INVALID_REQUEST", f"encrypted_password is {len(data)} bytes; at most {MAX_PASSWORD}", "encrypted_password"
        )
    return value


def expected_rev(value: Any, field: str = "expected_rev") -> int | None:
    """An optional `expected_rev`: a positive integer ("A value that is not a positive integer is
    refused with 400"); a query string's digits count."""
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise bad_request("INVALID_REQUEST", f"{field} must be an integer ≥ 1", field)
    return value


def status_value(value: Any) -> str:
    """An account's or an address's `status` (in a body or a list's filter): active or inactive."""
    if value not in vocab.STATUSES:
        raise bad_request("INVALID_REQUEST", "status is active or inactive", "status")
    return str(value)


def rev_conflict(message: str, current: int) -> HTTPProblem:
    """409 REV_CONFLICT for an account or a decoy: "The body carries `error.current_rev`" (and, as
    the field routes carry it, `current_rev` at the top)."""
    err = {"code": "REV_CONFLICT", "message": message, "current_rev": current}
    return HTTPProblem(409, "REV_CONFLICT", message, current_rev=current, error=err)


def no_field_plaintext(body: dict[str, Any]) -> None:
    for k in body:
        if str(k).lower() in FIELD_PLAINTEXT:
            raise bad_request(
                "PLAINTEXT_REJECTED",
                f"{k!r} looks like the field's plaintext: the label and value travel only inside `ciphertext`",
                str(k),
            )


def field_ciphertext(value: Any) -> str:
    if value is None:
        raise bad_request("INVALID_REQUEST", "ciphertext is required", "ciphertext")
    vault_blob(value, "ciphertext")
    if len(b64(value, "ciphertext")) > MAX_FIELD:
        raise bad_request("FIELD_TOO_LARGE", f"ciphertext is over {MAX_FIELD} bytes", "ciphertext")
    return value


def grantee_wraps(value: Any) -> list[tuple[str, str]]:
    """`grantee_wraps`: [(token_id, wrapped_key)], each a headerless agent envelope."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 100:
        raise bad_request("INVALID_REQUEST", "grantee_wraps must be an array of at most 100", "grantee_wraps")
    out = []
    for i, w in enumerate(value):
        f = f"grantee_wraps[{i}]"
        if not isinstance(w, dict) or not isinstance(w.get("token_id"), str):
            raise bad_request("INVALID_REQUEST", f"{f} must be an object with token_id and wrapped_key", f)
        out.append((w["token_id"], envelope(w.get("wrapped_key"), f"{f}.wrapped_key", "agent_envelope", None)))
    return out


def field_create(body: dict[str, Any], owner_pk: str | None, self_pk: str | None) -> dict[str, Any]:
    """The POST body of a secret field: id, kid, ciphertext, owner_wrap, self_wrap, grantee_wraps."""
    no_field_plaintext(body)
    need_fields(
        body, "id", "kid", "ciphertext", "owner_wrap", "self_wrap", why=" (owner and self wraps are both mandatory)"
    )
    return {
        "id": uuid_text(body["id"], "id"),
        "kid": kid_text(body["kid"], "kid"),
        "ciphertext": field_ciphertext(body["ciphertext"]),
        "owner_wrap": envelope(body["owner_wrap"], "owner_wrap", "owner_envelope", owner_pk),
        "self_wrap": envelope(body["self_wrap"], "self_wrap", "agent_envelope", self_pk),
        "grantee_wraps": grantee_wraps(body.get("grantee_wraps")),
    }


def sealed_to(value: Any, field: str, *, code: str, too_large: str, cap: int = MAX_SEALED) -> bytes:
    """A headerless envelope sent for someone's key (sealed_details, a metadata seal, a patch):
    canonical base64, at most `cap` bytes (413 `too_large`), the agent envelope's layout (400 `code`)."""
    if not isinstance(value, str) or not value:
        raise bad_request(code, f"{field} must be base64 text", field)
    data = wire.canonical_b64decode(value)
    if data is None:
        raise bad_request(code, f"{field} is not canonical base64", field)
    if len(data) > cap:
        raise HTTPProblem(413, too_large, f"{field} is {len(data)} bytes; at most {cap}", field=field)
    try:
        wire.parse(data, "agent_envelope")
    except WireFormatError as exc:
        raise bad_request(
            code, f"{field} is not [2B keyLen][wrapped key][12B iv][ciphertext][16B tag]: {exc}", field
        ) from None
    return data


def wrapped_len(data: bytes) -> int:
    """The wrapped key's length in a headerless envelope (its first two bytes, big-endian)."""
    return int.from_bytes(data[:2], "big")


def flags(body: dict[str, Any]) -> dict[str, Any]:
    """The plain metadata an account write may carry: agent_label, has_password, two_factor_enabled."""
    out: dict[str, Any] = {}
    if "agent_label" in body:
        label = body["agent_label"]
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise bad_request("INVALID_REQUEST", "agent_label is text of at most 200 characters", "agent_label")
        out["agent_label"] = label
    for k in ("has_password", "two_factor_enabled"):
        if k in body:
            if not isinstance(body[k], bool):
                raise bad_request("INVALID_REQUEST", f"{k} is true or false", k)
            out[k] = int(body[k])
    return out
