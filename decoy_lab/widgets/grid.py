"""The memory table: every memory of a Vault sent to the page once, filtered, sorted and
scrolled there (assets/grid.js, an anywidget), so typing in the filter or scrolling 10,000
rows never waits for the kernel.

Public traits: the filters `topic` (a map node: `user` = no topic), `category`, `search`
(filter as you type, over the text, the topic's name and the names of the topics that include
it, and the categories), `mine`; `sort` (`column:asc|desc`, "" = as loaded); `picked` (the
clicked row's id) and `picked_topic` (its map node, for the map to ring). `frame` is what the
page shows, by the same rule, so a count in Python is the count on screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import pandas as pd
import traitlets as T

from decoy_lab.vault.frames import unnamed_short
from decoy_lab.views import topicmap
from decoy_lab.widgets.pickers import ANY, plural

if TYPE_CHECKING:
    import networkx as nx

    from decoy_lab.vault.read import Vault

ASSETS = Path(__file__).with_name("assets")
SORTABLE = ("text", "topic", "categories", "mine", "updated")


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

    nodes = topicmap.memory_nodes(vault).tolist()
    # a memory about an account shows the account: its name, else in the cell its short id marked
    # "no name", and in the details its whole id and why it has none (frames.AccountNames.label)
    account = _texts(col("account_label"))
    cell = [
        named or (unnamed_short(a) if a else "")
        for named, a in zip(_texts(col("account_name")), _texts(col("account")))
    ]
    topic = [
        a or (topicmap.YOU if node == topicmap.USER else _text(t) or node)
        for t, node, a in zip(col("topic"), nodes, cell)
    ]
    return {
        "id": _texts(col("id")),
        "text": _texts(col("text")),
        "topic": topic,
        "node": nodes,
        "categories": _lists(col("categories")),
        "mine": [bool(v) if isinstance(v, bool) else False for v in col("mine").astype(object)],
        "updated": _when(col("updated_at")),
        "created": _when(col("created_at")),
        "source": [v or "memories" for v in _texts(col("source"))],
        "rev": _texts(col("rev")),
        "kid": _texts(col("kid")),
        "via": _lists(col("via")),
        "author_kind": _texts(col("author_kind")),
        "topic_id": _texts(col("topic_id")),
        "account": account,
        "above": [_lineage(graph, node) for node in nodes],
    }


def count_text(shown: int, total: int, space: int = 0) -> str:
    """The table's count line, the same words the page writes: "12 of 59 memories shown"."""
    text = (
        plural(total, "memory", "memories")
        if shown == total
        else f"{shown:,} of {plural(total, 'memory', 'memories')} shown"
    )
    return text + (f" ({space:,} from legacy space rows)" if space else "")


class MemoryGrid(anywidget.AnyWidget):
    """Every memory of one Vault as a sortable, filterable, virtually scrolled table."""

    _esm = ASSETS / "grid.js"
    _css = ASSETS / "grid.css"

    rows = T.Dict().tag(sync=True)
    topic = T.Unicode(ANY).tag(sync=True)
    category = T.Unicode(ANY).tag(sync=True)
    search = T.Unicode("").tag(sync=True)
    mine = T.Bool(False).tag(sync=True)
    sort = T.Unicode("").tag(sync=True)
    picked = T.Unicode(ANY).tag(sync=True)
    picked_topic = T.Unicode(ANY).tag(sync=True)
    empty_reason = T.Unicode("").tag(sync=True)  # why a vault shows no memory at all

    def __init__(self, vault: Vault, *, empty_reason: str = "", graph: nx.DiGraph | None = None, **kw: Any):
        self.vault = vault
        cols = columns_of(vault, graph)
        self._cols = pd.DataFrame({k: cols[k] for k in ("id", "text", "topic", "node", "mine", "updated", "source")})
        self._cols["categories"] = cols["categories"]
        self._cols["key"] = search_keys(cols)
        super().__init__(rows=cols, empty_reason=empty_reason, **kw)

    def __repr__(self) -> str:
        return f"<MemoryGrid {self.count}>"

    @T.observe("picked")
    def _ring_its_topic(self, change: dict) -> None:
        hit = self._cols.index[self._cols["id"] == change["new"]]
        self.picked_topic = str(self._cols.at[hit[0], "node"]) if len(hit) else ANY

    def shown_positions(self) -> list[int]:
        """Positions (in the memories frame) of the rows on show, in the order shown."""
        c = self._cols
        keep = pd.Series(True, index=c.index)
        if self.topic:
            keep &= c["node"] == self.topic
        if self.category:
            keep &= c["categories"].map(lambda cats: self.category in cats)
        if self.mine:
            keep &= c["mine"]
        if self.search:
            keep &= c["key"].str.contains(self.search.strip().lower(), regex=False)
        shown = c[keep.to_numpy()]
        col, _, way = self.sort.partition(":")
        if col in SORTABLE:
            key = shown[col].map(lambda v: ", ".join(v) if isinstance(v, list) else str(v).lower())
            shown = shown.assign(_k=key).sort_values("_k", ascending=way != "desc", kind="stable")
        return [int(i) for i in shown.index]

    @property
    def frame(self) -> pd.DataFrame:
        """The memories on show, in the order shown."""
        return self.vault.memories.iloc[self.shown_positions()]

    @property
    def count(self) -> str:
        shown = self.shown_positions()
        space = int((self._cols["source"].iloc[shown] == "space").sum())
        return count_text(len(shown), len(self._cols), space)
