"""`decoy-lab unlock --reveal` shows a secret holding control characters escaped — a password
another agent set is untrusted text, never acted on by the terminal — and says so, since what is
shown is then not the value to copy; `--json --reveal` gives its exact text (JSON escapes it)."""

from __future__ import annotations

import json

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.store.profiles import ProfileStore

from support.shell_runs import run, shell_sandbox

ODD = "pw\x1b]0;x\x07-9"  # an escape sequence inside a password


@pytest.fixture(scope="module")
def account(config):
    with shell_sandbox(("--name", "Reveal", "--permission", "account.create")) as sb:
        with Connection.resume("default", store=ProfileStore(config)) as conn:
            account_id = conn.save_account("Odd Co", username="me@odd.test")
            conn.set_password(account_id, ODD)
        code, _, err = run("unlock", account_id)
        assert code == 1 and err.startswith("preparing"), err  # the phone owes this connection a copy
        assert httpx.post(f"{sb.url}/_sandbox/keep", json={}).status_code == 200  # and makes it
        yield account_id


def test_reveal_shows_it_escaped_and_says_so(account):
    code, out, err = run("unlock", account, "--reveal")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "pw\\x1b]0;x\\x07-9" in out
    assert "shown escaped: --json --reveal gives its exact text" in err


def test_json_reveal_gives_the_exact_text(account):
    code, out, err = run("unlock", account, "--reveal", "--json")
    assert code == 0, err
    assert json.loads(out)["password"] == {"length": len(ODD), "value": ODD}
    assert "\x1b" not in out  # JSON's own escape


def test_without_reveal_nothing_is_said(account):
    code, out, err = run("unlock", account)
    assert code == 0 and "shown escaped" not in err and "-9" not in out, (out, err)
