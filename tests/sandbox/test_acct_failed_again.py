"""After `failed`, a later read asks the owner's phone once more, at most once a day — for an
unlock, for sealed-secrets and for a fields read — over HTTP against the sandbox.

001, `unlock_request`: "`state: "failed"`: the phone was asked for your connection 7 days ago,
the copy has not come, and Decoy has stopped asking on its own (`recovery: "stopped_asking"`). It
is served if the phone makes the copy, and sending the request again later may ask the phone once
more, at most once a day; the request that asks answers `preparing` with a short retry time."
`retry_after_seconds`: "30 when this request itself asked again after `failed`".
`account_fields_list`: "Decoy asks for 7 days from the moment the newest thing owed to your
connection came to be owed. After that the field is listed under `failed` (`recovery:
"stopped_asking"`): Decoy has stopped asking on its own. Reading again later may ask the phone once
more, at most once a day."

The phone's background tick is `keeper.maybe_pass`, as the app's own task calls it each second.
"""

from __future__ import annotations

from decoy_lab.sandbox.phone import keeper, schedule

from support.acctfamily_kit import (
    ACCOUNTS,
    create,
    field_and_reader,
    open_field,
    open_sealed,
    owner_pk,
    password_envelope,
)

UNLOCK = "/api/agent/unlock"
SECRETS = "/api/agent/sealed-secrets"
DAY = 86400


def _tick(lab) -> None:
    keeper.maybe_pass(lab.state, lab.state.now())


def _with_password(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker, {"name": "Acme", "username": "me@acme.test", "url": "https://acme.example/login"})
    sealed = password_envelope(owner_pk(maker), "hunter2")
    assert maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": sealed}).status_code == 200
    return maker, made


def test_a_failed_unlock_asks_the_phone_once_more_a_day_later_and_is_then_served(lab):
    maker, made = _with_password(lab)
    ask = {"target": {"kind": "account", "id": made["id"]}}
    assert maker.post(UNLOCK, ask).json()["state"] == "preparing"  # the phone is switched off
    lab.clock.advance(7 * DAY)
    failed = maker.post(UNLOCK, ask).json()
    assert failed["state"] == "failed" and failed["recovery"] == "stopped_asking"
    assert "retry_after_seconds" not in failed
    schedule.configure(lab.state, auto_share_after=5)  # the phone is on again …
    lab.clock.advance(60)
    _tick(lab)
    assert maker.post(UNLOCK, ask).json()["state"] == "failed", "… but Decoy has stopped asking it on its own"

    lab.clock.advance(DAY)
    again = maker.post(UNLOCK, ask)
    assert again.status_code == 200 and again.json() == again.json() | {
        "available": False,
        "state": "preparing",
        "retry_after_seconds": 30,  # "30 when this request itself asked again after `failed`"
        "waiting_on": "owner_phone",
    }
    lab.clock.advance(30)
    _tick(lab)  # the phone answers the new ask on its next pass
    ready = maker.post(UNLOCK, ask)
    assert ready.status_code == 201 and ready.json()["status"] == "ready", ready.text
    items = maker.get(f"{UNLOCK}/{ready.json()['id']}").json()["items"]
    assert open_sealed(maker, items[0]["sealed_envelope"])["basic-auth"]["password"] == "hunter2"


def test_a_read_after_failed_asks_at_most_once_a_day(lab):
    maker, made = _with_password(lab)
    ask = {"target": {"kind": "account", "id": made["id"]}}
    maker.post(UNLOCK, ask)
    lab.clock.advance(8 * DAY)
    assert maker.post(UNLOCK, ask).json()["retry_after_seconds"] == 30, "a day after `failed`: asks once more"
    lab.clock.advance(30)
    assert maker.post(UNLOCK, ask).json()["state"] == "failed", "the phone did not answer: failed again"
    lab.clock.advance(DAY - 60)
    assert maker.post(UNLOCK, ask).json()["state"] == "failed", "less than a day since the last ask"
    lab.clock.advance(60)
    assert maker.post(UNLOCK, ask).json()["state"] == "preparing"
    assert lab.client.post("/_sandbox/keep", json={}).json()["copies"] == 1
    assert maker.post(UNLOCK, ask).json()["status"] == "ready", "served in either state once the copy is made"


def test_sealed_secrets_asks_again_after_failed_as_unlock_does(lab):
    maker, made = _with_password(lab)
    maker.get(SECRETS)
    lab.clock.advance(7 * DAY)
    assert maker.get(SECRETS).json()["failed"] == [made["id"]]
    lab.clock.advance(DAY)
    body = maker.get(SECRETS).json()
    # "the read that asks lists the id under `preparing` with a short retry time"
    assert body["preparing"] == [made["id"]] and body["retry_after_seconds"] == 30 and "failed" not in body
    lab.client.post("/_sandbox/keep", json={})
    (item,) = maker.get(SECRETS).json()["items"]
    assert open_sealed(maker, item["sealed_envelope"])["password"] == "hunter2"


def test_a_field_read_is_failed_after_seven_days_and_a_later_read_asks_once_more(lab):
    _, made, reader = field_and_reader(lab, "sk-1")
    fields = f"{ACCOUNTS}/{made['id']}/fields"
    assert reader.get(fields).json()["preparing_others"] == 1
    lab.clock.advance(3600)
    assert reader.get(fields).json()["retry_after_seconds"] == 300, "counted from when it came to be owed"
    lab.clock.advance(7 * DAY)
    failed = reader.get(fields).json()
    assert failed["fields"] == [] and failed["failed"] == [] and failed["failed_others"] == 1
    assert failed["recovery"] == "stopped_asking" and "preparing" not in failed and "retry_after_seconds" not in failed
    lab.clock.advance(DAY)
    again = reader.get(fields).json()
    assert again["preparing_others"] == 1 and again["retry_after_seconds"] == 30 and "failed" not in again
    assert lab.client.post("/_sandbox/keep", json={}).json()["field_wraps"] == 1
    after = reader.get(fields).json()
    assert "preparing" not in after and "failed" not in after
    assert open_field(reader, after["fields"][0])["value"] == "sk-1"
