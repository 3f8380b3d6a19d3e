"""account-burn-decoy refused for want of --yes says what pauses the address instead — in words
that name no address, since its line names the account: `decoy-update ACCOUNT_ID` would look for
an address with the account's id. In the shell (stdin a pipe) and in the notebook, over real HTTP.

001, `account_burn_decoy`: the linked Personal Alias is burned, irreversibly; `decoy_burn`: "Use
`PATCH` with `status: inactive` for a reversible pause".
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from IPython.core.error import UsageError

from decoy_lab.sandbox import Sandbox
from decoy_lab.transport import routes

from support.magics import connect_by_magic, decoy_shell
from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(("--name", "Unconfirmed burns", "--permission", "everything", *OWNER)) as sb:
        yield sb


def linked_account(sb: Sandbox) -> tuple[str, str]:
    """An account with a Personal Alias linked to it: (the account's id, the alias's id)."""
    code, out, err = run("account-save", "Linked Shop", *OWNER)
    assert code == 0, err
    r = httpx.post(f"{sb.url}/_sandbox/aliases", json={"name": "Linked"})
    assert r.status_code == 201, r.text
    alias = r.json()["id"]
    code, _, err = run("protect", out.strip(), "--decoy", alias, *OWNER)
    assert code == 0, err
    return out.strip(), alias


def test_the_shell_names_no_address_it_was_not_given(sandbox, monkeypatch):
    account, alias = linked_account(sandbox)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, out, err = run("account-burn-decoy", account[:8], *OWNER)
    assert code == 2 and out == "" and err.startswith("error: account-burn-decoy is irreversible")
    assert "decoy-lab decoy-update DECOY --status inactive pauses an address instead" in err
    assert f"decoy-update {account[:8]}" not in err
    code, out, _ = run("decoys", "--json", "--status", "all", *OWNER)
    assert alias in out, "nothing was sent"


def test_the_notebook_names_no_address_it_was_not_given(sandbox, tmp_path):
    account, alias = linked_account(sandbox)
    with decoy_shell(tmp_path) as ip:
        conn = connect_by_magic(ip, f"{sandbox.url} --name nb-unconfirmed --profile nb --permission everything")
        try:
            with pytest.raises(UsageError) as caught:
                ip.run_line_magic("decoy", f"account-burn-decoy {account}")
            said: Any = str(caught.value)
            assert "account-burn-decoy is irreversible" in said
            assert "%decoy decoy-update DECOY --status inactive pauses an address instead" in said
            assert f"decoy-update {account}" not in said
            assert conn.session.get(routes.account(account))["decoy_id"] == alias, "nothing was sent"
        finally:
            conn.close()
