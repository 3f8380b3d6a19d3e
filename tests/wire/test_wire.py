"""wire.py: the three layouts parse and build as inverses, and every malformed input is a
WireFormatError that names the field and the offset (never an IndexError, never a wrong slice).

Issue 2: "Truncation, a wrong header, a key length that overruns, url-safe or unpadded base64 →
WireFormatError naming the field and offset."
"""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

from decoy_lab.errors import WireFormatError
from decoy_lab.wire import layouts as wire

NONCE = bytes(range(1, 13))
TAG = bytes(range(0xE0, 0xF0))
WRAPPED = bytes((i * 13) % 256 for i in range(256))


def vault(ct: bytes = b"hello world") -> bytes:
    return b"\x01\x01" + NONCE + ct + TAG


def envelope(ct: bytes = bytes(32), wrapped: bytes = WRAPPED) -> bytes:
    return len(wrapped).to_bytes(2, "big") + wrapped + NONCE + ct + TAG


def owner(ct: bytes = b"A" * 44) -> bytes:
    return b"\x01\x02" + envelope(ct)


def table(layout: wire.Layout) -> list[tuple[str, int, int]]:
    return [(f.name, f.offset, f.length) for f in layout.fields]


def refused(data, kind=None) -> WireFormatError:
    with pytest.raises(WireFormatError) as err:
        wire.parse(data, kind)
    return err.value


# -- the layouts, by hand ------------------------------------------------------------------------
def test_vault_fields():
    """[0x01 version][0x01 mode][12-byte random nonce][AES-256-GCM ciphertext][16-byte tag]"""
    layout = wire.parse(vault(b"abc"))
    assert layout.kind == "vault"
    assert table(layout) == [
        ("version", 0, 1),
        ("mode", 1, 1),
        ("nonce", 2, 12),
        ("ciphertext", 14, 3),
        ("tag", 17, 16),
    ]
    assert layout.value("nonce") == NONCE and layout.value("ciphertext") == b"abc" and layout.value("tag") == TAG
    assert layout["tag"].end == len(layout.data)


def test_agent_envelope_fields():
    """[2-byte BE key length][RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]"""
    layout = wire.parse(envelope())
    assert layout.kind == "agent_envelope"
    assert table(layout) == [
        ("key_length", 0, 2),
        ("wrapped_key", 2, 256),
        ("iv", 258, 12),
        ("ciphertext", 270, 32),
        ("tag", 302, 16),
    ]
    assert layout.value("key_length") == b"\x01\x00" and layout.value("wrapped_key") == WRAPPED


def test_owner_envelope_fields():
    """owner_wrap = [0x01][0x02] followed by the same envelope"""
    layout = wire.parse(owner())
    assert layout.kind == "owner_envelope"
    assert [f.name for f in layout.fields] == [
        "version",
        "mode",
        "key_length",
        "wrapped_key",
        "iv",
        "ciphertext",
        "tag",
    ]
    assert table(layout)[2:] == [(n, o + 2, ln) for n, o, ln in table(wire.parse(envelope(b"A" * 44)))]


def test_key_length_is_big_endian():
    wrapped = bytes(range(255)) + bytes(range(255)) + b"\x07"  # 511 bytes = 0x01ff
    layout = wire.parse(envelope(wrapped=wrapped), "agent_envelope")
    assert layout.value("key_length") == b"\x01\xff" and layout["wrapped_key"].length == 511


@pytest.mark.parametrize(
    "blob",
    [vault(), vault(b""), envelope(), envelope(b""), owner()],
    ids=["vault", "vault-empty", "envelope", "envelope-empty", "owner"],
)
def test_build_is_the_inverse_of_parse_from_bytes_and_base64(blob):
    for source in (blob, wire.b64encode(blob)):
        layout = wire.parse(source)
        assert layout.data == blob
        assert wire.build(layout.kind, **{f.name: f.value for f in layout.fields}) == blob
        computed = {"version", "mode", "key_length"}
        assert wire.build(layout.kind, **{f.name: f.value for f in layout.fields if f.name not in computed}) == blob


def test_fields_tile_the_blob_exactly():
    for blob in (vault(os.urandom(100)), envelope(os.urandom(7)), owner()):
        layout = wire.parse(blob)
        pos = 0
        for f in layout.fields:
            assert f.offset == pos and blob[f.offset : f.end] == f.value
            pos = f.end
        assert pos == len(blob)


def test_kind_is_guessed_from_the_header_and_can_be_forced():
    assert wire.parse(vault()).kind == "vault"
    assert wire.parse(owner()).kind == "owner_envelope"
    assert wire.parse(envelope()).kind == "agent_envelope"
    assert wire.parse(vault(), "vault").kind == "vault"


def test_layout_lookup_by_name():
    layout = wire.parse(vault())
    assert layout["nonce"].value == layout.value("nonce") == NONCE
    with pytest.raises(KeyError):
        layout["wrapped_key"]


# -- kid and base64 ------------------------------------------------------------------------------
def test_kid_is_lowercase_hex_of_the_first_8_bytes_of_sha256():
    """`kid` = lowercase hex of the first 8 bytes of SHA-256(key)."""
    key = os.urandom(32)
    assert wire.kid(key) == hashlib.sha256(key).digest()[:8].hex()
    assert wire.kid(bytes(32)) == "66687aadf862bd77"  # SHA-256 of 32 zero bytes begins 66687aad f862bd77


def test_b64_is_standard_and_padded():
    """All binary fields are standard padded base64."""
    data = bytes([0xFB, 0xFF, 0xBF, 0x00])
    assert wire.b64encode(data) == "+/+/AA=="
    assert wire.b64decode("+/+/AA==") == data


@pytest.mark.parametrize(
    "text,offset,words",
    [
        ("-_-_AA==", 0, "url-safe"),
        ("+/+_AA==", 3, "url-safe"),
        ("+/+/AA", 6, "padded"),
        ("+/+/A", 5, "padded"),
        ("+/+/ AA=", 4, "not standard base64"),
        ("+/+/\nAA=", 4, "not standard base64"),
        ("+/+/A=A=", 5, "padding"),
        ("+/+/AB==", 5, "canonical"),  # stray bits before the padding
        ("+/+/====", 4, "padding"),  # a whole group of padding (binascii's strict mode takes it)
        ("+/+/AA==AA==", 6, "padding"),
        ("+/+/é===", 4, "not standard base64"),
    ],
)
def test_bad_base64_names_the_field_and_offset(text, offset, words):
    with pytest.raises(WireFormatError) as err:
        wire.b64decode(text, field="owner_wrap")
    assert err.value.field == "owner_wrap" and err.value.offset == offset
    assert words in str(err.value) and "owner_wrap" in str(err.value)


def test_the_fast_decode_takes_exactly_the_texts_encoding_gives_back():
    """`canonical_b64decode` (every read's fast path) against the definition: the bytes whose
    standard padded encoding is the text, character for character. Every last group that ends
    in padding is tried (64² and 64³ of them), after a whole group and after none, and texts with
    a character or a padding out of place."""
    from itertools import product

    from decoy_lab.wire.layouts import canonical_b64decode

    def reference(text):
        try:
            out = base64.b64decode(text, validate=True)
        except ValueError:
            return None
        return out if base64.b64encode(out).decode("ascii") == text else None

    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    lasts = [a + b + "==" for a, b in product(alphabet, repeat=2)]
    lasts += [a + b + c + "=" for a, b, c in product(alphabet, repeat=3)]
    lasts += ["QUJD", "QUJD====", "QUI==", "Q===", "QQ=A", "-_AA", "QU\n=", "QUJ=QUJD"]
    for head in ("", "QUJD"):
        for last in lasts:
            text = head + last
            assert canonical_b64decode(text) == reference(text), text


def test_parse_of_url_safe_base64_is_refused_not_guessed():
    blob = vault(bytes([0xFB, 0xFF] * 9))
    url = base64.urlsafe_b64encode(blob).decode()
    assert "-" in url or "_" in url
    err = refused(url)
    assert err.field == "base64" and url[err.offset] in "-_"


def test_parse_of_unpadded_base64_is_refused_at_its_end():
    text = wire.b64encode(vault(b"x"))  # 31 bytes: the text ends in "="
    assert text.endswith("=")
    err = refused(text.rstrip("="))
    assert err.field == "base64" and err.offset == len(text.rstrip("="))


# -- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind,blob", [("vault", vault(b"")), ("agent_envelope", envelope(b"")), ("owner_envelope", owner(b""))]
)
def test_every_truncation_below_the_minimum_is_a_wire_error(kind, blob):
    """A blob cut short anywhere before its fixed fields are complete is refused with a field
    and an offset inside the data; there is no length at which an IndexError escapes."""
    for n in range(len(blob)):
        err = refused(blob[:n], kind)
        assert err.field in wire.field_names(kind), (n, err)
        assert err.offset is not None and 0 <= err.offset <= n, (n, err)
        assert err.kind == kind


def test_truncated_vault_names_the_field_cut_short():
    assert (refused(b"\x01", "vault").field, refused(b"\x01", "vault").offset) == ("mode", 1)
    err = refused(vault(b"")[:20], "vault")
    assert err.field in ("nonce", "ciphertext", "tag")


@pytest.mark.parametrize(
    "data,kind,field,offset",
    [
        (b"\x02\x01" + bytes(28), "vault", "version", 0),
        (b"\x01\x02" + bytes(28), "vault", "mode", 1),
        (b"\x01\x01" + envelope()[2:], "owner_envelope", "mode", 1),
        (b"\x00\x02" + envelope(), "owner_envelope", "version", 0),
    ],
)
def test_wrong_header_names_the_header_byte(data, kind, field, offset):
    err = refused(data, kind)
    assert (err.field, err.offset) == (field, offset)


def test_key_length_overrunning_the_data_is_refused_at_the_wrapped_key():
    blob = b"\xff\xff" + WRAPPED + NONCE + TAG
    err = refused(blob, "agent_envelope")
    assert (err.field, err.offset) == ("wrapped_key", 2)
    err = refused(b"\x01\x02" + blob, "owner_envelope")
    assert (err.field, err.offset) == ("wrapped_key", 4)


def test_zero_key_length_is_refused():
    err = refused(b"\x00\x00" + NONCE + TAG, "agent_envelope")
    assert (err.field, err.offset) == ("key_length", 0)


def test_key_length_that_eats_the_iv_and_tag_is_blamed_on_the_key_length():
    """A key length of 300 in a 318-byte envelope fits inside the data but leaves no room for the
    12-byte IV and 16-byte tag: the key length overruns, so the error should name wrapped_key
    (or key_length), not the ciphertext that follows it."""
    blob = envelope()  # 318 bytes, key length 256
    bad = (300).to_bytes(2, "big") + blob[2:]
    err = refused(bad, "agent_envelope")
    assert err.field in ("key_length", "wrapped_key")


def test_unknown_kind_and_non_bytes_are_wire_errors():
    with pytest.raises(WireFormatError):
        wire.parse(vault(), "sealed_blob")
    with pytest.raises(WireFormatError):
        wire.parse(12345)  # type: ignore[arg-type]
    with pytest.raises(WireFormatError):
        wire.build("sealed_blob")


def test_build_refuses_wrong_lengths_and_missing_fields():
    with pytest.raises(WireFormatError) as err:
        wire.build("vault", nonce=bytes(11), ciphertext=b"", tag=TAG)
    assert err.value.field == "nonce" and err.value.offset == 2
    with pytest.raises(WireFormatError) as err:
        wire.build("vault", nonce=NONCE, ciphertext=b"")
    assert err.value.field == "tag"
    with pytest.raises(WireFormatError) as err:
        wire.build("agent_envelope", wrapped_key=b"", iv=NONCE, ciphertext=b"", tag=TAG)
    assert err.value.field == "wrapped_key"


def test_a_failed_parse_marks_only_the_failing_fields_own_bytes():
    """Issue: a bad mode byte shaded the whole blob as the field "✗ mode [1:268]". The failing
    field spans its own bytes: one for a wrong constant, two for a zero key length; a field cut
    short spans what remains of it. The bytes after it belong to no field."""
    blob = bytearray(vault(bytes(250)))
    blob[1] = 0x07
    exc = refused(bytes(blob), "vault")
    assert [(f.name, f.offset, f.length) for f in exc.fields] == [("version", 0, 1), ("✗ mode", 1, 1)]
    assert exc.fields[-1].value == b"\x07" and exc.length == 1
    zero = refused(b"\x00\x00" + NONCE + bytes(40) + TAG, "agent_envelope")
    assert [(f.name, f.offset, f.length) for f in zero.fields] == [("✗ key_length", 0, 2)]
    cut = refused(vault()[:20], "vault")  # 20 bytes: the tag cannot fit, what remains is marked
    assert cut.fields[-1].name.startswith("✗") and cut.fields[-1].end == 20
