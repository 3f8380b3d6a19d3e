"""Memory browser: filter a loaded Vault by topic, category and text; the table; the selected
memory's details (rev, kid, via, author); and a button that opens its unseal stepper.

`VaultView` puts the browser and the topic map side by side as two tabs over one Vault:
picking a topic in either one picks it in the other.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W
import pandas as pd

from .. import topicmap
from ..display import esc
from .stepper import Stepper

ALL = "(all)"
ANY = ""  # the value of the "(all)" choice (ipywidgets shows no label for a None value)


def chosen(value: Any) -> Any:
    """A control's value as a filter: the "(all)" choice means no filter (None)."""
    return None if value == ANY else value


TABLE_COLUMNS = ["text", "topic", "categories", "mine", "updated_at"]


def topic_options(vault: Any) -> list[tuple[str, str]]:
    """(label, value) pairs for a topic picker: all, You (no topic), then every listed topic."""
    topics = getattr(vault, "topics", pd.DataFrame())
    opts: list[tuple[str, str]] = [(ALL, ANY), (topicmap.YOU, topicmap.USER)]
    if not topics.empty:
        opts += [(str(r["name"]), str(r["id"])) for r in topics.to_dict("records")]
    return opts


def category_options(vault: Any) -> list[tuple[str, str]]:
    memories = getattr(vault, "memories", pd.DataFrame())
    cats: set[str] = set()
    if "categories" in memories:
        for c in memories["categories"]:
            cats |= set(c or [])
    return [(ALL, ANY)] + [(c, c) for c in sorted(cats)]


def table_html(frame: pd.DataFrame, *, limit: int = 200) -> str:
    """The filtered memories as an HTML table (escaped; long texts kept whole but wrapped)."""
    if frame.empty:
        return "<div class='decoy-memory-table'><i>No memory matches.</i></div>"
    cols = [c for c in TABLE_COLUMNS if c in frame]
    shown = frame[cols].head(limit).copy()
    if "categories" in shown:
        shown["categories"] = shown["categories"].map(lambda c: ", ".join(c or []))
    if "topic" in shown:  # no topic = about You, as the map draws it (pandas would print <NA>)
        shown["topic"] = shown["topic"].astype(object).where(shown["topic"].notna(), topicmap.YOU)
    for col in ("created_at", "updated_at"):
        if col in shown and pd.api.types.is_datetime64_any_dtype(shown[col]):
            shown[col] = shown[col].dt.strftime("%Y-%m-%d %H:%M")
    more = f"<div><i>… and {len(frame) - limit} more</i></div>" if len(frame) > limit else ""
    return (
        f"<div class='decoy-memory-table' style='max-height:320px;overflow-y:auto'>"
        f"<div style='color:#57606a'>{len(frame)} memories</div>"
        + shown.to_html(index=False, escape=True, na_rep="", border=0)
        + more
        + "</div>"
    )


def details_html(row: dict) -> str:
    """The selected memory: text, where it is filed, and the fields that explain access."""

    def fmt(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return ", ".join(map(str, v))
        return "" if v is None or (pd.api.types.is_scalar(v) and pd.isna(v)) else str(v)

    keys = [
        "id",
        "topic",
        "topic_id",
        "categories",
        "rev",
        "kid",
        "via",
        "mine",
        "author_kind",
        "created_at",
        "updated_at",
    ]
    cells = "".join(
        f"<tr><th style='text-align:left;padding-right:8px'>{esc(k)}</th><td><code>{esc(fmt(row.get(k)))}"
        f"</code></td></tr>"
        for k in keys
        if k in row
    )
    return (
        f"<div class='decoy-memory-details'><p style='white-space:pre-wrap'>{esc(fmt(row.get('text')))}</p>"
        f"<table>{cells}</table></div>"
    )


class MemoryBrowser(W.VBox):
    """Filters, the table, the selected memory's details and its unseal stepper."""

    def __init__(self, vault: Any, *, connection: Any = None, reveal: bool = False):
        self.vault = vault
        self.connection = connection
        self.reveal = reveal
        self.frame = vault.memories
        self._topic = W.Dropdown(description="topic", options=topic_options(vault), value=ANY)
        self._category = W.Dropdown(description="category", options=category_options(vault), value=ANY)
        self._search = W.Text(description="text", placeholder="search the text", continuous_update=False)
        self._mine = W.Checkbox(description="mine only", value=False, indent=False)
        self._table = W.HTML()
        self._pick = W.Dropdown(description="memory", options=[], layout=W.Layout(width="95%"))
        self._details = W.HTML()
        self._unseal = W.Button(
            description="Step through unseal",
            icon="key",
            disabled=connection is None,
            tooltip="re-run the read of this row step by step" if connection else "needs a connection",
        )
        self._stepper = W.VBox()
        for w in (self._topic, self._category, self._search, self._mine):
            w.observe(lambda _ch: self.refresh(), names="value")
        self._pick.observe(lambda _ch: self._show_details(), names="value")
        self._unseal.on_click(lambda _b: self.open_stepper())
        super().__init__(
            [
                W.HTML(f"<b>{esc(getattr(vault, 'summary', ''))}</b>"),
                W.HBox([self._topic, self._category]),
                W.HBox([self._search, self._mine]),
                self._table,
                self._pick,
                self._details,
                self._unseal,
                self._stepper,
            ]
        )
        self.add_class("decoy-browser")
        self.refresh()

    def __repr__(self) -> str:
        return f"<MemoryBrowser {len(self.frame)} of {len(self.vault.memories)} memories shown>"

    def set_filters(
        self,
        *,
        topic: str | object | None = ...,
        category: str | object | None = ...,
        search: str | object = ...,
        mine: bool | object = ...,
    ) -> None:
        """Set any filter from Python (the controls follow)."""
        if topic is not ...:
            self._topic.value = ANY if topic is None else topic
        if category is not ...:
            self._category.value = ANY if category is None else category
        if search is not ...:
            self._search.value = search
        if mine is not ...:
            self._mine.value = mine

    def refresh(self) -> None:
        self.frame = topicmap.select_memories(
            self.vault,
            topic=chosen(self._topic.value),
            category=chosen(self._category.value),
            search=self._search.value or None,
            mine=self._mine.value,
        )
        self._table.value = table_html(self.frame)
        opts = [(topicmap.shorten(str(r["text"]), 80), str(r["id"])) for r in self.frame.to_dict("records")]
        keep = self._pick.value if self._pick.value in {v for _, v in opts} else None
        self._pick.options = opts
        self._pick.value = keep if keep is not None else (opts[0][1] if opts else None)
        self._show_details()

    @property
    def selected(self) -> str | None:
        return self._pick.value

    def select(self, row_id: str) -> None:
        self._pick.value = row_id

    def _show_details(self) -> None:
        self._stepper.children = []
        rid = self._pick.value
        if rid is None:
            self._details.value = ""
            self._unseal.disabled = True
            return
        row = self.frame[self.frame["id"] == rid].to_dict("records")
        self._details.value = details_html(row[0]) if row else ""
        self._unseal.disabled = self.connection is None

    def open_stepper(self) -> Stepper | None:
        """Unseal the selected memory step by step and show the stepper under the details."""
        if self._pick.value is None or self.connection is None:
            return None
        stepper = Stepper(self.connection.unseal(self._pick.value), reveal=self.reveal)
        self._stepper.children = [stepper]
        return stepper


class VaultView(W.Tab):
    """The table and the map: two views of one Vault, sharing the picked topic."""

    def __init__(self, vault: Any, *, connection: Any = None, reveal: bool = False):
        from .topicmap import TopicMapWidget

        self.browser = MemoryBrowser(vault, connection=connection, reveal=reveal)
        self.map = TopicMapWidget(vault)
        super().__init__(children=[self.browser, self.map])
        self.set_title(0, "Memories")
        self.set_title(1, "Map")
        self.browser._topic.observe(self._from_table, names="value")
        self.map._pick.observe(self._from_map, names="value")

    def __repr__(self) -> str:
        return f"<VaultView {self.browser!r} {self.map!r}>"

    def _from_table(self, change: dict) -> None:
        value = change["new"]
        if self.map._pick.value != value:
            self.map._pick.value = value

    def _from_map(self, change: dict) -> None:
        if self.browser._topic.value != change["new"]:
            self.browser._topic.value = change["new"]
