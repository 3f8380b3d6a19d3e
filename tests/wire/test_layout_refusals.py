"""Every blob, base64 text and key a hostile server (or a hand-edited file) can hand over is refused
in words that name the field, the byte or character offset, the layout and what was expected — the
spec's "Standard padded base64", and its layouts ("VAULT: [version:0x01][mode:0x01][nonce:12]
[ciphertext][tag:16]", the envelope with its big-endian key length) — so a user can find the byte
at fault. Good blobs split the same way on the fast path (`aead_parts`) and the slow one (`parse`)."""

from __future__ import annotations

import pickle

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import (
    AgentKey,
    aes_gcm_open,
    aes_gcm_seal,
    load_public_key,
    public_key_fingerprint,
    rsa_oaep_decrypt,
    rsa_oaep_encrypt,
)

VAULT = wire.build("vault", nonce=bytes(12), ciphertext=b"abc", tag=bytes(16))
ENV = wire.build("agent_envelope", wrapped_key=b"\x07" * 5, iv=bytes(12), ciphertext=b"xy", tag=bytes(16))
OWNER_CUT = b"\x01\x02\x00\x05" + b"\x07" * 5 + bytes(10)


def _said(err: WireFormatError) -> tuple:
    return (str(err), err.field, err.offset, err.kind, err.length)


# -- base64 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,said",
    [
        ("QUJD-A==", ("url-safe base64 character '-'; Decoy uses the standard alphabet (+ and /)", 4)),
        ("QUJD_A==", ("url-safe base64 character '_'; Decoy uses the standard alphabet (+ and /)", 4)),
        (b"QUJ\xff", ("base64 text is not ASCII", 3)),
        ("QU JD", ("character ' ' is not standard base64", 2)),
        ("QUJé", ("character 'é' is not standard base64", 3)),
        ("QUJD\n", ("character '\\n' is not standard base64", 4)),
        ("QQ=A", ("padding '=' in the middle of base64 text", 2)),
        ("QUJD====", ("padding '=' in the middle of base64 text", 4)),
        ("QQ==QQ==", ("padding '=' in the middle of base64 text", 2)),
        ("QUJ", ("base64 text of 3 characters is not padded to a multiple of 4", 3)),
        ("QUJDR", ("base64 text of 5 characters is not padded to a multiple of 4", 5)),
        ("QR==", ("base64 is not canonical (stray bits before the padding)", 1)),
        ("QUJDRB==", ("base64 is not canonical (stray bits before the padding)", 5)),
    ],
)
def test_base64_that_is_not_standard_and_padded_is_refused_at_its_character(text, said):
    with pytest.raises(WireFormatError) as err:
        wire.b64decode(text, field="ciphertext", kind="vault")
    message, offset = said
    assert _said(err.value) == (
        f"{message} (vault, field 'ciphertext', offset {offset})",
        "ciphertext",
        offset,
        "vault",
        None,
    )


def test_base64_of_another_type_is_refused_by_name():
    with pytest.raises(WireFormatError) as err:
        wire.b64decode(5, field="wrapped_key", kind="agent_envelope")  # type: ignore[arg-type]
    assert _said(err.value) == (
        "expected base64 text, got int (agent_envelope, field 'wrapped_key')",
        "wrapped_key",
        None,
        "agent_envelope",
        None,
    )


@pytest.mark.parametrize("text,data", [("QUJD", b"ABC"), (b"QUI=", b"AB"), ("QQ==", b"A"), ("", b"")])
def test_standard_padded_base64_reads_as_bytes_or_text(text, data):
    assert wire.b64decode(text) == data and wire.b64encode(data) == (text if isinstance(text, str) else text.decode())


# -- layouts -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "blob,kind,said,before",
    [
        (
            VAULT[:20],
            "vault",
            (
                "truncated: 20 bytes leave no room for ciphertext and the 16-byte fields after it "
                "(vault, field 'ciphertext', offset 14)",
                "ciphertext",
                14,
                "vault",
                None,
            ),
            ["version", "mode", "nonce", "✗ ciphertext"],
        ),
        (
            b"\x01\x02" + VAULT[2:],
            "vault",
            ("mode byte is 0x02, expected 0x01 for vault (vault, field 'mode', offset 1)", "mode", 1, "vault", 1),
            ["version", "✗ mode"],
        ),
        (
            b"\x02" + VAULT[1:],
            "vault",
            (
                "version byte is 0x02, expected 0x01 for vault (vault, field 'version', offset 0)",
                "version",
                0,
                "vault",
                1,
            ),
            ["✗ version"],
        ),
        (
            VAULT[:1],
            "vault",
            (
                "mode needs 1 bytes at offset 1 but only 0 remain; the blob is cut short (vault, field 'mode', offset 1)",
                "mode",
                1,
                "vault",
                None,
            ),
            ["version"],
        ),
        (
            b"\x00\x00" + ENV[2:],
            "agent_envelope",
            (
                "key_length is 0: no wrapped key (agent_envelope, field 'key_length', offset 0)",
                "key_length",
                0,
                "agent_envelope",
                2,
            ),
            ["✗ key_length"],
        ),
        (
            b"\x01\x00" + ENV[2:],
            "agent_envelope",
            (
                "wrapped_key of 256 bytes (from key_length) leaves no room for the 28 bytes of fields after it in "
                "37 bytes: the key length overruns (agent_envelope, field 'wrapped_key', offset 2)",
                "wrapped_key",
                2,
                "agent_envelope",
                None,
            ),
            ["key_length", "✗ wrapped_key"],
        ),
        (
            ENV[:1],
            "agent_envelope",
            (
                "key_length needs 2 bytes at offset 0 but only 1 remain; the blob is cut short "
                "(agent_envelope, field 'key_length', offset 0)",
                "key_length",
                0,
                "agent_envelope",
                None,
            ),
            ["✗ key_length"],
        ),
        (
            OWNER_CUT,
            "owner_envelope",
            (
                "wrapped_key of 5 bytes (from key_length) leaves no room for the 28 bytes of fields after it in "
                "19 bytes: the key length overruns (owner_envelope, field 'wrapped_key', offset 4)",
                "wrapped_key",
                4,
                "owner_envelope",
                None,
            ),
            ["version", "mode", "key_length", "✗ wrapped_key"],
        ),
    ],
    ids=[
        "truncated",
        "wrong mode",
        "wrong version",
        "cut short",
        "key length 0",
        "key overruns",
        "1 byte",
        "owner cut",
    ],
)
def test_a_blob_that_does_not_fit_its_layout_names_the_field_and_offset(blob, kind, said, before):
    with pytest.raises(WireFormatError) as err:
        wire.parse(blob, kind)
    assert _said(err.value) == said
    assert [f.name for f in err.value.fields] == before
    with pytest.raises(WireFormatError) as fast:  # the bulk-read path refuses it in the same words
        wire.aead_parts(blob, kind)
    assert _said(fast.value) == said


@pytest.mark.parametrize("kind", ["sealed", "VAULT"])
def test_an_unknown_layout_is_refused_naming_the_known_ones(kind):
    said = f"unknown layout {kind!r}; known: vault, owner_envelope, agent_envelope"
    for call in (lambda: wire.parse(VAULT, kind), lambda: wire.build(kind), lambda: wire.aead_parts(VAULT, kind)):
        with pytest.raises(WireFormatError) as err:
            call()
        assert str(err.value) == said


@pytest.mark.parametrize(
    "kind,values,said",
    [
        ("vault", {"nonce": bytes(11), "ciphertext": b"", "tag": bytes(16)}, ("nonce must be 12 bytes, got 11", "nonce", 2)),
        ("vault", {"ciphertext": b"", "tag": bytes(16)}, ("missing value for nonce", "nonce", 2)),
        ("agent_envelope", {"iv": bytes(12), "ciphertext": b"", "tag": bytes(16)}, ("wrapped_key of 0 bytes cannot be framed", "wrapped_key", 0)),
        (
            "owner_envelope",
            {"wrapped_key": bytes(65536), "iv": bytes(12), "ciphertext": b"", "tag": bytes(16)},
            ("wrapped_key of 65536 bytes cannot be framed", "wrapped_key", 2),
        ),
    ],
)  # fmt: skip
def test_build_refuses_what_its_layout_cannot_frame(kind, values, said):
    with pytest.raises(WireFormatError) as err:
        wire.build(kind, **values)
    message, field, offset = said
    assert _said(err.value) == (f"{message} ({kind}, field {field!r}, offset {offset})", field, offset, kind, None)


@pytest.mark.parametrize("key_len,body", [(1, b""), (2, b"x"), (300, b"abc" * 50)])
@pytest.mark.parametrize("kind", ["agent_envelope", "owner_envelope", "vault"])
def test_the_fast_split_agrees_with_parse(kind, key_len, body):
    keyed = kind != "vault"
    values = {"ciphertext": body, "tag": bytes(range(16))}
    values |= (
        {"wrapped_key": bytes(i % 256 for i in range(7, 7 + key_len)), "iv": b"\x05" * 12}
        if keyed
        else {"nonce": b"\x05" * 12}
    )
    blob = wire.build(kind, **values)
    layout = wire.parse(blob, kind)
    wrapped, nonce, sealed = wire.aead_parts(blob, kind)
    assert wrapped == (layout.value("wrapped_key") if keyed else None)
    assert nonce == b"\x05" * 12 and sealed == body + bytes(range(16))
    assert wire.build(kind, **{f.name: f.value for f in layout.fields}) == blob


def test_a_parse_shows_its_fields_with_their_notes():
    layout = wire.parse(VAULT)
    assert (
        repr(layout) == "<Layout vault 33 bytes: version[0:1], mode[1:2], nonce[2:14], ciphertext[14:17], tag[17:33]>"
    )
    assert layout.to_dict() == {
        "kind": "vault",
        "length": 33,
        "fields": [
            {"name": "version", "offset": 0, "length": 1, "hex": "01", "note": "SealedBlob version 1"},
            {"name": "mode", "offset": 1, "length": 1, "hex": "01", "note": "mode 1 = VAULT (symmetric)"},
            {"name": "nonce", "offset": 2, "length": 12, "hex": "00" * 12, "note": "AES-GCM nonce"},
            {"name": "ciphertext", "offset": 14, "length": 3, "hex": "616263", "note": "AES-256-GCM ciphertext"},
            {"name": "tag", "offset": 17, "length": 16, "hex": "00" * 16, "note": "AES-GCM authentication tag"},
        ],
    }
    assert layout["ciphertext"].value == b"abc" and layout.value("tag") == bytes(16)
    with pytest.raises(KeyError) as missing:
        layout["wrapped_key"]
    assert missing.value.args == ("wrapped_key",)
    env = wire.parse(ENV, "agent_envelope")
    assert env["key_length"].note == "big-endian length of wrapped_key: 5"


def test_describe_draws_each_layout_on_one_line():
    assert wire.describe() == (
        "vault: [version:0x01][mode:0x01][nonce:12][ciphertext:…][tag:16]\n"
        "owner_envelope: [version:0x01][mode:0x02][key_length:2][wrapped_key:key_length][iv:12][ciphertext:…][tag:16]\n"
        "agent_envelope: [key_length:2][wrapped_key:key_length][iv:12][ciphertext:…][tag:16]"
    )


def test_a_record_kind_names_who_opens_it_and_what_it_holds():
    for kind, record in wire.RECORDS.items():
        notes = {f.name: f.note for f in wire.parse(_sample(record.layout), kind).fields}
        assert notes["ciphertext"] == f"AES-256-GCM ciphertext of {record.plaintext}"
        if "wrapped_key" in notes:
            to = {"owner": "to the owner's RSA key", "agent": "to this connection's RSA key"}.get(record.opens_with)
            expected = "RSA-OAEP-SHA256 encryption of the AES-256 key"
            assert notes["wrapped_key"] == (f"{expected}, {to}" if to else expected)


def test_a_record_kind_travels_in_its_layout():
    assert [wire.layout_of(k) for k in wire.KINDS] == list(wire.KINDS)
    assert {k: wire.layout_of(k) for k in wire.RECORDS} == {k: r.layout for k, r in wire.RECORDS.items()}


def _sample(layout: str) -> bytes:
    if layout == "vault":
        return VAULT
    return wire.build(layout, wrapped_key=b"\x07" * 5, iv=bytes(12), ciphertext=b"xy", tag=bytes(16))


# -- keys and the primitives -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,step,said",
    [
        (lambda: aes_gcm_seal(bytes(16), bytes(12), b"x"), "AES-256-GCM seal", "AES-256 needs a 32-byte key, got 16 bytes"),
        (lambda: aes_gcm_open(bytes(31), bytes(12), bytes(20)), "AES-256-GCM open", "AES-256 needs a 32-byte key, got 31 bytes"),
        (
            lambda: aes_gcm_open(bytes(32), bytes(12), bytes(20)),
            "AES-256-GCM open",
            "GCM tag mismatch: the ciphertext, nonce or tag was altered, or the key is wrong",
        ),
    ],
)  # fmt: skip
def test_aes_gcm_refuses_in_words_naming_its_step(call, step, said):
    with pytest.raises(CryptoError) as err:
        call()
    assert err.value.step == step and str(err.value) == f"{step}: {said}"


def test_an_unwrap_that_fails_says_why_it_may_have(agent_key):
    with pytest.raises(CryptoError) as err:
        rsa_oaep_decrypt(agent_key.private_key, rsa_oaep_encrypt(AgentKey.generate().public_key_b64, bytes(32)))
    assert err.value.step == "RSA-OAEP-SHA256 unwrap"
    assert str(err.value) == (
        "RSA-OAEP-SHA256 unwrap: RSA-OAEP-SHA256 decryption failed: the key was wrapped to another public key, "
        "with other padding or hash, or the wrapped bytes were altered"
    )


@pytest.fixture(scope="module")
def agent_key() -> AgentKey:
    return AgentKey.generate()


def _ec_private():
    return ec.generate_private_key(ec.SECP256R1())


def test_a_public_key_that_is_not_rsa_spki_is_refused_by_field():
    with pytest.raises(WireFormatError) as err:
        load_public_key(wire.b64encode(b"not der"))
    assert str(err.value).startswith("public key is not RSA SPKI DER: ")
    assert (err.value.field, err.value.offset) == ("public_key", 0)
    spki = (
        _ec_private()
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(WireFormatError) as err:
        load_public_key(wire.b64encode(spki))
    assert _said(err.value) == (
        "public key is not an RSA key (field 'public_key', offset 0)",
        "public_key",
        0,
        None,
        None,
    )
    with pytest.raises(WireFormatError):
        rsa_oaep_encrypt(wire.b64encode(spki), bytes(32))  # a public key given as text is checked too


def test_a_pem_that_holds_no_rsa_private_key_is_refused_by_field(agent_key):
    with pytest.raises(WireFormatError) as err:
        AgentKey.from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    assert str(err.value).startswith("not an unencrypted RSA private key in PEM: ")
    assert (err.value.field, err.value.offset) == ("private_key", 0)
    pem = _ec_private().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(WireFormatError) as err:
        AgentKey.from_pem(pem)
    assert _said(err.value) == (
        "the PEM holds a key that is not RSA (field 'private_key', offset 0)",
        "private_key",
        0,
        None,
        None,
    )
    again = AgentKey.from_pem(agent_key.to_pem())
    assert again == agent_key and hash(again) == hash(agent_key) and again != AgentKey.generate()
    assert again != "not a key"


def test_an_agent_key_is_rsa_2048_and_never_pickled(agent_key):
    assert agent_key.private_key.key_size == 2048
    with pytest.raises(TypeError, match="^AgentKey needs an RSA private key$"):
        AgentKey(_ec_private())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^AgentKey is not picklable; use to_pem\(\) deliberately$"):
        pickle.dumps(agent_key)


def test_a_new_agent_key_is_rsa_2048_so_its_wraps_are_256_bytes():
    """001: "The wrapped key is 256 bytes: the owner's public key is RSA-2048, the size the Decoy
    apps register." A key made for pairing is that size, so what is wrapped to it is too."""
    made = AgentKey.generate()
    assert made.key_size == 2048
    wrapped = rsa_oaep_encrypt(made.public_key_b64, bytes(32))
    assert len(wrapped) == 256 and made.decrypt(wrapped) == bytes(32)


def test_a_public_key_that_is_not_base64_is_named_when_fingerprinted():
    with pytest.raises(WireFormatError) as err:
        public_key_fingerprint("not base64!")
    assert err.value.field == "public_key"


def test_a_key_file_a_command_names_is_refused_naming_the_option_and_the_file(tmp_path, agent_key):
    """ "--agent-key k.pem: no such file", "…: not an … key …": the option and the file, and why."""
    assert AgentKey.pem_file("--agent-key", None) is None and AgentKey.pem_file("--agent-key", "") is None
    good = tmp_path / "k.pem"
    good.write_text(agent_key.to_pem())
    assert AgentKey.pem_file("--agent-key", good) == good.read_bytes()
    missing = tmp_path / "nope.pem"
    with pytest.raises(ValueError) as err:
        AgentKey.pem_file("--agent-key", missing)
    assert str(err.value) == f"--agent-key {missing}: no such file"
    with pytest.raises(ValueError) as err:
        AgentKey.pem_file("--agent-key", tmp_path)
    assert str(err.value) == f"--agent-key {tmp_path}: cannot read it (Is a directory)"
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(ValueError) as err:
        AgentKey.pem_file("--agent-key", bad)
    assert str(err.value).startswith(f"--agent-key {bad}: not an unencrypted RSA private key in PEM: ")


def test_parse_names_its_input_when_it_is_no_blob_at_all():
    with pytest.raises(WireFormatError) as err:
        wire.parse(5, "vault")  # type: ignore[arg-type]
    assert _said(err.value) == ("expected bytes or base64 text, got int (vault)", None, None, "vault", None)
    with pytest.raises(WireFormatError) as err:
        wire.parse("QQ=A", "vault")
    assert (err.value.field, err.value.offset, err.value.kind) == ("base64", 2, "vault")
    with pytest.raises(WireFormatError) as err:
        wire.b64decode("QQ=A")
    assert err.value.field == "base64"


def test_the_field_a_parse_failed_in_is_marked_in_its_partial_layout():
    with pytest.raises(WireFormatError) as err:
        wire.parse(VAULT[:20], "vault")
    failed = err.value.fields[-1]
    assert (failed.name, failed.offset, failed.length, failed.value, failed.note) == (
        "✗ ciphertext",
        14,
        6,
        VAULT[14:20],
        "parsing failed here",
    )
