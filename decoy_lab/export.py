"""A trace as a short Python script that runs its recipe again with `cryptography` alone.

`python_script(trace)` writes the blobs the recipe read (as base64), the checks in the order
the recipe makes them, and one printed line per step (✓ or ✗ and the step's name, as the
trace names it); the script exits 1 at the step that fails. Key material stays out of the
script unless `reveal=True`: the memory key is read from $DECOY_KEY (standard base64) and an
RSA private key from the PEM file named by $DECOY_PRIVATE_KEY.
"""

from __future__ import annotations

from typing import Any

from .errors import DecoyError
from .wire import b64encode, kid

_HEAD = '''#!/usr/bin/env python3
"""Runs again: {title} ({recipe}), with the `cryptography` package alone.
Made by decoy_lab from a trace; prints one line per step, and exits 1 at the step that fails."""
import base64
import hashlib
import json
import os
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def ok(step, detail=""):
    print(f"✓ {{step}}" + (f" — {{detail}}" if detail else ""))


def fail(step, why):
    print(f"✗ {{step}}: {{why}}")
    sys.exit(1)


def parse(blob, kind):
    """The fields of a VAULT blob (01 01 | nonce | ciphertext | tag) or an envelope
    ([01 02] | 2-byte key length | wrapped key | iv | ciphertext | tag)."""
    step = "parse " + kind.replace("_", " ")
    header = {{"vault": b"\\x01\\x01", "owner_envelope": b"\\x01\\x02", "agent_envelope": b""}}[kind]
    if blob[: len(header)] != header:
        fail(step, f"the header is {{blob[:2].hex()}}, expected {{header.hex()}}")
    pos, fields = len(header), {{}}
    if kind != "vault":
        n = int.from_bytes(blob[pos : pos + 2], "big")
        if n == 0 or pos + 2 + n + 28 > len(blob):
            fail(step, f"key length {{n}} overruns the {{len(blob)}} bytes")
        fields["wrapped_key"], pos = blob[pos + 2 : pos + 2 + n], pos + 2 + n
    if len(blob) < pos + 28:
        fail(step, f"{{len(blob)}} bytes leave no room for the nonce and the tag")
    fields["nonce"], fields["sealed"] = blob[pos : pos + 12], blob[pos + 12 :]
    ok(step, f"{{len(blob)}} bytes")
    return fields


def aes_open(step, key, nonce, sealed):
    try:
        plain = AESGCM(key).decrypt(nonce, sealed, None)
    except InvalidTag:
        fail(step, "GCM tag mismatch: the ciphertext, nonce or tag was altered, or the key is wrong")
    ok(step, f"{{len(plain)}} bytes")
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
        fail(step, f"the RSA plaintext is {{len(content_key)}} bytes; an AES-256 content key is 32")
    ok(step)
    return aes_open("AES-256-GCM open payload", content_key, fields["nonce"], fields["sealed"])


def kid(key):
    return hashlib.sha256(key).digest()[:8].hex()

'''

_MEMORY_KEY = {
    True: "KEY = base64.b64decode({key!r})  # the memory key, kid {kid}\n",
    False: 'KEY = base64.b64decode(os.environ["DECOY_KEY"])  # the memory key (kid {kid}), standard base64\n',
}
_PRIVATE_KEY = {
    True: "PRIVATE_KEY = serialization.load_pem_private_key({pem!r}.encode(), None)  # fingerprint {fp}\n",
    False: (
        'with open(os.environ["DECOY_PRIVATE_KEY"], "rb") as pem:  # the PEM file of the RSA key {fp}\n'
        "    PRIVATE_KEY = serialization.load_pem_private_key(pem.read(), None)\n"
    ),
}

_UNWRAP_AGENT = """
def unwrap_as_agent(blob):
    key = open_envelope(blob, PRIVATE_KEY, "agent_envelope")
    if len(key) != 32:
        fail("memory key check: 32 raw bytes", f"the envelope holds {len(key)} bytes, not a raw 32-byte key")
    ok("memory key check: 32 raw bytes", f"kid {kid(key)}")
    return key
"""

_UNWRAP_OWNER = """
def unwrap_as_owner(blob):
    step = "owner plaintext check: 44-char base64 text"
    text = open_envelope(blob, PRIVATE_KEY, "owner_envelope")
    try:
        key = base64.b64decode(text, validate=True)
    except ValueError:
        key = b""
    if len(text) != 44 or len(key) != 32:
        fail(step, f"the owner wrap holds {len(text)} bytes that are not the 44-character base64 text of a key")
    ok(step, f"kid {kid(key)}")
    return key
"""

_OPEN_JSON = """
def open_json(blob, key):
    fields = parse(blob, "vault")
    plain = aes_open("AES-256-GCM open", key, fields["nonce"], fields["sealed"])
    try:
        obj = json.loads(plain.decode("utf-8"))
    except ValueError as exc:
        fail("UTF-8 JSON decode", exc)
    ok("UTF-8 JSON decode")
    return obj
"""

_BODIES = {
    "open_vault": """
fields = parse(BLOB, "vault")
plain = aes_open("AES-256-GCM open", KEY, fields["nonce"], fields["sealed"])
print("result:", plain.decode("utf-8", "replace"))
""",
    "open_json": """
print("result:", json.dumps(open_json(BLOB, KEY), ensure_ascii=False, separators=(",", ":")))
""",
    "open_envelope": """
payload = open_envelope(BLOB, PRIVATE_KEY, {kind!r})
print("result: sha256", hashlib.sha256(payload).hexdigest()[:16])
""",
    "unwrap_as_agent": """
print("result: kid", kid(unwrap_as_agent(BLOB)))
""",
    "unwrap_as_owner": """
print("result: kid", kid(unwrap_as_owner(BLOB)))
""",
    "open_space_row": """
obj = open_json(BLOB, KEY)
if not isinstance(obj, dict) or obj.get("space_id") != {space_id!r} or obj.get("row_id") != {row_id!r}:
    fail("bind check: space_id and row_id", "the plaintext is not bound to the space and row it was served under")
ok("bind check: space_id and row_id")
print("result:", json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
""",
    "read_row": """
key = unwrap_as_agent(WRAPPED_KEY)
if kid(key) != {kid!r}:
    fail("kid check", f"the row says {kid!r} but the unwrapped key's kid is {{kid(key)}}")
ok("kid check")
obj = open_json(CIPHERTEXT, key)
if not isinstance(obj, dict) or obj.get("v") != 2 or obj.get("row_id") != {row_id!r}:
    fail("bind check: v == 2 and row_id == id", "the plaintext is not bound to this row (v 2, its row_id)")
ok("bind check: v == 2 and row_id == id")
print("result:", json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
""",
    "layout": """
kind = {kind!r}
if kind is None:
    print("✗ identify the layout: no known layout fits these", len(BLOB), "bytes")
    sys.exit(1)
fields = parse(BLOB, kind)
print("result:", {{name: value.hex() for name, value in fields.items()}})
""",
}
_NEEDS_AGENT = {"unwrap_as_agent", "read_row"}
_NEEDS_OWNER = {"unwrap_as_owner"}
_NEEDS_JSON = {"open_json", "open_space_row", "read_row"}


def python_script(trace: Any, *, reveal: bool = False) -> str:
    """A script that runs `trace`'s recipe again on the same bytes (see the module docstring).
    `trace` is a decoy_lab.trace.Trace (not imported: Trace.to_python calls this)."""
    src = trace.source
    if src is None or src.recipe not in _BODIES:
        raise DecoyError(
            "this trace records no recipe that reads bytes (a seal draws fresh random keys and nonces); "
            "export it as JSON instead"
        )
    out = [_HEAD.format(title=trace.title or "a trace", recipe=src.recipe)]
    if src.recipe == "read_row":
        wrapped = src.inputs.get("wrapped_key", src.inputs.get("self_wrap", b""))
        out.append(f"WRAPPED_KEY = base64.b64decode({b64encode(wrapped)!r})\n")
        out.append(f"CIPHERTEXT = base64.b64decode({b64encode(src.inputs.get('ciphertext', b''))!r})\n")
    else:
        out.append(f"BLOB = base64.b64decode({b64encode(src.inputs.get('blob', b''))!r})\n")
    if "key" in src.secrets:
        key = src.secrets["key"]
        out.append(_MEMORY_KEY[reveal].format(key=b64encode(key), kid=kid(key)))
    if "private_key" in src.secrets:
        pk = src.secrets["private_key"]
        out.append(_PRIVATE_KEY[reveal].format(pem=pk.to_pem() if reveal else "", fp=pk.fingerprint))
    if src.recipe in _NEEDS_AGENT:
        out.append(_UNWRAP_AGENT)
    if src.recipe in _NEEDS_OWNER:
        out.append(_UNWRAP_OWNER)
    if src.recipe in _NEEDS_JSON:
        out.append(_OPEN_JSON)
    params = dict(src.params)
    if src.recipe == "open_envelope":
        params["kind"] = "owner_envelope" if params.get("owner") else "agent_envelope"
    out.append(_BODIES[src.recipe].format(**params))
    return "".join(out)
