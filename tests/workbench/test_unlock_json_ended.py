"""`decoy-lab unlock --json` tells an unlock still on its way from one that ended without the
secrets: `"not ready"` while the owner has not decided (ask again), `"not given"` once the owner
denied it — final: 001 `unlock_poll` "A denial stands: do not ask again unless the person
agrees." Exit 1 for both; no secret in either."""

from __future__ import annotations

import json

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.store.profiles import ProfileStore

from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def sandbox(config):
    with shell_sandbox(("--name", "Maker", "--permission", "account.create")) as sb:
        yield sb


def test_a_pending_unlock_is_not_ready_and_a_denied_one_is_not_given(sandbox, config):
    with Connection.resume("default", store=ProfileStore(config)) as maker:
        account = maker.save_account("Billing Portal", username="me@billing.test")
        maker.set_password(account, "pw-billing-41")
    Connection.pair(
        sandbox.url,
        name="Reader",
        profile="reader",
        store=ProfileStore(config),
        on_link=lambda *a: None,
        permissions=[{"permissions": ["account.read"], "domain": "elsewhere.example"}],
    ).close()
    sandbox.state.approve = "manual"  # the owner's phone waits for the owner
    try:
        code, out, err = run("unlock", account, "--profile", "reader", "--reason", "Invoice", "--json")
        asked = json.loads(out)
        assert code == 1 and (asked["outcome"], asked["status"]) == ("not ready", "pending"), err
        denied = httpx.post(f"{sandbox.url}/_sandbox/unlocks/deny", json={"id": asked["request_id"]})
        assert denied.status_code == 200, denied.text
        code, out, err = run("unlock", account, "--profile", "reader", "--request", asked["request_id"], "--json")
        ended = json.loads(out)
        assert code == 1 and (ended["outcome"], ended["status"]) == ("not given", "denied"), err
        assert "pw-billing-41" not in out + err and "password" not in ended
    finally:
        sandbox.state.approve = "auto"
