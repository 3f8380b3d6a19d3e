"""The recipes: seal and open VAULT blobs, wrap and unwrap memory keys to an agent or the owner.

Each recipe is a short function over crypto.py primitives and wire.py layouts, and each can
record its steps into a Trace (see trace.py) so the workbench can show them byte by byte:

    agent wrap   headerless envelope to the agent's key;  plaintext = the raw 32-byte key
    owner wrap   [0x01][0x02] + envelope to the owner;    plaintext = the 44-character base64
                                                          TEXT of the key, not the raw bytes
    ciphertext   VAULT blob under the memory key;         plaintext = UTF-8 JSON bound to its row

An envelope is hybrid: a fresh content key is RSA-OAEP-SHA256 encrypted to the recipient, and
the payload is AES-256-GCM sealed under that content key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.recipes.trace import NO_TRACE, Source, Trace, Tracer, run_recipe, tracer
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import (
    AgentKey,
    aes_gcm_open,
    aes_gcm_seal,
    key_fingerprint,
    load_public_key,
    public_key_fingerprint,
    random_key,
    random_nonce,
    rsa_oaep_encrypt,
)

__all__ = [
    "json_bytes",
    "open_envelope",
    "open_json",
    "open_space_row",
    "open_vault",
    "seal_envelope",
    "seal_json",
    "seal_space_row",
    "seal_vault",
    "unwrap_as_agent",
    "unwrap_as_owner",
    "wrap_to_agent",
    "wrap_to_owner",
]


def json_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON, as JSON.stringify writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _claim(
    t: Tracer, recipe: str, blob: Any, again: Callable[[Any, Trace], Any], *, secrets: dict[str, Any], **params: Any
) -> None:
    """Record, on a trace no outer recipe has claimed, what this recipe reads and how to run it
    again on edited bytes (`again(blob, trace)`); its input is filled in once decoded."""
    if not isinstance(t, Trace) or t.source is not None:
        return
    title = t.title
    as_text = isinstance(blob, str)  # run again from base64 text, so the same steps are recorded

    def run(inputs: dict[str, bytes]) -> Trace:
        b = inputs["blob"]
        return run_recipe(title, lambda fresh: again(wire.b64encode(b) if as_text else b, fresh))

    t.claim(Source(recipe, run, params=params, secrets=secrets))


def _decode(blob: bytes | str, field: str, t: Tracer) -> bytes:
    if isinstance(blob, (bytes, bytearray, memoryview)):
        raw = bytes(blob)
    elif t is NO_TRACE:
        return wire.b64decode(blob, field=field)
    else:
        with t.step(
            "base64 decode", inputs={"field": field, "characters": len(blob) if isinstance(blob, str) else None}
        ) as s:
            raw = wire.b64decode(blob, field=field)
            s.output = f"{len(raw)} bytes"
            s.data = raw
    if t.source is not None and not t.source.inputs:
        t.source.inputs["blob"] = raw
    return raw


def parse_step(raw: bytes, kind: str, t: Tracer) -> wire.Layout:
    """`raw` parsed as the layout (or record) `kind`, as a step of `t` that shows its annotated
    fields; a misfit fails the step with the partial layout, its failing bytes marked."""
    with t.step(f"parse {kind.replace('_', ' ')}", data=raw, inputs={"bytes": len(raw)}) as s:
        try:
            layout = wire.parse(raw, kind)
        except WireFormatError as exc:
            s.fields = exc.fields  # the partial layout, with the failing bytes marked
            raise
        if t is not NO_TRACE:
            s.fields = layout.fields
            s.output = ", ".join(f"{f.name}[{f.offset}:{f.end}]" for f in layout.fields)
    return layout


# -- VAULT blobs ------------------------------------------------------------------------------
def seal_vault(
    key: bytes,
    plaintext: bytes,
    *,
    nonce: bytes | None = None,
    trace: Trace | None = None,
    kind: str = "vault",
    secret: bool = False,
) -> bytes:
    """AES-256-GCM under `key` (no AAD), framed as a VAULT SealedBlob (`kind`: a record kind in
    that layout, whose fields the trace names, e.g. "field"; `secret`: the trace masks the
    plaintext, a secret field's value)."""
    t = tracer(trace)
    nonce = nonce if nonce is not None else random_nonce()
    with t.step(
        "AES-256-GCM seal",
        data=plaintext,
        secret_fields=frozenset({"plaintext"}) if secret else frozenset(),
        inputs=lambda: {"key (kid)": key_fingerprint(key), "nonce": nonce.hex(), "plaintext bytes": len(plaintext)},
    ) as s:
        sealed = aes_gcm_seal(key, nonce, plaintext)
        s.output = f"{len(sealed) - wire.TAG_LEN} bytes ciphertext + 16-byte tag"
    with t.step("build VAULT blob") as s:
        blob = wire.build(kind, nonce=nonce, ciphertext=sealed[: -wire.TAG_LEN], tag=sealed[-wire.TAG_LEN :])
        s.data = blob
        s.fields = wire.parse(blob, kind).fields
        s.output = wire.b64encode(blob)
    return blob


def open_vault(
    key: bytes,
    blob: bytes | str,
    *,
    trace: Trace | None = None,
    field: str = "ciphertext",
    kind: str = "vault",
    secret: bool = False,
) -> bytes:
    """Open a VAULT SealedBlob: check header and lengths, then authenticate and decrypt (`kind`:
    a record kind in that layout, whose fields the trace names; `secret`: the trace masks the
    plaintext)."""
    t = tracer(trace)
    if trace is not None:  # an untraced bulk read records nothing
        _claim(
            t, "open_vault", blob, lambda b, tr: open_vault(key, b, trace=tr, field=field, kind=kind, secret=secret),
            secrets={"key": key},
        )  # fmt: skip
    raw = _decode(blob, field, t)
    if t is NO_TRACE:  # bulk reads: the same checks, sliced without a Layout, nothing recorded
        _, nonce, sealed = wire.aead_parts(raw, kind)
        return aes_gcm_open(key, nonce, sealed)
    layout = parse_step(raw, kind, t)
    with t.step(
        "AES-256-GCM open",
        data=raw,
        fields=layout.fields,
        inputs=lambda: {"key (kid)": key_fingerprint(key), "nonce": layout.value("nonce").hex()},
    ) as s:
        plain = aes_gcm_open(key, layout.value("nonce"), layout.value("ciphertext") + layout.value("tag"))
        s.output = plain  # every byte of it: views show it as text and as a hex view
        s.secret_output = secret
    return plain


def seal_json(key: bytes, obj: Any, *, trace: Trace | None = None) -> bytes:
    t = tracer(trace)
    with t.step(
        "JSON encode (UTF-8)", inputs={"keys": list(obj) if isinstance(obj, dict) else type(obj).__name__}
    ) as s:
        plain = json_bytes(obj)
        s.data = plain
        s.output = f"{len(plain)} bytes"
    return seal_vault(key, plain, trace=trace)


def open_json(key: bytes, blob: bytes | str, *, trace: Trace | None = None, row_id: str | None = None) -> Any:
    """Open a VAULT blob and decode its UTF-8 JSON. Bad UTF-8 or JSON is an UnreadableRow."""
    t = tracer(trace)
    if trace is not None:  # an untraced bulk read records nothing
        _claim(t, "open_json", blob, lambda b, tr: open_json(key, b, trace=tr, row_id=row_id), secrets={"key": key})
    plain = open_vault(key, blob, trace=trace)
    if t is NO_TRACE:  # bulk reads: nothing recorded
        return _json(plain, row_id)
    with t.step("UTF-8 JSON decode", data=plain) as s:
        s.output = _json(plain, row_id)
    return s.output


def _json(plain: bytes, row_id: str | None) -> Any:
    """UTF-8 JSON, exactly as `json.loads` reads it; bad UTF-8 or JSON is an UnreadableRow.
    orjson reads it first (3x faster, once a row on a bulk read); what it reads with a float in
    it is read again by json, since orjson makes a float of an integer past 64 bits."""
    try:
        obj = orjson.loads(plain)
    except orjson.JSONDecodeError:
        pass  # json's verdict and message (NaN, a lone surrogate, bad UTF-8 are json's to judge)
    else:
        if not _holds_float(obj):
            return obj
    try:
        return json.loads(plain.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableRow(row_id, f"plaintext is not UTF-8 (byte {exc.start})") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UnreadableRow(row_id, f"plaintext is not JSON: {exc}") from None


def _holds_float(obj: Any) -> bool:
    """Is there a float anywhere in what orjson read? (No recursion: nesting is orjson's to bound.)"""
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is float:
            return True
    return False


# -- envelopes --------------------------------------------------------------------------------
def seal_envelope(
    payload: bytes,
    public_key_b64: str,
    *,
    owner: bool,
    trace: Trace | None = None,
    secret_payload: bool = True,
    kind: str | None = None,
) -> bytes:
    """A hybrid envelope: fresh content key → RSA-OAEP-SHA256; payload → AES-256-GCM. `kind`: a
    record kind in the envelope's layout (e.g. "credential"), whose fields the trace names."""
    t = tracer(trace)
    kind = kind or ("owner_envelope" if owner else "agent_envelope")
    with t.step("load recipient public key", inputs=lambda: {"public key (fingerprint)": _pk_fp(public_key_b64)}) as s:
        pub = load_public_key(public_key_b64)
        s.output = f"RSA-{pub.key_size}"
    content_key = random_key()
    with t.step(
        "RSA-OAEP-SHA256 wrap content key", inputs=lambda: {"content key (kid)": key_fingerprint(content_key)}
    ) as s:
        wrapped = rsa_oaep_encrypt(pub, content_key)
        s.output = f"{len(wrapped)} bytes"
    iv = random_nonce()
    with t.step(
        "AES-256-GCM seal payload",
        inputs=lambda: {"iv": iv.hex(), "payload bytes": len(payload)},
        data=payload,
        secret_fields=frozenset({"payload"}) if secret_payload else frozenset(),
    ) as s:
        sealed = aes_gcm_seal(content_key, iv, payload)
        s.output = f"{len(sealed)} bytes"
    with t.step(f"build {kind.replace('_', ' ')}") as s:
        blob = wire.build(
            kind, wrapped_key=wrapped, iv=iv, ciphertext=sealed[: -wire.TAG_LEN], tag=sealed[-wire.TAG_LEN :]
        )
        s.data = blob
        s.fields = wire.parse(blob, kind).fields
        s.output = wire.b64encode(blob)
    return blob


def open_envelope(
    envelope: bytes | str,
    key: AgentKey,
    *,
    owner: bool,
    trace: Trace | None = None,
    field: str = "wrapped_key",
    kind: str | None = None,
) -> bytes:
    """Parse an envelope, unwrap its content key with `key`, and open the payload (`kind`: a
    record kind in the envelope's layout, whose fields the trace names)."""
    t = tracer(trace)
    kind = kind or ("owner_envelope" if owner else "agent_envelope")
    if trace is not None:  # an untraced bulk read records nothing
        _claim(
            t,
            "open_envelope",
            envelope,
            lambda b, tr: open_envelope(b, key, owner=owner, trace=tr, field=field, kind=kind),
            secrets={"private_key": key},
            owner=owner,
        )
    raw = _decode(envelope, field, t)
    if t is NO_TRACE:  # bulk reads: the same checks, sliced without a Layout, nothing recorded
        wrapped, iv, sealed = wire.aead_parts(raw, kind)
        assert wrapped is not None  # an envelope's layout always carries its wrapped key
        return aes_gcm_open(_content_key(key, wrapped), iv, sealed)
    layout = parse_step(raw, kind, t)
    with t.step(
        "RSA-OAEP-SHA256 unwrap",
        data=raw,
        fields=layout.fields,
        inputs=lambda: {
            "private key (fingerprint)": key.fingerprint,
            "wrapped_key bytes": layout["wrapped_key"].length,
        },
    ) as s:
        if layout["wrapped_key"].length * 8 != key.key_size:
            s.note = (
                f"wrapped_key is {layout['wrapped_key'].length} bytes but this RSA-{key.key_size} key "
                f"expects {key.key_size // 8}: it was wrapped to another key"
            )
        content_key = _content_key(key, layout.value("wrapped_key"))
        s.output = content_key
        s.secret_output = True
        s.note = s.note or "the envelope's own content key (fresh for every wrap), not the memory key it carries"
    with t.step(
        "AES-256-GCM open payload", data=raw, fields=layout.fields, inputs=lambda: {"iv": layout.value("iv").hex()}
    ) as s:
        payload = aes_gcm_open(content_key, layout.value("iv"), layout.value("ciphertext") + layout.value("tag"))
        s.output = payload
        s.secret_output = True
    return payload


def _content_key(key: AgentKey, wrapped: bytes) -> bytes:
    """RSA-OAEP-SHA256 unwrap of an envelope's own content key, which must be an AES-256 key."""
    content_key = key.decrypt(wrapped)
    if len(content_key) != wire.KEY_LEN:
        raise CryptoError(
            f"the RSA plaintext is {len(content_key)} bytes; an AES-256 content key is 32",
            step="RSA-OAEP-SHA256 unwrap",
        )
    return content_key


def wrap_to_agent(key: bytes, public_key_b64: str, *, trace: Trace | None = None) -> bytes:
    """self_wrap / grantee wrap: headerless envelope whose plaintext is the raw 32-byte key."""
    _check_key(key)
    return seal_envelope(key, public_key_b64, owner=False, trace=trace)


def unwrap_as_agent(envelope: bytes | str, agent_key: AgentKey, *, trace: Trace | None = None) -> bytes:
    """Open a served `wrapped_key`: its plaintext must be exactly the raw 32-byte memory key."""
    if trace is not None:  # an untraced bulk read records nothing
        _claim(
            tracer(trace),
            "unwrap_as_agent",
            envelope,
            lambda b, tr: unwrap_as_agent(b, agent_key, trace=tr),
            secrets={"private_key": agent_key},
        )
    payload = open_envelope(envelope, agent_key, owner=False, trace=trace)
    with tracer(trace).step("memory key check: 32 raw bytes", inputs=lambda: {"payload bytes": len(payload)}) as s:
        if len(payload) != wire.KEY_LEN:
            hint = (
                " — it looks like the 44-character base64 text an owner wrap carries"
                if _is_b64_key_text(payload)
                else ""
            )
            raise CryptoError(
                f"the envelope holds {len(payload)} bytes, not a raw 32-byte key{hint}", step="memory key check"
            )
        s.output = payload
        s.secret_output = True
        if trace is not None:  # a hash per row is wasted on a bulk read
            s.note = f"kid {wire.kid(payload)}"
    return payload


def wrap_to_owner(key: bytes, owner_public_key_b64: str, *, trace: Trace | None = None) -> bytes:
    """owner_wrap: [0x01][0x02] + envelope whose plaintext is the ASCII base64 text of the key."""
    _check_key(key)
    return seal_envelope(wire.b64encode(key).encode("ascii"), owner_public_key_b64, owner=True, trace=trace)


def unwrap_as_owner(envelope: bytes | str, owner_key: AgentKey, *, trace: Trace | None = None) -> bytes:
    """Open an owner_wrap as the owner's app does: the plaintext must be the 44-character
    standard base64 text of a 32-byte key; raw key bytes are refused."""
    if trace is not None:  # an untraced bulk read records nothing
        _claim(
            tracer(trace),
            "unwrap_as_owner",
            envelope,
            lambda b, tr: unwrap_as_owner(b, owner_key, trace=tr),
            secrets={"private_key": owner_key},
        )
    payload = open_envelope(envelope, owner_key, owner=True, trace=trace, field="owner_wrap")
    with tracer(trace).step("owner plaintext check: 44-char base64 text", inputs={"payload bytes": len(payload)}) as s:
        if len(payload) == wire.KEY_LEN and not _is_b64_key_text(payload):
            raise CryptoError(
                "the owner wrap holds 32 raw bytes; the owner's app expects the 44-character base64 TEXT of the key",
                step="owner plaintext check",
            )
        if not _is_b64_key_text(payload):
            raise CryptoError(
                f"the owner wrap holds {len(payload)} bytes that are not the 44-character base64 text of a 32-byte key",
                step="owner plaintext check",
            )
        key = wire.b64decode(payload.decode("ascii"), field="owner_wrap plaintext")
        s.output = key
        s.secret_output = True
        s.note = f"kid {wire.kid(key)}"
    return key


# -- legacy space rows ------------------------------------------------------------------------
def seal_space_row(space_key: bytes, plaintext: dict[str, Any], *, space_id: str, row_id: str) -> bytes:
    """A legacy space row: VAULT under the space key; plaintext carries space_id and row_id."""
    body = {
        "space_id": space_id,
        "row_id": row_id,
        **{k: v for k, v in plaintext.items() if k not in ("space_id", "row_id")},
    }
    return seal_json(space_key, body)


def open_space_row(
    blob: bytes | str, space_key: bytes, *, space_id: str, row_id: str, trace: Trace | None = None
) -> dict[str, Any]:
    """Open a legacy space row and check it is bound to the space and row it was served under."""
    if trace is not None:  # an untraced bulk read records nothing
        _claim(
            tracer(trace),
            "open_space_row",
            blob,
            lambda b, tr: open_space_row(b, space_key, space_id=space_id, row_id=row_id, trace=tr),
            secrets={"key": space_key},
            space_id=space_id,
            row_id=row_id,
        )
    obj = open_json(space_key, blob, trace=trace, row_id=row_id)
    with tracer(trace).step(
        "bind check: space_id and row_id", inputs={"served space_id": space_id, "served row_id": row_id}
    ) as s:
        if not isinstance(obj, dict):
            raise UnreadableRow(row_id, "plaintext is not a JSON object")
        if obj.get("space_id") != space_id:
            raise UnreadableRow(row_id, f"plaintext space_id {obj.get('space_id')!r} is not the space it was served in")
        if obj.get("row_id") != row_id:
            raise UnreadableRow(row_id, f"plaintext row_id {obj.get('row_id')!r} is not the served id")
        s.output = "bound"
    return obj


# -- helpers ----------------------------------------------------------------------------------
def _check_key(key: bytes) -> None:
    if not isinstance(key, (bytes, bytearray)) or len(key) != wire.KEY_LEN:
        raise CryptoError(
            f"a memory key is 32 bytes, got {len(key) if hasattr(key, '__len__') else key!r}", step="key check"
        )


def _is_b64_key_text(payload: bytes) -> bool:
    if len(payload) != 44:
        return False
    try:
        return len(wire.b64decode(payload.decode("ascii"))) == wire.KEY_LEN
    except (UnicodeDecodeError, WireFormatError):
        return False


def _pk_fp(b64: str) -> str:
    try:
        return public_key_fingerprint(b64)
    except WireFormatError:
        return "(not base64)"
