"""Account names in the views: the Map, the map widget, the memory table and `VaultView`, over
real HTTP against the sandbox.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." Where the list gives no name (not
granted: `GET /api/agent/accounts` is "x-scope: account.read"), each view shows the id with
"no name", never something that passes for a name."""

from __future__ import annotations

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.views import topicmap
from decoy_lab.widgets import MemoryGrid, TopicMapWidget, VaultView
from decoy_lab.workbench.display import readable_view

from support.accounts_kit import connect, vault_with_an_account


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def _loaded(sb, conn, account_id: str):
    vault, _link, mid = vault_with_an_account(sb, conn, account_id)
    return vault, mid


def _node(nodes: list[dict], node_id: str) -> dict:
    return next(n for n in nodes if n["id"] == node_id)


def test_the_map_the_table_and_the_vault_view_name_a_linked_account(sb):
    netflix = sb.owner.add_account("Netflix")["id"]
    conn = connect(sb, "memory.save", {"permissions": ["account.read", "acctmem.read"], "account_id": netflix})
    vault, mid = _loaded(sb, conn, netflix)
    end = f"account:{netflix}"
    G = topicmap.build_graph(vault)
    assert G.nodes[end]["kind"] == "account" and G.nodes[end]["name"] == "Netflix"
    assert G.has_edge(topicmap.find_node(G, "Streaming"), end)
    node = _node(TopicMapWidget(vault).nodes, end)
    assert node["name"] == "Netflix" and node["label"] == "Netflix"
    rows = MemoryGrid(vault).rows
    i = rows["id"].index(mid)
    assert rows["topic"][i] == "Netflix" and rows["account"][i] == "Netflix"
    view = VaultView(vault)
    assert _node(view.map.nodes, end)["name"] == "Netflix"
    assert view.browser.grid.rows["account"][view.browser.grid.rows["id"].index(mid)] == "Netflix"
    # the readable frame `%decoy memories` and `decoy-lab memories` show: the account, not "You"
    shown = readable_view(vault.memories.set_index("id").loc[[mid]].reset_index(), ["text", "topic"])
    assert shown["topic"].tolist() == ["Netflix"]


def test_a_memory_about_an_account_is_filed_under_it_on_the_map(sb):
    """ "A memory about an account stays with that account": the Map counts it on the account's
    node (named from the list, linked or not), and picking that node filters the table to it."""
    gym = sb.owner.add_account("Gym")["id"]
    conn = connect(sb, "memory.save", {"permissions": ["account.read", "acctmem.read"], "account_id": gym}, name="Gym")
    mid = conn.save("Renews the membership in March.", account=gym)
    conn.save("Prefers short answers.")
    vault = conn.load()
    end = f"account:{gym}"
    G = topicmap.build_graph(vault)
    assert G.nodes[end]["name"] == "Gym" and G.nodes[end]["memories"] == 1 and G.has_edge(topicmap.USER, end)
    assert topicmap.memories_of(vault, G, end)["id"].tolist() == [mid]
    assert mid not in topicmap.memories_of(vault, G, topicmap.USER)["id"].tolist()
    view = VaultView(vault)
    view.map.selected = end
    assert view.browser.grid.frame["id"].tolist() == [mid]
    view.browser.grid.picked = mid
    assert view.map.ringed == end


def test_without_the_list_the_views_show_the_id_and_no_name(sb):
    netflix = sb.owner.add_account("Netflix")["id"]
    conn = connect(sb, "memory.save", {"permissions": ["acctmem.read"], "account_id": netflix}, name="No list")
    vault, mid = _loaded(sb, conn, netflix)
    end = f"account:{netflix}"
    why = vault.account_names.unavailable
    assert why and "SCOPE_MISSING" in why
    full = f"{end} (no name: {why})"
    assert topicmap.build_graph(vault).nodes[end]["name"] == full
    node = _node(TopicMapWidget(vault).nodes, end)
    assert node["name"] == full and node["label"] == f"account:{netflix[:8]}… (no name)"
    rows = VaultView(vault).browser.grid.rows
    i = rows["id"].index(mid)
    assert rows["topic"][i] == f"account:{netflix[:8]}… (no name)" and rows["account"][i] == full
    assert "Netflix" not in full + rows["topic"][i]
