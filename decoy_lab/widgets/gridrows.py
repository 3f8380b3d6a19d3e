"""The memory table's rows in the kernel: the memories frame as the columns the page shows, and
the one rule that picks and orders them (grid.js holds the same rule for the rows it has).

`GridRows` keeps what the rule needs as arrays built once per vault (the search keys, the map
node of each row as codes, per-column sort ranks, one mask per category as it is first asked
for), so a filter or a sort over 100,000 rows is a few vectorised passes, not a Python call per
row. Frame columns may be object, `string` or `category`: every column is read as text once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from decoy_lab.vault.frames import unnamed_short
from decoy_lab.views import topicmap

if TYPE_CHECKING:
    import networkx as nx

    from decoy_lab.vault.read import Vault

SORTABLE = ("text", "topic", "categories", "mine", "updated")
QUERY_KEYS = ("topic", "category", "mine", "search", "sort")
KEPT_QUERIES = 8  # orders kept for the latest queries (a scroll asks the same one again and again)


def _text(value: Any) -> str:
    return "" if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)) else str(value)


def _texts(series: pd.Series) -> list[str]:
    """A column as text, missing values as "" (one pass in pandas, not a call per cell)."""
    return series.astype("string").fillna("").tolist()


def _when(series: pd.Series) -> list[str]:
    if pd.api.types.is_datetime64_any_dtype(series):
        return series.dt.strftime("%Y-%m-%d %H:%M").fillna("").tolist()
    return _texts(series)


def _lists(series: pd.Series) -> list[list[str]]:
    return [[str(x) for x in v] if isinstance(v, list | tuple) else [v] if isinstance(v, str) else [] for v in series]


def _lineage(graph: nx.DiGraph | None, node: str) -> str:
    """The names of the topics that include `node`, nearest first ("" without a graph)."""
    names: list[str] = []
    seen = {node}
    while graph is not None and node in graph:
        node = graph.nodes[node].get("parent")
        if not node or node in seen or node == topicmap.USER:
            break
        seen.add(node)
        names.append(str(graph.nodes[node].get("name") or ""))
    return " / ".join(n for n in names if n)


def search_keys(cols: dict[str, list]) -> list[str]:
    """What the filter box looks in, lower-cased: text, topic, the topics above it, categories."""
    return [
        "\n".join((text, topic, above, " ".join(cats))).lower()
        for text, topic, above, cats in zip(cols["text"], cols["topic"], cols["above"], cols["categories"])
    ]


def columns_of(vault: Vault, graph: nx.DiGraph | None = None) -> dict[str, list]:
    """The memories frame as the columns the page filters and shows (one list per column);
    `above` names the topics that include each memory's topic (from the map's `graph`)."""
    mem = vault.memories
    n = len(mem)

    def col(name: str) -> pd.Series:
        return mem[name] if name in mem else pd.Series([None] * n, index=mem.index, dtype=object)

    nodes = topicmap.memory_nodes(vault).astype(object).tolist()
    # a memory about an account shows the account: its name, else in the cell its short id marked
    # "no name", and in the details its whole id and why it has none (frames.AccountNames.label)
    account = _texts(col("account_label"))
    cell = [
        named or (unnamed_short(a) if a else "")
        for named, a in zip(_texts(col("account_name")), _texts(col("account")))
    ]
    topic = [
        a or (topicmap.YOU if node == topicmap.USER else t or node)
        for t, node, a in zip(_texts(col("topic")), nodes, cell)
    ]
    lineage = {node: _lineage(graph, node) for node in set(nodes)}  # one walk per topic, not per row
    return {
        "id": _texts(col("id")),
        "text": _texts(col("text")),
        "topic": topic,
        "node": nodes,
        "categories": _lists(col("categories")),
        "mine": [bool(v) if isinstance(v, bool | np.bool_) else False for v in col("mine").astype(object)],
        "updated": _when(col("updated_at")),
        "created": _when(col("created_at")),
        "source": [v or "memories" for v in _texts(col("source"))],
        "rev": _texts(col("rev")),
        "kid": _texts(col("kid")),
        "via": _lists(col("via")),
        "author_kind": _texts(col("author_kind")),
        "topic_id": _texts(col("topic_id")),
        "account": account,
        "above": [lineage[node] for node in nodes],
    }


def json_size(cols: dict[str, list]) -> int:
    """About how many bytes the columns take as JSON: each text's length and quotes, each
    list's items (no dump: measuring must cost less than sending)."""
    size = 0
    for values in cols.values():
        for v in values:
            size += sum(len(x) + 3 for x in v) + 2 if isinstance(v, list) else len(v) + 3 if isinstance(v, str) else 6
    return size


class GridRows:
    """The table's columns and its rule: which rows a query keeps and in which order."""

    def __init__(self, vault: Vault, graph: nx.DiGraph | None = None):
        self.cols = columns_of(vault, graph)
        self.n = len(self.cols["id"])
        self.keys = pd.Series(search_keys(self.cols), dtype=object)
        self.node_codes, nodes = pd.factorize(pd.Series(self.cols["node"], dtype=object))
        self.node_code = {str(v): i for i, v in enumerate(nodes)}
        self.mine = np.asarray(self.cols["mine"], dtype=bool)
        self.space = np.asarray([s == "space" for s in self.cols["source"]], dtype=bool)
        self.position = {rid: i for i, rid in enumerate(self.cols["id"])}
        self._categories: dict[str, np.ndarray] = {}
        self._ranks: dict[str, np.ndarray] = {}
        self._orders: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def _category(self, name: str) -> np.ndarray:
        if name not in self._categories:
            self._categories[name] = np.fromiter((name in c for c in self.cols["categories"]), bool, self.n)
        return self._categories[name]

    def _rank(self, col: str) -> np.ndarray:
        """Each row's sort key as a dense rank (equal keys, equal ranks): lists joined by ", ",
        other values lower-cased, as grid.js compares them."""
        if col not in self._ranks:
            keys = [", ".join(v) if isinstance(v, list) else str(v).lower() for v in self.cols[col]]
            self._ranks[col] = pd.factorize(pd.Series(keys, dtype=object), sort=True)[0]
        return self._ranks[col]

    def order(
        self, topic: str = "", category: str = "", mine: bool = False, search: str = "", sort: str = ""
    ) -> np.ndarray:
        """Positions of the rows the query keeps, in the order shown (equal keys as loaded)."""
        key = (topic, category, bool(mine), search.strip().lower(), sort)
        if key in self._orders:
            self._orders.move_to_end(key)
            return self._orders[key]
        keep = np.ones(self.n, dtype=bool)
        if topic:
            keep &= self.node_codes == self.node_code.get(topic, -2)
        if category:
            keep &= self._category(category)
        if mine:
            keep &= self.mine
        if key[3]:
            keep &= self.keys.str.contains(key[3], regex=False).to_numpy(dtype=bool)
        shown = np.flatnonzero(keep)
        col, _, way = sort.partition(":")
        if col in SORTABLE and len(shown):
            rank = self._rank(col)[shown]
            shown = shown[np.lexsort((shown, -rank if way == "desc" else rank))]
        self._orders[key] = shown
        while len(self._orders) > KEPT_QUERIES:
            self._orders.popitem(last=False)
        return shown

    def rows(self, positions: Any) -> dict[str, list]:
        """The columns of the rows at `positions`, in that order."""
        return {name: [values[int(i)] for i in positions] for name, values in self.cols.items()}

    def window(self, query: dict, start: int, end: int, picked: str = "") -> dict[str, Any]:
        """What the page asked for: how many rows the query keeps (and how many of them are
        legacy space rows), the rows from `start` to `end`, and where the picked row is (-1: not
        kept)."""
        q = {k: query.get(k) for k in QUERY_KEYS}
        order = self.order(
            topic=str(q["topic"] or ""),
            category=str(q["category"] or ""),
            mine=bool(q["mine"]),
            search=str(q["search"] or ""),
            sort=str(q["sort"] or ""),
        )
        start = max(0, min(int(start), len(order)))
        end = max(start, min(int(end), len(order)))
        at = self.position.get(picked, -1) if picked else -1
        hit = np.flatnonzero(order == at) if at >= 0 else np.zeros(0, dtype=np.intp)
        return {
            "shown": len(order),
            "space": int(self.space[order].sum()),
            "from": start,
            "rows": self.rows(order[start:end]),
            "picked_at": int(hit[0]) if len(hit) else -1,
        }
