"""The memory table (assets/grid.js, an anywidget): a WAI-ARIA grid, virtually scrolled, that
filters as you type and sorts by a click on a column.

A small vault goes to the page whole (trait `rows`, one list per column, while they take at
most WHOLE_BYTES of JSON): the page filters, sorts and scrolls it with no kernel behind it
(exported HTML, the tour). A larger one is paged: `rows` holds the first FIRST_PAGE rows as
loaded and `paging` says how many there are in all; the page asks for the window it shows (plus
a margin) with the filters and sort it shows, and the kernel answers from `GridRows` (pandas and
numpy, gridrows.py) with that window and how many rows match; what a search or a sort over
every row needs is built once the page says it has painted the first page (or when first asked
for), so it never competes with the first paint. A page saved without a kernel shows the first
page and says that the rest needs the kernel.

Public traits: the filters `topic` (a map node: `user` = no topic), `category`, `search`
(filter as you type, over the text, the topic's name and the names of the topics that include
it, and the categories), `mine`; `sort` (`column:asc|desc`, "" = as loaded); `picked` (the
clicked row's id) and `picked_topic` (its map node, for the map to ring). `frame` is what the
page shows, by the same rule, so a count in Python is the count on screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anywidget
import pandas as pd
import traitlets as T

from decoy_lab.text import plural
from decoy_lab.widgets.gridrows import SORTABLE, GridRows, columns_of, fits, search_keys
from decoy_lab.widgets.html import ASSETS, widget_script
from decoy_lab.widgets.pickers import ANY

if TYPE_CHECKING:
    import networkx as nx

    from decoy_lab.vault.read import Vault

__all__ = ["SORTABLE", "MemoryGrid", "columns_of", "count_text", "search_keys"]

# Whole in the page while its rows take at most 8 MB of JSON: the bench's 10,000 memories take
# 5.1 MB and stay as fast as before. Measured in chromium, a key filters 10,000, 20,000 or 40,000
# rows held in the page in 13 ms (median), so the page's filtering sets no bound; the state's
# size does (a saved page's size, the first paint: 1.3 s for 2.8 MB, 2.2 s for 11 MB).
WHOLE_BYTES = 8_000_000
LEAST_ROW = 150  # bytes of JSON a row takes at the least (ids, dates, kid, source: no text)
FIRST_PAGE = 200  # rows a paged table sends with its state: what a page with no kernel shows
MOST_ASKED = 1_000  # rows a window asked for holds at most (a screenful and a margin)


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

    _esm = widget_script("grid.js")
    _css = ASSETS / "grid.css"

    rows = T.Dict().tag(sync=True)
    paging = T.Dict().tag(sync=True)  # {} when whole; else {"total": rows in all, "space": of them legacy}
    picked_row = T.Dict().tag(sync=True)  # a paged table's picked row, for its details
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
        self.table = GridRows(vault, graph)
        n = self.table.n
        # past WHOLE_BYTES / LEAST_ROW rows no vault fits, and its columns need not be built first
        whole = n * LEAST_ROW <= WHOLE_BYTES and fits(self.table.cols, WHOLE_BYTES)
        if whole:
            rows = self.table.cols
        else:  # the first page now; the columns once the page has shown it (`_on_msg`), or when first asked for
            rows = {**self.table.rows(range(min(n, FIRST_PAGE))), "at": list(range(min(n, FIRST_PAGE)))}
        paging = {} if whole else {"total": n, "space": int(self.table.space.sum())}
        super().__init__(rows=rows, paging=paging, empty_reason=empty_reason, **kw)
        self.on_msg(self._on_msg)

    def __repr__(self) -> str:
        return f"<MemoryGrid {self.count}>"

    @property
    def paged(self) -> bool:
        """Whether the page holds only the rows it shows (the kernel sends them on demand)."""
        return bool(self.paging)

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("kind") == "shown":
            self.table.background()  # the first page is painted: a search or a sort needs every row next
            return
        if not isinstance(content, dict) or content.get("kind") != "window":
            return
        try:
            start = int(content.get("from") or 0)
            end = min(int(content.get("to") or 0), start + MOST_ASKED)
            query = content.get("query")
            answer = self.table.window(
                query if isinstance(query, dict) else {}, start, end, str(content.get("picked") or "")
            )
        except (TypeError, ValueError):  # a malformed ask from the page: nothing to answer
            return
        self.send({"kind": "window", "seq": content.get("seq"), **answer})

    @T.observe("picked")
    def _ring_its_topic(self, change: dict) -> None:
        at = self.table.position.get(change["new"], -1) if change["new"] else -1
        self.picked_topic = str(self.table.nodes[at]) if at >= 0 else ANY
        if self.paged:  # the page may not hold that row (picked from Python): its details travel
            self.picked_row = {k: v[0] for k, v in self.table.rows([at]).items()} if at >= 0 else {}

    def shown_positions(self) -> list[int]:
        """Positions (in the memories frame) of the rows on show, in the order shown."""
        order = self.table.order(self.topic, self.category, self.mine, self.search, self.sort)
        return order.tolist()

    @property
    def frame(self) -> pd.DataFrame:
        """The memories on show, in the order shown."""
        return self.vault.memories.iloc[self.shown_positions()]

    @property
    def count(self) -> str:
        order = self.table.order(self.topic, self.category, self.mine, self.search, self.sort)
        return count_text(len(order), self.table.n, int(self.table.space[order].sum()))
