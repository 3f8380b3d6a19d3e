"""Accounts in bulk, and an account's Decoy email: `POST /accounts/batch`, `…/protect`, `…/burn-decoy`.

001, `account_create_batch`: "Create up to **25 sealed accounts in one call** … every item must
carry `encrypted_data` (a base64 **VAULT** SealedBlob sealed client-side) … Results are
**per-item**: one malformed row fails alone, the rest are created"; "`created_count` +
`failed_count` always sum to the batch size"; "Without it … the whole batch is refused with `403
SCOPE_MISSING` … and nothing is created." `account_protect`: "omit it to auto-generate a fresh
one … Idempotent when already protected (returns the existing decoy)"; "An account's current
Decoy email is never replaced this way: `403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`". `account_burn_decoy`:
"An account's own Decoy email is never burned, replaced or rotated by an agent"; "Burning a
Personal Alias address linked to the account needs `alias.burn`"; "`replace: true` (the default)
also needs `account.create`, live — otherwise `403 SCOPE_MISSING` … and NOTHING is burned".
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, create, envelope_record, vault_record

BATCH = f"{ACCOUNTS}/batch"


def test_a_batch_creates_each_good_row_and_reports_each_bad_one(lab):
    agent = lab.pair("importer", "account.create")
    good = {"encrypted_data": vault_record(lab, {"name": "Acme", "username": "me"}), "has_password": True}
    rows = [good, {"encrypted_data": envelope_record(agent, {"name": "Env"})}, {}, {**good, "agent_label": "x" * 201}]
    r = agent.post(BATCH, {"accounts": [*rows, good]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert [x["status"] for x in out["results"]] == ["created", "failed", "failed", "failed", "created"]
    assert [x["index"] for x in out["results"]] == [0, 1, 2, 3, 4], "in request order"
    assert out["created_count"] + out["failed_count"] == 5 and out["created_count"] == 2
    assert "ACCOUNT_BLOB_REQUIRED" in out["results"][2]["error"]
    listed = {a["id"]: a for a in agent.get(ACCOUNTS).json()["accounts"]}
    made = [x["id"] for x in out["results"] if x["status"] == "created"]
    assert sorted(listed) == sorted(made), "no silent drops, nothing else created"
    assert all(listed[i]["created_by_this_connection"] and listed[i]["has_password"] for i in made)


def test_a_batch_is_refused_whole_without_account_create_and_over_25(lab):
    editor = lab.pair("editor", "account.edit")
    row = {"encrypted_data": vault_record(lab, {"name": "Acme"})}
    r = editor.post(BATCH, {"accounts": [row]})
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING", r.text
    maker = lab.pair("maker", "account.create")
    r = maker.post(BATCH, {"accounts": [row] * 26})
    assert r.status_code == 400, r.text
    assert maker.get(ACCOUNTS).json()["accounts"] == [], "nothing was created"


def test_protect_mints_once_and_then_is_idempotent(lab):
    agent = lab.pair("signup", "account.create")
    account = create(agent)
    r = agent.post(f"{ACCOUNTS}/{account['id']}/protect", {})
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["already_protected"] is False and first["decoy_email"].endswith("@decoys.me")
    assert len(first["decoy_email_hash"]) == 64
    again = agent.post(f"{ACCOUNTS}/{account['id']}/protect", {}).json()
    assert again["already_protected"] is True and again["decoy_id"] == first["decoy_id"]
    assert again["decoy_email"] is None, "ids only when nothing was minted"
    read = agent.get(f"{ACCOUNTS}/{account['id']}").json()
    assert read["decoy_id"] == first["decoy_id"] and read["decoy_email"] == first["decoy_email"]
    other = create(agent, {"name": "Other"})
    theirs = agent.post(f"{ACCOUNTS}/{other['id']}/protect", {}).json()["decoy_id"]
    r = agent.post(f"{ACCOUNTS}/{account['id']}/protect", {"decoy_id": theirs})
    assert r.status_code == 403 and r.json()["code"] == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT", r.text
    assert r.json()["can_request"] is False


def test_minting_needs_account_create_live_but_linking_does_not(lab):
    owner_made = lab.client.post("/_sandbox/aliases", json={"name": "Shopping"}).json()
    maker = lab.pair("maker", "account.create")
    account = create(maker)
    editor = lab.pair("editor", {"permissions": ["account.edit"], "account_id": account["id"]}, "alias.edit")
    r = editor.post(f"{ACCOUNTS}/{account['id']}/protect", {})
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING", r.text
    assert r.json()["required_scope"] == "decoy.write"
    assert editor.get(f"{ACCOUNTS}/{account['id']}").json()["decoy_id"] is None, "nothing is minted"
    r = editor.post(f"{ACCOUNTS}/{account['id']}/protect", {"decoy_id": owner_made["id"]})
    assert r.status_code == 200 and r.json()["decoy_id"] == owner_made["id"], r.text
    assert r.json()["decoy_email"] is None, "link-existing responses return ids only"


def test_a_reserved_address_is_the_one_protect_mints(lab):
    agent = lab.pair("signup", "account.create")
    account = create(agent)
    preview = agent.get("/api/agent/decoys/generate-email")
    assert preview.status_code == 200, preview.text
    email = preview.json()["email"]
    r = agent.post(f"{ACCOUNTS}/{account['id']}/protect", {"decoy_email": email})
    assert r.status_code == 200 and r.json()["decoy_email"] == email, r.text
    other = create(agent, {"name": "Again"})
    r = agent.post(f"{ACCOUNTS}/{other['id']}/protect", {"decoy_email": email})
    assert r.status_code == 400 and r.json()["code"] == "DECOY_EMAIL_NOT_RESERVED", "a reservation is used once"


def test_burn_decoy_never_burns_an_accounts_own_email(lab):
    agent = lab.pair("signup", "account.create", "account.delete")
    made = agent.post("/api/agent/decoys", {"service_name": "Acme"}).json()
    r = agent.post(f"{ACCOUNTS}/{made['account_id']}/burn-decoy", {"replace": False})
    assert r.status_code == 403 and r.json()["code"] == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT", r.text
    assert agent.get(f"/api/agent/decoys/{made['id']}").status_code == 200, "nothing was burned"


def test_burn_decoy_burns_a_linked_personal_alias_with_alias_burn(lab):
    alias = lab.client.post("/_sandbox/aliases", json={"name": "Newsletters"}).json()
    maker = lab.pair("maker", "account.create", "alias.edit")
    account = create(maker)
    assert maker.post(f"{ACCOUNTS}/{account['id']}/protect", {"decoy_id": alias["id"]}).status_code == 200
    r = maker.post(f"{ACCOUNTS}/{account['id']}/burn-decoy", {"replace": False})
    assert r.status_code == 403 and r.json()["required_permission"] == "alias.burn", r.text
    burner = lab.pair("burner", {"permissions": ["account.edit"], "account_id": account["id"]}, "alias.burn")
    r = burner.post(f"{ACCOUNTS}/{account['id']}/burn-decoy", {})
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING" and "hint" in r.json(), r.text
    assert burner.get(f"/api/agent/decoys/{alias['id']}").status_code == 200, "NOTHING is burned"
    r = maker.post(f"{ACCOUNTS}/{account['id']}/burn-decoy", {"replace": False})
    assert r.status_code == 403  # maker still lacks alias.burn
    r = burner.post(f"{ACCOUNTS}/{account['id']}/burn-decoy", {"replace": False})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "account_id": account["id"],
        "burned_decoy_id": alias["id"],
        "new_decoy_id": None,
        "new_decoy_email": None,
    }
    assert burner.get(f"/api/agent/decoys/{alias['id']}").status_code == 404


def test_deleting_an_account_unlinks_an_alias_it_may_not_burn(lab):
    alias = lab.client.post("/_sandbox/aliases", json={"name": "Travel"}).json()
    agent = lab.pair("maker", "account.create", "account.delete", "alias.edit")
    account = create(agent)
    agent.post(f"{ACCOUNTS}/{account['id']}/protect", {"decoy_id": alias["id"]})
    r = lab.client.request("DELETE", f"{ACCOUNTS}/{account['id']}", headers=agent.headers)
    assert r.status_code == 200, r.text
    assert r.json() | {"burned_decoys": 0, "unlinked_decoys": 1} == r.json()
    assert agent.get(f"/api/agent/decoys/{alias['id']}").json()["status"] == "active", "stays live"
