"""Run the independent Node implementation (tests/interop/*.mjs, written from the spec on
WebCrypto) from Python tests: `run_node({"op": ...}) -> dict`.

Bytes cross as standard base64, private keys as PKCS#8 PEM, public keys as base64 SPKI.
A refusal comes back as `NodeRefused` carrying the Node error's name, field, offset and step;
`run_node(cmd, check=False)` returns the raw answer (`{"ok": False, "error": {...}}`) instead.
Use `{"op": "batch", "commands": [...]}` to pay Node's start-up once for many commands.

Commands (fields in camelCase; bytes as base64; answers add "ok": true):
    generateKey {bits?}                         → privateKeyPem, publicKeyBase64
    kid {key} · publicKeyFingerprint {publicKey} → kid · fingerprint
    parse {data, kind?}                         → kind, fields [{name, offset, length, hex}]
    sealVault {key, plaintext, nonce?} / openVault {key, blob}            → blob / plaintext
    sealEnvelope / openEnvelope {payload|envelope, publicKey|privateKeyPem, owner}
    wrapToAgent / wrapToOwner {key, publicKey}  → envelope
    unwrapAsAgent / unwrapAsOwner {envelope, privateKeyPem} → key
    newMemoryRow {keys, text, topic?, categories?, account?, metadata?}   → row
    newTopicRows {keys, name, type?, link?: {relationType?, topic?}}       → topicId, rows
    readMemoryRow {row (as served, with wrapped_key), privateKeyPem}       → memory (null for graph rows)
    openRowAsOwner {row (with owner_wrap), privateKeyPem}                 → plaintext (the owner's app's view)
    sealSpaceRow / openSpaceRow {key, plaintext|blob, spaceId, rowId}      → ciphertext / plaintext
`keys` is {ownerPublicKey, agentPublicKey, grantees: [{token_id, public_key, selectors}]}.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CLI = Path(__file__).with_name("interop") / "cli.mjs"
NODE = shutil.which("node")

#: Mark a test (or module: `pytestmark = requires_node`) that needs Node.
requires_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


class NodeRefused(Exception):
    """The Node side refused a command; `error` is its description (name, message, field, offset, step)."""

    def __init__(self, error: dict[str, Any]):
        self.error = error
        self.name = error.get("name")
        self.field = error.get("field")
        self.offset = error.get("offset")
        self.step = error.get("step")
        super().__init__(f"{self.name}: {error.get('message')}")


def run_node(cmd: dict, *, check: bool = True, timeout: float = 60.0) -> dict:
    """Send one JSON command to tests/interop/cli.mjs and return its JSON answer."""
    if NODE is None:
        pytest.skip("node is not installed")
    proc = subprocess.run([NODE, str(CLI)], input=json.dumps(cmd), capture_output=True, text=True, timeout=timeout)
    if not proc.stdout:
        raise RuntimeError(f"node produced no answer (exit {proc.returncode}): {proc.stderr.strip()}")
    answer = json.loads(proc.stdout)
    if check and not answer.get("ok"):
        raise NodeRefused(answer.get("error") or {})
    return answer


def run_batch(commands: list[dict]) -> list[dict]:
    """Many commands in one Node process; each answer as `run_node(..., check=False)` gives it."""
    return run_node({"op": "batch", "commands": commands})["results"]


def node_keypair() -> dict:
    """A fresh RSA-2048 pair made by WebCrypto: {"privateKeyPem", "publicKeyBase64"}."""
    return run_node({"op": "generateKey"})
