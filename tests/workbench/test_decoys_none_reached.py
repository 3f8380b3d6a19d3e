"""`decoy-lab decoys` listing nothing says why in the connection's own terms. A connection that
holds a grant reaching addresses (acctmail.read on every account) while the owner has none is not
told "no grant covers one" — that would send it to ask for what it already holds."""

from __future__ import annotations

import pytest

from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def sandbox(config):
    with shell_sandbox(
        ("--name", "Mail reader", "--permission", "acctmail.read", "account.read"),
        ("--name", "Creator", "--permission", "account.create", "--new", "--profile", "creator"),
    ) as sb:
        yield sb


def test_a_grant_held_with_no_address_under_it_is_said_as_such(sandbox):
    code, out, err = run("decoys")
    assert code == 0 and "(no Decoy addresses)" in out, err
    assert "what it holds (acctmail.read) reaches none" in err and "no grant covers one" not in err
    assert "request acctmail.read" not in err  # it holds it already


def test_a_connection_with_no_such_grant_is_told_what_to_ask_for(sandbox):
    code, out, err = run("decoys", "--profile", "creator")
    assert code == 0 and "(no Decoy addresses)" in out, err
    assert "no grant covers one" in err and "request acctmail.read" in err
