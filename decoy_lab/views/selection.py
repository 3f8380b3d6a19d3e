"""Choosing within the Map: a node by name or id, the tree of parents and children, the filters
build_graph applies, and the memories filed under a node, with why this connection sees it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import pandas as pd

from decoy_lab.errors import MemoryModelError
from decoy_lab.memory import normalize_topic_name
from decoy_lab.views.nodes import USER, account_node, as_list, column_values, frames_of, row_value, topic_node
from decoy_lab.vocab import USER_NAMES


def find_node(G: nx.DiGraph, name_or_id: str) -> str | None:
    """The node for a topic given by `topic:<id>`, bare id, or name (normalized; "You" is the
    user); None if absent."""
    if name_or_id in G:
        return name_or_id
    if topic_node(name_or_id) in G:
        return topic_node(name_or_id)
    want = normalize_topic_name(str(name_or_id))
    if want in USER_NAMES:
        return USER
    for node, data in G.nodes(data=True):
        if node != USER and normalize_topic_name(str(data.get("name", ""))) == want:
            return node
    return None


def filter_graph(G: nx.DiGraph, *, topic: str | None, depth: int | None, category: str | None) -> nx.DiGraph:
    keep = set(G)
    if category is not None:
        keep = {n for n in keep if n == USER or category in G.nodes[n].get("categories", set())}
    if topic is not None:
        node = find_node(G, topic)
        if node is None:
            raise MemoryModelError(f"no topic named {topic!r} on the map")
        tree = children_of(G)
        below = {node} | _descendants(tree, node)
        path = set(nx.shortest_path(G, USER, node)) if nx.has_path(G, USER, node) else {USER, node}
        keep &= below | path
    if depth is not None:  # hops from You, or below the chosen topic when there is one
        base = G.nodes[node]["depth"] if topic is not None else 0
        keep = {n for n in keep if G.nodes[n]["depth"] <= base + depth}
    keep.add(USER)
    H = G.subgraph(keep).copy()
    for node in H:  # a kept topic whose parent was filtered out hangs from You
        if node != USER and H.nodes[node]["parent"] not in H:
            H.nodes[node]["parent"] = USER
    return H


def children_of(G: nx.DiGraph) -> dict[str, list[str]]:
    tree: dict[str, list[str]] = {n: [] for n in G}
    for node, data in G.nodes(data=True):
        if node != USER and data.get("parent") in tree:
            tree[data["parent"]].append(node)
    for kids in tree.values():
        kids.sort(key=lambda n: (str(G.nodes[n].get("name", "")).lower(), n))
    return tree


def _descendants(tree: dict[str, list[str]], node: str) -> set[str]:
    out: set[str] = set()
    stack = list(tree.get(node, []))
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(tree.get(n, []))
    return out


def memory_nodes(source: Any) -> pd.Series:
    """The map node each memory is filed under, aligned with the memories frame: its topic's
    listed node (a same-name copy counts under the listed one), its account's node (`account:<id>`:
    "A memory about an account stays with that account"), or You when it has neither."""
    memories, topics, _ = frames_of(source)
    if memories.empty or ("topic_id" not in memories and "account" not in memories):
        return pd.Series([USER] * len(memories), index=memories.index, dtype=object)
    alias: dict[str, str] = {}
    for row in topics.to_dict("records"):
        node = topic_node(row_value(row, "id", "topic_id"))
        for copy in as_list(row_value(row, "ids")):
            alias[topic_node(copy)] = node
    return pd.Series(
        [
            alias.get(topic_node(t), topic_node(t))
            if isinstance(t, str) and t
            else account_node(a)
            if isinstance(a, str) and a
            else USER
            for t, a in zip(column_values(memories, "topic_id"), column_values(memories, "account"))
        ],
        index=memories.index,
        dtype=object,
    )


def memories_of(source: Any, G: nx.DiGraph, node: str) -> pd.DataFrame:
    """The memories filed under one map node (topic copies included); You → memories with no
    topic and no account."""
    memories, _, _ = frames_of(source)
    if memories.empty:
        return memories
    return memories[memory_nodes(source) == node]


def via_words(label: str, names: Mapping[str, str] | None = None) -> str:
    """One `via` access reason (spec: `self`, `all`, `category:<c>`, `topic:<id>`,
    `account:<id>`, `and:<a>+<b>`) in words, naming topics where their names are known."""
    names = names or {}
    if label == "self":
        return "this connection saved it (self)"
    if label == "all":
        return "the whole-vault grant (all)"
    if label.startswith("category:"):
        return f"the {label.removeprefix('category:')} category is granted"
    if label.startswith("topic:"):
        return f"the topic {names.get(label, label)!r} is granted"
    if label.startswith("account:"):
        return f"the account {names.get(label, label)} is granted"
    if label.startswith("and:"):
        ends = [names.get(e, e) for e in label.removeprefix("and:").split("+")]
        return "every end is granted: " + ", ".join(ends)
    return label


def visible_because(source: Any, G: nx.DiGraph, *, nodes: Sequence[str] | None = None) -> dict[str, str]:
    """Why this connection sees each map node: the `via` reasons of the topic's own row and of
    its memories, in words; a topic whose row it cannot open is "named by a memory you can open".
    `nodes`: each memory's node (`memory_nodes(source)`), when already worked out."""
    memories, topics, _ = frames_of(source)
    names = {n: str(d.get("name", n)) for n, d in G.nodes(data=True)}
    labels: dict[str, dict[str, None]] = {n: {} for n in G}
    own_row: dict[str, bool] = {}
    for row in topics.to_dict("records"):
        node = topic_node(row_value(row, "id", "topic_id"))
        if node in labels:
            own_row[node] = bool(row_value(row, "readable", default=True))
            labels[node].update(dict.fromkeys(map(str, as_list(row_value(row, "via")))))
    if not memories.empty and "via" in memories:
        filed = memory_nodes(source).tolist() if nodes is None else nodes
        for node, via in zip(filed, column_values(memories, "via")):
            if node in labels:
                labels[node].update(dict.fromkeys(map(str, as_list(via))))
    out: dict[str, str] = {}
    for node, found in labels.items():
        if node == USER:
            out[node] = "you: every memory with no topic and no account is about you"
            continue
        words = [via_words(v, names) for v in found]
        if not own_row.get(node, True):
            words.append("named by a memory you can open")
        out[node] = "; ".join(words[:4]) + (" …" if len(words) > 4 else "") if words else "no reason recorded"
    return out
