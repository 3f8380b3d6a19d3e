"""Decoy addresses as a set over HTTP: the list, a burn, a batch burn or pause, stats, notifications.

001, `decoy_list`: "List decoy identities with filtering, sorting, and cursor pagination" (`status`
"default: active"; `search` "Search agent_label"). `decoy_burn`: "Permanently delete a decoy and all
its data. **Irreversible.**"; "An account's own Decoy email is never burned on its own: it goes with
its account (`account.delete`)". `decoy_burn_batch` / `decoy_pause_batch`: "Ids you may not touch
are listed in `failed` as "Not permitted" and left alone." `decoy_stats_get`,
`decoy_notifications_get`: "404 if the decoy isn't owned by you". `decoy_generate_email`: "**Needs.**
`decoy.read`, and `account.create` (scope `decoy.write`) as well … Without it, `403 SCOPE_MISSING`".
"""

from __future__ import annotations

from support.acctfamily_kit import delete, patch

DECOYS = "/api/agent/decoys"


def _made(agent, name: str, **extra) -> dict:
    r = agent.post(DECOYS, {"service_name": name, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def test_the_list_pages_filters_and_shows_only_what_this_connection_may_read(lab):
    agent = lab.pair("signup", "account.create")
    made = [_made(agent, f"Shop {i}", label=f"shop-{i}") for i in range(5)]
    patch(agent, f"{DECOYS}/{made[0]['id']}", {"status": "inactive"})
    first = agent.get(DECOYS, params={"limit": 2})
    assert first.status_code == 200, first.text
    body = first.json()
    assert len(body["decoys"]) == 2 and body["pagination"]["has_more"] is True
    seen = [d["id"] for d in body["decoys"]]
    rest = agent.get(DECOYS, params={"limit": 2, "cursor": body["pagination"]["next_cursor"]}).json()
    seen += [d["id"] for d in rest["decoys"]]
    assert sorted(seen) == sorted(d["id"] for d in made[1:]), "active by default; each once"
    assert [d["id"] for d in agent.get(DECOYS, params={"status": "inactive"}).json()["decoys"]] == [made[0]["id"]]
    assert len(agent.get(DECOYS, params={"status": "all"}).json()["decoys"]) == 5
    found = agent.get(DECOYS, params={"search": "SHOP-3"}).json()["decoys"]
    assert [d["id"] for d in found] == [made[3]["id"]], "search matches the label"
    every = lab.pair("every", "acctmail.read")
    assert len(every.get(DECOYS).json()["decoys"]) == 4, "a row with no selection covers every account"
    stranger = lab.pair("stranger", "account.create")
    assert stranger.get(DECOYS).json()["decoys"] == [], "another connection's addresses are not its own"
    one = lab.pair("one", {"permissions": ["acctmail.read"], "account_id": made[2]["account_id"]})
    assert [d["id"] for d in one.get(DECOYS).json()["decoys"]] == [made[2]["id"]]


def test_an_accounts_own_email_is_never_burned_on_its_own(lab):
    agent = lab.pair("signup", "account.create")
    made = _made(agent, "Acme")
    r = delete(agent, f"{DECOYS}/{made['id']}")
    assert r.status_code == 403 and r.json()["code"] == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT", r.text
    batch = agent.post(f"{DECOYS}/batch/burn", {"decoy_ids": [made["id"]]}).json()
    assert batch["failed"] == [{"id": made["id"], "error": "Not permitted"}] and batch["succeeded"] == []
    assert agent.get(f"{DECOYS}/{made['id']}").status_code == 200


def test_a_personal_alias_burns_with_alias_burn_and_is_gone(lab):
    alias = lab.client.post("/_sandbox/aliases", json={"name": "Forums"}).json()
    editor = lab.pair("editor", "alias.edit")
    r = delete(editor, f"{DECOYS}/{alias['id']}")
    assert r.status_code == 403 and r.json()["required_permission"] == "alias.burn", r.text
    burner = lab.pair("burner", "alias.burn")
    r = delete(burner, f"{DECOYS}/{alias['id']}")
    assert r.status_code == 200 and r.json()["deleted"] is True and r.json()["burned_at"], r.text
    assert burner.get(f"{DECOYS}/{alias['id']}").status_code == 404
    assert delete(burner, f"{DECOYS}/{alias['id']}").status_code == 404, "irreversible"


def test_a_batch_pause_touches_only_what_it_may(lab):
    agent = lab.pair("signup", "account.create")
    mine = _made(agent, "Mine")
    other = lab.pair("other", "account.create")
    theirs = _made(other, "Theirs")
    r = agent.post(f"{DECOYS}/batch/pause", {"decoy_ids": [mine["id"], theirs["id"]]})
    assert r.status_code == 200, r.text
    assert r.json()["succeeded"] == [mine["id"]] and r.json()["failed"][0]["id"] == theirs["id"]
    assert agent.get(f"{DECOYS}/{mine['id']}").json()["status"] == "inactive"
    assert other.get(f"{DECOYS}/{theirs['id']}").json()["status"] == "active", "left alone"
    too_many = agent.post(f"{DECOYS}/batch/pause", {"decoy_ids": [mine["id"]] * 21})
    assert too_many.status_code == 400


def test_stats_and_notifications_are_404_for_an_address_that_is_not_yours(lab):
    agent = lab.pair("signup", "account.create")
    made = _made(agent, "Acme")
    stats = agent.get(f"{DECOYS}/{made['id']}/stats")
    assert stats.status_code == 200 and stats.json()["total_messages"] == 0, stats.text
    path = f"{DECOYS}/{made['id']}/notifications"
    assert agent.get(path).json() == {"decoy_id": made["id"], "notify_all_messages": False}, "defaults to false"
    r = patch(agent, path, {"notify_all_messages": True})
    assert r.status_code == 200 and r.json()["notify_all_messages"] is True, r.text
    assert agent.get(path).json()["notify_all_messages"] is True
    assert patch(agent, path, {"notify_all_messages": "yes"}).status_code == 400
    stranger = lab.pair("stranger", "account.create")
    assert stranger.get(f"{DECOYS}/{made['id']}/stats").status_code == 404
    assert stranger.get(path).status_code == 404


def test_a_preview_needs_account_create(lab):
    reader = lab.pair("reader", "acctmail.read")
    r = reader.get(f"{DECOYS}/generate-email")
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING", r.text
    assert r.json()["required_scope"] == "decoy.write"
