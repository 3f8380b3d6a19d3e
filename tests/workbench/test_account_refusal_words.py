"""What the shell says on two account mistakes a new user made, against the sandbox over HTTP:
- `protect ACCOUNT --decoy X` on an account that has its own Decoy email is refused (001
  `account_protect`: "An account's current Decoy email is never replaced this way: `403
  ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`"); its hint says the account keeps its address, not how to
  burn or delete it;
- `field-delete ACCOUNT LABEL` with a label no field has says it was looked for as a label too,
  and where the labels are shown."""

from __future__ import annotations

import pytest

from support.accounts_kit import personal_alias
from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def account(config):
    with shell_sandbox(("--name", "Words", "--permission", "everything")) as sb:
        code, out, err = run("account-new", "Acme Words")
        assert code == 0, err
        made = dict(line.split(None, 1) for line in out.splitlines())
        yield sb, made["account_id"]


def test_protect_over_an_own_email_hints_that_it_keeps_it(account):
    sb, account_id = account
    spare = personal_alias(sb, "Spare")
    code, _, err = run("protect", account_id, "--decoy", spare["id"])
    assert code == 1 and "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT" in err, err
    assert "hint: the account keeps the Decoy email it has" in err and "already_protected" in err
    assert "account-delete" not in err and "decoy-update" not in err


def test_a_label_no_field_has_is_said_as_looked_for_as_a_label(account):
    _, account_id = account
    code, _, err = run("field-delete", account_id, "Recovery code")
    assert code == 2, err
    assert err.startswith(
        "error: no field of this account this connection may see has the id, the start of an id, or the "
        "label 'Recovery code' (decoy-lab accounts --json lists each account's field_labels)"
    ), err
