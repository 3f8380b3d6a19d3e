"""The account family's remaining writes as `decoy-lab` sub-commands (shell/account_writes.py),
against the sandbox over real HTTP: an account changed in place, an address burned (asked first),
the Personal Alias linked to an account burned, addresses paused, a password manager's export
imported.

001, `account_update`: "Identity fields (service_name/service_url/login_url/username/…) require an
accompanying `encrypted_data` re-seal … Metadata-only updates (status/two_factor_enabled/
agent_label/has_password) need no blob"; `decoy_burn`: "Permanently delete a decoy and all its
data. **Irreversible.** Use `PATCH` with `status: inactive` for a reversible pause";
`account_burn_decoy`: "An account's own Decoy email is never burned, replaced or rotated by an
agent: it goes only with its account (`403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`…)";
`decoy_pause_batch`: "Disable inbound mail on up to 20 decoys. Reversible. … Ids you may not touch
are listed in `failed` as "Not permitted" and left alone"; `account_create_batch`: "Results are
**per-item**: one malformed row fails alone, the rest are created".
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import NotFound
from decoy_lab.sandbox import Sandbox
from decoy_lab.transport import routes
from decoy_lab.workbench.shell.cli import main

from support.accounts_kit import personal_alias
from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")  # a connection holding everything: the vault key, alias.burn
PASSWORDS = ("pw-mail-1", "pw-bank-2")


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(
        ("--name", "CLI more writes", "--permission", "account.create"),
        ("--name", "CLI owner app", "--permission", "everything", *OWNER),
    ) as sb:
        yield sb


class Terminal(io.StringIO):
    """What is typed at a terminal."""

    def isatty(self) -> bool:
        return True


def piped(monkeypatch: pytest.MonkeyPatch, text: str = "") -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def at_terminal(monkeypatch: pytest.MonkeyPatch, typed: str) -> None:
    monkeypatch.setattr("sys.stdin", Terminal(typed))


def values(out: str) -> dict[str, str]:
    return dict(line.split(None, 1) for line in out.splitlines() if line.strip())


def rows(out: str) -> dict[str, str]:
    """`row N  outcome` lines as a dict."""
    return dict(re.fullmatch(r"(row \d+)\s+(.*)", line).groups() for line in out.splitlines())  # type: ignore[union-attr]


def served(profile: str, path: str) -> dict:
    with Connection.resume(profile) as conn:
        return conn.session.get(path)


def still_served(profile: str, decoy: str) -> bool:
    try:
        served(profile, f"{routes.DECOYS}/{decoy}")
    except NotFound:
        return False
    return True


def owner_sees(sb: Sandbox, account_id: str) -> dict:
    return httpx.get(f"{sb.url}/_sandbox/app-view", params={"account": account_id}).json()["accounts"][0]


# -- account-update ---------------------------------------------------------------------------------
def test_an_accounts_label_status_and_two_factor_change_in_place_and_the_answer_proves_it(sandbox):
    code, out, _ = run("account-new", "Gym", "--label", "gym")
    account = values(out)["account_id"]
    code, out, err = run("account-update", account[:8], "--label", "fitness", "--status", "inactive",
                         "--two-factor", "on")  # fmt: skip
    assert code == 0, err
    shown = values(out)
    assert shown["account_id"] == account
    assert (shown["agent_label"], shown["status"], shown["two_factor_enabled"]) == ("fitness", "inactive", "true")
    now = served("default", routes.account(account))
    assert (now["agent_label"], now["status"], now["two_factor_enabled"]) == ("fitness", "inactive", True)
    code, out, err = run("account-update", account[:8], "--two-factor", "off", "--status", "active")
    assert code == 0, err
    assert served("default", routes.account(account))["two_factor_enabled"] is False


def test_the_record_is_re_sealed_whole_to_the_owner(sandbox):
    code, out, _ = run("account-new", "Old Shop", "--username", "me@old.test")
    account = values(out)["account_id"]
    rev = served("default", routes.account(account))["rev"]
    code, out, err = run("account-update", account, "--service", "New Shop", "--url", "https://new.example",
                         "--username", "me@new.test")  # fmt: skip
    assert code == 0, err
    shown = values(out)
    assert shown["record"] == "re-sealed to the owner (name New Shop, username me@new.test, url https://new.example)"
    assert int(shown["rev"]) == rev + 1, "a write of the record bumps its rev"
    seen = owner_sees(sandbox, account)
    assert seen["readable"] and seen["name"] == "New Shop", "the owner's app opens the new record"


def test_account_update_mistakes_are_an_error_line_and_exit_2(sandbox):
    code, out, _ = run("account-new", "Mistaken")
    account = values(out)["account_id"]
    code, _, err = run("account-update", account)
    assert code == 2
    assert err == (
        "error: say what changes: --service (with --url, --username), --label, --clear-label, --status or "
        "--two-factor\n"
    )
    code, _, err = run("account-update", account, "--url", "https://x.example")
    assert code == 2 and "give --service NAME too" in err, "the record is sealed whole: never half of it"
    code, _, err = run("account-update", account, "--two-factor", "yes")
    assert code == 2 and err == "error: --two-factor is one of on, off\n"
    code, _, err = run("account-update", account, "--status", "deleted")
    assert code == 2 and err == "error: --status is one of active, inactive\n"
    assert served("default", routes.account(account))["rev"] == 1, "nothing was sent"


# -- decoy-burn -------------------------------------------------------------------------------------
def test_a_burn_without_a_terminal_needs_yes_and_sends_nothing_without_it(sandbox, monkeypatch):
    forums = personal_alias(sandbox, "Forums")
    piped(monkeypatch)
    code, out, err = run("decoy-burn", forums["id"][:8], *OWNER)
    assert code == 2 and out == ""
    assert err.startswith("error: decoy-burn is irreversible and stdin is not a terminal to confirm it at: give --yes")
    assert f"decoy-lab decoy-update {forums['id'][:8]} --status inactive pauses an address instead, reversibly" in err
    assert still_served("owner", forums["id"]), "nothing was sent"
    code, out, err = run("decoy-burn", forums["id"][:8], "--yes", *OWNER)
    assert code == 0, err
    shown = values(out)
    assert (shown["decoy_id"], shown["email"]) == (forums["id"], forums["email"]) and shown["burned_at"]
    assert not still_served("owner", forums["id"]), "burned: no longer served"


def test_on_a_terminal_the_address_is_typed_back_before_it_is_burned(sandbox, monkeypatch):
    news = personal_alias(sandbox, "News")
    at_terminal(monkeypatch, "news@decoys.me\n")
    code, out, err = run("decoy-burn", news["id"][:8], *OWNER)
    assert code == 1 and out == ""
    assert f"burning {news['email']} ({news['id']}) deletes it and all its mail for good: it is irreversible" in err
    assert f"decoy-lab decoy-update {news['id'][:8]} --status inactive pauses it instead" in err
    assert err.rstrip().endswith(f"not burned: what was typed is not {news['email']}; nothing was sent")
    assert still_served("owner", news["id"])
    at_terminal(monkeypatch, f"  {news['email'].upper()}\n")
    code, out, err = run("decoy-burn", news["id"][:8], *OWNER)
    assert code == 0, err
    assert values(out)["email"] == news["email"] and not still_served("owner", news["id"])


def test_an_accounts_own_address_is_refused_and_account_delete_is_named(sandbox):
    code, out, _ = run("account-new", "Own Mail", *OWNER)
    made = values(out)
    code, out, err = run("decoy-burn", made["decoy_id"], "--yes", *OWNER)
    assert code == 1 and out == ""
    assert err.startswith("refused: HTTP 403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT")
    assert "hint: an account's own Decoy email goes only with its account: decoy-lab account-delete ACCOUNT" in err
    assert still_served("owner", made["decoy_id"])


# -- account-burn-decoy -----------------------------------------------------------------------------
def test_the_alias_linked_to_an_account_is_burned_and_replaced(sandbox, monkeypatch):
    code, out, _ = run("account-save", "Linked Shop", *OWNER)
    account = out.strip()
    first = personal_alias(sandbox, "Linked One")
    code, _, err = run("protect", account, "--decoy", first["id"], *OWNER)
    assert code == 0, err
    piped(monkeypatch)
    code, _, err = run("account-burn-decoy", account[:8], *OWNER)
    assert code == 2 and "error: account-burn-decoy is irreversible" in err and "give --yes" in err
    assert served("owner", routes.account(account))["decoy_id"] == first["id"], "nothing was sent"
    at_terminal(monkeypatch, first["email"] + "\n")
    code, out, err = run("account-burn-decoy", account[:8], *OWNER)
    assert code == 0, err
    shown = values(out)
    assert shown["burned_decoy_id"] == first["id"] and shown["new_decoy_email"].endswith("@decoys.me")
    assert served("owner", routes.account(account))["decoy_id"] == shown["new_decoy_id"]
    assert not still_served("owner", first["id"])


def test_no_replace_leaves_the_account_without_an_address_and_its_own_email_is_refused(sandbox):
    code, out, _ = run("account-save", "Bare Shop", *OWNER)
    account = out.strip()
    linked = personal_alias(sandbox, "Bare")
    run("protect", account, "--decoy", linked["id"], *OWNER)
    code, out, err = run("account-burn-decoy", account, "--no-replace", "--yes", *OWNER)
    assert code == 0, err
    assert values(out) == {"account_id": account, "burned_decoy_id": linked["id"]}
    assert served("owner", routes.account(account))["decoy_id"] is None
    code, _, err = run("account-burn-decoy", account, "--yes", *OWNER)
    assert code == 2 and f"error: account {account} has no linked address to burn" in err
    code, out, _ = run("account-new", "Own Email", *OWNER)
    made = values(out)
    code, _, err = run("account-burn-decoy", made["account_id"], "--yes", *OWNER)
    assert code == 1 and err.startswith("refused: HTTP 403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT")
    assert "decoy-lab account-delete ACCOUNT --profile owner deletes both" in err
    assert "decoy-lab decoy-update DECOY --status inactive --profile owner pauses the address instead" in err
    assert served("owner", routes.account(made["account_id"]))["decoy_id"] == made["decoy_id"]


# -- decoy-pause ------------------------------------------------------------------------------------
def test_addresses_are_paused_and_one_it_may_not_touch_is_said_and_left_alone(sandbox):
    mine = [values(run("account-new", f"Pause {n}")[1])["decoy_id"] for n in (1, 2)]
    theirs = values(run("account-new", "Not Mine", *OWNER)[1])["decoy_id"]
    code, out, err = run("decoy-pause", mine[0][:8], mine[1], theirs, mine[0])
    assert code == 1
    assert out.splitlines() == [
        f"{mine[0]}  paused",
        f"{mine[1]}  paused",
        f"{theirs}  Not found",
    ]  # the server's words
    assert err.startswith("2 of 3 addresses paused; 1 not (each says why, and was left alone)")
    assert "decoy-lab decoy-update DECOY --status active resumes one" in err
    statuses = {d["id"]: d["status"] for d in json.loads(run("decoys", "--status", "all", "--json", *OWNER)[1])}
    assert [statuses[i] for i in (*mine, theirs)] == ["inactive", "inactive", "active"]
    code, out, err = run("decoy-pause", *mine)
    assert code == 0 and err.startswith("2 of 2 addresses paused"), "pausing a paused address changes nothing"


def test_more_than_twenty_are_sent_twenty_a_call(sandbox):
    """The route takes "up to 20 decoys in one call"; pausing is idempotent, so the verb splits."""
    ids = [personal_alias(sandbox, f"Many {n}")["id"] for n in range(21)]
    code, out, err = run("decoy-pause", *ids, *OWNER)
    assert code == 0, err
    assert out.splitlines() == [f"{i}  paused" for i in ids]
    code, out, _ = run("decoys", "--status", "inactive", "--json", *OWNER)
    assert set(ids) <= {d["id"] for d in json.loads(out)}


def test_a_pause_of_an_unknown_start_is_a_mistake(sandbox):
    code, _, err = run("decoy-pause", "ffffffff")
    assert code == 2 and "no Decoy address this connection may see has an id starting 'ffffffff'" in err


# -- account-import ---------------------------------------------------------------------------------
def test_a_csv_export_is_imported_row_by_row_and_no_password_is_printed(sandbox, tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(
        "name,url,username,password,note\n"
        f"Mail,https://mail.example,me@mail.test,{PASSWORDS[0]},\n"
        "Forum,https://forum.example,me,,old account\n"
        f"Bank,https://bank.example,me@bank.test,{PASSWORDS[1]},{'x' * 70_000}\n",
        encoding="utf-8",
    )
    code, out, err = run("account-import", str(export), *OWNER)
    assert code == 1, "one row failed"
    got = rows(out)
    assert got["row 1"].startswith("created ") and got["row 1"].endswith(" (Mail)")
    assert got["row 2"].startswith("created ") and got["row 2"].endswith(" (Forum)")
    assert got["row 3"].startswith("failed: ") and got["row 3"].endswith(" (Bank)"), "the oversized row alone"
    assert err.startswith("2 of 3 rows created, 1 failed (each says why; the rest were created)")
    assert not any(p in out + err for p in PASSWORDS)
    mail = got["row 1"].split()[1]
    seen = owner_sees(sandbox, mail)
    assert seen["readable"] and seen["name"] == "Mail" and seen["credential"]["has_password"]


def test_a_json_array_is_read_from_stdin(sandbox, monkeypatch):
    records = [{"name": "Chat", "username": "me", "password": PASSWORDS[0]}, {"title": "Notes", "notes": "n"}]
    piped(monkeypatch, json.dumps(records))
    code, out, err = run("account-import", "-", *OWNER)
    assert code == 0, err
    got = rows(out)
    assert list(got) == ["row 1", "row 2"] and got["row 2"].endswith(" (Notes)"), "title is the name"
    assert err == "2 of 2 rows created\n" and PASSWORDS[0] not in out + err


def test_an_import_mistake_names_the_row_and_sends_nothing(sandbox, tmp_path, monkeypatch):
    before = len(json.loads(run("accounts", "--json", *OWNER)[1]))
    no_name = tmp_path / "no-name.csv"
    no_name.write_text("url,username\nhttps://a.example,me\n", encoding="utf-8")
    code, _, err = run("account-import", str(no_name), *OWNER)
    assert code == 2 and "the CSV header has no name column (it names url, username); nothing was sent" in err
    piped(monkeypatch, '[{"name": "A"}, {"username": "b"}]')
    code, _, err = run("account-import", "-", *OWNER)
    assert (
        code == 2 and err == "error: stdin: row 2 has no name (the service): every record needs one; nothing was sent\n"
    )
    piped(monkeypatch, '[{"name": "A"},')
    code, _, err = run("account-import", "-", *OWNER)
    assert code == 2 and err.startswith("error: stdin: not JSON")
    code, _, err = run("account-import", str(tmp_path / "missing.csv"), *OWNER)
    assert code == 2 and "missing.csv: cannot be read as text" in err
    assert len(json.loads(run("accounts", "--json", *OWNER)[1])) == before


def test_without_the_vault_key_the_import_is_refused(sandbox, tmp_path):
    export = tmp_path / "one.csv"
    export.write_text("name\nOne\n", encoding="utf-8")
    code, out, err = run("account-import", str(export))
    assert code == 1 and out == ""
    assert err.startswith("refused: HTTP 404") and "it comes only with `everything`" in err


def test_a_lost_import_answer_is_unknown_and_never_sent_again(sandbox, tmp_path, monkeypatch):
    """ "A batch has no idempotency key": one send, its rows unknown, and the words say why."""
    resume = Connection.resume.__func__
    monkeypatch.setattr(
        Connection, "resume", classmethod(lambda cls, profile="default", **kw: resume(cls, profile, retries=0, **kw))
    )
    export = tmp_path / "lost.csv"
    export.write_text("name,username\nLost One,me\nLost Two,me\n", encoding="utf-8")
    before = len(json.loads(run("accounts", "--json", *OWNER)[1]))
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        code, out, err = run("account-import", str(export), *OWNER)
    finally:
        sandbox.state.faults.configure({})
    assert code == 1
    assert rows(out) == {
        "row 1": "unknown: sent, and no answer proves it (Lost One)",
        "row 2": "unknown: sent, and no answer proves it (Lost Two)",
    }
    assert "2 unknown: a batch has no idempotency key, so it is never sent again blindly" in err
    assert "unknown outcome: POST /api/agent/accounts/batch" in err
    assert "Do not import the file again" in err and "decoy-lab resend" in err
    assert len(json.loads(run("accounts", "--json", *OWNER)[1])) == before + 2, "it landed, once"
    code, _, err = run("resend", *OWNER)
    assert code == 0, err
    assert len(json.loads(run("accounts", "--json", *OWNER)[1])) == before + 2, "resend read first: not twice"


def test_each_new_verb_says_in_its_help_what_it_cannot_undo():
    for verb, words in (
        ("decoy-burn", "irreversible"),
        ("account-burn-decoy", "irreversible"),
        ("decoy-pause", "reversible"),
        ("account-import", "no idempotency key"),
        ("account-update", "re-seals its record"),
    ):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.suppress(SystemExit):
            main([verb, "-h"])
        assert words in " ".join(printed.getvalue().split()), verb
