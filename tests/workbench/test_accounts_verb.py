"""`decoy-lab accounts` and `%decoy accounts`: one verb of the verb table, in both front ends,
showing `Connection.accounts()` — against the sandbox over real HTTP."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

from decoy_lab.client.connection import Connection
from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING, ProfileStore
from decoy_lab.vault.account_list import ACCOUNT_COLUMNS
from decoy_lab.workbench.shell.cli import main


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("config")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_DIR, str(path))
        mp.setenv(ENV_KEYRING, "0")
        mp.setenv("COLUMNS", "160")
        yield path


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[object]:
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none") as sb:
        sb.state.device_interval = 0
        yield sb


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_shell_lists_the_accounts_with_their_address_and_fields(sandbox, config):
    code, _, err = _run("connect", sandbox.url, "--name", "CLI accounts", "--permission", "account.create")
    assert code == 0, err
    code, out, err = _run("accounts")
    assert code == 0, err
    assert "may see no accounts: it has created none" in err and "decoy-lab request account.read" in err
    with Connection.resume("default", store=ProfileStore(config)) as conn:
        made = conn.create_account("Acme", username="me@acme.test")
        conn.add_field(made.account_id, "API key", "sk-live-1")
    code, out, err = _run("accounts", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["id"] == made.account_id and row["service"] == "Acme" and row["decoy_email"] == made.email
    assert row["field_labels"] == ["API key"] and row["created_by"] == "this connection"
    assert "sk-live-1" not in out, "a field's value is never listed"
    code, out, err = _run("accounts")
    assert code == 0, err
    assert "Acme" in out and made.email in out and "API key" not in out.split("service")[0]


def test_the_magic_returns_the_accounts_frame(sandbox):
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "decoy_lab")
    magics = shell.magics_manager.registry["DecoyMagics"]
    before = magics.connection  # the shell is the process's one IPython: an earlier test's may be current
    conn = shell.run_line_magic(
        "decoy", f"connect {sandbox.url} --name magic-accounts --profile magic-accounts --permission account.create"
    )
    try:
        if not isinstance(conn, Connection):  # the widget: its pairing finishes in a thread of its own
            deadline = time.monotonic() + 30
            while magics.connection in (None, before) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert magics.connection not in (None, before), "the pairing did not finish"
            conn = magics.conn()
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
