"""Every account write's `--json` (shell/account_writes.py), against the sandbox over real HTTP: one
JSON object on stdout with the outcome — ids, status, problems, whether it was replayed — and never
a secret (an unlock's as their length unless `--reveal`). The exit codes are those without it; a
refusal or an unknown outcome still says its words on stderr, and its object carries `"outcome":
"refused"` with the server's code, or `"outcome": "unknown"` with what to reuse.

001, `decoy_create`: "Repeating the same key (same token) returns the ORIGINAL decoy with
`idempotent_replay: true`"; `credential_delete`: "Needs `account.delete` on the account — its own
permission"; `account_create_batch`: "Results are **per-item**: one malformed row fails alone".
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox

from support.accounts_kit import personal_alias
from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")
PASSWORD = "hunter2-json"
API_KEY = "sk-json-77"


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(
        ("--name", "CLI json", "--permission", "account.create"),
        ("--name", "CLI json owner", "--permission", "everything", *OWNER),
    ) as sb:
        yield sb


def as_json(*argv: str, code: int = 0) -> tuple[dict[str, Any], str]:
    """`decoy-lab *argv --json`: its one object, and what it said on stderr; exits `code`."""
    got, out, err = run(*argv, "--json")
    assert got == code, err
    return json.loads(out), err


def typed(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def keep(sb: Sandbox) -> None:
    assert httpx.post(f"{sb.url}/_sandbox/keep", json={}).status_code == 200


def test_an_account_its_secrets_and_their_unlock_as_json_never_holding_a_secret(sandbox, monkeypatch):
    made, _ = as_json("account-new", "Bank", "--username", "me@bank.test")
    assert list(made) == ["outcome", "account_id", "email", "decoy_id", "idempotency_key", "replayed"]
    assert made["outcome"] == "done" and made["replayed"] is False and made["email"].endswith("@decoys.me")
    again, err = as_json("account-new", "Bank", "--idempotency-key", made["idempotency_key"])
    assert again == {**made, "replayed": True} and "made nothing new" in err
    account = made["account_id"]

    typed(monkeypatch, PASSWORD + "\n")
    done, _ = as_json("password", account[:8])
    assert done == {"outcome": "done", "account_id": account, "password_set": True}
    typed(monkeypatch, API_KEY + "\n")
    field, _ = as_json("field-add", account[:8], "API key")
    assert (field["outcome"], field["status"], field["label"], field["rev"]) == ("done", "created", "API key", 1)

    waiting, err = as_json("unlock", account[:8], code=1)  # the phone owes this connection a copy
    assert (waiting["outcome"], waiting["status"]) == ("not ready", "preparing") and "password" not in waiting
    assert waiting["retry_after"] == 5 and err.startswith("preparing: the owner's phone is making a copy")
    keep(sandbox)
    got, _ = as_json("unlock", account[:8])
    assert (got["outcome"], got["status"], got["username"]) == ("done", "ready", "me@bank.test")
    assert got["password"] == {"length": len(PASSWORD)} and got["fields"] == {"API key": {"length": len(API_KEY)}}
    assert PASSWORD not in json.dumps(got) and API_KEY not in json.dumps(got)
    shown, _ = as_json("unlock", account[:8], "--reveal")
    assert shown["password"] == {"length": len(PASSWORD), "value": PASSWORD}

    typed(monkeypatch, "sk-json-78\n")
    changed, _ = as_json("field-set", account, "API key")
    assert (changed["field_id"], changed["status"], changed["rev"]) == (field["field_id"], "changed", 2)
    assert "sk-json-78" not in json.dumps(changed)
    gone, _ = as_json("field-delete", account, field["field_id"][:8])
    assert (gone["outcome"], gone["field_id"], gone["deleted"]) == ("done", field["field_id"], True)


def test_an_address_given_renamed_updated_and_paused_as_json(sandbox):
    saved, _ = as_json("account-save", "Cloud")
    assert list(saved) == ["outcome", "account_id"] and len(saved["account_id"]) == 36
    given, _ = as_json("protect", saved["account_id"])
    assert given["already_protected"] is False and given["email"].endswith("@decoys.me")
    decoy = given["decoy_id"]
    edit, _ = as_json("decoy-rename", decoy[:8], "Cloud", "mail")
    assert (edit["outcome"], edit["status"], edit["decoy_id"]) == ("done", "pending", decoy)
    keep(sandbox)
    applied, _ = as_json("decoy-edit", decoy[:8], edit["edit_id"])
    assert (applied["status"], applied["applied_rev"]) == ("applied", 2)
    updated, _ = as_json("decoy-update", decoy[:8], "--label", "cloud")
    assert updated["outcome"] == "done" and updated["decoy_id"] == decoy and updated["updated"] is True
    account, _ = as_json("account-update", saved["account_id"], "--label", "cloud", "--two-factor", "on")
    assert (account["agent_label"], account["two_factor_enabled"], account["record_resealed"]) == ("cloud", True, False)
    theirs = personal_alias(sandbox, "Not mine")["id"]
    paused, err = as_json("decoy-pause", decoy, theirs, code=1)
    assert paused == {
        "outcome": "partial",
        "addresses": [{"decoy_id": decoy, "paused": True}, {"decoy_id": theirs, "paused": False, "error": "Not found"}],
    }
    assert err.startswith("1 of 2 addresses paused")


def test_burns_as_json_and_one_not_confirmed(sandbox, monkeypatch):
    forums = personal_alias(sandbox, "Forums")
    burned, _ = as_json("decoy-burn", forums["id"][:8], "--yes", *OWNER)
    assert (burned["outcome"], burned["decoy_id"], burned["email"], burned["deleted"]) == (
        "done",
        forums["id"],
        forums["email"],
        True,
    )
    kept = personal_alias(sandbox, "Kept")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("no\n"))
    declined, err = as_json("decoy-burn", kept["id"], *OWNER, code=1)
    assert declined == {"outcome": "not confirmed", "decoy_id": kept["id"], "email": kept["email"]}
    assert "not burned" in err
    account = as_json("account-save", "Linked", *OWNER)[0]["account_id"]
    run("protect", account, "--decoy", kept["id"], *OWNER)
    linked, _ = as_json("account-burn-decoy", account, "--yes", *OWNER)
    assert (linked["outcome"], linked["burned_decoy_id"], linked["burned_email"]) == ("done", kept["id"], kept["email"])
    assert linked["new_decoy_email"].endswith("@decoys.me")


def test_an_import_as_json_gives_each_rows_outcome_and_no_password(sandbox, tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(f"name,password,notes\nMail,{PASSWORD},\nHuge,x,{'x' * 70_000}\n", encoding="utf-8")
    done, err = as_json("account-import", str(export), *OWNER, code=1)
    assert done["outcome"] == "partial" and (done["created"], done["failed"]) == (1, 1)
    assert [(r["row"], r["name"], r["outcome"]) for r in done["rows"]] == [
        (1, "Mail", "created"),
        (2, "Huge", "failed"),
    ]
    assert len(done["rows"][0]["account_id"]) == 36 and done["rows"][1]["error"]
    assert PASSWORD not in json.dumps(done) + err


def test_a_refusal_is_an_object_with_the_servers_code_and_its_words_stay_on_stderr(sandbox):
    made, _ = as_json("account-new", "Forum")
    refused, err = as_json("account-delete", made["account_id"], code=1)
    assert refused["outcome"] == "refused" and refused["verb"] == "account-delete"
    assert (refused["status"], refused["required_permission"]) == (403, "account.delete")
    assert refused["hint"].startswith("ask the owner for it: decoy-lab request account.delete")
    assert err.startswith("refused: HTTP 403")
    own, _ = as_json("decoy-burn", made["decoy_id"], "--yes", code=1)
    assert (own["outcome"], own["code"]) == ("refused", "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT")
    assert "decoy-lab account-delete ACCOUNT" in own["hint"]


def test_an_unknown_outcome_is_an_object_with_what_to_reuse(sandbox, tmp_path, monkeypatch):
    resume = Connection.resume.__func__
    monkeypatch.setattr(
        Connection, "resume", classmethod(lambda cls, profile="default", **kw: resume(cls, profile, retries=0, **kw))
    )
    export = tmp_path / "lost.csv"
    export.write_text("name\nLost\n", encoding="utf-8")
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        lost, err = as_json("account-new", "Shop", code=1)
        batch, _ = as_json("account-import", str(export), *OWNER, code=1)
    finally:
        sandbox.state.faults.configure({})
    assert lost["outcome"] == "unknown" and lost["verb"] == "account-new" and lost["entry"]
    assert lost["reuse"]["idempotency_key"].startswith("decoy-lab-") and "unknown outcome:" in err
    assert f"--idempotency-key {lost['reuse']['idempotency_key']}" in lost["said"]
    again, _ = as_json("account-new", "Shop", "--idempotency-key", lost["reuse"]["idempotency_key"])
    assert again["replayed"] is True, "the first try had made it"
    assert batch["outcome"] == "unknown" and batch["rows"] == [{"row": 1, "name": "Lost", "outcome": "unknown"}]
    assert "never sent again blindly" in batch["said"] and batch["entry"]


def test_a_mistake_prints_no_object(sandbox):
    code, out, err = run("account-update", "ffffffff", "--json")
    assert code == 2 and out == "" and err.startswith("error: say what changes")
    code, out, err = run("decoy-pause", "ffffffff", "--json")
    assert code == 2 and out == "" and "no Decoy address this connection may see" in err
