"""A trace as a short Python script that runs its recipe again with `cryptography` alone.

`python_script(trace)` writes a script in two parts. Its code is fixed text, the same for every
trace: it never varies with what a server served, so no served value can become code. Every
value the recipe needs — the trace's title, the recipe's name, the blobs it read (base64), the
row's id and kid as served — is in ONE data block: a JSON object made by `json.dumps` (ASCII
only), embedded as base64 text, whose alphabet (A-Z a-z 0-9 + / =) cannot end a Python string
literal. The script makes the checks in the order the recipe makes them and prints one line per
step (✓ or ✗ and the step's name, as the trace names it); it exits 1 at the step that fails, and
`--data` prints the data block instead of running. Key material stays out of the script unless
`reveal=True`: the memory key is read from $DECOY_KEY (standard base64) and an RSA private key
from the PEM file named by $DECOY_PRIVATE_KEY.
"""

from __future__ import annotations

import json
import re
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.wire.layouts import b64encode, kid

_CODE = r'''#!/usr/bin/env python3
"""Runs the recipe of a decoy_lab trace again, with the `cryptography` package alone.

Made by decoy_lab from a trace. This code is the same for every trace; everything the trace
read (its title, the recipe, the blobs, the row's id and kid as served) is in DATA below: one
JSON object, embedded as base64, so nothing served is ever part of the code. See it with
`python3 <this script> --data`. The key comes from the environment unless the export revealed
it: $DECOY_KEY (the memory key, standard base64) or $DECOY_PRIVATE_KEY (the PEM file of the RSA
key). Prints one line per step, and exits 1 at the step that fails. What it prints of the data
is escaped: a control character (ESC, BEL, ...) is shown as \\x1b, never sent to the terminal."""
import base64
import hashlib
import json
import os
import sys
import unicodedata

DATA = json.loads(base64.b64decode(
@DATA@
))

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def shown(text):
    """`text` safe to print: a control character, a bidi control or a lone surrogate is shown
    as its escape (\\x1b, \\u202e); line breaks are kept (decoy_lab.text.escaped, for this script)."""
    out = []
    for ch in text:
        if ch != "\n" and (ch in BIDI or ch in "\ufffe\uffff" or unicodedata.category(ch) in ("Cc", "Cs")):
            named = {"\r": "\\r", "\t": "\\t"}.get(ch)
            ch = named or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        out.append(ch)
    return "".join(out)


def shown_json(text):
    """JSON text safe to print, and still JSON: what `shown` escapes is written \\u-escaped."""
    return "".join(f"\\u{ord(ch):04x}" if shown(ch) != ch else ch for ch in text)


BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def ok(step, detail=""):
    print(f"✓ {step}" + (f" — {detail}" if detail else ""))


def fail(step, why):
    print(f"✗ {step}: {why}")
    sys.exit(1)


def blob(name):
    return base64.b64decode(DATA[name])


def parse(blob, kind):
    """The fields of a VAULT blob (01 01 | nonce | ciphertext | tag) or an envelope
    ([01 02] | 2-byte key length | wrapped key | iv | ciphertext | tag)."""
    step = "parse " + kind.replace("_", " ")
    header = {"vault": b"\x01\x01", "owner_envelope": b"\x01\x02", "agent_envelope": b""}[kind]
    if blob[: len(header)] != header:
        fail(step, f"the header is {blob[:2].hex()}, expected {header.hex()}")
    pos, fields = len(header), {}
    if kind != "vault":
        n = int.from_bytes(blob[pos : pos + 2], "big")
        if n == 0 or pos + 2 + n + 28 > len(blob):
            fail(step, f"key length {n} overruns the {len(blob)} bytes")
        fields["wrapped_key"], pos = blob[pos + 2 : pos + 2 + n], pos + 2 + n
    if len(blob) < pos + 28:
        fail(step, f"{len(blob)} bytes leave no room for the nonce and the tag")
    fields["nonce"], fields["sealed"] = blob[pos : pos + 12], blob[pos + 12 :]
    ok(step, f"{len(blob)} bytes")
    return fields


def aes_open(step, key, nonce, sealed):
    try:
        plain = AESGCM(key).decrypt(nonce, sealed, None)
    except InvalidTag:
        fail(step, "GCM tag mismatch: the ciphertext, nonce or tag was altered, or the key is wrong")
    ok(step, f"{len(plain)} bytes")
    return plain


def open_envelope(blob, private_key, kind):
    fields = parse(blob, kind)
    step = "RSA-OAEP-SHA256 unwrap"
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    try:
        content_key = private_key.decrypt(fields["wrapped_key"], oaep)
    except ValueError:
        fail(step, "RSA-OAEP decryption failed: wrapped to another key, or altered")
    if len(content_key) != 32:
        fail(step, f"the RSA plaintext is {len(content_key)} bytes; an AES-256 content key is 32")
    ok(step)
    return aes_open("AES-256-GCM open payload", content_key, fields["nonce"], fields["sealed"])


def kid(key):
    return hashlib.sha256(key).digest()[:8].hex()


def unwrap_as_agent(blob, private_key):
    key = open_envelope(blob, private_key, "agent_envelope")
    if len(key) != 32:
        fail("memory key check: 32 raw bytes", f"the envelope holds {len(key)} bytes, not a raw 32-byte key")
    ok("memory key check: 32 raw bytes", f"kid {kid(key)}")
    return key


def unwrap_as_owner(blob, private_key):
    step = "owner plaintext check: 44-char base64 text"
    text = open_envelope(blob, private_key, "owner_envelope")
    try:
        key = base64.b64decode(text, validate=True)
    except ValueError:
        key = b""
    if len(text) != 44 or len(key) != 32:
        fail(step, f"the owner wrap holds {len(text)} bytes that are not the 44-character base64 text of a key")
    ok(step, f"kid {kid(key)}")
    return key


def open_json(blob, key):
    fields = parse(blob, "vault")
    plain = aes_open("AES-256-GCM open", key, fields["nonce"], fields["sealed"])
    try:
        obj = json.loads(plain.decode("utf-8"))
    except ValueError as exc:
        fail("UTF-8 JSON decode", exc)
    ok("UTF-8 JSON decode")
    return obj


def as_json(obj):
    return shown_json(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def memory_key():
    """The memory key (kid DATA["memory_key_kid"]): revealed in DATA, else $DECOY_KEY."""
    if "memory_key" in DATA:
        return base64.b64decode(DATA["memory_key"])
    if "DECOY_KEY" not in os.environ:
        print(f"set $DECOY_KEY to the memory key (kid {DATA['memory_key_kid']}), standard base64")
        sys.exit(2)
    return base64.b64decode(os.environ["DECOY_KEY"])


def private_key():
    """The RSA key (fingerprint DATA["private_key_fingerprint"]): revealed in DATA, else the PEM
    file named by $DECOY_PRIVATE_KEY."""
    if "private_key_pem" in DATA:
        return serialization.load_pem_private_key(DATA["private_key_pem"].encode(), None)
    if "DECOY_PRIVATE_KEY" not in os.environ:
        print(f"set $DECOY_PRIVATE_KEY to the PEM file of the RSA key {DATA['private_key_fingerprint']}")
        sys.exit(2)
    with open(os.environ["DECOY_PRIVATE_KEY"], "rb") as pem:
        return serialization.load_pem_private_key(pem.read(), None)


def run_open_vault(key, pk):
    fields = parse(blob("blob"), "vault")
    plain = aes_open("AES-256-GCM open", key, fields["nonce"], fields["sealed"])
    print("result:", shown(plain.decode("utf-8", "replace")))


def run_open_json(key, pk):
    print("result:", as_json(open_json(blob("blob"), key)))


def run_open_envelope(key, pk):
    payload = open_envelope(blob("blob"), pk, DATA["kind"])
    print("result: sha256", hashlib.sha256(payload).hexdigest()[:16])


def run_unwrap_as_agent(key, pk):
    print("result: kid", kid(unwrap_as_agent(blob("blob"), pk)))


def run_unwrap_as_owner(key, pk):
    print("result: kid", kid(unwrap_as_owner(blob("blob"), pk)))


def run_open_space_row(key, pk):
    obj = open_json(blob("blob"), key)
    if not isinstance(obj, dict) or obj.get("space_id") != DATA["space_id"] or obj.get("row_id") != DATA["row_id"]:
        fail("bind check: space_id and row_id", "the plaintext is not bound to the space and row it was served under")
    ok("bind check: space_id and row_id")
    print("result:", as_json(obj))


def run_read_row(key, pk):
    key = unwrap_as_agent(blob("wrapped_key"), pk)
    if kid(key) != DATA["kid"]:
        fail("kid check", f"the row says {DATA['kid']!r} but the unwrapped key's kid is {kid(key)}")
    ok("kid check")
    obj = open_json(blob("ciphertext"), key)
    if not isinstance(obj, dict) or obj.get("v") != 2 or obj.get("row_id") != DATA["row_id"]:
        fail("bind check: v == 2 and row_id == id", "the plaintext is not bound to this row (v 2, its row_id)")
    ok("bind check: v == 2 and row_id == id")
    print("result:", as_json(obj))


def run_layout(key, pk):
    raw = blob("blob")
    if DATA["kind"] not in ("vault", "owner_envelope", "agent_envelope"):
        print("✗ identify the layout: no known layout fits these", len(raw), "bytes")
        sys.exit(1)
    fields = parse(raw, DATA["kind"])
    print("result:", {name: value.hex() for name, value in fields.items()})


RECIPES = {
    "open_vault": run_open_vault,
    "open_json": run_open_json,
    "open_envelope": run_open_envelope,
    "unwrap_as_agent": run_unwrap_as_agent,
    "unwrap_as_owner": run_unwrap_as_owner,
    "open_space_row": run_open_space_row,
    "read_row": run_read_row,
    "layout": run_layout,
}

if __name__ == "__main__":
    if sys.argv[1:] == ["--data"]:
        print(shown_json(json.dumps(DATA, indent=2, ensure_ascii=False)))
        sys.exit(0)
    if DATA.get("recipe") not in RECIPES:
        print("✗ this script names no recipe it knows")
        sys.exit(2)
    KEY = memory_key() if "memory_key_kid" in DATA else None
    PRIVATE_KEY = private_key() if "private_key_fingerprint" in DATA else None
    RECIPES[DATA["recipe"]](KEY, PRIVATE_KEY)
'''
_RECIPES = frozenset(
    (
        "open_vault",
        "open_json",
        "open_envelope",
        "unwrap_as_agent",
        "unwrap_as_owner",
        "open_space_row",
        "read_row",
        "layout",
    )
)
_PARAMS = ("row_id", "kid", "space_id", "kind")  # the recipes' other arguments the script reads
_BASE64 = re.compile(r"[A-Za-z0-9+/=]*")
_TOP, _BOTTOM = _CODE.split("@DATA@\n")


def script_code() -> tuple[str, str]:
    """The script's code, before and after its data block: fixed text, the same for every trace."""
    return _TOP, _BOTTOM


def data_block(data: dict[str, Any]) -> str:
    """`data` as the lines of the script's data block: JSON (ASCII only, so any text, even a lone
    surrogate, survives) as base64, in quoted chunks of 76 characters. Base64's alphabet holds no
    quote, backslash or newline, so a chunk can never end its string literal."""
    text = b64encode(json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii"))
    if _BASE64.fullmatch(text) is None:  # never: b64encode's alphabet; the one proof the block needs
        raise DecoyError("the export's data block is not base64")
    return "\n".join(f'    "{text[i : i + 76]}"' for i in range(0, len(text), 76)) or '    ""'


def python_script(trace: Any, *, reveal: bool = False) -> str:
    """A script that runs `trace`'s recipe again on the same bytes (see the module docstring).
    `trace` is a decoy_lab.recipes.trace.Trace (not imported: Trace.to_python calls this)."""
    src = trace.source
    if src is None or src.recipe not in _RECIPES:
        raise DecoyError(
            "this trace records no recipe that reads bytes (a seal draws fresh random keys and nonces); "
            "export it as JSON instead"
        )
    data: dict[str, Any] = {"title": str(trace.title or "a trace"), "recipe": src.recipe}
    if src.recipe == "read_row":
        data["wrapped_key"] = b64encode(src.inputs.get("wrapped_key", src.inputs.get("self_wrap", b"")))
        data["ciphertext"] = b64encode(src.inputs.get("ciphertext", b""))
    else:
        data["blob"] = b64encode(src.inputs.get("blob", b""))
    params = dict(src.params)
    if src.recipe == "open_envelope":
        params["kind"] = "owner_envelope" if params.get("owner") else "agent_envelope"
    for name in _PARAMS:
        if name in params:
            data[name] = _json_value(params[name])
    if "key" in src.secrets:
        key = src.secrets["key"]
        data["memory_key_kid"] = kid(key)
        if reveal:
            data["memory_key"] = b64encode(key)
    if "private_key" in src.secrets:
        pk = src.secrets["private_key"]
        data["private_key_fingerprint"] = str(pk.fingerprint)
        if reveal:
            data["private_key_pem"] = pk.to_pem()
    return _TOP + data_block(data) + "\n" + _BOTTOM


def _json_value(value: Any) -> Any:
    """A served value as JSON keeps it (a row's id and kid are JSON already); anything else as text."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=True))
    except (TypeError, ValueError):
        return str(value)
