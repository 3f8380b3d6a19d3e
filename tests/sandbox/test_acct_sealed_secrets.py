"""`GET /api/agent/sealed-secrets` for saved passwords, over HTTP against the sandbox.

001, `sealed_secrets_list`: "`kind: "account"` → `{ host, username, password }`"; "Records you're
not covered for are omitted, never a 403"; "**A granted record with no copy for your connection yet
is listed under `preparing`, never left out.**" with "`waiting_on: "owner_phone"`,
`retry_after_seconds` and `recovery: read_again_later`"; "5 during the first 15 minutes, 60 during
the first hour"; "When the phone was asked for your connection 7 days ago and the copy has not
come, the id is listed under `failed` (`recovery: "stopped_asking"`)"; "A connection that holds the
vault key is owed no copy and has nothing listed."
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, create, open_sealed, password_envelope

SECRETS = "/api/agent/sealed-secrets"
RECORD = {"name": "Acme", "username": "me@acme.test", "url": "https://login.acme.example/signin"}


def _with_password(lab, agent, password: str = "hunter2") -> dict:
    account = create(agent, RECORD)
    owner_pk = agent.get(f"{ACCOUNTS}/public-key").json()["public_key"]
    r = agent.post(
        f"{ACCOUNTS}/{account['id']}/credential", {"encrypted_password": password_envelope(owner_pk, password)}
    )
    assert r.status_code == 200, r.text
    return account


def test_a_saved_password_is_preparing_then_served_sealed_to_this_connection(lab):
    agent = lab.pair("signup", "account.create")
    account = _with_password(lab, agent)
    create(agent, {"name": "No password"})  # not a login: not listed
    first = agent.get(SECRETS)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["items"] == [] and body["preparing"] == [account["id"]], "listed, never left out"
    assert body["retry_after_seconds"] == 5 and body["waiting_on"] == "owner_phone"
    assert body["recovery"] == "read_again_later" and body["do_not"] == ["pair_again", "report_missing"]
    assert lab.client.post("/_sandbox/keep", json={}).json()["copies"] >= 1
    (item,) = agent.get(SECRETS).json()["items"]
    assert item["kind"] == "account" and item["target_id"] == account["id"]
    login = open_sealed(agent, item["sealed_envelope"])
    assert login == {"host": "login.acme.example", "username": "me@acme.test", "password": "hunter2"}
    owner_pk = agent.get(f"{ACCOUNTS}/public-key").json()["public_key"]
    agent.post(f"{ACCOUNTS}/{account['id']}/credential", {"encrypted_password": password_envelope(owner_pk, "new")})
    after = agent.get(SECRETS).json()
    assert after["items"] == [] and after["preparing"] == [account["id"]], (
        "the copy from before the change is not served"
    )


def test_an_uncovered_connection_is_served_nothing_and_refused_nothing(lab):
    agent = lab.pair("signup", "account.create")
    _with_password(lab, agent)
    stranger = lab.pair("stranger", "memory.save")
    r = stranger.get(SECRETS)
    assert r.status_code == 200 and r.json() == {"items": []}, r.text
    extension = lab.pair("extension", "everything")
    assert extension.get(SECRETS).json() == {"items": []}, "the vault key holder is owed no copy"


def test_after_seven_days_without_a_copy_the_id_is_failed(lab):
    agent = lab.pair("signup", "account.create")
    account = _with_password(lab, agent)
    agent.get(SECRETS)
    lab.clock.advance(3600)
    assert agent.get(SECRETS).json()["retry_after_seconds"] == 300, "counted from when the phone was asked"
    lab.clock.advance(7 * 86400)
    body = agent.get(SECRETS).json()
    assert body["failed"] == [account["id"]] and body["recovery"] == "stopped_asking"
    assert "preparing" not in body and "retry_after_seconds" not in body
