"""The account family from the workbench side, over real HTTP against the sandbox: an account
made with its Decoy address, its password and a secret field, opened by the owner's phone, read
back by unlock, and listed in `Connection.accounts()`.

001, `decoy_create`: "This call creates the account and its Decoy email address in one call";
the owner's key: "Seal the record to this key (SealedBlob **ENVELOPE** mode …) and send it as
`account_encrypted_data`"; `account_credential_set`: "a wrong format is stored and the owner's
phone can't open it"; `account_field_create`: "Sending the same id again answers `existing`";
`unlock_request`: "`pending` (the owner was asked) … `preparing` (… send the same request again
after `retry_after_seconds`)". The retry rules are the memory writes': "If the answer is lost …
resend the same sealed rows" — here the same sealed body.
"""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

from decoy_lab.errors import OutcomeUnknown, RevConflict
from decoy_lab.protocol import accounts_write
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.sandbox import Sandbox
from decoy_lab.vault.account_list import ACCOUNT_COLUMNS
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

from support.connections import paired, posted_bodies

OTHER_ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def _view(sb, account_id: str) -> dict:
    return httpx.get(f"{sb.url}/_sandbox/app-view", params={"account": account_id}).json()["accounts"][0]


def _keep(sb) -> dict:
    """The owner's phone runs its pass now (copies, field keys, names)."""
    return httpx.post(f"{sb.url}/_sandbox/keep", json={}).json()


def _maker(sb, name: str = "Sign-ups"):
    return paired(sb, ["account.create", "memory.save"], name=name)


def test_an_account_made_with_its_address_is_opened_by_the_owners_phone(sb):
    conn = _maker(sb)
    made = conn.create_account("Acme", url="https://acme.example", username="me@acme.test", label="acme")
    assert made.email.endswith("@decoys.me") and not made.replayed
    assert made.verified.ok, made.verified.problems
    seen = _view(sb, made.account_id)
    assert seen["readable"] and seen["name"] == "Acme" and seen["blob_mode"] == "envelope"
    assert made.verified.owner_view is not None and made.verified.owner_view["name"] == "Acme"
    again = conn.create_account("Acme", idempotency_key=made.idempotency_key)
    assert again.replayed and again.account_id == made.account_id, "one account, never a second"
    conn.close()


def test_a_password_set_here_opens_on_the_phone_and_reads_back_by_unlock(sb):
    conn = _maker(sb)
    made = conn.create_account("Bank", username="me@bank.test")
    verified = conn.set_password(made.account_id, "hunter2")
    assert verified.ok, verified.problems
    cred = _view(sb, made.account_id)["credential"]
    assert cred["readable"] and cred["length"] == len("hunter2")
    first = conn.unlock(made.account_id)
    assert first.status == "preparing" and first.retry_after == 5 and first.password is None
    assert _keep(sb)["copies"] >= 1
    got = conn.unlock(made.account_id)
    assert got.status == "ready" and got.password is not None and got.password.reveal() == "hunter2"
    assert "hunter2" not in repr(got) and got.username == "me@bank.test"
    conn.close()


def test_a_field_added_here_is_read_back_by_unlock_and_listed(sb):
    conn = _maker(sb)
    made = conn.create_account("Stripe")
    field = conn.add_field(made.account_id, "API key", "sk-live-123")
    assert field.status == "created" and field.verified.ok, field.verified.problems
    assert [f["label"] for f in _view(sb, made.account_id)["fields"] if f["readable"]] == ["API key"]
    conn.unlock(made.account_id)  # preparing: the phone owes a copy
    _keep(sb)
    got = conn.unlock(made.account_id)
    assert got.status == "ready" and got.fields["API key"].reveal() == "sk-live-123"
    row = conn.accounts().set_index("id").loc[made.account_id]
    assert row["fields"] == 1 and row["field_labels"] == ["API key"]
    conn.close()


def test_a_credential_sealed_to_the_wrong_key_is_said_unopenable(sb):
    """Stored as sent (the server cannot tell), and the owner's-eye check says why it does not open."""
    conn = _maker(sb)
    made = conn.create_account("Mail")
    wrong = AgentKey.generate().public_key_b64
    sealed = Trace("set a password")
    verified = accounts_write.set_password(conn.session, made.account_id, "hunter2", public_key=wrong, trace=sealed)
    assert not verified.ok and sealed.verdict.startswith("sent, but the owner's app would not open its credential")
    assert any("owner's app would not open its credential" in p for p in verified.problems), verified.problems
    assert "does not open with the owner key" in _view(sb, made.account_id)["credential"]["reason"]
    # the same verdict, step by step, with the owner's key: the RSA unwrap is where it fails
    trace = Trace("open credential as the owner")
    blob = records.seal_credential("hunter2", wrong)
    with pytest.raises(Exception):
        records.open_credential(blob, sb.owner.key, trace=trace)
    assert trace.failed is not None and trace.failed.name == "RSA-OAEP-SHA256 unwrap"
    conn.close()


def test_an_unknown_outcome_sends_the_same_sealed_body_again(sb):
    """The answer of the first send is lost after it committed (seed 1: the first roll drops, the
    second does not): the same body goes again, and the server's answer shows it landed once."""
    conn = _maker(sb)
    decoys = posted_bodies(conn, "/decoys")
    sb.state.faults.configure({"drop_after_commit": 0.5, "seed": 1})
    try:
        made = conn.create_account("Shop")
    finally:
        sb.state.faults.configure({})
    assert len(decoys) == 2 and decoys[0] == decoys[1], "the same sealed body, never a new one"
    assert made.replayed, "the second send found the first one's address (idempotency_key)"
    assert [a for a in conn.accounts()["service"] if a == "Shop"] == ["Shop"]
    fields = posted_bodies(conn, "/fields")
    sb.state.faults.configure({"drop_after_commit": 0.5, "seed": 1})
    try:
        field = conn.add_field(made.account_id, "Recovery code", "alpha-bravo")
    finally:
        sb.state.faults.configure({})
    assert len(fields) == 2 and fields[0] == fields[1] and field.status == "existing"
    assert [f["id"] for f in _view(sb, made.account_id)["fields"]] == [field.id]
    passwords = posted_bodies(conn, "/credential")
    sb.state.faults.configure({"drop_after_commit": 0.5, "seed": 1})
    try:
        assert conn.set_password(made.account_id, "pw-once").ok
    finally:
        sb.state.faults.configure({})
    assert len(passwords) == 2 and passwords[0] == passwords[1]
    conn.close()


def test_a_field_change_from_an_old_read_re_reads_and_re_applies(sb):
    """Another writer lands between this read and this PUT: REV_CONFLICT, read again, apply the
    change to what was read (its other keys kept), send again."""
    conn = _maker(sb)
    made = conn.create_account("Cloud")
    field = conn.add_field(made.account_id, "Token", "t-1")
    path = f"/api/agent/accounts/{made.account_id}/fields/{field.id}"
    fields_path = f"/api/agent/accounts/{made.account_id}/fields"
    api, real = conn.session.api, conn.session.api.request
    raced: list = []

    def request(method, url, **kw):
        if method == "PUT" and url == path and not raced:  # another writer lands first
            served = next(f for f in real("GET", fields_path)["fields"] if f["id"] == field.id)
            key = sealing.unwrap_as_agent(served["wrapped_key"], conn.agent_key)
            theirs = {**records.open_field(served, conn.agent_key), "value": "t-theirs", "note": "kept"}
            body = {"expected_rev": served["rev"], "ciphertext": wire.b64encode(records.seal_field(key, theirs))}
            raced.append(real("PUT", url, json=body))
        return real(method, url, **kw)

    api.request = request
    changed = conn.set_field(made.account_id, field.id, "t-2")
    assert raced and changed.status == "changed" and changed.rev == 3
    served = next(f for f in real("GET", fields_path)["fields"] if f["id"] == field.id)
    assert records.open_field(served, conn.agent_key) == {
        "id": field.id,
        "account_id": made.account_id,
        "fieldType": "concealed-string",
        "label": "Token",
        "value": "t-2",
        "note": "kept",
    }

    # a change that keeps losing is a REV_CONFLICT in the end, never an overwrite
    def always_stale(method, url, **kw):
        if method == "PUT":
            raise RevConflict(409, "REV_CONFLICT", "changed meanwhile")
        return real(method, url, **kw)

    api.request = always_stale
    with pytest.raises(RevConflict):
        conn.set_field(made.account_id, field.id, "t-3")
    conn.close()


def test_an_unlock_is_pending_while_the_owner_decides(sb):
    maker = _maker(sb)
    made = maker.create_account("Airline")
    maker.set_password(made.account_id, "fly-away")
    asker = paired(sb, [{"permissions": ["account.read"], "account_id": OTHER_ACCOUNT}], name="Asker")
    sb.state.approve = "manual"
    try:
        first = asker.unlock(made.account_id, reason="Check the booking")
        assert first.status == "pending" and first.request_id
        again = asker.unlock(made.account_id)
        assert again.status == "pending" and again.request_id == first.request_id, "the same request, polled"
        waiting = httpx.get(f"{sb.url}/_sandbox/unlocks").json()["unlocks"]
        assert [u["id"] for u in waiting] == [first.request_id]
        httpx.post(f"{sb.url}/_sandbox/unlocks/approve", json={"id": first.request_id})
        got = asker.unlock(made.account_id)
        assert got.status == "ready" and got.password is not None and got.password.reveal() == "fly-away"
    finally:
        sb.state.approve = "auto"
    maker.close()
    asker.close()


def test_the_accounts_frame_names_what_this_connection_can_open(sb):
    maker = _maker(sb, "Frame maker")
    made = maker.create_account("Library", username="reader@lib.test")
    maker.save("Renews books on Fridays.", account=made.account_id)
    before = maker.accounts()
    assert list(before.columns) == list(ACCOUNT_COLUMNS)
    assert {c: str(t) for c, t in before.dtypes.items()} == {
        c: ("object" if t == "object" else t) for c, t in ACCOUNT_COLUMNS.items()
    }
    assert before["memories"].isna().all(), "no load yet: the count is unknown"
    maker.load()
    row = maker.accounts().set_index("id").loc[made.account_id]
    assert row["service"] == "Library" and row["username"] == "reader@lib.test"
    assert row["created_by"] == "this connection" and row["memories"] == 1 and not row["has_password"]
    assert "metadata_seal" in row["service_from"] and row["decoy_email"] == made.email
    reader = paired(
        sb, [{"permissions": ["account.read", "acctmail.read"], "account_id": made.account_id}], name="Reader"
    )
    seen = reader.accounts().set_index("id").loc[made.account_id]
    assert pd.isna(seen["service"]) and seen["service_from"].startswith("no name:") and pd.isna(seen["username"])
    assert seen["created_by"] == "the owner or another connection"
    _keep(sb)  # the phone seals the address's details to the reader
    assert reader.accounts().set_index("id").loc[made.account_id, "service"] == "Library"
    maker.close()
    reader.close()


def test_the_records_sent_are_the_record_kinds_the_recipes_name(sb):
    """What create_account sends parses as its record kinds (wire/layouts.py RECORDS)."""
    conn = _maker(sb)
    bodies = posted_bodies(conn, "/decoys")
    conn.create_account("Kinds")
    body = bodies[0]
    assert wire.parse(body["sealed_details"], "sealed_details")["wrapped_key"].length == 256
    assert wire.parse(body["account_encrypted_data"]).kind == "owner_envelope"
    seal = body["metadata_seals"][0]["sealed_envelope"]
    assert records.open_details(seal, conn.agent_key)["serviceName"] == "Kinds"
    assert records.open_account_record(body["account_encrypted_data"], sb.owner.key)["name"] == "Kinds"
    conn.close()


def test_unseal_account_steps_through_what_this_connection_opens(sb):
    conn = _maker(sb)
    made = conn.create_account("Steps")
    conn.add_field(made.account_id, "PIN", "4321")
    trace = conn.unseal_account(made.account_id)
    names = [s.name for s in trace.steps]
    assert trace.ok and names[0] == "find the served account"
    assert "parse metadata seal" in names and "parse field" in names and names[-1] == "bind check: id and account_id"
    assert "4321" not in trace.to_text(), "a field's value is masked unless revealed"
    conn.close()


def test_a_create_whose_every_answer_was_lost_says_how_to_finish_it(sb):
    """Out of resends: it may have committed, and running it again with the key it names answers
    the address it made, never a second one."""
    conn = _maker(sb)
    conn.retries = 1
    sb.state.faults.configure({"drop_after_commit": 1.0})
    try:
        with pytest.raises(OutcomeUnknown) as caught:
            conn.create_account("Lost")
    finally:
        sb.state.faults.configure({})
    message = str(caught.value)
    assert "may have committed" in message and "Nothing was sent" not in message
    key = message.split("idempotency_key='", 1)[1].split("'", 1)[0]
    again = conn.create_account("Lost", idempotency_key=key)
    assert again.replayed
    assert list(conn.accounts()["service"]).count("Lost") == 1
    conn.close()
