"""Account names from the authorized account list, over real HTTP against the sandbox.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list", and a memory about an account names it
as `account:<account uuid>` "(never the account's name)". The list is `GET /api/agent/accounts`
("x-scope: account.read"; "List endpoints return only what the permissions cover"). Where it gives
no name, the account reads as its id with the reason, never as a name."""

from __future__ import annotations

import pandas as pd
import pytest

from decoy_lab.errors import TransportError
from decoy_lab.sandbox import Sandbox
from decoy_lab.vault.frames import AccountNames

from support.accounts_kit import connect, link_to_account, vault_with_an_account


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def _vault_with_an_account(sb, conn, account_id: str):
    """The loaded vault, its link row and its memory row (support.accounts_kit)."""
    vault, link, mid = vault_with_an_account(sb, conn, account_id)
    return vault, vault.links.set_index("id").loc[link], vault.memories.set_index("id").loc[mid]


def test_a_link_to_an_account_and_a_memory_about_it_show_the_accounts_name(sb):
    netflix = sb.owner.add_account("Netflix")["id"]
    sb.owner.add_account("Bank")  # an account this connection holds no grant on: never listed
    conn = connect(
        sb, "memory.save", {"permissions": ["account.read", "acctmem.read", "acctmem.edit"], "account_id": netflix}
    )
    names = conn.account_names()
    assert names == {netflix: "Netflix"} and isinstance(names, AccountNames) and names.unavailable is None
    vault, link, mem = _vault_with_an_account(sb, conn, netflix)
    assert link["to_id"] == f"account:{netflix}" and link["to"] == "Netflix" and link["from"] == "Streaming"
    assert mem["account"] == netflix and mem["account_name"] == "Netflix" and mem["account_label"] == "Netflix"
    assert not any("no name" in n for n in vault.notes)


def test_names_are_fetched_when_only_a_link_refers_to_an_account(sb):
    """No memory is about the account, only a link ends at it: the list is still read."""
    acct = sb.owner.add_account("Airline")["id"]
    conn = connect(sb, "memory.save", {"permissions": ["account.read"], "account_id": acct}, name="Links only")
    conn.save("Flies to Lisbon in May.", topic="Lisbon trip")
    link = link_to_account(conn, "Lisbon trip", acct, "books with")
    vault = conn.load()
    assert vault.memories["account"].isna().all()
    assert vault.links.set_index("id").loc[link, "to"] == "Airline"
    assert vault.account_names == {acct: "Airline"}


def test_without_the_list_an_account_reads_as_its_id_and_why(sb):
    """A connection whose permissions carry no `account.read` scope is refused the list
    (`403 SCOPE_MISSING`): `account_names()` is empty with the reason, nothing is raised, and
    each account shows as `account:<id> (no name: …)` — in the links frame, the memories frame's
    `account_label` (its `account_name` stays <NA>: no name is made up) and the vault's notes."""
    netflix = sb.owner.add_account("Netflix")["id"]
    conn = connect(
        sb, "memory.save", {"permissions": ["acctmem.read", "acctmem.edit"], "account_id": netflix}, name="No list"
    )
    names = conn.account_names()
    assert names == {} and "SCOPE_MISSING" in names.unavailable and "account.read" in names.unavailable
    vault, link, mem = _vault_with_an_account(sb, conn, netflix)
    shown = f"account:{netflix} (no name: {names.unavailable})"
    assert link["to"] == shown and mem["account_label"] == shown and pd.isna(mem["account_name"])
    assert "Netflix" not in shown
    assert any("no name" in n and "SCOPE_MISSING" in n for n in vault.notes)


def test_an_account_not_in_the_list_says_so(sb):
    bank = sb.owner.add_account("Bank")["id"]
    other = sb.owner.add_account("Gym")["id"]
    conn = connect(sb, "memory.save", {"permissions": ["account.read"], "account_id": bank}, name="Bank only")
    conn.save("Climbs on Tuesdays.", topic="Climbing")
    link = link_to_account(conn, "Climbing", other, "trains at")
    vault = conn.load()
    assert vault.account_names == {bank: "Bank"}
    assert (
        vault.links.set_index("id").loc[link, "to"] == f"account:{other} (no name: not in the authorized account list)"
    )


def test_a_list_that_cannot_be_read_is_no_names_with_the_reason(sb, monkeypatch):
    """An unknown outcome (the network, a 5xx) after the read's retries is no names either: the
    load goes on and each account says why it is unnamed."""
    conn = connect(sb, "memory.save", name="Offline list")

    def lost(path, params=None, **members):
        raise TransportError("connection reset while reading the answer", sent=True)

    monkeypatch.setattr(conn.session, "get", lost)
    names = conn.account_names()
    assert names == {} and names.unavailable.startswith("the authorized account list could not be read")
    assert names.label("0000").startswith("account:0000 (no name: the authorized account list could not be read")


def test_every_page_of_the_list_is_read(sb, monkeypatch):
    """ "Supports cursor pagination": a name on a later page is a name, not "not in the list"."""
    conn = connect(sb, "memory.save", name="Paged list")
    pages = {
        None: {
            "accounts": [{"id": "a1", "service_name": "One"}],
            "pagination": {"has_more": True, "next_cursor": "c2"},
        },
        "c2": {"accounts": [{"id": "a2", "service_name": "Two"}, {"id": "a3"}], "pagination": {"has_more": False}},
    }
    asked = []

    def get(path, params=None, **members):
        asked.append((path, params))
        return pages[(params or {}).get("cursor")]

    monkeypatch.setattr(conn.session, "get", get)
    names = conn.account_names()
    assert names == {"a1": "One", "a2": "Two"} and asked[1] == ("/api/agent/accounts", {"cursor": "c2"})
    assert names.why_unnamed("a3") == "the authorized account list gives it no service_name"
    assert names.why_unnamed("a4") == "not in the authorized account list"
