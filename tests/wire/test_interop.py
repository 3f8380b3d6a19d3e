"""Interop with an independent implementation: tests/interop/*.mjs, written from the spec on
Node's WebCrypto. What Python seals, Node opens, and what Node seals, Python opens — VAULT
blobs, agent wraps, owner wraps (both directions, each through its own owner-side check),
whole memory and topic rows, and legacy space rows."""

from __future__ import annotations

import json
import os
import random
import uuid

import pytest
from cryptography.hazmat.primitives import serialization

from decoy_lab import memory as M
from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, public_key_fingerprint, random_key

from support.node import NodeRefused, requires_node, run_batch, run_node

pytestmark = requires_node
b64 = wire.b64encode


@pytest.fixture(scope="module")
def py_keys() -> dict[str, AgentKey]:
    return {"agent": AgentKey.generate(), "owner": AgentKey.generate()}


@pytest.fixture(scope="module")
def node_keys() -> dict[str, dict]:
    agent, owner = run_batch([{"op": "generateKey"}, {"op": "generateKey"}])
    return {"agent": agent, "owner": owner}


def served(row: dict, wrapped_key: str | None = None) -> dict:
    """A POST row as GET /api/agent/context/memories serves it to its author."""
    return {
        "id": row["id"],
        "kid": row["kid"],
        "rev": 1,
        "ciphertext": row["ciphertext"],
        "wrapped_key": wrapped_key or row["self_wrap"],
        "via": ["self"],
        "mine": True,
        "author_kind": "agent",
    }


# -- keys ----------------------------------------------------------------------------------------
def test_keys_cross_as_pkcs8_pem_and_base64_spki(node_keys, py_keys):
    """Public keys are RSA SPKI DER (base64)."""
    nk = AgentKey.from_pem(node_keys["agent"]["privateKeyPem"])
    assert nk.public_key_b64 == node_keys["agent"]["publicKeyBase64"]
    assert nk.key_size == 2048
    fp = run_node({"op": "publicKeyFingerprint", "publicKey": py_keys["agent"].public_key_b64})["fingerprint"]
    assert fp == py_keys["agent"].fingerprint == public_key_fingerprint(py_keys["agent"].public_key_b64)


def test_node_reads_a_pkcs1_pem_from_python(py_keys):
    key = random_key()
    pkcs1 = (
        py_keys["agent"]
        .private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        .decode()
    )
    assert "BEGIN RSA PRIVATE KEY" in pkcs1
    env = sealing.wrap_to_agent(key, py_keys["agent"].public_key_b64)
    out = run_node({"op": "unwrapAsAgent", "envelope": b64(env), "privateKeyPem": pkcs1})
    assert wire.b64decode(out["key"]) == key


def test_kid_agrees():
    """kid = lowercase hex of the first 8 bytes of SHA-256(key)."""
    keys = [random_key() for _ in range(4)] + [bytes(32)]
    answers = run_batch([{"op": "kid", "key": b64(k)} for k in keys])
    assert [a["kid"] for a in answers] == [wire.kid(k) for k in keys]


# -- VAULT ---------------------------------------------------------------------------------------
def test_vault_python_to_node_and_back():
    key = random_key()
    plain = "Prefers short answers — ünïcödé ✓".encode()
    py_blob = sealing.seal_vault(key, plain)
    node_blob = run_node({"op": "sealVault", "key": b64(key), "plaintext": b64(plain)})["blob"]
    opened = run_node({"op": "openVault", "key": b64(key), "blob": b64(py_blob)})["plaintext"]
    assert wire.b64decode(opened) == plain
    assert sealing.open_vault(key, node_blob) == plain


def test_vault_same_key_nonce_and_plaintext_give_identical_bytes():
    """[0x01 version][0x01 mode][12-byte random nonce][AES-256-GCM ciphertext][16-byte tag], no AAD."""
    key, nonce = random_key(), os.urandom(12)
    plain = b'{"v":2}'
    node_blob = run_node({"op": "sealVault", "key": b64(key), "plaintext": b64(plain), "nonce": b64(nonce)})["blob"]
    assert wire.b64decode(node_blob) == sealing.seal_vault(key, plain, nonce=nonce)


def test_both_refuse_a_tampered_vault_with_a_gcm_error():
    key = random_key()
    blob = bytearray(sealing.seal_vault(key, b"hello"))
    blob[-1] ^= 1
    with pytest.raises(CryptoError) as py_err:
        sealing.open_vault(key, bytes(blob))
    with pytest.raises(NodeRefused) as node_err:
        run_node({"op": "openVault", "key": b64(key), "blob": b64(bytes(blob))})
    assert py_err.value.step == "AES-256-GCM open" == node_err.value.step


# -- agent envelopes -----------------------------------------------------------------------------
def test_agent_wrap_python_to_node(node_keys):
    """self_wrap … whose plaintext is the raw 32-byte memory key."""
    key = random_key()
    env = sealing.wrap_to_agent(key, node_keys["agent"]["publicKeyBase64"])
    out = run_node({"op": "unwrapAsAgent", "envelope": b64(env), "privateKeyPem": node_keys["agent"]["privateKeyPem"]})
    assert wire.b64decode(out["key"]) == key
    payload = run_node(
        {
            "op": "openEnvelope",
            "envelope": b64(env),
            "owner": False,
            "privateKeyPem": node_keys["agent"]["privateKeyPem"],
        }
    )["payload"]
    assert wire.b64decode(payload) == key  # raw bytes, not text


def test_agent_wrap_node_to_python(py_keys):
    key = random_key()
    env = run_node({"op": "wrapToAgent", "key": b64(key), "publicKey": py_keys["agent"].public_key_b64})["envelope"]
    assert wire.parse(env).kind == "agent_envelope"
    assert sealing.unwrap_as_agent(env, py_keys["agent"]) == key


def test_agent_wrap_to_the_wrong_key_is_refused_on_both_sides(py_keys, node_keys):
    key = random_key()
    env = sealing.wrap_to_agent(key, py_keys["owner"].public_key_b64)
    with pytest.raises(NodeRefused) as err:
        run_node({"op": "unwrapAsAgent", "envelope": b64(env), "privateKeyPem": node_keys["agent"]["privateKeyPem"]})
    assert err.value.step == "RSA-OAEP-SHA256 unwrap"
    node_env = run_node({"op": "wrapToAgent", "key": b64(key), "publicKey": node_keys["agent"]["publicKeyBase64"]})
    with pytest.raises(CryptoError) as py_err:
        sealing.unwrap_as_agent(node_env["envelope"], py_keys["agent"])
    assert py_err.value.step == "RSA-OAEP-SHA256 unwrap"


# -- owner envelopes -----------------------------------------------------------------------------
def test_owner_wrap_python_to_node(node_keys):
    """owner_wrap = [0x01][0x02] followed by the same envelope to owner_public_key, whose plaintext is
    the ASCII base64 text (44 characters) of the key, not the raw bytes."""
    key = random_key()
    env = sealing.wrap_to_owner(key, node_keys["owner"]["publicKeyBase64"])
    pem = node_keys["owner"]["privateKeyPem"]
    out = run_node({"op": "unwrapAsOwner", "envelope": b64(env), "privateKeyPem": pem})
    assert wire.b64decode(out["key"]) == key
    payload = run_node({"op": "openEnvelope", "envelope": b64(env), "owner": True, "privateKeyPem": pem})["payload"]
    assert wire.b64decode(payload) == b64(key).encode("ascii") and len(wire.b64decode(payload)) == 44


def test_owner_wrap_node_to_python(py_keys):
    key = random_key()
    env = run_node({"op": "wrapToOwner", "key": b64(key), "publicKey": py_keys["owner"].public_key_b64})["envelope"]
    assert wire.parse(env).kind == "owner_envelope"
    assert sealing.unwrap_as_owner(env, py_keys["owner"]) == key
    assert sealing.open_envelope(env, py_keys["owner"], owner=True) == b64(key).encode("ascii")


def test_owner_wrap_holding_raw_bytes_is_refused_both_ways(py_keys, node_keys):
    """… whose plaintext is the ASCII base64 text (44 characters) of the key, not the raw bytes."""
    key = random_key()
    node_env = run_node(
        {"op": "sealEnvelope", "payload": b64(key), "owner": True, "publicKey": py_keys["owner"].public_key_b64}
    )["envelope"]
    with pytest.raises(CryptoError) as err:
        sealing.unwrap_as_owner(node_env, py_keys["owner"])
    assert err.value.step == "owner plaintext check"
    py_env = sealing.seal_envelope(key, node_keys["owner"]["publicKeyBase64"], owner=True)
    with pytest.raises(NodeRefused) as node_err:
        run_node({"op": "unwrapAsOwner", "envelope": b64(py_env), "privateKeyPem": node_keys["owner"]["privateKeyPem"]})
    assert node_err.value.step == "owner plaintext check"


def test_agent_envelope_is_not_an_owner_wrap_for_either_side(py_keys, node_keys):
    key = random_key()
    env = run_node({"op": "wrapToAgent", "key": b64(key), "publicKey": py_keys["owner"].public_key_b64})["envelope"]
    with pytest.raises((CryptoError, WireFormatError)):
        sealing.unwrap_as_owner(env, py_keys["owner"])
    py_env = sealing.wrap_to_agent(key, node_keys["owner"]["publicKeyBase64"])
    with pytest.raises(NodeRefused):
        run_node({"op": "unwrapAsOwner", "envelope": b64(py_env), "privateKeyPem": node_keys["owner"]["privateKeyPem"]})


# -- layouts -------------------------------------------------------------------------------------
def test_both_parsers_split_the_same_blobs_into_the_same_fields(py_keys):
    key = random_key()
    blobs = [sealing.seal_vault(key, b"x" * n) for n in (0, 1, 300)]
    blobs += [
        sealing.wrap_to_agent(key, py_keys["agent"].public_key_b64),
        sealing.wrap_to_owner(key, py_keys["owner"].public_key_b64),
    ]
    answers = run_batch([{"op": "parse", "data": b64(b)} for b in blobs])
    for blob, answer in zip(blobs, answers):
        layout = wire.parse(blob)
        assert answer["kind"] == layout.kind
        assert [(f["name"], f["offset"], f["length"], f["hex"]) for f in answer["fields"]] == [
            (f.name, f.offset, f.length, f.value.hex()) for f in layout.fields
        ]


@pytest.mark.parametrize("text,offset", [("AQE-AAAA", 3), ("AQE_AAAA", 3), ("AQEAAA", 6), ("AQ EAAAA", 2)])
def test_both_refuse_the_same_bad_base64_at_the_same_offset(text, offset):
    """All binary fields are standard padded base64."""
    with pytest.raises(WireFormatError) as err:
        wire.parse(text)
    with pytest.raises(NodeRefused) as node_err:
        run_node({"op": "parse", "data": text})
    assert err.value.offset == node_err.value.offset == offset


# -- whole rows ----------------------------------------------------------------------------------
def py_recipients(py_keys, node_keys, *, agent: str = "node", owner: str = "node") -> M.RecipientKeys:
    def pick(side, who):
        return node_keys[who]["publicKeyBase64"] if side == "node" else py_keys[who].public_key_b64

    return M.RecipientKeys(pick(owner, "owner"), pick(agent, "agent"))


def node_recipients(py_keys, *, grantees=()) -> dict:
    return {
        "ownerPublicKey": py_keys["owner"].public_key_b64,
        "agentPublicKey": py_keys["agent"].public_key_b64,
        "grantees": list(grantees),
    }


def test_python_memory_row_opens_in_node_as_agent_and_as_owner(py_keys, node_keys):
    topic = {"id": f"topic:{uuid.uuid4()}", "name": "Golf club headcovers"}
    row = M.new_memory_row(
        py_recipients(py_keys, node_keys),
        "Needs covers for a 460cc driver.",
        topic=topic,
        categories=["sports", "user_preferences", "sports"],
    )
    mem, owner = run_batch(
        [
            {"op": "readMemoryRow", "row": served(row), "privateKeyPem": node_keys["agent"]["privateKeyPem"]},
            {"op": "openRowAsOwner", "row": row, "privateKeyPem": node_keys["owner"]["privateKeyPem"]},
        ]
    )
    assert mem["ok"] and owner["ok"], (mem, owner)
    m = mem["memory"]
    assert m["id"] == row["id"] and m["text"] == "Needs covers for a 460cc driver."
    assert m["about"] == [topic["id"]] and m["entityName"] == "Golf club headcovers"
    assert m["categories"] == ["sports", "user_preferences"]
    assert owner["plaintext"]["observation"]["content"] == "Needs covers for a 460cc driver."
    assert owner["plaintext"]["row_id"] == row["id"] and owner["plaintext"]["v"] == 2


def test_node_memory_row_opens_in_python_as_agent_and_as_owner(py_keys):
    account = str(uuid.uuid4())
    row = run_node(
        {
            "op": "newMemoryRow",
            "keys": node_recipients(py_keys),
            "text": "Uses squash merges.",
            "account": account,
            "categories": ["technology"],
            "metadata": {"source": "chat"},
        }
    )["row"]
    assert set(row) == {"id", "kid", "ciphertext", "owner_wrap", "self_wrap"}
    m = M.read_memory_row(served(row), py_keys["agent"])
    assert m.text == "Uses squash merges." and m.about == f"account:{account}" and m.account == account
    assert m.categories == ["technology"] and m.metadata == {"source": "chat"}
    key = sealing.unwrap_as_owner(row["owner_wrap"], py_keys["owner"])
    assert wire.kid(key) == row["kid"]
    plain = sealing.open_json(key, row["ciphertext"])
    assert plain == {
        "v": 2,
        "row_id": row["id"],
        "observation": {"content": "Uses squash merges."},
        "about": [f"account:{account}"],
        "categories": ["technology"],
        "metadata": {"source": "chat"},
    }


def test_node_row_with_grantee_wraps_opens_for_the_grantee_in_python(py_keys):
    grantee = AgentKey.generate()
    g = {
        "token_id": str(uuid.uuid4()),
        "public_key": grantee.public_key_b64,
        "selectors": {
            "all": False,
            "categories": ["travel"],
            "topics": [],
            "account_ids": [],
            "account_wildcard": False,
        },
    }
    row = run_node(
        {
            "op": "newMemoryRow",
            "keys": node_recipients(py_keys, grantees=[g]),
            "text": "Direct morning flights run on Tuesdays.",
            "categories": ["travel"],
        }
    )["row"]
    (wrap,) = row["grantee_wraps"]
    assert wrap["token_id"] == g["token_id"] and wrap["via"] == ["category:travel"]
    m = M.read_memory_row(served(row, wrap["wrapped_key"]), grantee)
    assert m.text == "Direct morning flights run on Tuesdays." and m.about == "user"


def test_python_topic_rows_open_in_node(py_keys, node_keys):
    made = M.new_topic_rows(py_recipients(py_keys, node_keys), "Lisbon trip", type="trip", relation_type="is planning")
    entity, _relation = made.rows
    answers = run_batch(
        [
            {"op": "readMemoryRow", "row": served(r), "privateKeyPem": node_keys["agent"]["privateKeyPem"]}
            for r in made.rows
        ]
        + [{"op": "openRowAsOwner", "row": r, "privateKeyPem": node_keys["owner"]["privateKeyPem"]} for r in made.rows]
    )
    assert all(a["ok"] for a in answers), answers
    assert answers[0]["memory"] is None and answers[1]["memory"] is None  # graph rows, not memories
    ent, rel = answers[2]["plaintext"], answers[3]["plaintext"]
    assert ent["entity"] == {"name": "Lisbon trip", "entityType": "trip"} and ent["about"] == []
    assert f"topic:{entity['id']}" == made.topic_id
    assert rel["relation"] == {"from": "default_user", "to": "Lisbon trip", "relationType": "is planning"}
    assert rel["endpoints"] == ["user", made.topic_id]


def test_node_topic_rows_and_first_memory_open_in_python(py_keys):
    keys = node_recipients(py_keys)
    made = run_node(
        {
            "op": "newTopicRows",
            "keys": keys,
            "name": "Golf club headcovers",
            "type": "product",
            "link": {"relationType": "is choosing"},
        }
    )
    topic_id = made["topicId"]
    mem = run_node(
        {
            "op": "newMemoryRow",
            "keys": keys,
            "text": "Chose the synthetic leather set.",
            "topic": {"id": topic_id, "name": "Golf club headcovers"},
            "categories": ["sports", "fashion"],
        }
    )
    rows = [served(r) for r in made["rows"] + [mem["row"]]]
    opened = [
        sealing.open_json(sealing.unwrap_as_agent(r["wrapped_key"], py_keys["agent"]), r["ciphertext"])
        for r in rows[:2]
    ]
    assert opened[0] == {
        "v": 2,
        "row_id": rows[0]["id"],
        "about": [],
        "entity": {"name": "Golf club headcovers", "entityType": "product"},
    }
    assert opened[1]["relation"] == {
        "from": "default_user",
        "to": "Golf club headcovers",
        "relationType": "is choosing",
    }
    assert opened[1]["endpoints"] == ["user", f"topic:{topic_id}"] and topic_id == rows[0]["id"]
    assert M.read_memory_row(rows[0], py_keys["agent"]) is None  # graph rows are not memories
    assert M.read_memory_row(rows[1], py_keys["agent"]) is None
    memory = M.read_memory_row(rows[2], py_keys["agent"])
    assert memory.topic["id"] == f"topic:{topic_id}" and memory.entity_name == "Golf club headcovers"
    assert memory.categories == ["sports", "fashion"]
    for r in made["rows"] + [mem["row"]]:
        assert wire.kid(sealing.unwrap_as_owner(r["owner_wrap"], py_keys["owner"])) == r["kid"]


def test_a_row_bound_to_another_id_is_unreadable_on_both_sides(py_keys, node_keys):
    """check the plaintext's `v` is 2 and `row_id` equals the served `id`."""
    row = M.new_memory_row(py_recipients(py_keys, node_keys, agent="py"), "Prefers short answers.")
    moved = served(row) | {"id": str(uuid.uuid4())}
    with pytest.raises(UnreadableRow):
        M.read_memory_row(moved, py_keys["agent"])
    node_row = M.new_memory_row(py_recipients(py_keys, node_keys), "Prefers short answers.")
    answer = run_node(
        {
            "op": "readMemoryRow",
            "row": served(node_row) | {"id": moved["id"]},
            "privateKeyPem": node_keys["agent"]["privateKeyPem"],
        },
        check=False,
    )
    assert answer["error"]["name"] == "UnreadableRow" and "row_id" in answer["error"]["reason"]


# -- legacy space rows ---------------------------------------------------------------------------
def test_space_rows_both_ways():
    """The plaintext embeds `space_id` and `row_id`; check both after decrypting."""
    key, space, rid = random_key(), str(uuid.uuid4()), str(uuid.uuid4())
    body = {"observation": {"entityName": "Decoy", "content": "Text never wraps to two lines"}}
    py_blob = sealing.seal_space_row(key, body, space_id=space, row_id=rid)
    out = run_node({"op": "openSpaceRow", "blob": b64(py_blob), "key": b64(key), "spaceId": space, "rowId": rid})
    assert out["plaintext"] == {"space_id": space, "row_id": rid, **body}
    node_blob = run_node({"op": "sealSpaceRow", "key": b64(key), "plaintext": body, "spaceId": space, "rowId": rid})[
        "ciphertext"
    ]
    assert sealing.open_space_row(node_blob, key, space_id=space, row_id=rid) == {
        "space_id": space,
        "row_id": rid,
        **body,
    }
    with pytest.raises(UnreadableRow):
        sealing.open_space_row(node_blob, key, space_id=str(uuid.uuid4()), row_id=rid)


def test_cli_reports_bad_input_as_json():
    answer = run_node({"op": "no-such-op"}, check=False)
    assert answer == {"ok": False, "error": {"name": "UsageError", "message": 'unknown op "no-such-op"'}}
    json.dumps(answer)


def test_both_parsers_accept_and_refuse_the_same_mangled_blobs(py_keys):
    """Truncations, header flips and key-length edits of real blobs: the two independent parsers
    agree on which parse, and split the ones that do into the same fields."""
    rnd = random.Random(20261130)
    key = random_key()
    seeds = [
        sealing.seal_vault(key, b"x" * 40),
        sealing.wrap_to_agent(key, py_keys["agent"].public_key_b64),
        sealing.wrap_to_owner(key, py_keys["owner"].public_key_b64),
    ]
    cases: list[tuple[bytes, str]] = []
    for blob in seeds:
        kind = wire.parse(blob).kind
        for _ in range(25):
            b = bytearray(blob)
            how = rnd.choice(["cut", "flip", "len"])
            if how == "cut":
                b = b[: rnd.randrange(len(b))]
            elif how == "flip":
                b[rnd.randrange(min(4, len(b)))] ^= 1 << rnd.randrange(8)
            else:
                at = 0 if kind == "agent_envelope" else 2
                b[at : at + 2] = rnd.randrange(0, 700).to_bytes(2, "big")
            cases.append((bytes(b), kind))
    answers = run_batch([{"op": "parse", "data": b64(b), "kind": k} for b, k in cases])
    for (blob, kind), answer in zip(cases, answers):
        try:
            layout = wire.parse(blob, kind)
        except WireFormatError:
            assert not answer["ok"] and answer["error"]["name"] == "WireFormatError", (blob.hex(), answer)
            continue
        assert answer["ok"], (blob.hex(), answer)
        assert [(f["name"], f["offset"], f["length"]) for f in answer["fields"]] == [
            (f.name, f.offset, f.length) for f in layout.fields
        ]
