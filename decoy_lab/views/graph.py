"""The Map: a loaded vault as a networkx graph.

`build_graph` takes a Vault (anything with `.memories`, `.topics`, `.links` DataFrames) or those
frames directly and returns a `TopicGraph` — a `networkx.DiGraph` with You (`"user"`) at the
centre, one node per topic (`"topic:<id>"`) carrying its name, type and memory count, one node
per account (`"account:<id>"`) a memory is about or a relation ends at, named from the authorized
account list, and one edge per relation row labelled with its relation type. `select_memories`
is here too: it filters the memories frame by the graph it builds.
"""

from __future__ import annotations

import io
import numbers
from typing import Any, NamedTuple

import networkx as nx
import pandas as pd

from decoy_lab.errors import MemoryModelError
from decoy_lab.memory import normalize_topic_name
from decoy_lab.vault.frames import unnamed_short
from decoy_lab.views.drawing import draw
from decoy_lab.views.nodes import (
    ACCOUNT,
    ACCOUNT_COLOUR,
    TYPE_COLOURS,
    USER,
    USER_COLOUR,
    YOU,
    account_node,
    as_list,
    column_values,
    frames_of,
    row_value,
    shorten,
    topic_node,
)
from decoy_lab.views.selection import filter_graph, find_node, memories_of
from decoy_lab.vocab import CATEGORIES, USER_NAMES


class TopicGraph(nx.DiGraph):
    """A DiGraph that displays itself as the drawn map in IPython (`_repr_png_`)."""

    def __repr__(self) -> str:
        topics = sum(1 for _, d in self.nodes(data=True) if d.get("kind") == "topic")
        return f"<TopicGraph You + {topics} topics, {self.number_of_edges()} relations>"

    def _repr_png_(self) -> bytes:
        fig = draw(self)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
        return buf.getvalue()


def _endpoint(value: Any, name: Any, by_name: dict[str, str]) -> str | None:
    """Resolve a relation end (an endpoint id, else a name) to a node; None when unknown."""
    if value:
        v = str(value)
        if v == USER:
            return USER
        if v.startswith("topic:"):
            return v
        if v.startswith("account:"):
            return v
    if name is not None and normalize_topic_name(str(name)) in USER_NAMES:
        return USER
    if name:
        return by_name.get(normalize_topic_name(str(name)))
    return None


def _add_account(G: nx.DiGraph, node: str, name: str) -> None:
    """An account on the Map, named from the authorized account list (frames.AccountNames); one
    it gives no name is labelled by its id cut short and marked "no name" (`name` says why)."""
    G.add_node(
        node,
        kind="account",
        name=name,
        label=unnamed_short(node) if name.startswith(ACCOUNT) else shorten(name),
        type="",
        memories=0,
        color=ACCOUNT_COLOUR,
        categories=set(),
    )


def build_graph(
    source: Any, *, topic: str | None = None, depth: int | None = None, category: str | None = None
) -> TopicGraph:
    """The Map of a vault as a graph, optionally filtered.

    `topic` (a name or `topic:<id>`) keeps that topic, the path from You to it and what is
    nested under it; `depth` keeps topics at most that many hops from You; `category` keeps
    the topics that hold a memory of that category and counts only those memories.
    """
    memories, topics, links = frames_of(source)
    _check_category(category, memories)
    G = TopicGraph()
    G.add_node(USER, kind="user", name=YOU, label=YOU, type="", memories=0, color=USER_COLOUR)

    names = _Names(_account_names(memories), *_add_topics(G, topics))
    _count_memories(G, memories, topics, names, category)
    _add_relations(G, links, names)

    # A topic with no relation you can see still belongs on the Map: hang it from You, unlabelled.
    for node, _data in list(G.nodes(data=True)):
        if node != USER and G.in_degree(node) == 0:
            G.add_edge(USER, node, relation="", label="", inferred=True)

    _set_depths(G)
    return filter_graph(G, topic=topic, depth=depth, category=category)


class _Names(NamedTuple):
    """What build_graph resolves the names in rows with, as it reads them."""

    accounts: dict[str, str]  # account node -> its name
    alias: dict[str, str]  # every topic copy's node -> the listed (oldest) node
    by_name: dict[str, str]  # normalized topic name -> node


def _account_names(memories: pd.DataFrame) -> dict[str, str]:
    """An account end is named from the authorized account list: the links frame's `from` / `to`
    (frames.AccountNames), else the label of a memory about it (`account_label`, `account_name`)."""
    accounts: dict[str, str] = {}
    for col in ("account_name", "account_label"):  # the label, where there is one, wins
        for a, n in zip(column_values(memories, "account"), column_values(memories, col)):
            if isinstance(a, str) and isinstance(n, str) and n:
                accounts[account_node(a)] = n
    return accounts


def _add_topics(G: nx.DiGraph, topics: pd.DataFrame) -> tuple[dict[str, str], dict[str, str]]:
    """One node per listed topic; returns (alias: every copy's node -> the listed one, by_name)."""
    alias: dict[str, str] = {}  # every copy's node -> the listed (oldest) node
    by_name: dict[str, str] = {}
    for row in topics.to_dict("records"):
        node = topic_node(row_value(row, "id", "topic_id"))
        name = str(row_value(row, "name", default=node))
        ttype = str(row_value(row, "type", "entity_type", default="") or "")
        G.add_node(
            node,
            kind="topic",
            name=name,
            label=shorten(name),
            type=ttype,
            memories=0,
            color=TYPE_COLOURS.get(ttype, TYPE_COLOURS[""]),
            categories=set(),
        )
        for copy in as_list(row_value(row, "ids")):
            alias[topic_node(copy)] = node
        by_name.setdefault(normalize_topic_name(name), node)
    return alias, by_name


def _count_memories(
    G: nx.DiGraph,
    memories: pd.DataFrame,
    topics: pd.DataFrame,
    names: _Names,
    category: str | None,
) -> None:
    """Each memory counted on its topic's (or account's) node, adding the nodes only a memory names."""
    accounts, alias, by_name = names
    counted = False
    # only the columns read here, as plain lists: 100,000 rows stay quick
    columns = [column_values(memories, c) for c in ("topic_id", "account", "topic", "entity_name", "categories")]
    for tid, acct, topic, entity, categories in zip(*columns):
        if not tid and acct:  # "A memory about an account stays with that account"
            node = account_node(acct)
            if node not in G:
                _add_account(G, node, accounts.get(node, node))
        elif not tid:
            continue
        else:
            counted = True
            node = alias.get(topic_node(tid), topic_node(tid))
        if node not in G:  # a topic named only by a memory: its name from the memory, type unknown
            name = str(topic if topic is not None else entity if entity is not None else node)
            _add_untyped_topic(G, node, name)
            by_name.setdefault(normalize_topic_name(name), node)
        cats = set(as_list(categories))
        data = G.nodes[node]
        data["categories"] |= cats
        if category is None or category in cats:
            data["memories"] += 1
    if not counted:  # no memory frame: fall back on the topic listing's own counts
        for row in topics.to_dict("records"):
            n = row_value(row, "memories", default=0)
            G.nodes[topic_node(row_value(row, "id", "topic_id"))]["memories"] = (
                int(n) if isinstance(n, numbers.Integral) else len(as_list(n))
            )


def _add_relations(G: nx.DiGraph, links: pd.DataFrame, names: _Names) -> None:
    """One edge per relation row between ends the Map knows (or adds), labelled with its type."""
    accounts, alias, by_name = names
    for row in links.to_dict("records"):
        ends = as_list(row_value(row, "endpoints"))
        src = _endpoint(ends[0] if ends else row_value(row, "from_id"), row_value(row, "from", "source"), by_name)
        dst = _endpoint(ends[1] if len(ends) > 1 else row_value(row, "to_id"), row_value(row, "to", "target"), by_name)
        if not src or not dst or src == dst:
            continue
        src, dst = alias.get(src, src), alias.get(dst, dst)
        for end, nm in ((src, row_value(row, "from")), (dst, row_value(row, "to"))):
            if end not in G:
                label = str(nm or accounts.get(end) or end)
                if end.startswith(ACCOUNT):
                    _add_account(G, end, label)
                else:
                    _add_untyped_topic(G, end, label)
        rel = str(row_value(row, "relation_type", "relationType", "relation", default="") or "")
        G.add_edge(src, dst, relation=rel, label=shorten(rel, 20), id=row_value(row, "id"))


def _add_untyped_topic(G: nx.DiGraph, node: str, name: str) -> None:
    """A topic the map knows only by a memory or a relation: its name, no type, no memories yet."""
    G.add_node(
        node,
        kind="topic",
        name=name,
        label=shorten(name),
        type="",
        memories=0,
        color=TYPE_COLOURS[""],
        categories=set(),
    )


def _set_depths(G: nx.DiGraph) -> None:
    """`depth` = hops from You along relations; `parent` = the node it hangs from (the nearest
    predecessor to You), so the drawing is a tree even when relations form a loop."""
    dist = nx.single_source_shortest_path_length(G, USER)
    while len(dist) < len(G):  # a loop out of reach (two topics that include each other): hang one from You
        G.add_edge(USER, next(n for n in G if n not in dist), relation="", label="", inferred=True)
        dist = nx.single_source_shortest_path_length(G, USER)
    for node in G:
        G.nodes[node]["depth"] = dist[node]
        G.nodes[node]["parent"] = None
    for node in G:
        if node == USER:
            continue
        preds = sorted((p for p in G.predecessors(node) if dist[p] < dist[node]), key=lambda p: (dist[p], str(p)))
        G.nodes[node]["parent"] = preds[0] if preds else USER


def _check_category(category: str | None, memories: pd.DataFrame) -> None:
    """A misspelt category is an error, not an empty result: mem0's list and any label in use."""
    if category is None or category in CATEGORIES:
        return
    if "categories" in memories and any(category in as_list(c) for c in memories["categories"]):
        return
    raise MemoryModelError(f"unknown category {category!r}; categories are mem0's: {', '.join(CATEGORIES)}")


def select_memories(
    source: Any, *, topic: str | None = None, category: str | None = None, search: str | None = None, mine: bool = False
) -> pd.DataFrame:
    """The memories frame filtered as the table and the map filter it (one rule for both):
    `topic` by name or id (copies included; "You" = no topic), `category`, `search` (case-
    insensitive text match), `mine` (this connection wrote it)."""
    memories, _, _ = frames_of(source)
    _check_category(category, memories)
    out = memories
    if topic is not None:
        G = build_graph(source)
        node = USER if str(topic).strip().lower() in USER_NAMES else find_node(G, topic)
        if node is None:
            raise MemoryModelError(f"no topic named {topic!r} among the memories")
        out = memories_of(source, G, node)
    if category is not None and "categories" in out:
        out = out[out["categories"].map(lambda c: category in as_list(c))]
    if search:
        out = out[out["text"].fillna("").str.contains(search, case=False, regex=False)]
    if mine and "mine" in out:
        out = out[out["mine"].fillna(False).astype(bool)]
    return out
