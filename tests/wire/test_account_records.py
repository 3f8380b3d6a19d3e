"""The account family's record kinds: layouts as data (wire/layouts.py `RECORDS`), one recipe each
(recipes/account_records.py), stepped through by a trace and a dump with the same annotated bytes; and
checked against the independent Node implementation (tests/support/interop), both ways.

001, `account_credential_set`: "a headerless envelope to `public_key` from `GET
/api/agent/accounts/public-key` … whose plaintext is the password's UTF-8 bytes. No SealedBlob
header and no JSON wrapper"; `account_field_create`: "`ciphertext` = VAULT SealedBlob of the JSON
`{"id","account_id","fieldType":"concealed-string","label","value"}` under the field key …
`owner_wrap` = SealedBlob ENVELOPE to `owner_public_key` … whose plaintext is the base64 text of the
field key"; `decoy_create`: `sealed_details` "the record sealed to the owner's public key".
"""

from __future__ import annotations

import json
import uuid

import pytest

from decoy_lab.errors import CryptoError, UnreadableRow
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import dump, sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

from support.node import requires_node, run_batch, run_node

b64 = wire.b64encode


@pytest.fixture(scope="module")
def keys() -> dict[str, AgentKey]:
    return {"owner": AgentKey.generate(), "agent": AgentKey.generate(), "other": AgentKey.generate()}


def _field(account_id: str, value: str = "sk-live-123") -> tuple[dict, bytes]:
    key, fid = random_key(), str(uuid.uuid4())
    plain = {"id": fid, "account_id": account_id, "fieldType": "concealed-string", "label": "API key", "value": value}
    return plain, key


def test_every_record_kind_is_a_layout_with_notes_naming_what_it_carries(keys):
    assert set(wire.RECORDS) == {
        "account_record",
        "credential",
        "field",
        "field_owner_wrap",
        "field_wrap",
        "sealed_details",
        "metadata_seal",
        "edit_patch",
        "unlock_answer",
    }
    for kind, record in wire.RECORDS.items():
        assert record.layout in wire.KINDS and wire.layout_of(kind) == record.layout
        assert wire.field_names(kind) == wire.field_names(record.layout)
    blob = records.seal_credential("hunter2", keys["owner"].public_key_b64)
    layout = wire.parse(blob, "credential")
    assert layout.kind == "credential" and wire.guess_kind(blob) == "agent_envelope"
    assert "to the owner's RSA key" in layout["wrapped_key"].note
    assert "the password's UTF-8 bytes" in layout["ciphertext"].note
    assert wire.build("credential", **{f.name: f.value for f in layout.fields}) == blob
    assert wire.KINDS == ("vault", "owner_envelope", "agent_envelope"), "guessing a layout is unchanged"


def test_each_recipe_records_its_steps_under_its_record_kind(keys):
    trace = Trace("seal a credential")
    blob = records.seal_credential("hunter2", keys["owner"].public_key_b64, trace=trace)
    assert trace.ok and trace.steps[-1].name == "build credential"
    assert [f.name for f in trace.steps[-1].fields] == ["key_length", "wrapped_key", "iv", "ciphertext", "tag"]
    opened = Trace("open it as the owner's app does")
    assert records.open_credential(blob, keys["owner"], trace=opened) == "hunter2"
    assert [s.name for s in opened.steps] == [
        "header check: no SealedBlob header",
        "parse credential",
        "RSA-OAEP-SHA256 unwrap",
        "AES-256-GCM open payload",
        "UTF-8 decode",
    ]
    assert "hunter2" not in opened.to_text(), "the password is shown only when asked"


def test_the_owners_eye_check_says_why_a_credential_does_not_open(keys):
    wrong = records.seal_credential("hunter2", keys["other"].public_key_b64)
    trace = Trace("owner's eye")
    with pytest.raises(CryptoError):
        records.open_credential(wrong, keys["owner"], trace=trace)
    assert trace.failed is not None and trace.failed.name == "RSA-OAEP-SHA256 unwrap"
    assert "wrapped to another public key" in (trace.failed.reason or "")
    # a SealedBlob ENVELOPE where the headerless envelope belongs: said at the header, before RSA
    headed = sealing.seal_envelope(b"hunter2", keys["owner"].public_key_b64, owner=True)
    trace = Trace("owner's eye")
    with pytest.raises(CryptoError, match="01 02"):
        records.open_credential(headed, keys["owner"], trace=trace)
    assert trace.failed is not None and trace.failed.name == "header check: no SealedBlob header"


def test_a_field_is_bound_to_its_row_and_its_key(keys):
    account_id = str(uuid.uuid4())
    plain, key = _field(account_id)
    served = {
        "id": plain["id"],
        "account_id": account_id,
        "kid": wire.kid(key),
        "ciphertext": b64(records.seal_field(key, plain)),
        "wrapped_key": b64(sealing.wrap_to_agent(key, keys["agent"].public_key_b64)),
    }
    trace = Trace("open field")
    assert records.open_field(served, keys["agent"], trace=trace) == plain
    assert "parse field" in [s.name for s in trace.steps] and trace.steps[-1].name == "bind check: id and account_id"
    sealed = Trace("seal field")
    records.seal_field(key, plain, trace=sealed)
    assert plain["value"] not in trace.to_text() and plain["value"] not in sealed.to_text(), (
        "a secret's value is masked"
    )
    with pytest.raises(UnreadableRow, match="names another row"):
        records.open_field({**served, "account_id": str(uuid.uuid4())}, keys["agent"])
    with pytest.raises(CryptoError, match="kid"):
        records.open_field({**served, "kid": "0" * 16}, keys["agent"])


def test_a_dump_reads_a_blob_as_the_record_kind_asked_for(keys):
    blob = records.seal_credential("hunter2", keys["owner"].public_key_b64)
    shut = dump.open_blob(b64(blob), record="credential")
    assert shut.title == "open credential" and shut.stopped.startswith("not opened")
    assert [f.name for f in shut.steps[-1].fields][1] == "wrapped_key"
    assert "to the owner's RSA key" in shut.steps[-1].fields[1].note
    opened = dump.open_blob(blob, record="credential", private_key=keys["owner"])
    assert opened.ok and not opened.stopped
    refused = dump.open_blob(blob, record="credential", private_key=keys["other"])
    assert refused.failed is not None and refused.failed.name == "RSA-OAEP-SHA256 unwrap"
    plain, key = _field(str(uuid.uuid4()))
    field = dump.open_blob(records.seal_field(key, plain), record="field", key=key)
    assert field.ok and field.title == "open field"
    unknown = dump.open_blob(blob, record="nonsense")
    assert unknown.failed is not None and unknown.failed.name == "identify the record kind"


# -- the independent implementation ------------------------------------------------------------------
@requires_node
def test_what_is_sealed_here_opens_in_node(keys):
    owner_pem, agent_pem = keys["owner"].to_pem(), keys["agent"].to_pem()
    account_id = str(uuid.uuid4())
    plain, key = _field(account_id)
    details = {"serviceName": "Acme", "serviceURL": "https://acme.example", "agentCreated": True}
    record = {"name": "Acme", "username": "me@acme.test"}
    sealed = {
        "credential": records.seal_credential("hunter2 ✓", keys["owner"].public_key_b64),
        "sealed_details": records.seal_details(details, keys["owner"].public_key_b64),
        "metadata_seal": records.seal_details(details, keys["agent"].public_key_b64, kind="metadata_seal"),
        "account_record": records.seal_account_record(record, keys["owner"].public_key_b64),
        "patch": records.seal_patch({"v": 1, "set": {"serviceName": "Acme Pro"}}, keys["owner"].public_key_b64),
    }
    owner_wrap = sealing.wrap_to_owner(key, keys["owner"].public_key_b64)
    cred, det, seal, rec, patch, wrap, ciphertext = run_batch(
        [
            {"op": "openEnvelope", "envelope": b64(sealed["credential"]), "privateKeyPem": owner_pem, "owner": False},
            {
                "op": "openEnvelope",
                "envelope": b64(sealed["sealed_details"]),
                "privateKeyPem": owner_pem,
                "owner": False,
            },
            {
                "op": "openEnvelope",
                "envelope": b64(sealed["metadata_seal"]),
                "privateKeyPem": agent_pem,
                "owner": False,
            },
            {
                "op": "openEnvelope",
                "envelope": b64(sealed["account_record"]),
                "privateKeyPem": owner_pem,
                "owner": True,
            },
            {"op": "openEnvelope", "envelope": b64(sealed["patch"]), "privateKeyPem": owner_pem, "owner": False},
            {"op": "unwrapAsOwner", "envelope": b64(owner_wrap), "privateKeyPem": owner_pem},
            {"op": "openVault", "key": b64(key), "blob": b64(records.seal_field(key, plain))},
        ]
    )
    assert wire.b64decode(cred["payload"]).decode("utf-8") == "hunter2 ✓", "the password's UTF-8 bytes, no JSON"
    assert json.loads(wire.b64decode(det["payload"])) == details
    assert json.loads(wire.b64decode(seal["payload"])) == details
    assert json.loads(wire.b64decode(rec["payload"])) == record
    assert json.loads(wire.b64decode(patch["payload"]))["set"] == {"serviceName": "Acme Pro"}
    assert wire.b64decode(wrap["key"]) == key
    assert json.loads(wire.b64decode(ciphertext["plaintext"])) == plain


@requires_node
def test_what_node_seals_opens_here_as_its_record_kind(keys):
    node = run_node({"op": "generateKey"})
    owner = AgentKey.from_pem(node["privateKeyPem"])
    answer = {"account_id": "a", "record": {"name": "Acme"}, "basic-auth": {"username": "u", "password": "p"}}
    cred, unlock = run_batch(
        [
            {"op": "sealEnvelope", "payload": b64("pässword".encode()), "publicKey": node["publicKeyBase64"]},
            {
                "op": "sealEnvelope",
                "payload": b64(sealing.json_bytes(answer)),
                "publicKey": keys["agent"].public_key_b64,
            },
        ]
    )
    assert records.open_credential(cred["envelope"], owner) == "pässword"
    assert records.open_unlock_answer(unlock["envelope"], keys["agent"]) == answer
