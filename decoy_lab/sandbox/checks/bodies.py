"""Request bodies of the per-memory routes: every field checked on what the server can see.

The server never decrypts, so a body is judged by its shapes: ids are lowercase UUIDs, key ids
16 hex characters, ciphertexts VAULT SealedBlobs of at most 100 KiB, wraps the owner's or an
agent's envelope layout (an agent wrap one RSA block of its recipient's key size), and no key
that only plaintext would carry anywhere (400 PLAINTEXT_REJECTED): "Never put `text`,
`categories` or account names in the HTTP body outside ciphertext".
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from decoy_lab.errors import WireFormatError
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.guard import STRICT
from decoy_lab.sandbox.core import HTTPProblem, bad_request, json_body, need_fields
from decoy_lab.vocab import MAX_CIPHERTEXT
from decoy_lab.wire import crypto
from decoy_lab.wire import layouts as wire

MAX_ROWS = 200


MAX_WRAPS = 100


MAX_DELETE = 500


KID_RE = re.compile(r"^[0-9a-f]{16}$")


# Keys that only plaintext would carry. Any of them anywhere in a body is refused.
PLAINTEXT_KEYS = frozenset(
    k.lower()
    for k in (
        "text",
        "content",
        "categories",
        "category",
        "name",
        "label",
        "labels",
        "value",
        "values",
        "observation",
        "observations",
        "entity",
        "entities",
        "entityName",
        "entity_name",
        "entityType",
        "relation",
        "relations",
        "relationType",
        "about",
        "about_hint",
        "topic",
        "topic_name",
        "topic_type",
        "account_name",
        "metadata",
        "plaintext",
        "title",
        "summary",
        "memory",
        "note",
        "notes",
        "fact",
        "facts",
        "description",
        "body",
        "message",
        # labels and account names ("Categories/topics/account labels stay encrypted"; "Never put
        # `text`, `categories` or account names in the HTTP body outside ciphertext") and credentials
        # ("Keep credentials out of this memory store")
        "topics",
        "topic_id",
        "topic_ids",
        "relation_type",
        "entity_type",
        "datatypes",
        "tags",
        "tag",
        "keywords",
        "account",
        "accounts",
        "account_names",
        "service_name",
        "service",
        "username",
        "password",
        "secret",
        "email",
        "domain",
        "site",
    )
)


# ── the body as a whole ────────────────────────────────────────────────────────────────────


async def no_plaintext_body(request: Request) -> dict:
    """The JSON object body (core.json_body), with plaintext-looking keys refused wherever they appear."""
    body = await json_body(request)
    try:
        reject_plaintext(body)
    except RecursionError:
        raise bad_request("INVALID_JSON", "the body nests too deeply to be a request") from None
    return body


def row_batch(body: dict[str, Any]) -> list[Any]:
    """The `rows` of a batch POST (context/memories, context/rows): a non-empty array of at most
    MAX_ROWS (the spec's maxItems); each row is checked by its route."""
    rows = body.get("rows")
    if not isinstance(rows, list) or not rows:
        raise bad_request("INVALID_REQUEST", "rows must be a non-empty array", "rows")
    if len(rows) > MAX_ROWS:
        raise bad_request("TOO_MANY_ROWS", f"{len(rows)} rows; at most {MAX_ROWS} per request", "rows")
    return rows


def reject_plaintext(obj: Any, path: str = "") -> None:
    """400 PLAINTEXT_REJECTED when a key that only plaintext would carry appears anywhere."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            where = f"{path}.{k}" if path else str(k)
            if str(k).lower() in PLAINTEXT_KEYS:
                raise bad_request(
                    "PLAINTEXT_REJECTED",
                    f"{where!r} looks like plaintext: text, labels and names travel only inside "
                    "the ciphertext (the server never sees them)",
                    field=where,
                )
            reject_plaintext(v, where)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            reject_plaintext(v, f"{path}[{i}]")


# ── fields ─────────────────────────────────────────────────────────────────────────────────


def b64(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise bad_request("INVALID_BASE64", f"{field} must be a standard padded base64 string", field)
    try:
        return wire.b64decode(value, field=field)
    except WireFormatError as exc:
        raise bad_request("INVALID_BASE64", str(exc), field, offset=exc.offset) from None


@functools.lru_cache(maxsize=256)
def rsa_bytes(public_key_b64: str) -> int:
    """Size in bytes of an RSA-OAEP output under this public key (256 for RSA-2048)."""
    return (crypto.load_public_key(public_key_b64).key_size + 7) // 8


def envelope(value: Any, field: str, kind: str, recipient_key: str | None) -> str:
    """Check a wrap's layout ("agent_envelope" or "owner_envelope") and, when the recipient is
    known, that its wrapped key is one RSA block of that recipient's key size."""
    data = b64(value, field)
    try:
        layout = wire.parse(data, kind)
    except WireFormatError as exc:
        if not STRICT.get():  # Decoy stores what it cannot open; app-view names the fault
            return value
        what = (
            "an owner ENVELOPE ([0x01][0x02] + envelope)"
            if kind == "owner_envelope"
            else "a headerless agent envelope ([2-byte key length][RSA-OAEP key][12-byte IV][ciphertext][16-byte tag])"
        )
        raise bad_request("INVALID_WRAP", f"{field} is not {what}: {exc}", field, offset=exc.offset) from None
    if recipient_key:
        want = rsa_bytes(recipient_key)
        got = len(layout.value("wrapped_key"))
        if got != want and STRICT.get():
            hint = (
                " (it starts 01 02: an owner envelope where a headerless one belongs?)"
                if kind == "agent_envelope" and data[:2] == b"\x01\x02"
                else ""
            )
            raise bad_request(
                "INVALID_WRAP",
                f"{field}: wrapped_key is {got} bytes, but an RSA-OAEP wrap to the recipient's key is {want}{hint}",
                field,
            )
    return value


def vault_blob(value: Any, field: str) -> str:
    data = b64(value, field)
    if len(data) > MAX_CIPHERTEXT:
        raise HTTPProblem(
            400,
            "CIPHERTEXT_TOO_LARGE",
            f"{field} decodes to {len(data)} bytes; the maximum is {MAX_CIPHERTEXT} (100 KiB)",
            field=field,
        )
    try:
        wire.parse(data, "vault")
    except WireFormatError as exc:
        if not STRICT.get() and not looks_like_json(data):
            return value  # stored as Decoy stores it; the owner's app cannot open it (app-view)
        if looks_like_json(data):
            raise bad_request(
                "PLAINTEXT_REJECTED",
                f"{field} is base64 of plaintext JSON, not a VAULT SealedBlob: seal it under the memory key first",
                field,
            ) from None
        raise bad_request(
            "INVALID_CIPHERTEXT", f"{field} is not a VAULT SealedBlob: {exc}", field, offset=exc.offset
        ) from None
    return value


def looks_like_json(data: bytes) -> bool:
    if data[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def uuid_text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise bad_request("INVALID_ID", f"{field} must be a UUID string", field)
    try:
        canon = str(uuid.UUID(value))
    except ValueError:
        raise bad_request("INVALID_ID", f"{field} {value!r} is not a UUID", field) from None
    if canon != value:
        raise bad_request("INVALID_ID", f"{field} must be the lowercase hyphenated UUID form ({canon})", field)
    return value


def edit_fields(body: dict) -> tuple[str, int, str]:
    """The fields every PUT of a sealed row carries: (id, expected_rev, ciphertext), checked."""
    need_fields(body, "id", "expected_rev", "ciphertext")
    rev = body["expected_rev"]
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 1:
        raise bad_request("INVALID_REQUEST", "expected_rev must be an integer ≥ 1", "expected_rev")
    return uuid_text(body["id"], "id"), rev, vault_blob(body["ciphertext"], "ciphertext")


def delete_ids(body: dict) -> list[str]:
    """The `ids` of a delete body: a non-empty array of at most MAX_DELETE uuids."""
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids:
        raise bad_request("INVALID_REQUEST", "ids must be a non-empty array", "ids")
    if len(ids) > MAX_DELETE:
        raise bad_request("TOO_MANY_IDS", f"{len(ids)} ids; at most {MAX_DELETE}", "ids")
    return [uuid_text(v, f"ids[{i}]") for i, v in enumerate(ids)]


def kid_text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not KID_RE.match(value):
        raise bad_request(
            "INVALID_KID", f"{field} must be 16 lowercase hex characters (first 8 bytes of SHA-256 of the key)", field
        )
    return value


def str_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad_request("INVALID_REQUEST", f"{field} must be an array of strings", field)
    return list(dict.fromkeys(value))


# ── wraps and rows ─────────────────────────────────────────────────────────────────────────


@dataclass
class WrapIn:
    token_id: str
    via: list[str]
    wrapped_key: str


def parse_wraps(value: Any, field: str, agents: dict[str, Agent]) -> list[WrapIn]:
    """Shape-check grantee wraps. Layout is checked against the recipient's key when it is live."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("INVALID_REQUEST", f"{field} must be an array", field)
    if len(value) > MAX_WRAPS:
        raise bad_request("TOO_MANY_WRAPS", f"{field} holds {len(value)} wraps; at most {MAX_WRAPS}", field)
    out = []
    for i, w in enumerate(value):
        f = f"{field}[{i}]"
        if not isinstance(w, dict):
            raise bad_request("INVALID_REQUEST", f"{f} must be an object", f)
        for k in ("token_id", "via", "wrapped_key"):
            if k not in w:
                raise bad_request("INVALID_REQUEST", f"{f}.{k} is required", f"{f}.{k}")
        if not isinstance(w["token_id"], str):
            raise bad_request("INVALID_REQUEST", f"{f}.token_id must be a string", f"{f}.token_id")
        via = str_list(w["via"], f"{f}.via")
        recipient = agents.get(w["token_id"])
        envelope(
            w["wrapped_key"],
            f"{f}.wrapped_key",
            "agent_envelope",
            recipient.public_key if recipient is not None else None,
        )
        out.append(WrapIn(w["token_id"], via, w["wrapped_key"]))
    return out


@dataclass
class RowIn:
    id: str
    kid: str
    ciphertext: str
    owner_wrap: str
    self_wrap: str
    self_via: list[str] | None
    grantee_wraps: list[WrapIn]


def parse_row(r: Any, i: int, agent: Agent, owner_pk: str | None, agents: dict[str, Agent]) -> RowIn:
    f = f"rows[{i}]"
    if not isinstance(r, dict):
        raise bad_request("INVALID_REQUEST", f"{f} must be an object", f)
    need_fields(
        r,
        "id",
        "kid",
        "ciphertext",
        "owner_wrap",
        "self_wrap",
        at=f"{f}.",
        why=" (owner and self wraps are both mandatory)",
    )
    return RowIn(
        id=uuid_text(r["id"], f"{f}.id"),
        kid=kid_text(r["kid"], f"{f}.kid"),
        ciphertext=vault_blob(r["ciphertext"], f"{f}.ciphertext"),
        owner_wrap=envelope(r["owner_wrap"], f"{f}.owner_wrap", "owner_envelope", owner_pk),
        self_wrap=envelope(r["self_wrap"], f"{f}.self_wrap", "agent_envelope", agent.public_key),
        self_via=str_list(r["self_via"], f"{f}.self_via") if r.get("self_via") is not None else None,
        grantee_wraps=parse_wraps(r.get("grantee_wraps"), f"{f}.grantee_wraps", agents),
    )
