"""An account's sealed name on the account reads, to the connection it was sealed to only, over HTTP.

001, `decoy_create`, `metadata_seals`: "One entry: the same record sealed to THIS connection's own
public key …, stored with the address in one step and returned to this connection as
`metadata_seal` on `GET /api/agent/decoys`, `GET /api/agent/decoys/{decoyId}` and the account
reads." The Decoys tag: "one without [the vault key] reads its own `metadata_seal` (served on the
account)". And for everyone else: "Every other connection that may read the address reads
`metadata_seal: null` with a `metadata_seal_state` until the owner's app has sealed a copy to its
key." After a change: "A copy is served only for the details it was made for", and "The same states
apply after a later write of the address's details that emptied a connection's copy". A vault-key
surface's write carries "The decoy's NEW details sealed to each connection that may read them …, so
a connection with no vault key reads the change at once as `metadata_seal`".
"""

from __future__ import annotations

import pytest

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.acctfamily_kit import ACCOUNTS, create, open_sealed, patch, sealed_to
from support.sandbox_kit import LoopbackLab

DECOYS = "/api/agent/decoys"
SEAL_KEYS = ("metadata_seal", "metadata_seal_state", "metadata_seal_code")


@pytest.fixture(scope="module")
def lab(clocked_sb):
    return LoopbackLab(clocked_sb)  # the owner's phone seals only when asked (`/_sandbox/keep`)


def _keep(lab) -> dict:
    r = lab.client.post("/_sandbox/keep", json={})
    assert r.status_code == 200, r.text
    return r.json()


def _sealed_create(lab, peer, record: dict) -> dict:
    """`POST /api/agent/decoys` with `sealed_details` and this connection's one `metadata_seals` entry."""
    body = {
        "sealed_details": sealed_to(lab.owner.public_key_b64, record),
        "metadata_seals": [{"token_id": peer.token_id, "sealed_envelope": sealed_to(peer.key.public_key_b64, record)}],
    }
    r = peer.post(DECOYS, body)
    assert r.status_code == 201, r.text
    return r.json()


def _listed(peer, account_id: str) -> dict:
    r = peer.get(ACCOUNTS)
    assert r.status_code == 200, r.text
    (served,) = [a for a in r.json()["accounts"] if a["id"] == account_id]
    return served


def _read(peer, account_id: str) -> dict:
    r = peer.get(f"{ACCOUNTS}/{account_id}")
    assert r.status_code == 200, r.text
    return r.json()


def _seal_part(served: dict) -> dict:
    return {k: served[k] for k in SEAL_KEYS if k in served}


def test_the_creator_reads_its_own_seal_on_the_list_and_the_single_read(lab):
    """ "returned to this connection as `metadata_seal` on … the account reads": the very copy it
    sent, which opens with its own key to the details it sealed — so it finds its account by name
    from the account list, with no decoy read."""
    creator = lab.pair("seal-creator", "account.create")
    record = {"serviceName": "Acme Cloud", "serviceURL": "https://acme.example", "agentCreated": True}
    made = _sealed_create(lab, creator, record)
    for served in (_listed(creator, made["account_id"]), _read(creator, made["account_id"])):
        assert served["decoy_id"] == made["id"]
        assert served["metadata_seal"] == made["metadata_seal"], "the copy stored with the address"
        assert open_sealed(creator, served["metadata_seal"]) == record
        assert "metadata_seal_state" not in served, "a copy is there: nothing is waiting"
    decoy = creator.get(f"{DECOYS}/{made['id']}").json()
    assert _seal_part(_read(creator, made["account_id"])) == _seal_part(decoy), "the same copy on both reads"


def test_another_connection_granted_the_account_never_gets_the_creators_copy(lab):
    """ "Every other connection that may read the address reads `metadata_seal: null` with a
    `metadata_seal_state` until the owner's app has sealed a copy to its key" — on the account reads
    as on the decoy's; the copy it gets then is its own, sealed to its key."""
    creator = lab.pair("seal-maker", "account.create")
    record = {"serviceName": "Globex", "serviceURL": None, "agentCreated": True}
    made = _sealed_create(lab, creator, record)
    other = lab.pair("seal-reader", {"permissions": ["account.read"], "account_id": made["account_id"]})
    for served in (_listed(other, made["account_id"]), _read(other, made["account_id"])):
        assert served["metadata_seal"] is None
        assert served["metadata_seal_state"] == "preparing"
        assert served["metadata_seal_code"] == "waiting_for_owner_device"
    assert made["metadata_seal"] not in other.get(ACCOUNTS).text, "nowhere in its list"
    assert made["metadata_seal"] not in other.get(f"{ACCOUNTS}/{made['account_id']}").text
    assert _keep(lab)["decoy_seals"] >= 1  # "The app seals a name for other connections only when … agentCreated"
    own = _read(other, made["account_id"])
    assert own["metadata_seal"] not in (None, made["metadata_seal"])
    assert open_sealed(other, own["metadata_seal"])["serviceName"] == "Globex"
    assert _listed(other, made["account_id"])["metadata_seal"] == own["metadata_seal"]
    assert _read(creator, made["account_id"])["metadata_seal"] == made["metadata_seal"], "the creator's is untouched"


def test_an_account_without_an_address_carries_no_seal(lab):
    """Nothing was sealed with an address: the name is inside the account's own `encrypted_data`."""
    saver = lab.pair("seal-saver", "account.create")
    made = create(saver)
    assert not set(SEAL_KEYS) & set(_listed(saver, made["id"]))
    assert not set(SEAL_KEYS) & set(_read(saver, made["id"]))


def test_after_the_phone_applies_an_edit_the_old_copy_is_gone_until_it_seals_again(lab, clock):
    """ "A copy is served only for the details it was made for", and "The same states apply after a
    later write of the address's details that emptied a connection's copy …: the 15 minutes … count
    from that write." The account read follows the decoy's read step by step."""
    creator = lab.pair("seal-editor", "account.create")
    made = _sealed_create(lab, creator, {"serviceName": "Initech", "agentCreated": True})
    patch_plain = {"v": 1, "set": {"serviceName": "Initech Pro"}, "unset": []}
    r = creator.post(f"{DECOYS}/{made['id']}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, patch_plain)})
    assert r.status_code == 202, r.text
    clock.advance(60)
    assert _keep(lab)["edits"] >= 1  # applied: the details are re-sealed and every copy is emptied
    emptied = _read(creator, made["account_id"])
    assert emptied["metadata_seal"] is None and emptied["metadata_seal_state"] == "preparing"
    assert _seal_part(emptied) == _seal_part(creator.get(f"{DECOYS}/{made['id']}").json())
    clock.advance(16 * 60)  # "`preparing` for the first 15 minutes, then `waiting`"
    assert _listed(creator, made["account_id"])["metadata_seal_state"] == "waiting"
    _keep(lab)  # the phone seals the renamed details to the creator's key
    again = _listed(creator, made["account_id"])
    assert open_sealed(creator, again["metadata_seal"])["serviceName"] == "Initech Pro"
    assert "metadata_seal_state" not in again


def test_a_copy_for_a_key_the_connection_no_longer_holds_is_not_served(lab):
    """The copy was sealed to the key the connection had: after it reconnects with a new key, that
    copy opens with nothing it holds, so the account read serves none until the phone seals one to
    the new key."""
    creator = lab.pair("seal-rekeyed", "account.create")
    made = _sealed_create(lab, creator, {"serviceName": "Umbrella", "agentCreated": True})
    rekeyed = lab.pair("seal-rekeyed", "account.create", key_name="seal-rekeyed, second key")
    assert rekeyed.token_id == creator.token_id, "the same connection, a new key"
    served = _read(rekeyed, made["account_id"])
    assert served["metadata_seal"] is None and "metadata_seal_state" in served
    _keep(lab)
    anew = _read(rekeyed, made["account_id"])
    assert anew["metadata_seal"] != made["metadata_seal"]
    assert open_sealed(rekeyed, anew["metadata_seal"])["serviceName"] == "Umbrella"


def test_a_vault_key_write_shows_on_the_account_read_at_once_and_empties_a_copy_it_carries_none_for(lab):
    """ "so a connection with no vault key reads the change at once as `metadata_seal`"; "every write
    of `encrypted_data` through this route empties, in the same step, the copy of each connection
    it carries no seal for. That connection then reads `metadata_seal: null` with a
    `metadata_seal_state`"."""
    creator = lab.pair("seal-vault-creator", "account.create")
    made = _sealed_create(lab, creator, {"serviceName": "Hooli", "agentCreated": True})
    reader = lab.pair("seal-vault-reader", {"permissions": ["account.read"], "account_id": made["account_id"]})
    _keep(lab)
    assert _read(reader, made["account_id"])["metadata_seal"] is not None, "its own copy, before the write"
    extension = lab.pair("seal-vault-extension", "everything")
    r = extension.get("/api/agent/vault-key")
    assert r.status_code == 200, r.text
    renamed = {"serviceName": "Hooli XYZ", "agentCreated": True}
    vault_key = sealing.unwrap_as_agent(r.json()["wrapped_vault_key"], extension.key)
    body = {
        "encrypted_data": wire.b64encode(sealing.seal_json(vault_key, renamed)),
        "metadata_seals": [
            {"token_id": creator.token_id, "sealed_envelope": sealed_to(creator.key.public_key_b64, renamed)}
        ],
    }
    r = patch(extension, f"{DECOYS}/{made['id']}", body)
    assert r.status_code == 200 and r.json()["metadata_seals_stored"] == 1, r.text
    mine = _listed(creator, made["account_id"])
    assert open_sealed(creator, mine["metadata_seal"]) == renamed, "the change, at once"
    theirs = _read(reader, made["account_id"])
    assert theirs["metadata_seal"] is None and theirs["metadata_seal_state"] == "preparing"
    assert _seal_part(_listed(reader, made["account_id"])) == _seal_part(theirs)
    _keep(lab)  # "The owner's app seals such an address again when its record says "agentCreated": true"
    assert open_sealed(reader, _read(reader, made["account_id"])["metadata_seal"])["serviceName"] == "Hooli XYZ"
