"""sealing.py: every recipe round-trips, and every refusal is typed and names its step."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key


# -- VAULT ---------------------------------------------------------------------------------------
def test_vault_known_answer_nist_gcm_test_case_14():
    """AES-256-GCM, no AAD (GCM spec test case 14: zero key, zero IV, 16 zero bytes)."""
    blob = sealing.seal_vault(bytes(32), bytes(16), nonce=bytes(12))
    assert blob == (
        b"\x01\x01"
        + bytes(12)
        + bytes.fromhex("cea7403d4d606b6e074ec5d3baf39d18")
        + bytes.fromhex("d0d1c8a799996bf0265b98b5d48ab919")
    )
    assert sealing.open_vault(bytes(32), blob) == bytes(16)


@pytest.mark.parametrize("plain", [b"", b"x", "Prefers short answers. ✓".encode(), bytes(range(256)) * 40])
def test_vault_round_trip_from_bytes_and_base64(plain):
    key = random_key()
    blob = sealing.seal_vault(key, plain)
    assert wire.parse(blob).kind == "vault" and len(blob) == 30 + len(plain)
    assert sealing.open_vault(key, blob) == plain
    assert sealing.open_vault(key, wire.b64encode(blob)) == plain


def test_vault_nonce_is_fresh_each_time():
    """[12-byte random nonce]"""
    key = random_key()
    nonces = {wire.parse(sealing.seal_vault(key, b"same")).value("nonce") for _ in range(20)}
    assert len(nonces) == 20


def test_vault_wrong_key_is_a_gcm_error_naming_the_step():
    blob = sealing.seal_vault(random_key(), b"secret text")
    with pytest.raises(CryptoError) as err:
        sealing.open_vault(random_key(), blob)
    assert err.value.step == "AES-256-GCM open" and "tag mismatch" in str(err.value)


def test_every_altered_byte_of_a_vault_blob_is_refused():
    """Header bytes are format errors; nonce, ciphertext and tag bytes fail authentication."""
    key = random_key()
    blob = sealing.seal_vault(key, b"0123456789")
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0x01
        with pytest.raises((CryptoError, WireFormatError)) as err:
            sealing.open_vault(key, bytes(bad))
        if i < 2:
            assert isinstance(err.value, WireFormatError) and err.value.offset == i
        else:
            assert isinstance(err.value, CryptoError) and err.value.step == "AES-256-GCM open"


def test_vault_refuses_a_key_that_is_not_32_bytes():
    with pytest.raises(CryptoError):
        sealing.seal_vault(bytes(16), b"x")
    with pytest.raises(CryptoError):
        sealing.open_vault(bytes(31), sealing.seal_vault(random_key(), b"x"))


def test_vault_refuses_truncated_and_url_safe_input():
    key = random_key()
    # The nonce and ciphertext are random: about one blob in 40 encodes without a '+' or '/', and
    # then the url-safe text would be the same text. Seal until the encoding has one.
    blob = sealing.seal_vault(key, b"\xfb\xff" * 30)
    while not set(wire.b64encode(blob)) & {"+", "/"}:
        blob = sealing.seal_vault(key, b"\xfb\xff" * 30)
    with pytest.raises(WireFormatError) as err:
        sealing.open_vault(key, blob[:20])
    assert err.value.field in ("nonce", "ciphertext", "tag")
    url = wire.b64encode(blob).replace("+", "-").replace("/", "_")
    assert url != wire.b64encode(blob)
    with pytest.raises(WireFormatError) as err:
        sealing.open_vault(key, url)
    assert err.value.field == "ciphertext" and url[err.value.offset] in "-_"


def test_json_round_trip_is_compact_utf8():
    key = random_key()
    obj = {"v": 2, "row_id": "r1", "observation": {"content": "Café ✓", "entityName": "default_user"}}
    blob = sealing.seal_json(key, obj)
    assert sealing.open_json(key, blob) == obj
    assert sealing.open_vault(key, blob) == json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def test_json_that_is_not_json_is_an_unreadable_row():
    key = random_key()
    for plain in (b"not json", b"\xff\xfe", b'\xef\xbb\xbf{"v":2}', b'{"a":"raw\ttab"}', b'{"a":1,}'):
        with pytest.raises(UnreadableRow) as err:
            sealing.open_json(key, sealing.seal_vault(key, plain), row_id="r9")
        assert err.value.row_id == "r9"


@pytest.mark.parametrize(
    "plain",
    [
        b'{"v":2,"metadata":{"n":18446744073709551616,"m":-9223372036854775809}}',  # past 64 bits
        b'{"v":2,"metadata":{"ratio":0.1,"big":1e300,"deep":[[{"x":2.5}]]}}',
        b'{"v":2,"metadata":{"n":NaN,"inf":Infinity}}',  # json takes these; orjson does not
        b'{"v":2,"note":"\\ud800 a lone surrogate"}',
        b'{"v":2,"id":"4e2a-1.5e3","a":1,"a":2}',
        b'  {"v":2}  ',
    ],
)
def test_a_plaintext_reads_exactly_as_json_reads_it(plain):
    """What a bulk read opens is what `json.loads` makes of the plaintext: the same values, the
    same types (an integer past 64 bits stays an integer), the same keys in the same order."""
    key = random_key()
    got = sealing.open_json(key, sealing.seal_vault(key, plain))
    want = json.loads(plain.decode())
    assert repr(got) == repr(want)


# -- agent envelopes -----------------------------------------------------------------------------
def test_agent_wrap_round_trip_and_layout(agent):
    """self_wrap … headerless envelope … whose plaintext is the raw 32-byte memory key."""
    key = random_key()
    env = sealing.wrap_to_agent(key, agent.public_key_b64)
    layout = wire.parse(env)
    assert layout.kind == "agent_envelope" and len(env) == 2 + 256 + 12 + 32 + 16
    assert layout.value("key_length") == (256).to_bytes(2, "big")
    assert sealing.unwrap_as_agent(env, agent) == key
    assert sealing.unwrap_as_agent(wire.b64encode(env), agent) == key
    assert sealing.open_envelope(env, agent, owner=False) == key  # raw bytes


def test_agent_wrap_uses_oaep_sha256_with_mgf1_sha256(agent):
    """RSA-OAEP with SHA-256 as the hash and MGF1 with SHA-256, empty label."""
    env = wire.parse(sealing.wrap_to_agent(random_key(), agent.public_key_b64))
    wrapped = env.value("wrapped_key")
    sha256 = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    assert len(agent.private_key.decrypt(wrapped, sha256)) == 32
    for wrong in (
        padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None),
        padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA256(), label=None),
        padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=b"x"),
    ):
        with pytest.raises(ValueError):
            agent.private_key.decrypt(wrapped, wrong)


def test_agent_wrap_to_another_key_is_refused_at_the_unwrap(agent, owner):
    env = sealing.wrap_to_agent(random_key(), owner.public_key_b64)
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_agent(env, agent)
    assert err.value.step == "RSA-OAEP-SHA256 unwrap"


def test_agent_envelope_with_an_altered_payload_is_refused_at_gcm(agent):
    env = bytearray(sealing.wrap_to_agent(random_key(), agent.public_key_b64))
    env[-20] ^= 0x80  # inside the ciphertext
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_agent(bytes(env), agent)
    assert err.value.step == "AES-256-GCM open"


def test_agent_envelope_holding_key_text_is_refused(agent):
    """self_wrap plaintext is the raw 32-byte key; the 44-character text belongs in an owner wrap."""
    key = random_key()
    env = sealing.seal_envelope(wire.b64encode(key).encode(), agent.public_key_b64, owner=False)
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_agent(env, agent)
    assert err.value.step == "memory key check"


def test_wrapped_key_from_a_pkcs1_pem_opens_too(agent):
    pkcs1 = agent.private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    again = AgentKey.from_pem(pkcs1)
    key = random_key()
    assert sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), again) == key
    assert AgentKey.from_pem(again.to_pem()).public_key_b64 == agent.public_key_b64


def test_wrapping_refuses_keys_that_are_not_32_bytes(agent):
    for bad in (bytes(31), bytes(33), b""):
        with pytest.raises(CryptoError):
            sealing.wrap_to_agent(bad, agent.public_key_b64)
        with pytest.raises(CryptoError):
            sealing.wrap_to_owner(bad, agent.public_key_b64)


def test_wrapping_to_a_public_key_that_is_not_base64_spki_is_a_wire_error():
    with pytest.raises(WireFormatError) as err:
        sealing.wrap_to_agent(random_key(), "not-base64!")
    assert err.value.field == "public_key"
    with pytest.raises(WireFormatError):
        sealing.wrap_to_agent(random_key(), wire.b64encode(b"\x30\x03\x02\x01\x00"))


# -- owner envelopes -----------------------------------------------------------------------------
def test_owner_wrap_round_trip_and_plaintext_is_44_char_base64_text(owner):
    """owner_wrap = [0x01][0x02] followed by the same envelope to owner_public_key, whose plaintext is
    the ASCII base64 text (44 characters) of the key, not the raw bytes."""
    key = random_key()
    env = sealing.wrap_to_owner(key, owner.public_key_b64)
    layout = wire.parse(env)
    assert layout.kind == "owner_envelope" and env[:2] == b"\x01\x02"
    assert layout["ciphertext"].length == 44
    payload = sealing.open_envelope(env, owner, owner=True)
    assert payload == wire.b64encode(key).encode("ascii") and len(payload) == 44
    assert sealing.unwrap_as_owner(env, owner) == key
    assert sealing.unwrap_as_owner(wire.b64encode(env), owner) == key


@pytest.mark.parametrize(
    "payload_of",
    [
        lambda k: k,  # the raw 32 bytes
        lambda k: wire.b64encode(k).rstrip("=").encode(),  # unpadded text (43 chars)
        lambda k: wire.b64encode(b"\xfb\xff" * 16).replace("+", "-").replace("/", "_").encode(),  # url-safe text
        lambda k: wire.b64encode(k + b"\x00").encode(),  # 33 bytes of key
        lambda k: k.hex().encode(),  # hex text
    ],
    ids=["raw-bytes", "unpadded", "url-safe", "33-bytes", "hex"],
)
def test_owner_wrap_whose_plaintext_is_not_the_base64_text_is_refused(owner, payload_of):
    """… the ASCII base64 text (44 characters) of the key, not the raw bytes."""
    env = sealing.seal_envelope(payload_of(random_key()), owner.public_key_b64, owner=True)
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_owner(env, owner)
    assert err.value.step == "owner plaintext check"


def test_owner_unwrap_refuses_a_headerless_envelope(owner):
    env = sealing.wrap_to_agent(random_key(), owner.public_key_b64)
    with pytest.raises((WireFormatError, CryptoError)) as err:
        sealing.unwrap_as_owner(env, owner)
    if isinstance(err.value, WireFormatError):
        assert err.value.field in ("version", "mode")


def test_owner_wrap_to_the_agent_is_not_readable_by_the_owner(agent, owner):
    env = sealing.wrap_to_owner(random_key(), agent.public_key_b64)
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_owner(env, owner)
    assert err.value.step == "RSA-OAEP-SHA256 unwrap"


# -- legacy space rows ---------------------------------------------------------------------------
SPACE, ROW = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"


def test_space_row_round_trip_binds_space_and_row():
    """The plaintext embeds `space_id` and `row_id`; check both after decrypting."""
    key = random_key()
    body = {"relation": {"from": "default_user", "to": "Decoy", "relationType": "works on"}}
    blob = sealing.seal_space_row(key, body, space_id=SPACE, row_id=ROW)
    assert sealing.open_space_row(blob, key, space_id=SPACE, row_id=ROW) == {"space_id": SPACE, "row_id": ROW, **body}
    assert sealing.open_json(key, blob)["space_id"] == SPACE


def test_space_row_served_elsewhere_is_unreadable():
    """… drop a row that does not match (a server cannot move a row between spaces unnoticed)."""
    key = random_key()
    blob = sealing.seal_space_row(
        key, {"entity": {"name": "Decoy", "entityType": "project"}}, space_id=SPACE, row_id=ROW
    )
    with pytest.raises(UnreadableRow) as err:
        sealing.open_space_row(blob, key, space_id=ROW, row_id=ROW)
    assert "space_id" in err.value.reason
    with pytest.raises(UnreadableRow) as err:
        sealing.open_space_row(blob, key, space_id=SPACE, row_id=SPACE)
    assert "row_id" in err.value.reason and err.value.row_id == SPACE


def test_space_row_plaintext_cannot_override_its_binding():
    key = random_key()
    blob = sealing.seal_space_row(
        key, {"space_id": "other", "row_id": "other", "entity": {}}, space_id=SPACE, row_id=ROW
    )
    assert sealing.open_space_row(blob, key, space_id=SPACE, row_id=ROW)["space_id"] == SPACE


def test_space_row_under_the_wrong_key_is_a_gcm_error():
    blob = sealing.seal_space_row(random_key(), {"entity": {}}, space_id=SPACE, row_id=ROW)
    with pytest.raises(CryptoError) as err:
        sealing.open_space_row(blob, random_key(), space_id=SPACE, row_id=ROW)
    assert err.value.step == "AES-256-GCM open"
