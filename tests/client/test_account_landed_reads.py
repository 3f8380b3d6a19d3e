"""Finishing an account write that is not safe to repeat reads which of its records landed — newest
first, and never a guess: a list too long to settle it within the pages read sends nothing.

001, `account_create` and `account_create_batch` carry no idempotency key, so a record sent again
that had in fact landed is a second account. `account_list`: "Supports cursor pagination, sorting,
and filters" (`sort_by` "created_at"); the write was first sent at the entry's `at`, so no record
it created is older than that (give or take the two clocks).

The page size and count are lowered here so a handful of accounts stands for a long list.
"""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.protocol import accounts_pending
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import Meddler, committed_then_lost, lost, scripted_pair, scripted_resume


@pytest.fixture
def short_pages(monkeypatch) -> None:
    monkeypatch.setattr(accounts_pending, "LANDED_LIMIT", 1)
    monkeypatch.setattr(accounts_pending, "LANDED_PAGES", 3)


def pair(sb, store: ProfileStore, meddler: Meddler) -> Connection:
    return scripted_pair(
        sb, "Landed reads", meddler=meddler, profile="work", store=store, permissions=["everything"], retries=0
    )[0]


def later(store: ProfileStore, meddler: Meddler) -> Connection:
    return scripted_resume("work", meddler, store=store)


def noting(asked: list[dict]):
    """A Meddler step that notes the query of the request and lets it through."""

    def step(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        asked.append(dict(request.url.params))
        return inner.handle_request(request)

    return step


def list_reads(meddler: Meddler) -> int:
    """The newest-first reads of the account list this connection made."""
    return sum(1 for m, p, _ in meddler.seen if (m, p) == ("GET", routes.ACCOUNTS))


def test_a_record_that_landed_is_found_under_newer_accounts(sb, store, short_pages):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    meddler.plan("POST", routes.ACCOUNTS, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Landed First")
    newer = [conn.save_account(f"Newer {n}") for n in range(2)]
    reader, asked = Meddler(), []
    conn.close()
    again = later(store, reader)
    reader.plan("GET", routes.ACCOUNTS, *[noting(asked)] * 3)
    (done,) = again.resend()
    assert done["outcome"] == "committed" and done["said"].startswith("it had landed: account"), done
    assert done["landed"][0] not in newer and reader.bodies("POST", routes.ACCOUNTS) == []
    assert list_reads(reader) == 3, "one account a page, newest first: found on the third"
    assert {(q["sort_by"], q["order"]) for q in asked} == {("created_at", "desc")}
    again.close()


def test_a_list_too_long_to_settle_it_sends_nothing_and_the_entry_stays(sb, store, short_pages):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    meddler.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Never Arrived")
    for n in range(4):
        conn.save_account(f"Later {n}")
    reader = Meddler()
    with pytest.raises(OutcomeUnknown) as caught:
        later(store, reader).resend()
    assert "goes on past 3 pages of 1" in str(caught.value) and "nothing was sent again" in str(caught.value)
    assert reader.bodies("POST", routes.ACCOUNTS) == [] and [p["kind"] for p in conn.pending] == ["account"]
    conn.close()


def test_accounts_older_than_the_write_end_the_read_and_it_is_sent_once(sb, store, short_pages, monkeypatch):
    monkeypatch.setattr(accounts_pending, "CLOCK_SKEW", 0.0)  # one machine: the two clocks agree
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    for n in range(4):
        conn.save_account(f"Before {n}")
    meddler.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Sent Later")
    reader = Meddler()
    (done,) = later(store, reader).resend()
    assert done["outcome"] == "committed" and done["said"].startswith("it had not landed; sent now"), done
    assert list_reads(reader) == 1, "the newest account read is older than the write: nothing newer to find"
    assert len(reader.bodies("POST", routes.ACCOUNTS)) == 1
    conn.close()
