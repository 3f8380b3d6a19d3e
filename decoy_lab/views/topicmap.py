"""The Map: a loaded vault as a networkx graph, and a readable matplotlib drawing of it.

Pure functions. `build_graph` takes a Vault (anything with `.memories`, `.topics`, `.links`
DataFrames) or those frames directly and returns a `TopicGraph` — a `networkx.DiGraph` with
You (`"user"`) at the centre, one node per topic (`"topic:<id>"`) carrying its name, type and
memory count, one node per account (`"account:<id>"`) a memory is about or a relation ends at,
named from the authorized account list, and one edge per relation row labelled with its
relation type. `draw` places You
in the middle and every topic on a ring by its distance from You, inside its parent's wedge,
so nested topics sit behind the topic they belong to and labels never share a spoke.
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from decoy_lab.errors import MemoryModelError
from decoy_lab.memory import normalize_topic_name
from decoy_lab.vault.frames import unnamed_short
from decoy_lab.vocab import CATEGORIES, USER_NAMES

USER = "user"
YOU = "You"

# One colour per entity type (vocab.ENTITY_TYPES) (colour-blind-friendly tab20 picks); "" (no type) is grey.
TYPE_COLOURS: dict[str, str] = {
    "device": "#1f77b4",
    "document": "#aec7e8",
    "event": "#ff7f0e",
    "goal": "#ffbb78",
    "hobby": "#2ca02c",
    "media": "#98df8a",
    "organization": "#d62728",
    "person": "#ff9896",
    "pet": "#9467bd",
    "place": "#c5b0d5",
    "product": "#8c564b",
    "project": "#e377c2",
    "team": "#f7b6d2",
    "trip": "#17becf",
    "": "#bbbbbb",
}
USER_COLOUR = "#222222"
ACCOUNT_COLOUR = "#6e7781"  # an account is no topic and has no entity type
ACCOUNT = "account:"
RING_GAP = 1.35
FIRST_RING = 1.6
EDGE_LABELS_UP_TO = 80  # nodes; beyond that only a highlighted topic's relations are labelled


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


def topic_node(topic_id: str) -> str:
    """The graph node for a topic id given as `topic:<id>` or a bare row id."""
    text = str(topic_id)
    return text if text.startswith("topic:") else f"topic:{text}"


def shorten(label: str, width: int = 24) -> str:
    """Cut a long label at a word boundary with an ellipsis, so the drawing stays readable."""
    text = " ".join(str(label).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


# ---------------------------------------------------------------------------------- building
def _frames(source: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(memories, topics, links) from a Vault, a mapping of frames or a 3-tuple."""
    if isinstance(source, Mapping):
        parts = [source.get(k) for k in ("memories", "topics", "links")]
    elif isinstance(source, tuple | list):
        parts = list(source) + [None] * (3 - len(source))
    else:
        parts = [getattr(source, k, None) for k in ("memories", "topics", "links")]
    return tuple(p if isinstance(p, pd.DataFrame) else pd.DataFrame() for p in parts[:3])


def _get(row: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    """The first present, non-missing value among column spellings (frames may vary)."""
    for n in names:
        if n in row:
            v = row[n]
            if _missing(v):
                continue
            return v
    return default


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA (typed frames use NA for absent strings and numbers)."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _as_list(value: Any) -> list:
    if _missing(value):
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


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


def account_node(account_id: str) -> str:
    """The graph node for an account given as `account:<id>` or a bare id."""
    return f"{ACCOUNT}{str(account_id).removeprefix(ACCOUNT)}"


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
    memories, topics, links = _frames(source)
    _check_category(category, memories)
    G = TopicGraph()
    G.add_node(USER, kind="user", name=YOU, label=YOU, type="", memories=0, color=USER_COLOUR)

    # an account end is named from the authorized account list: the links frame's `from` / `to`
    # (frames.AccountNames), else the label of a memory about it (`account_label`, `account_name`)
    accounts: dict[str, str] = {}
    for col in ("account_name", "account_label"):  # the label, where there is one, wins
        for a, n in zip(memories.get("account", []), memories.get(col, [])):
            if isinstance(a, str) and isinstance(n, str) and n:
                accounts[account_node(a)] = n
    alias: dict[str, str] = {}  # every copy's node -> the listed (oldest) node
    by_name: dict[str, str] = {}
    for row in topics.to_dict("records"):
        node = topic_node(_get(row, "id", "topic_id"))
        name = str(_get(row, "name", default=node))
        ttype = str(_get(row, "type", "entity_type", default="") or "")
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
        for copy in _as_list(_get(row, "ids")):
            alias[topic_node(copy)] = node
        by_name.setdefault(normalize_topic_name(name), node)

    counted = False
    used = [c for c in ("topic_id", "topic", "entity_name", "categories", "account") if c in memories]
    for row in memories[used].to_dict("records"):  # only the columns read here: 10,000 rows stay quick
        tid, acct = _get(row, "topic_id"), _get(row, "account")
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
            name = str(_get(row, "topic", "entity_name", default=node))
            _add_untyped_topic(G, node, name)
            by_name.setdefault(normalize_topic_name(name), node)
        cats = set(_as_list(_get(row, "categories")))
        G.nodes[node]["categories"] |= cats
        if category is None or category in cats:
            G.nodes[node]["memories"] += 1
    if not counted:  # no memory frame: fall back on the topic listing's own counts
        for row in topics.to_dict("records"):
            n = _get(row, "memories", default=0)
            G.nodes[topic_node(_get(row, "id", "topic_id"))]["memories"] = (
                int(n) if isinstance(n, numbers.Integral) else len(_as_list(n))
            )

    for row in links.to_dict("records"):
        ends = _as_list(_get(row, "endpoints"))
        src = _endpoint(ends[0] if ends else _get(row, "from_id"), _get(row, "from", "source"), by_name)
        dst = _endpoint(ends[1] if len(ends) > 1 else _get(row, "to_id"), _get(row, "to", "target"), by_name)
        if not src or not dst or src == dst:
            continue
        src, dst = alias.get(src, src), alias.get(dst, dst)
        for end, nm in ((src, _get(row, "from")), (dst, _get(row, "to"))):
            if end not in G:
                label = str(nm or accounts.get(end) or end)
                if end.startswith(ACCOUNT):
                    _add_account(G, end, label)
                else:
                    _add_untyped_topic(G, end, label)
        rel = str(_get(row, "relation_type", "relationType", "relation", default="") or "")
        G.add_edge(src, dst, relation=rel, label=shorten(rel, 20), id=_get(row, "id"))

    # A topic with no relation you can see still belongs on the Map: hang it from You, unlabelled.
    for node, _data in list(G.nodes(data=True)):
        if node != USER and G.in_degree(node) == 0:
            G.add_edge(USER, node, relation="", label="", inferred=True)

    _set_depths(G)
    return _filter(G, topic=topic, depth=depth, category=category)


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


def _filter(G: TopicGraph, *, topic: str | None, depth: int | None, category: str | None) -> TopicGraph:
    keep = set(G)
    if category is not None:
        keep = {n for n in keep if n == USER or category in G.nodes[n].get("categories", set())}
    if topic is not None:
        node = find_node(G, topic)
        if node is None:
            raise MemoryModelError(f"no topic named {topic!r} on the map")
        tree = _children(G)
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


def _children(G: nx.DiGraph) -> dict[str, list[str]]:
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
    memories, topics, _ = _frames(source)
    if memories.empty or ("topic_id" not in memories and "account" not in memories):
        return pd.Series([USER] * len(memories), index=memories.index, dtype=object)
    alias: dict[str, str] = {}
    for row in topics.to_dict("records"):
        node = topic_node(_get(row, "id", "topic_id"))
        for copy in _as_list(_get(row, "ids")):
            alias[topic_node(copy)] = node
    none = pd.Series([None] * len(memories), index=memories.index, dtype=object)
    tids = memories.get("topic_id", none)
    accts = memories.get("account", none)
    return pd.Series(
        [
            alias.get(topic_node(t), topic_node(t))
            if isinstance(t, str) and t
            else account_node(a)
            if isinstance(a, str) and a
            else USER
            for t, a in zip(tids.astype(object), accts.astype(object))
        ],
        index=memories.index,
        dtype=object,
    )


def memories_of(source: Any, G: nx.DiGraph, node: str) -> pd.DataFrame:
    """The memories filed under one map node (topic copies included); You → memories with no
    topic and no account."""
    memories, _, _ = _frames(source)
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


def visible_because(source: Any, G: nx.DiGraph) -> dict[str, str]:
    """Why this connection sees each map node: the `via` reasons of the topic's own row and of
    its memories, in words; a topic whose row it cannot open is "named by a memory you can open"."""
    memories, topics, _ = _frames(source)
    names = {n: str(d.get("name", n)) for n, d in G.nodes(data=True)}
    labels: dict[str, dict[str, None]] = {n: {} for n in G}
    own_row: dict[str, bool] = {}
    for row in topics.to_dict("records"):
        node = topic_node(_get(row, "id", "topic_id"))
        if node in labels:
            own_row[node] = bool(_get(row, "readable", default=True))
            labels[node].update(dict.fromkeys(map(str, _as_list(_get(row, "via")))))
    if not memories.empty and "via" in memories:
        for node, via in zip(memory_nodes(source), memories["via"]):
            if node in labels:
                labels[node].update(dict.fromkeys(map(str, _as_list(via))))
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


def _check_category(category: str | None, memories: pd.DataFrame) -> None:
    """A misspelt category is an error, not an empty result: mem0's list and any label in use."""
    if category is None or category in CATEGORIES:
        return
    if "categories" in memories and any(category in _as_list(c) for c in memories["categories"]):
        return
    raise MemoryModelError(f"unknown category {category!r}; categories are mem0's: {', '.join(CATEGORIES)}")


def select_memories(
    source: Any, *, topic: str | None = None, category: str | None = None, search: str | None = None, mine: bool = False
) -> pd.DataFrame:
    """The memories frame filtered as the table and the map filter it (one rule for both):
    `topic` by name or id (copies included; "You" = no topic), `category`, `search` (case-
    insensitive text match), `mine` (this connection wrote it)."""
    memories, _, _ = _frames(source)
    _check_category(category, memories)
    out = memories
    if topic is not None:
        G = build_graph(source)
        node = USER if str(topic).strip().lower() in USER_NAMES else find_node(G, topic)
        if node is None:
            raise MemoryModelError(f"no topic named {topic!r} among the memories")
        out = memories_of(source, G, node)
    if category is not None and "categories" in out:
        out = out[out["categories"].map(lambda c: category in _as_list(c))]
    if search:
        out = out[out["text"].fillna("").str.contains(search, case=False, regex=False)]
    if mine and "mine" in out:
        out = out[out["mine"].fillna(False).astype(bool)]
    return out


# ----------------------------------------------------------------------------------- drawing
def radial_layout(G: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """You at (0, 0); each topic on the ring of its depth, inside its parent's angular wedge.

    A wedge is proportional to the number of leaves below it, so siblings spread evenly and a
    nested topic sits just outside the topic it belongs to. A topic with nested topics keeps
    an empty slot in the middle of its wedge, so its own label runs out between its children.
    """
    tree = _children(G)
    slots: dict[str, int] = {}

    def count(n: str) -> int:
        kids = sum(count(c) for c in tree[n])
        slots[n] = kids + 1 if kids and n != USER else max(1, kids)
        return slots[n]

    count(USER)
    pos: dict[str, tuple[float, float]] = {USER: (0.0, 0.0)}
    first = max(FIRST_RING, len(tree[USER]) / 14)

    def radius(ring: int) -> float:  # rings far enough apart for a shortened label between them
        return first + RING_GAP * (ring - 1)

    def place(n: str, lo: float, hi: float, ring: int) -> None:
        kids = tree[n]
        unit = (hi - lo) / slots[n]
        half = len(kids) // 2 if n != USER else -1
        start = lo
        for i, c in enumerate(kids):
            if i == half:  # the parent's label slot
                start += unit
            span = unit * slots[c]
            mid = start + span / 2
            pos[c] = (radius(ring) * math.cos(mid), radius(ring) * math.sin(mid))
            place(c, start, start + span, ring + 1)
            start += span

    place(USER, math.pi / 2, math.pi / 2 + 2 * math.pi, 1)
    missing = [n for n in G if n not in pos]
    if missing:  # anything unreachable (should not happen) goes on an outer ring
        outer = -radius(max((d or 0 for _, d in G.nodes(data="depth")), default=1) + 1)
        for n in missing:
            pos[n] = (0.0, outer)
    return pos


def _size(count: int, many: bool) -> float:
    base, step = (90, 70) if many else (260, 140)
    return base + step * math.sqrt(max(0, count))


def draw(
    G: nx.DiGraph,
    *,
    highlight: str | Iterable[str] | None = None,
    ax: Any = None,
    title: str | None = None,
    label_width: int = 24,
) -> Figure:
    """Draw the map and return its Figure (never shows it; never touches pyplot state).

    Topics are coloured by type and sized by memory count; relation types label the edges;
    labels are shortened and written along each spoke, so 50 topics stay legible.
    `highlight` (node ids or names) rings those topics and fades the rest.
    """
    if ax is None:
        n = G.number_of_nodes()
        side = 7 if n <= 12 else 9 if n <= 30 else 11
        fig = Figure(figsize=(side, side))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    marked = _highlighted(G, highlight)
    pos = radial_layout(G)
    many = G.number_of_nodes() > 24
    crowded = G.number_of_nodes() > EDGE_LABELS_UP_TO  # relation labels only where they can be read

    segments: dict[tuple[bool, bool], list] = {}
    for u, v, data in G.edges(data=True):
        (x1, y1), (x2, y2) = pos[u], pos[v]
        faded = bool(marked) and not ({u, v} & marked)
        segments.setdefault((faded, bool(data.get("inferred"))), []).append([(x1, y1), (x2, y2)])
        label = data.get("label") or ""
        if label and not (faded and many) and (not crowded or {u, v} & marked):
            t = 0.55
            mx, my = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
            ang = math.degrees(math.atan2(y2 - y1, x2 - x1))
            if ang > 90 or ang < -90:
                ang += 180
            ax.text(
                mx,
                my,
                label,
                fontsize=6 if many else 7,
                color="#555555",
                rotation=ang,
                rotation_mode="anchor",
                ha="center",
                va="bottom",
                zorder=2,
                alpha=0.4 if faded else 1.0,
            )
    for (faded, inferred), segs in segments.items():  # one collection per style: fast at 500 topics
        ax.add_collection(
            LineCollection(
                segs,
                colors="#999999",
                linewidths=1.0,
                alpha=0.25 if faded else 0.8,
                linestyles=":" if inferred else "-",
                zorder=1,
            )
        )

    nodes = [n for n in G if n != USER]
    xs = [pos[n][0] for n in nodes]
    ys = [pos[n][1] for n in nodes]
    if nodes:
        ax.scatter(
            xs,
            ys,
            s=[_size(int(G.nodes[n].get("memories") or 0), many) for n in nodes],
            c=[G.nodes[n].get("color", TYPE_COLOURS[""]) for n in nodes],
            alpha=[0.3 if marked and n not in marked else 1.0 for n in nodes],
            edgecolors=["#d4a017" if n in marked else "white" for n in nodes],
            linewidths=[3.0 if n in marked else 1.0 for n in nodes],
            zorder=3,
        )
    ax.scatter(
        [0.0],
        [0.0],
        s=900,
        c=USER_COLOUR,
        edgecolors="#d4a017" if USER in marked else "white",
        linewidths=3.0 if USER in marked else 1.0,
        zorder=3,
    )
    ax.text(0.0, 0.0, YOU, color="white", fontsize=10, fontweight="bold", ha="center", va="center", zorder=4)
    width = label_width if not many else min(label_width, 20)
    for node in nodes:
        data = G.nodes[node]
        x, y = pos[node]
        faded = bool(marked) and node not in marked
        text = shorten(str(data.get("name", node)), width)
        count = int(data.get("memories") or 0)
        if count:
            text += f" ({count})"
        ang = math.atan2(y, x)
        deg = math.degrees(ang)
        left = math.cos(ang) < 0
        off = 0.12
        ax.text(
            x + off * math.cos(ang),
            y + off * math.sin(ang),
            text,
            fontsize=7 if many else 9,
            ha="right" if left else "left",
            va="center",
            rotation=deg + 180 if left else deg,
            rotation_mode="anchor",
            fontweight="bold" if node in marked else "normal",
            alpha=0.45 if faded else 1.0,
            zorder=4,
        )

    lim = max(math.hypot(x, y) for x, y in pos.values()) + 1.5
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axis("off")
    _legend(ax, G)
    if title:
        ax.set_title(title)
    return fig


def _highlighted(G: nx.DiGraph, highlight: str | Iterable[str] | None) -> set[str]:
    if highlight is None:
        return set()
    items = [highlight] if isinstance(highlight, str) else list(highlight)
    found = {find_node(G, h) for h in items}
    return {n for n in found if n is not None}


def _legend(ax: Any, G: nx.DiGraph) -> None:
    from matplotlib.lines import Line2D

    types = sorted({d.get("type", "") for _, d in G.nodes(data=True) if d.get("kind") == "topic"})
    colours = [(TYPE_COLOURS.get(t, TYPE_COLOURS[""]), t or "(no type)") for t in types]
    if any(d.get("kind") == "account" for _, d in G.nodes(data=True)):
        colours.append((ACCOUNT_COLOUR, "an account"))
    if not colours:
        return
    handles = [Line2D([], [], marker="o", ls="", markersize=8, color=c, label=label) for c, label in colours]
    ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False, title="topic type", title_fontsize=8)
