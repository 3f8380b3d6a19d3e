"""The memory table's rows in the kernel: the memories frame as the columns the page shows, and
the one rule that picks and orders them (grid.js holds the same rule for the rows it has).

`GridRows` keeps what the rule needs as arrays built once per vault (the search keys, the map
node of each row as codes, per-column sort ranks, one mask per category as it is first asked
for), so a filter or a sort over 100,000 rows is a few vectorised passes, not a Python call per
row. Frame columns may be object, `string` or `category`: every column is read as text once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from decoy_lab.gcpause import gc_paused
from decoy_lab.vault.frames import unnamed_short
from decoy_lab.views import mapcache, topicmap

if TYPE_CHECKING:
    import networkx as nx

    from decoy_lab.vault.read import Vault

SORTABLE = ("text", "topic", "categories", "mine", "updated")
QUERY_KEYS = ("topic", "category", "mine", "search", "sort")
WHOLE_ANSWER = 1_000  # rows a query keeps at most for its answer to hold all of them
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
    return _columns(vault.memories, mapcache.memory_nodes(vault), graph)


def _columns(mem: pd.DataFrame, nodes: list[str], graph: nx.DiGraph | None) -> dict[str, list]:
    """`mem`'s rows as the table's columns; `nodes` is the map node of each."""
    n = len(mem)

    def col(name: str) -> pd.Series:
        return mem[name] if name in mem else pd.Series([None] * n, index=mem.index, dtype=object)

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
        "node": list(nodes),
        "categories": _lists(col("categories")),
        "mine": _mine(col("mine")).tolist(),
        "updated": _when(col("updated_at")),
        "created": _when(col("created_at")),
        "source": _sources(col("source")),
        "rev": _texts(col("rev")),
        "kid": _texts(col("kid")),
        "via": _lists(col("via")),
        "author_kind": _texts(col("author_kind")),
        "topic_id": _texts(col("topic_id")),
        "account": account,
        "above": [lineage[node] for node in nodes],
    }


def _mine(series: pd.Series) -> np.ndarray:
    """True only where the frame holds a true boolean (a missing value is not mine)."""
    return np.fromiter((v is True or v is np.True_ for v in series.astype(object)), bool, len(series))


def _sources(series: pd.Series) -> list[str]:
    return [v or "memories" for v in _texts(series)]


def fits(cols: dict[str, list], most: int) -> bool:
    """Whether the columns take at most `most` bytes as JSON, about: each text's length and
    quotes, each list's items (no dump: measuring must cost less than sending; it stops at the
    first column past the bound)."""
    size = 0
    for values in cols.values():
        size += sum(sum(len(x) + 3 for x in v) + 2 if isinstance(v, list) else len(str(v)) + 3 for v in values)
        if size > most:
            return False
    return True


class GridRows:
    """The table's columns and its rule: which rows a query keeps and in which order.

    What the first page and a topic or "mine" filter need is built at once (the map node of
    each row as codes, `mine`, the legacy-space rows; each id's position when a row is first
    picked); the columns and the search keys, a few tenths of a second at 100,000 rows, are
    built on a thread of their own (`background()`, once the page has painted); whatever needs
    them first waits for them."""

    def __init__(self, vault: Vault, graph: nx.DiGraph | None = None):
        self.mem, self.graph = vault.memories, graph
        self.n = len(self.mem)
        self.nodes = mapcache.memory_nodes(vault)
        self.node_codes, uniques = pd.factorize(pd.Series(self.nodes, dtype=object))
        self.node_code = {str(v): i for i, v in enumerate(uniques)}
        self.mine = _mine(self.mem["mine"]) if "mine" in self.mem else np.zeros(self.n, dtype=bool)
        source = self.mem["source"] if "source" in self.mem else pd.Series([None] * self.n, dtype=object)
        self.space = (source.astype("string") == "space").fillna(False).to_numpy(dtype=bool)
        self._built: tuple[dict[str, list], list[str]] | None = None
        self._building = False
        self._starting = threading.Lock()
        self._lock = threading.Lock()
        self._categories: dict[str, np.ndarray] = {}
        self._ranks: dict[str, np.ndarray] = {}
        self._orders: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._kept_sets: OrderedDict[tuple, np.ndarray] = OrderedDict()

    @cached_property
    def position(self) -> dict[str, int]:
        """Each id's position in the memories frame (made when a row is first picked)."""
        ids = _texts(self.mem["id"]) if "id" in self.mem else [""] * self.n
        return {rid: i for i, rid in enumerate(ids)}

    def _build(self) -> tuple[dict[str, list], list[str]]:
        with self._lock:
            if self._built is None:
                with gc_paused():  # a million long-lived, cycle-free lists and strings: scans only cost
                    cols = _columns(self.mem, self.nodes, self.graph)
                    self._built = cols, search_keys(cols)
            return self._built

    def background(self) -> None:
        """Build the columns and search keys on a thread of their own (once)."""
        with self._starting:  # not self._lock: a build holds that while it runs
            if self._built is not None or self._building:
                return
            self._building = True
        threading.Thread(target=self._build, name="decoy-grid-rows", daemon=True).start()

    @property
    def built(self) -> bool:
        """Whether every row's columns and search key are built."""
        return self._built is not None

    @property
    def cols(self) -> dict[str, list]:
        """Every row as the table's columns (built on first use)."""
        return self._build()[0]

    @property
    def keys_list(self) -> list[str]:
        """What the filter box looks in, one lower-cased text per row."""
        return self._build()[1]

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

    def _kept(self, topic: str, category: str, mine: bool, search: str) -> np.ndarray:
        """Positions of the rows the filters keep, as loaded. A query that only narrows one kept
        before (the same filters or more, its search a longer text holding the earlier one, as
        typing makes it) looks only at the rows that one kept."""
        key = (topic, category, mine, search)
        if key in self._kept_sets:
            self._kept_sets.move_to_end(key)
            return self._kept_sets[key]
        base: np.ndarray | None = None
        for (t, c, m, q), kept in self._kept_sets.items():
            wider = t in ("", topic) and c in ("", category) and (mine or not m) and q in search
            if wider and (base is None or len(kept) < len(base)):
                base = kept
        at = np.arange(self.n) if base is None else base
        keep = np.ones(len(at), dtype=bool)
        if topic:
            keep &= self.node_codes[at] == self.node_code.get(topic, -2)
        if category:
            keep &= self._category(category)[at]
        if mine:
            keep &= self.mine[at]
        if search:
            keys = self.keys_list
            keep &= np.fromiter((search in keys[i] for i in at.tolist()), bool, len(at))
        self._kept_sets[key] = kept = at[keep]
        while len(self._kept_sets) > KEPT_QUERIES:
            self._kept_sets.popitem(last=False)
        return kept

    def order(
        self, topic: str = "", category: str = "", mine: bool = False, search: str = "", sort: str = ""
    ) -> np.ndarray:
        """Positions of the rows the query keeps, in the order shown (equal keys as loaded)."""
        key = (topic, category, bool(mine), search.strip().lower(), sort)
        if key in self._orders:
            self._orders.move_to_end(key)
            return self._orders[key]
        shown = self._kept(*key[:4])
        col, _, way = sort.partition(":")
        if col in SORTABLE and len(shown):
            rank = self._rank(col)[shown]
            shown = shown[np.lexsort((shown, -rank if way == "desc" else rank))]
        self._orders[key] = shown
        while len(self._orders) > KEPT_QUERIES:
            self._orders.popitem(last=False)
        return shown

    def rows(self, positions: Any) -> dict[str, list]:
        """The columns of the rows at `positions`, in that order (from the frame while the whole
        columns are not built yet)."""
        at = [int(i) for i in positions]
        if self._built is None:
            return _columns(self.mem.iloc[at], [self.nodes[i] for i in at], self.graph)
        return {name: [values[i] for i in at] for name, values in self._built[0].items()}

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
        if len(order) <= WHOLE_ANSWER:  # all of them: the page filters them further itself
            start, end = 0, len(order)
        rows = self.rows(order[start:end])
        rows["at"] = order[start:end].tolist()  # where each is as loaded, for the page's sorts
        return {
            "shown": len(order),
            "space": int(self.space[order].sum()),
            "from": start,
            "rows": rows,
            "picked_at": int(hit[0]) if len(hit) else -1,
        }
