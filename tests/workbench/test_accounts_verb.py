"""`decoy-lab accounts` and `%decoy accounts`: one verb of the verb table, in both front ends,
showing `Connection.accounts()` — against the sandbox over real HTTP."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.vault.account_list import ACCOUNT_COLUMNS

from support.magics import connect_by_magic
from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox() as sb:
        yield sb


def test_the_shell_lists_the_accounts_with_their_address_and_fields(sandbox, config):
    code, _, err = run("connect", sandbox.url, "--name", "CLI accounts", "--permission", "account.create")
    assert code == 0, err
    code, out, err = run("accounts")
    assert code == 0, err
    assert "may see no accounts: it has created none" in err and "decoy-lab request account.read" in err
    with Connection.resume("default", store=ProfileStore(config)) as conn:
        made = conn.create_account("Acme", username="me@acme.test")
        conn.add_field(made.account_id, "API key", "sk-live-1")
    code, out, err = run("accounts", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["id"] == made.account_id and row["service"] == "Acme" and row["decoy_email"] == made.email
    assert row["field_labels"] == ["API key"] and row["created_by"] == "this connection"
    assert "sk-live-1" not in out, "a field's value is never listed"
    code, out, err = run("accounts")
    assert code == 0, err
    assert "Acme" in out and made.email in out and "API key" not in out.split("service")[0]


def test_the_magic_returns_the_accounts_frame(sandbox):
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "decoy_lab")
    conn = connect_by_magic(
        shell, f"{sandbox.url} --name magic-accounts --profile magic-accounts --permission account.create"
    )
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            empty = shell.run_line_magic("decoy", "accounts")
        assert isinstance(empty, pd.DataFrame) and empty.empty
        assert "may see no accounts" in out.getvalue() and "%decoy request account.read" in out.getvalue()
        made = conn.create_account("Library")
        frame = shell.run_line_magic("decoy", "accounts")
        assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(ACCOUNT_COLUMNS)
        assert frame.set_index("id").loc[made.account_id, "service"] == "Library"
    finally:
        conn.close()
