"""`decoy-lab decoys` and `%decoy decoys`: the Decoy addresses this connection may see, one verb of
the verb table in both front ends, showing `Connection.decoys()` with the route's filters —
against the sandbox over real HTTP.

001, `decoy_list`: "List decoy identities with filtering, sorting, and cursor pagination" —
`status` (active, inactive, all; default active), `search` ("Search agent_label"), and the
date filters on when each was created."""

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

from decoy_lab.client.accountbook import ADDRESS_COLUMNS
from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.workbench.notebook.completion import complete

from support.magics import connect_by_magic
from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox() as sb:
        yield sb


def test_the_shell_lists_the_addresses_filters_them_and_says_why_none(sandbox, config):
    code, _, err = run("connect", sandbox.url, "--name", "CLI decoys", "--permission", "account.create")
    assert code == 0, err
    code, out, err = run("decoys")
    assert code == 0, err
    assert "(no Decoy addresses)" in out and "may see no Decoy addresses: it has created none" in err
    with Connection.resume("default", store=ProfileStore(config)) as conn:
        shop = conn.create_account("Acme", label="shop-signup")
        news = conn.create_account("Daily News", label="newsletter")
        assert conn.pause_decoys([news.decoy_id]) == {news.decoy_id: "paused"}

    code, out, err = run("decoys", "--json")
    assert code == 0, err
    (row,) = json.loads(out)  # active by default: the paused one is left out
    assert row["email"] == shop.email and row["label"] == "shop-signup" and row["status"] == "active"
    assert row["account_id"] == shop.account_id and row["name"] == "Acme"
    code, out, err = run("decoys", "--status", "all", "--search", "NEWS", "--json")
    assert code == 0, err
    assert [(r["email"], r["status"]) for r in json.loads(out)] == [(news.email, "inactive")]
    code, out, err = run("decoys", "--status", "all")
    assert code == 0, err
    assert shop.email in out and news.email in out and "Daily News" in out and "inactive" in out

    code, out, err = run("decoys", "--search", "nothing-like-it")
    assert code == 0 and "(no Decoy addresses)" in out
    assert "matches --search 'nothing-like-it'" in err and "decoy-lab decoys --status all" in err
    code, _, err = run("decoys", "--after", "2999-01-01")
    assert code == 0 and "matches --after '2999-01-01'" in err
    code, _, err = run("decoys", "--status", "inactive", "--before", "2999-01-01", "--json")
    assert code == 0, err
    code, _, err = run("decoys", "--status", "paused")
    assert code == 2 and "--status is one of active, inactive, all" in err


def test_the_shell_says_when_the_addresses_are_of_another_status(sandbox, config):
    with Connection.resume("default", store=ProfileStore(config)) as conn:
        active = conn.decoys()
        conn.pause_decoys(list(active["id"]))
    code, out, err = run("decoys")
    assert code == 0 and "(no Decoy addresses)" in out
    assert "No active Decoy addresses, but 2 addresses are inactive (paused)" in err


def test_the_magic_returns_the_addresses_frame(sandbox):
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "decoy_lab")
    conn = connect_by_magic(
        shell, f"{sandbox.url} --name magic-decoys --profile magic-decoys --permission account.create"
    )
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            empty = shell.run_line_magic("decoy", "decoys")
        assert isinstance(empty, pd.DataFrame) and empty.empty and list(empty.columns) == list(ADDRESS_COLUMNS)
        assert "%decoy request acctmail.read" in out.getvalue()
        made = conn.create_account("Library", label="books")
        frame = shell.run_line_magic("decoy", "decoys --search book")
        assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(ADDRESS_COLUMNS)
        assert frame.set_index("id").loc[made.decoy_id, "name"] == "Library"

        assert complete("%decoy decoys --status ina", None) == ["inactive"]
        assert "--search" in complete("%decoy decoys --s", None)
    finally:
        conn.close()
