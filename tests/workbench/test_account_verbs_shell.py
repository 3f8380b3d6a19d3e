"""The account family's writes as `decoy-lab` sub-commands (shell/account_writes.py), against the
sandbox over real HTTP: an account with its Decoy address, one without, its password, a secret
field added, changed and deleted, the secrets unlocked, an address given and renamed.

A secret is never an argument: it is read from a hidden prompt on a terminal, else as one line of
stdin, and never printed unless `--reveal`. A mistake is `error: …`, exit 2; the server's refusal
is its typed error's words, exit 1; an unknown outcome says what to reuse and that `decoy-lab
resend` finishes it, exit 1.

001, `decoy_create`: "Repeating the same key (same token) returns the ORIGINAL decoy with
`idempotent_replay: true`"; `account_field_create`: "Sending the same id again answers `existing`
… Reuse the id until you get an answer"; `unlock_request`: "A covering permission answers the
request as `ready` at once; otherwise the owner is asked on their phone and the request is
`pending`. Poll `GET /api/agent/unlock/{requestId}`", and "`state` `preparing` (Decoy is asking
the owner's phone for the copy: send the same request again after `retry_after_seconds`)".
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.protocol.accounts_unlock import POLL_EVERY
from decoy_lab.sandbox import Sandbox

from support.shell_runs import run, shell_sandbox

OTHER_ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"
PASSWORD = "correct-horse-7"
API_KEY = "sk-live-51HqX"


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(("--name", "CLI account writes", "--permission", "account.create")) as sb:
        yield sb


def typed(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """`text` piped in on stdin (not a terminal)."""
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def values(out: str) -> dict[str, str]:
    """`name  value` lines as a dict."""
    return dict(line.split(None, 1) for line in out.splitlines() if line.strip())


def keep(sb: Sandbox) -> None:
    """The owner's phone runs its pass now (copies, field keys, queued edits)."""
    assert httpx.post(f"{sb.url}/_sandbox/keep", json={}).status_code == 200


def owner_sees(sb: Sandbox, account_id: str) -> dict:
    return httpx.get(f"{sb.url}/_sandbox/app-view", params={"account": account_id}).json()["accounts"][0]


def test_account_new_prints_the_id_the_address_and_the_key_and_the_key_answers_the_same_address(sandbox):
    code, out, err = run("account-new", "Acme", "--url", "https://acme.example", "--username", "me@acme.test",
                         "--label", "shop")  # fmt: skip
    assert code == 0, err
    made = values(out)
    assert set(made) == {"account_id", "email", "decoy_id", "idempotency_key"}
    assert made["email"].endswith("@decoys.me") and made["idempotency_key"].startswith("decoy-lab-")
    assert owner_sees(sandbox, made["account_id"])["name"] == "Acme"
    code, out, err = run("account-new", "Acme", "--idempotency-key", made["idempotency_key"])
    assert code == 0, err
    assert values(out) == made and "made nothing new" in err, "the same key: the original address, not a second"
    code, out, _ = run("accounts", "--json")
    assert [a["id"] for a in json.loads(out) if a["service"] == "Acme"] == [made["account_id"]]


def test_a_password_and_a_field_come_from_stdin_and_are_never_printed_unless_revealed(sandbox, monkeypatch):
    code, out, err = run("account-new", "Bank", "--username", "me@bank.test")
    assert code == 0, err
    account = values(out)["account_id"]
    short = account[:8]  # as the accounts table prints it
    typed(monkeypatch, PASSWORD + "\n")
    code, out, err = run("password", short)
    assert code == 0, err
    assert out == f"password set for account {account}\n" and PASSWORD not in out + err
    credential = owner_sees(sandbox, account)["credential"]
    assert credential["readable"] and credential["length"] == len(PASSWORD), "the newline is not part of it"
    typed(monkeypatch, API_KEY + "\r\n")
    code, out, err = run("field-add", short, "API key")
    assert code == 0, err
    field_id = out.strip()
    assert [f["id"] for f in owner_sees(sandbox, account)["fields"] if f["readable"]] == [field_id]

    code, out, err = run("unlock", short)  # the phone owes this connection a copy: preparing
    assert code == 1 and out == ""
    assert err.startswith("preparing: the owner's phone is making a copy") and "ask again in 5 s" in err
    assert f"decoy-lab unlock {short} --wait" in err
    keep(sandbox)
    code, out, err = run("unlock", short)
    assert code == 0, err
    assert out.splitlines() == [
        "username        me@bank.test",
        f"password        •••••• ({len(PASSWORD)} characters)",
        f"API key         •••••• ({len(API_KEY)} characters)",
    ]
    assert PASSWORD not in out + err and API_KEY not in out + err and "--reveal shows them" in err
    code, out, err = run("unlock", short, "--reveal")
    assert code == 0, err
    assert f"password        {PASSWORD}\n" in out and f"API key         {API_KEY}\n" in out


def test_on_a_terminal_the_secret_is_asked_for_without_echo(sandbox, monkeypatch):
    code, out, _ = run("account-new", "Mail")
    account = values(out)["account_id"]
    asked: list[str] = []

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("getpass.getpass", lambda prompt="": asked.append(prompt) or PASSWORD)
    code, out, err = run("password", account)
    assert code == 0, err
    assert asked == ["password (not shown): "] and PASSWORD not in out + err


def test_a_field_is_changed_by_its_label_and_deleted_by_the_start_of_its_id(sandbox, monkeypatch):
    code, out, _ = run("account-new", "Cloud")
    account = values(out)["account_id"]
    typed(monkeypatch, "t-1\n")
    code, out, err = run("field-add", account, "Token", "--type", "string")
    assert code == 0, err
    field_id = out.strip()
    typed(monkeypatch, "t-2\n")
    code, out, err = run("field-set", account[:8], "Token")
    assert code == 0, err
    assert out == f"changed field {field_id} (rev 2)\n" and "t-2" not in out + err
    code, out, err = run("field-delete", account[:8], field_id[:8])
    assert code == 0, err
    assert out == f"deleted field {field_id}\n"
    assert owner_sees(sandbox, account)["fields"] == []
    code, _, err = run("field-delete", account, "Token")
    assert code == 2 and "no field of this account" in err and "or the label 'Token'" in err


def test_an_account_saved_without_an_address_is_given_one_by_protect(sandbox):
    code, out, err = run("account-save", "Library", "--url", "https://lib.example", "--label", "books")
    assert code == 0, err
    account = out.strip()
    assert len(account) == 36 and owner_sees(sandbox, account)["name"] == "Library"
    code, out, err = run("protect", account[:8])
    assert code == 0, err
    given = values(out)
    assert given["account_id"] == account and given["email"].endswith("@decoys.me")
    code, out, err = run("protect", account[:8])
    assert code == 0 and values(out) == given and "already had this address" in err


def test_an_address_is_renamed_by_a_queued_edit_whose_status_is_followed(sandbox):
    code, out, _ = run("account-new", "Old name")
    decoy = values(out)["decoy_id"]
    code, out, err = run("decoy-rename", decoy[:8], "New", "name")
    assert code == 0, err
    edit = values(out)
    assert edit["status"] == "pending" and f"decoy-lab decoy-edit {decoy[:8]} {edit['edit_id']}" in err
    keep(sandbox)  # the owner's devices apply it
    code, out, err = run("decoy-edit", decoy[:8], edit["edit_id"])
    assert code == 0, err
    assert values(out) == {**edit, "status": "applied"} and "applied by the owner's devices" in err
    code, out, _ = run("decoys", "--json")
    assert [(d["rev"], d["name_from"]) for d in json.loads(out) if d["id"] == decoy] == [(2, "preparing")]
    keep(sandbox)  # the phone seals the new name to this connection on its next pass
    code, out, _ = run("decoys", "--json")
    assert [d["name"] for d in json.loads(out) if d["id"] == decoy] == ["New name"]


def test_an_unlock_the_owner_must_approve_is_pending_and_polled_by_its_request(sandbox, config):
    code, out, _ = run("account-new", "Airline")
    account = values(out)["account_id"]
    with Connection.resume("default") as maker:
        maker.set_password(account, PASSWORD)
    asker = Connection.pair(
        sandbox.url,
        name="Asker",
        permissions=[{"permissions": ["account.read"], "account_id": OTHER_ACCOUNT}],
        profile="asker",
        on_link=lambda *_: None,
        backoff=0,
    )
    asker.close()
    sandbox.state.approve = "manual"
    try:
        code, out, err = run("unlock", account, "--reason", "Check the booking", "--profile", "asker")
        assert code == 1 and out == ""
        assert err.startswith("pending: the owner has not decided yet (request ")
        request = err.split("(request ", 1)[1].split(")", 1)[0]
        assert f"decoy-lab unlock {account} --request {request} polls this same request" in err
        code, _, err = run("unlock", account, "--request", request, "--profile", "asker")
        assert code == 1 and f"(request {request})" in err, "the same request polled, not a second ask"
        waiting = httpx.get(f"{sandbox.url}/_sandbox/unlocks").json()["unlocks"]
        assert [u["id"] for u in waiting] == [request]
        httpx.post(f"{sandbox.url}/_sandbox/unlocks/approve", json={"id": request})
        code, out, err = run("unlock", account, "--request", request, "--profile", "asker")
        assert code == 0, err
        assert values(out)["password"] == f"•••••• ({len(PASSWORD)} characters)" and PASSWORD not in out + err
    finally:
        sandbox.state.approve = "auto"


def test_an_address_label_and_status_change_in_place(sandbox):
    code, out, _ = run("account-new", "Newsletter", "--label", "news")
    decoy = values(out)["decoy_id"]
    code, out, err = run("decoy-update", decoy[:8], "--label", "daily news")
    assert code == 0, err
    assert out.startswith(f"updated address {decoy}")
    code, out, err = run("decoy-update", decoy[:8], "--status", "inactive")
    assert code == 0, err
    code, out, _ = run("decoys", "--status", "all", "--json")
    assert [(d["label"], d["status"]) for d in json.loads(out) if d["id"] == decoy] == [("daily news", "inactive")]
    code, out, err = run("decoy-update", decoy[:8], "--status", "inactive")
    assert code == 0 and "holds these already: nothing changed" in out
    code, out, err = run("decoy-update", decoy[:8], "--clear-label", "--status", "active")
    assert code == 0, err
    code, out, _ = run("decoys", "--json")
    assert [d["label"] for d in json.loads(out) if d["id"] == decoy] == [None]
    code, _, err = run("decoy-update", decoy[:8])
    assert code == 2 and err == "error: say what changes: --label TEXT, --clear-label or --status\n"
    code, _, err = run("decoy-update", decoy[:8], "--status", "all")
    assert code == 2 and err == "error: --status is one of active, inactive\n"


def test_an_account_is_deleted_with_account_delete_and_its_address_goes_with_it(sandbox):
    code, out, _ = run("account-new", "Forum")
    made = values(out)
    code, out, err = run("account-delete", made["account_id"][:8])  # created here, yet not without the permission
    assert code == 1 and out == ""
    assert err.startswith("refused: HTTP 403") and "decoy-lab request account.delete" in err
    code, _, err = run("request", "account.delete", "--reason", "tidy up the test accounts", "--wait")
    assert code == 0, err
    code, out, err = run("account-delete", made["account_id"][:8])
    assert code == 0, err
    assert out == f"deleted account {made['account_id']}\n"
    assert err == "1 address burned with it; the memories filed about it stay\n"
    code, out, _ = run("decoys", "--status", "all", "--json")
    assert made["decoy_id"] not in {d["id"] for d in json.loads(out)}, "its own Decoy email went with it"
    code, out, _ = run("accounts", "--json")
    assert made["account_id"] not in {a["id"] for a in json.loads(out)}


def test_unlock_wait_follows_preparing_and_pending_for_up_to_its_seconds(sandbox, monkeypatch):
    """While the command waits, the owner's phone makes the copy (preparing) or the owner approves
    (pending): each wait it is told to make is where they answer, so no time passes in the test."""
    code, out, _ = run("account-new", "Hotel")
    account = values(out)["account_id"]
    with Connection.resume("default") as maker:
        maker.set_password(account, PASSWORD)
    waits: list[float] = []

    def phone_answers(seconds: float) -> None:
        waits.append(seconds)
        keep(sandbox)
        for ask in httpx.get(f"{sandbox.url}/_sandbox/unlocks").json()["unlocks"]:
            httpx.post(f"{sandbox.url}/_sandbox/unlocks/approve", json={"id": ask["id"]})

    resume = Connection.resume.__func__
    monkeypatch.setattr(
        Connection,
        "resume",
        classmethod(lambda cls, profile="default", **kw: resume(cls, profile, sleep=phone_answers, **kw)),
    )
    code, out, err = run("unlock", account[:8], "--wait", "20")
    assert code == 0, err
    assert waits == [5.0], "asked again after retry_after_seconds, once the copy was made"
    assert "following the answer for up to 20 s" in err and values(out)["password"].endswith("characters)")

    asker = Connection.pair(
        sandbox.url,
        name="Waiting asker",
        permissions=[{"permissions": ["account.read"], "account_id": OTHER_ACCOUNT}],
        profile="waiting-asker",
        on_link=lambda *_: None,
        backoff=0,
    )
    asker.close()
    sandbox.state.approve = "manual"
    try:
        waits.clear()
        code, out, err = run("unlock", account, "--wait", "20", "--profile", "waiting-asker")
    finally:
        sandbox.state.approve = "auto"
    assert code == 0, err
    assert waits == [POLL_EVERY], "the request polled again after the client's interval, then approved"
    assert PASSWORD not in out + err


def test_a_refusal_is_the_servers_words_and_the_command_that_answers_it(sandbox):
    code, _, err = run("connect", sandbox.url, "--name", "Memories only", "--profile", "memories")
    assert code == 0, err
    code, out, err = run("account-new", "Acme", "--profile", "memories")
    assert code == 1 and out == ""
    assert err.startswith("refused: HTTP 403 SCOPE_MISSING: Creating an account needs account.create")
    assert 'hint: ask the owner for it: decoy-lab request account.create --reason "…" --profile memories' in err


def test_an_unknown_outcome_says_what_to_reuse_and_that_resend_finishes_it(sandbox, monkeypatch):
    """Every send's answer is lost after the write committed (no retries: one send)."""
    resume = Connection.resume.__func__

    def once(cls, profile="default", **kw):
        return resume(cls, profile, retries=0, backoff=0, **kw)

    monkeypatch.setattr(Connection, "resume", classmethod(once))
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        code, out, err = run("account-new", "Shop")
    finally:
        sandbox.state.faults.configure({})
    assert code == 1 and out == ""
    assert "unknown outcome: POST /api/agent/decoys: no send got an answer that proves it" in err
    key = err.split("--idempotency-key ", 1)[1].split()[0]
    assert f"decoy-lab account-new Shop --idempotency-key {key} answers the address it made" in err
    assert "decoy-lab resend finishes it" in err and "create_account" not in err, "in the shell's words"
    code, out, err = run("account-new", "Shop", "--idempotency-key", key)
    assert code == 0 and "made nothing new" in err, "the first try had made it: the same address"
    account = values(out)["account_id"]

    typed(monkeypatch, API_KEY + "\n")
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        code, out, err = run("field-add", account, "API key")
    finally:
        sandbox.state.faults.configure({})
    assert code == 1 and API_KEY not in out + err
    field_id = err.split("--field-id ", 1)[1].split()[0]
    assert f"decoy-lab field-add {account} 'API key' --field-id {field_id} is stored once" in err
    code, out, err = run("resend")
    assert code == 0, err
    assert [f["id"] for f in owner_sees(sandbox, account)["fields"]] == [field_id], "stored once"


def test_a_mistake_is_an_error_line_and_exit_2(sandbox, monkeypatch):
    code, out, _ = run("account-new", "Mistakes")
    account = values(out)["account_id"]
    typed(monkeypatch, "\n")
    code, _, err = run("password", account)
    assert code == 2 and err == "error: the password is empty: type it at the prompt, or pipe it in as one line\n"
    code, _, err = run("field-add", account, "PIN", "--type", "secret")
    assert code == 2 and err == "error: --type is one of concealed-string, string\n"
    code, _, err = run("password", "ffffffff")
    assert code == 2 and "error: no account this connection may see has an id starting 'ffffffff'" in err
    assert "(decoy-lab accounts lists them)" in err
    code, _, err = run("password", account, PASSWORD)  # a secret typed as an argument is refused, not sent
    assert code == 2 and "unrecognized arguments" in err
    assert owner_sees(sandbox, account)["credential"] == {"has_password": False, "stored": False}, "nothing sent"
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal of the value
        run("unlock", account, "--wait", "-1")
    assert exited.value.code == 2
    code, _, err = run("field-ad", account)
    assert code == 2 and "did you mean 'field-add'?" in err and "usage: decoy-lab field-add ACCOUNT LABEL" in err


def test_each_verb_says_in_its_help_where_a_secret_comes_from():
    import contextlib

    from decoy_lab.workbench.shell.cli import main

    for verb in ("password", "field-add", "field-set"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([verb, "-h"])
        said = " ".join(out.getvalue().split())
        assert "hidden prompt" in said and "never from the command line" in said, verb
