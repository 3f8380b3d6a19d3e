"""The spec's own example blobs parse into the right fields.

The blobs are copied verbatim from `001_…by-operation.txt` (the `POST /api/agent/context/memories`
example row and the legacy spaces example); when the spec file is next to the repository, a test
checks they still match it. The spec says of them: "Examples use synthetic ciphertext and
discarded test keys", so they can be parsed and dumped, never opened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key
from decoy_lab.wire.hexdump import dump_text

from support.node import requires_node, run_batch
from support.spec_examples import (
    EXAMPLE_CIPHERTEXT,
    EXAMPLE_KID,
    EXAMPLE_OWNER_WRAP,
    EXAMPLE_SELF_WRAP,
    EXAMPLE_SPACE_ROW,
)

# POST /api/agent/context/memories, requestBody example, rows[0] (kid 5e45d83427d094d8).
# GET/POST /api/agent/context/rows example (legacy spaces), rows[0].ciphertext.

EXAMPLES = {
    "ciphertext": EXAMPLE_CIPHERTEXT,
    "owner_wrap": EXAMPLE_OWNER_WRAP,
    "self_wrap": EXAMPLE_SELF_WRAP,
    "space_row": EXAMPLE_SPACE_ROW,
}


def spec_path() -> Path:
    here = Path(os.environ.get("DECOY_SPEC_DIR") or Path(__file__).resolve().parents[3] / "shared" / "spec")
    return here / "001_0c822ffdca2b03d6.by-operation.txt"


def layout_table(layout: wire.Layout) -> list[tuple[str, int, int]]:
    return [(f.name, f.offset, f.length) for f in layout.fields]


def test_the_copied_blobs_are_the_spec_text():
    path = spec_path()
    if not path.exists():
        pytest.skip(f"spec not found at {path}")
    text = path.read_text()
    block = text[text.index("=== /api/agent/context/memories") :]
    for name in ("ciphertext", "owner_wrap", "self_wrap"):
        m = re.search(rf"example: rows: .*?{name}: >- (\S+)", block, re.S)
        assert m and m.group(1) == EXAMPLES[name], name
    assert f"kid: {EXAMPLE_KID}" in block
    assert f'"ciphertext":"{EXAMPLE_SPACE_ROW}"' in text


def test_example_ciphertext_is_a_vault_blob():
    """`ciphertext` = VAULT SealedBlob under that key: `[0x01 version][0x01 mode][12-byte random nonce]
    [AES-256-GCM ciphertext][16-byte tag]`, no AAD."""
    layout = wire.parse(EXAMPLE_CIPHERTEXT)
    assert layout.kind == "vault" and len(layout.data) == 190
    assert layout_table(layout) == [
        ("version", 0, 1),
        ("mode", 1, 1),
        ("nonce", 2, 12),
        ("ciphertext", 14, 160),
        ("tag", 174, 16),
    ]
    assert layout.value("version") == b"\x01" and layout.value("mode") == b"\x01"
    assert layout.value("nonce") == wire.b64decode(EXAMPLE_CIPHERTEXT)[2:14]


def test_example_owner_wrap_is_an_envelope_with_a_256_byte_key_and_44_byte_plaintext():
    """`owner_wrap` = `[0x01][0x02]` followed by the same envelope to `owner_public_key`, whose plaintext
    is the ASCII base64 text (44 characters) of the key. "The wrapped key is 256 bytes: the owner's
    public key is RSA-2048"."""
    layout = wire.parse(EXAMPLE_OWNER_WRAP)
    assert layout.kind == "owner_envelope" and len(layout.data) == 332
    assert layout_table(layout) == [
        ("version", 0, 1),
        ("mode", 1, 1),
        ("key_length", 2, 2),
        ("wrapped_key", 4, 256),
        ("iv", 260, 12),
        ("ciphertext", 272, 44),
        ("tag", 316, 16),
    ]
    assert int.from_bytes(layout.value("key_length"), "big") == 256
    # AES-GCM ciphertext is as long as its plaintext: 44 bytes, the base64 text of a 32-byte key.
    assert layout["ciphertext"].length == len(wire.b64encode(bytes(32))) == 44


def test_example_self_wrap_is_a_headerless_envelope_of_a_raw_32_byte_key():
    """`self_wrap` = headerless envelope … `[2-byte BE key length][RSA-OAEP-SHA256 wrapped AES-256 key]
    [12-byte IV][AES-256-GCM ciphertext][16-byte tag]`, whose plaintext is the raw 32-byte memory key."""
    layout = wire.parse(EXAMPLE_SELF_WRAP)
    assert layout.kind == "agent_envelope" and len(layout.data) == 318
    assert layout_table(layout) == [
        ("key_length", 0, 2),
        ("wrapped_key", 2, 256),
        ("iv", 258, 12),
        ("ciphertext", 270, 32),
        ("tag", 302, 16),
    ]


def test_example_space_row_is_a_vault_blob():
    """Each row is … a SealedBlob **VAULT** sealed with the space key."""
    layout = wire.parse(EXAMPLE_SPACE_ROW)
    assert layout.kind == "vault" and len(layout.data) == 218
    assert layout_table(layout)[-2:] == [("ciphertext", 14, 188), ("tag", 202, 16)]


def test_example_kid_has_the_served_pattern():
    """kid: pattern ^[0-9a-f]{16}$ — lowercase hex of the first 8 bytes of SHA-256(key)."""
    assert re.fullmatch(r"[0-9a-f]{16}", EXAMPLE_KID)
    assert re.fullmatch(r"[0-9a-f]{16}", wire.kid(random_key()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_rebuild_byte_for_byte(name):
    layout = wire.parse(EXAMPLES[name])
    assert wire.build(layout.kind, **{f.name: f.value for f in layout.fields}) == layout.data
    assert wire.b64encode(layout.data) == EXAMPLES[name]


@pytest.mark.parametrize(
    "name,kind,field,offset",
    [
        ("self_wrap", "owner_envelope", "mode", 1),  # 01 00 …: not the ENVELOPE header 01 02
        ("ciphertext", "owner_envelope", "mode", 1),  # 01 01 is VAULT
        ("owner_wrap", "vault", "mode", 1),
    ],
)
def test_examples_under_the_wrong_layout_are_refused_at_the_header(name, kind, field, offset):
    with pytest.raises(WireFormatError) as err:
        wire.parse(EXAMPLES[name], kind)
    assert (err.value.field, err.value.offset) == (field, offset)


def test_examples_use_discarded_keys_so_opening_fails_with_a_named_step():
    """Examples use synthetic ciphertext and discarded test keys."""
    with pytest.raises(CryptoError) as err:
        sealing.open_vault(random_key(), EXAMPLE_CIPHERTEXT)
    assert err.value.step == "AES-256-GCM open"
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_agent(EXAMPLE_SELF_WRAP, AgentKey.generate())
    assert err.value.step == "RSA-OAEP-SHA256 unwrap"


def test_example_dump_names_every_field():
    layout = wire.parse(EXAMPLE_OWNER_WRAP)
    text = dump_text(layout.data, layout.fields, elide=64)
    for label in (
        "version[0:1]",
        "mode[1:2]",
        "key_length[2:4]",
        "wrapped_key[4:260]",
        "iv[260:272]",
        "ciphertext[272:316]",
        "tag[316:332]",
    ):
        assert label in text
    assert "… " in text and "bytes of wrapped_key" in text


@requires_node
def test_the_independent_parser_reads_the_examples_the_same_way():
    answers = run_batch([{"op": "parse", "data": EXAMPLES[n]} for n in sorted(EXAMPLES)])
    for name, answer in zip(sorted(EXAMPLES), answers):
        layout = wire.parse(EXAMPLES[name])
        assert answer["kind"] == layout.kind, name
        assert [(f["name"], f["offset"], f["length"]) for f in answer["fields"]] == layout_table(layout), name
