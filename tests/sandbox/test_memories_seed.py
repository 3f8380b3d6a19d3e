"""The seed vaults: "demo" has something real to show; "none" is empty."""

from __future__ import annotations

from collections import Counter

import pytest

from decoy_lab import memory
from decoy_lab.sandbox.phone import appview, seed

from support.sandbox_kit import Lab


@pytest.fixture(scope="module")
def demo():
    return Lab(seed="demo")


def test_demo_vault_contents(demo):
    """About 60 memories over a dozen topics, every category used, a few account memories, written by the
    owner and by a second agent, and a legacy space with rows — all openable by the owner's app."""
    view = appview.app_view(demo.state)
    kinds = Counter(e["kind"] for e in view)
    assert kinds["memory"] == 60 and kinds["topic"] == 12 and kinds["link"] == 12 and kinds["space_row"] == 4
    assert all(e["readable"] for e in view), [e for e in view if not e["readable"]]
    assert all(e["problems"] == [] for e in view)
    mems = [e for e in view if e["kind"] == "memory"]
    assert {c for e in mems for c in e["categories"]} == set(memory.CATEGORIES)
    assert sum(1 for e in mems if e["account"]) >= 3
    assert {e["author_kind"] for e in mems} == {"owner", "agent"}
    assert {e["author"] for e in mems if e["author_kind"] == "agent"} == {seed.DEMO_AGENT}
    links = [e for e in view if e["kind"] == "link"]
    assert any(link["from"] == "Lisbon trip" for link in links)  # a trip with sub-topics


def test_a_new_reader_is_preparing_then_shared(demo):
    """A connection paired after the seed holds no key yet: its first read is `preparing`; the owner's phone
    shares, and then it reads the vault with decoy_lab.memory."""
    reader = demo.pair("tour", {"permissions": ["memory.read"]})
    first = reader.memories()
    assert first["memories"] == [] and first["preparing_others"] == 84
    demo.share()
    after = reader.memories()
    assert "preparing_others" not in after  # the 3 account memories are not owed to an all-memories reader
    served = after["memories"]
    summary = memory.summarize_rows(served, reader.key)
    assert (summary.memories, summary.topics, summary.links, summary.unreadable) == (
        57,
        12,
        12,
        0,
    )  # 3 are about accounts


def test_none_is_empty():
    lab = Lab(seed="none")
    assert appview.app_view(lab.state) == []


def test_ids_and_texts_repeat_for_a_seed():
    def look(lab):
        return [(e["id"], e.get("text"), e.get("name"), e["created_at"]) for e in appview.app_view(lab.state)]

    a, b = look(Lab(seed="demo")), look(Lab(seed="demo"))
    assert a == b and len(a) == 88
    assert len({x[0] for x in a}) == 88
    # ids outside the seed stay random
    owner = Lab(seed="none").state.owner.public_key_b64
    keys = memory.RecipientKeys(owner, owner)
    assert memory.new_memory_row(keys, "x")["id"] != memory.new_memory_row(keys, "x")["id"]


def test_the_demos_accounts_are_in_the_owners_account_list(demo):
    """The demo's memories about accounts name `account:<uuid>` ("never the account's name"); the
    owner's authorized account list names them, for a connection that may list accounts."""
    about = {e["account"] for e in appview.app_view(demo.state) if e["kind"] == "memory" and e["account"]}
    assert {a["id"]: a["service_name"] for a in demo.owner.accounts()} == dict(
        zip(demo.state.seed_report.accounts, seed.ACCOUNT_NAMES)
    )
    assert about == set(demo.state.seed_report.accounts)
    reader = demo.pair("names", "account.read")
    listed = reader.get("/api/agent/accounts").json()["accounts"]
    assert sorted(a["service_name"] for a in listed) == sorted(seed.ACCOUNT_NAMES)
