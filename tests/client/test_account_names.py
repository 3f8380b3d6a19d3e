"""Account names: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." The owner keeps the list in the
sandbox (`sb.owner.add_account`); frames and the Map show the name."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import topicmap
from decoy_lab.client import Connection
from decoy_lab.crypto import AgentKey
from decoy_lab.sandbox import Sandbox


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def test_account_names_in_the_memories_frame_and_on_the_map(sb):
    netflix = sb.owner.add_account("Netflix")["id"]
    sb.owner.add_account("Bank")  # an account this connection holds no grant on: never listed
    conn = Connection.pair(
        sb.url,
        name="Accounts",
        permissions=["memory.save", {"permissions": ["acctmem.read", "acctmem.edit"], "account_id": netflix}],
        profile=None,
        agent_key=AgentKey.generate(),
        client_id=f"acct-{uuid.uuid4().hex[:6]}",
        on_link=lambda *a: None,
        backoff=0,
    )
    assert conn.account_names() == {netflix: "Netflix"}
    mid = conn.save("Shares the family plan.", account=netflix)
    sb.owner.share()
    vault = conn.load()
    row = vault.memories.set_index("id").loc[mid]
    assert row["account"] == netflix and row["account_name"] == "Netflix"
    # a link from You to the account: its end carries no name, the Map names it from the list
    G = topicmap.build_graph({"memories": vault.memories, "topics": vault.topics, "links": _link_to(netflix)})
    assert G.nodes[f"account:{netflix}"]["name"] == "Netflix"


def _link_to(account_id: str):
    import pandas as pd

    return pd.DataFrame(
        [{"endpoints": ["user", f"account:{account_id}"], "from": "", "to": "", "relation_type": "uses"}]
    )
