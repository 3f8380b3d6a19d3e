"""`POST /api/agent/unlock` over HTTP: ready at once under a covering permission, pending otherwise,
preparing while the phone owes a copy; envelopes consumed once.

001, `unlock_request`: "A covering permission answers the request as `ready` at once; otherwise the
owner is asked on their phone and the request is `pending`. Poll `GET /api/agent/unlock/{requestId}`
for the sealed envelope and open it with your agent key." "`200` with `available: false` and
`state` `preparing` (Decoy is asking the owner's phone for the copy: send the same request again
after `retry_after_seconds`)". `unlock_poll`: "When `status: ready`, includes the encrypted
envelopes on first fetch — subsequent calls return `ready` with no `items` (envelopes are consumed
once)." `unlock_withdraw`: "A request that is not pending answers 409 with its `status`."
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, create, delete, open_sealed, owner_pk, password_envelope

UNLOCK = "/api/agent/unlock"


def _with_password(lab, password: str = "hunter2") -> tuple:
    maker = lab.pair("maker", "account.create")
    made = create(maker, {"name": "Acme", "username": "me@acme.test"})
    sealed = password_envelope(owner_pk(maker), password)
    assert maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": sealed}).status_code == 200
    return maker, made


def test_pending_then_approved_then_ready_then_consumed(lab):
    _, made = _with_password(lab)
    # a connection whose `account.read` is on another account: the owner is asked
    asker = lab.pair("asker", {"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"})
    lab.state.approve = "manual"
    r = asker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}, "reason": "Sign in to Acme"})
    assert r.status_code == 201 and r.json()["status"] == "pending" and r.json()["auto_approved"] is False, r.text
    rid = r.json()["id"]
    assert asker.get(f"{UNLOCK}/{rid}").json()["status"] == "pending"
    waiting = lab.client.get("/_sandbox/unlocks").json()["unlocks"]
    assert [(u["id"], u["reason"]) for u in waiting] == [(rid, "Sign in to Acme")]
    assert lab.client.post("/_sandbox/unlocks/approve", json={"id": rid}).json()["status"] == "ready"
    ready = asker.get(f"{UNLOCK}/{rid}").json()
    assert ready["status"] == "ready" and len(ready["items"]) == 1
    secrets = open_sealed(asker, ready["items"][0]["sealed_envelope"])
    assert secrets["basic-auth"]["password"] == "hunter2" and secrets["record"]["name"] == "Acme"
    again = asker.get(f"{UNLOCK}/{rid}").json()
    assert again["status"] == "ready" and "items" not in again, "consumed once"
    assert delete(asker, f"{UNLOCK}/{rid}").status_code == 409


def test_a_denied_or_withdrawn_request_serves_nothing(lab):
    _, made = _with_password(lab)
    asker = lab.pair("asker", {"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"})
    lab.state.approve = "manual"
    one = asker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}}).json()["id"]
    lab.client.post("/_sandbox/unlocks/deny", json={"id": one})
    assert asker.get(f"{UNLOCK}/{one}").json() == asker.get(f"{UNLOCK}/{one}").json() | {"status": "denied"}
    two = asker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}}).json()["id"]
    assert delete(asker, f"{UNLOCK}/{two}").json() == {"id": two, "status": "expired"}
    assert "items" not in asker.get(f"{UNLOCK}/{two}").json()
    other = lab.pair("other", "memory.save")
    assert other.get(f"{UNLOCK}/{one}").status_code == 404, "only the token that asked may poll"


def test_a_covering_permission_is_preparing_until_the_phone_seals_then_ready_at_once(lab):
    maker, made = _with_password(lab)
    r = maker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}})
    assert r.status_code == 200, r.text
    assert r.json() == r.json() | {
        "available": False,
        "state": "preparing",
        "auto_approved": True,
        "waiting_on": "owner_phone",
    }
    assert r.json()["retry_after_seconds"] == 5
    assert lab.client.post("/_sandbox/keep", json={}).json()["copies"] == 1
    r = maker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}})
    assert r.status_code == 201 and r.json()["status"] == "ready" and r.json()["auto_approved"] is True, r.text
    items = maker.get(f"{UNLOCK}/{r.json()['id']}").json()["items"]
    assert open_sealed(maker, items[0]["sealed_envelope"])["basic-auth"]["password"] == "hunter2"
    # "or the record changed after the copy was made": a new password makes the copy stale
    sealed = password_envelope(owner_pk(maker), "correct horse")
    maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": sealed})
    r = maker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}})
    assert r.status_code == 200 and r.json()["state"] == "preparing"


def test_auto_approve_follows_the_sandbox_setting(lab):
    _, made = _with_password(lab, "pw-auto")
    asker = lab.pair("asker", {"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"})
    r = asker.post(UNLOCK, {"target": {"kind": "account", "id": made["id"]}})
    assert r.status_code == 201 and r.json()["status"] == "pending", "the owner was asked"
    ready = asker.get(f"{UNLOCK}/{r.json()['id']}").json()
    assert open_sealed(asker, ready["items"][0]["sealed_envelope"])["basic-auth"]["password"] == "pw-auto"


def test_an_account_named_by_its_domain_is_resolved_by_the_phone(lab):
    """001, `unlock_request`: "`domain`: For kind=account only — resolve by hostname match";
    "422 … `AMBIGUOUS_DOMAIN`"."""
    from support.acctfamily_kit import create

    agent = lab.pair("signup", "account.create")
    shop = create(agent, {"name": "Shop", "url": "https://www.shop.example/login"})
    create(agent, {"name": "Mail one", "url": "https://mail.example"})
    create(agent, {"name": "Mail two", "url": "https://login.mail.example"})
    ask = {"target": {"kind": "account", "domain": "shop.example"}}
    assert agent.post("/api/agent/unlock", ask).json()["state"] == "preparing", "the phone owes a copy"
    lab.client.post("/_sandbox/keep", json={})
    r = agent.post("/api/agent/unlock", ask)
    assert r.status_code == 201 and r.json()["status"] == "ready", r.text
    assert r.json()["target_id"] == shop["id"], "www.shop.example is under shop.example"
    r = agent.post("/api/agent/unlock", {"target": {"kind": "account", "domain": "mail.example"}})
    assert r.status_code == 422 and r.json()["code"] == "AMBIGUOUS_DOMAIN", r.text
    r = agent.post("/api/agent/unlock", {"target": {"kind": "account", "domain": "nowhere.example"}})
    assert r.status_code == 404, r.text


def test_a_password_read_of_an_account_without_one_is_no_credential(lab):
    """001, `unlock_request`: "422 … `NO_CREDENTIAL`"; "a non-credential request can unlock an
    account that has no stored password"."""
    from support.acctfamily_kit import create

    agent = lab.pair("signup", "account.create")
    account = create(agent, {"name": "Shop"})
    ask = {"target": {"kind": "account", "id": account["id"], "datatypes": ["basic-auth"]}}
    r = agent.post("/api/agent/unlock", ask)
    assert r.status_code == 422 and r.json()["code"] == "NO_CREDENTIAL", r.text
    whole = agent.post("/api/agent/unlock", {"target": {"kind": "account", "id": account["id"]}})
    assert whole.status_code == 200 and whole.json()["state"] == "preparing", "the record itself may be read"
