"""`decoy-lab decoys` lists a Personal Alias, an address no account owns, beside an account's own
address — against the sandbox over real HTTP.

001, `decoy_list`: a decoy's `account_id` is null for a Personal Alias ("An account's permissions
never reach a Personal Alias"; `alias.read` does). The table's account column stays empty for it;
it once stopped the whole listing with a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from decoy_lab.sandbox import Sandbox

from support.shell_runs import prompt_sandbox, run, shell_env


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with shell_env(tmp_path), prompt_sandbox() as sb:
        yield sb


def test_a_personal_alias_lists_with_no_account(sandbox):
    code, _, err = run("connect", sandbox.url, "--name", "Alias lister", "--permission", "account.create", "alias.read")
    assert code == 0, err
    alias = httpx.post(f"{sandbox.url}/_sandbox/aliases", json={"name": "Shopping"}, trust_env=False)
    assert alias.status_code == 201, alias.text
    code, out, err = run("account-new", "Acme")
    assert code == 0, err

    code, out, err = run("decoys", "--json")
    assert code == 0, err
    by_email = {r["email"]: r for r in json.loads(out)}
    assert by_email[alias.json()["email"]]["account_id"] is None

    code, out, err = run("decoys")
    assert code == 0, err
    assert "Traceback" not in err
    (alias_line,) = [line for line in out.splitlines() if alias.json()["email"] in line]
    assert alias_line.split()[-1] == "active"  # the account column is empty for it
    (acme_line,) = [line for line in out.splitlines() if "Acme" in line]
    assert acme_line.split()[-1] != "active"  # an account's own address names its account
