"""The pickers the map and the memory table share (topic, category, "mine only"), and the
owner panel's grant picker (permissions, categories, topic).

`Filters` is a row of controls whose choices are public traits (`topic`, `category`, `mine`),
so a view links them to the map and the table with `link` instead of reaching into either.
A trait holds the filter itself: "" for "(all)", a map node (`user`, `topic:<id>`, …) for a topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as W
import networkx as nx
import traitlets as T

from decoy_lab import vocab
from decoy_lab.views import mapcache, topicmap

if TYPE_CHECKING:
    from decoy_lab.vault.read import Vault

ALL = "(all)"
ANY = ""  # the value of the "(all)" choice (ipywidgets shows no label for a None value)


def chosen(value: str | None) -> str | None:
    """A control's value as a filter: the "(all)" choice means no filter (None)."""
    return None if value in (ANY, None) else value


def topic_options(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """(label, value) pairs for a topic picker: all, You (no topic), then every node on the map
    by name, so whatever the map can select the picker can show."""
    named = sorted(
        ((topicmap.shorten(str(d.get("name", n)), 60), n) for n, d in graph.nodes(data=True) if n != topicmap.USER),
        key=lambda p: (p[0].lower(), p[1]),
    )
    return [(ALL, ANY), (topicmap.YOU, topicmap.USER), *named]


def category_options(vault: Vault) -> list[tuple[str, str]]:
    return [(ALL, ANY)] + [(c, c) for c in mapcache.categories(vault)]


class Filters(W.HBox):
    """Topic, category and "mine only" controls; their values are the public traits."""

    topic = T.Unicode(ANY)
    category = T.Unicode(ANY)
    mine = T.Bool(False)

    def __init__(self, vault: Vault, graph: nx.DiGraph):
        self._topic = W.Dropdown(description="topic", options=topic_options(graph), value=ANY)
        self._category = W.Dropdown(description="category", options=category_options(vault), value=ANY)
        self._mine = W.Checkbox(description="mine only", value=False, indent=False)
        super().__init__([self._topic, self._category, self._mine])
        self.add_class("decoy-filters")
        self._known = {v for _, v in self._topic.options}
        W.link((self._category, "value"), (self, "category"))
        W.link((self._mine, "value"), (self, "mine"))
        self._topic.observe(self._pick_topic, names="value")

    def _pick_topic(self, change: dict) -> None:
        if change["new"] != ANY or self.topic in self._known:
            self.topic = change["new"] or ANY

    @T.observe("topic")
    def _show_topic(self, change: dict) -> None:
        # A node the picker does not list (a filtered map) shows as "(all)" but stays the filter.
        self._topic.value = change["new"] if change["new"] in self._known else ANY


MEMORY_PERMISSIONS = ("memory.read", "memory.save", "memory.edit", "memory.delete")
REACHES = (("all memories", "all"), ("memories in these categories", "datatypes"), ("memories about a topic", "about"))


class GrantPicker(W.VBox):
    """A grant's memory rows picked, not typed: permissions, then what they reach (everything,
    some categories or one topic). `rows` is what the owner's app would send; `show(rows)` loads
    a grant. Rows for other families (accounts, email …) are kept as they are, since this picker
    cannot show them. `memory.save` is asked alone (it takes no selection), so it gets its own row.
    The "may" list says each permission as the owner's app words it for what is picked to reach
    ("Read memories in travel"), so it always says what Set or Approve would grant."""

    def __init__(self) -> None:
        self.permissions = W.SelectMultiple(
            options=[(self.wording(p, "all"), p) for p in MEMORY_PERMISSIONS],
            rows=4,
            description="may",
            value=("memory.read",),
        )
        self.reach = W.Dropdown(options=REACHES, value="all", description="reaching")
        self.categories = W.SelectMultiple(options=vocab.CATEGORIES, rows=5, description="categories")
        self.topic = W.Dropdown(options=[], description="topic")
        self._kept: list[dict] = []
        super().__init__([W.HBox([self.permissions, W.VBox([self.reach, self.categories, self.topic])])])
        self.add_class("decoy-grant-picker")
        for name in ("permissions", "reach", "categories", "topic"):
            getattr(self, name).add_class(f"decoy-grant-{name}")
        self.reach.observe(lambda _c: self._show_reach(), names="value")
        for choice in (self.categories, self.topic):
            choice.observe(lambda _c: self._say_permissions(), names="value")
        self._show_reach()

    def set_topics(self, options: list[tuple[str, str]]) -> None:
        """(name, topic:<id>) pairs the topic choice offers."""
        if list(self.topic.options) != options:
            self.topic.options = options
            self._say_permissions()  # a renamed topic is named anew

    def _show_reach(self) -> None:
        self.categories.layout.display = None if self.reach.value == "datatypes" else "none"
        self.topic.layout.display = None if self.reach.value == "about" else "none"
        self._say_permissions()

    @staticmethod
    def wording(permission: str, reach: str, categories: tuple[str, ...] = (), topic: str | None = None) -> str:
        """A memory permission as the owner's app words it for a selection: "Read all memories",
        "Read memories in travel, food", "Read memories about Lisbon trip" (`topic`: its name);
        `memory.save` takes no selection."""
        from decoy_lab.sandbox.checks.grants import Row

        row: dict = {"permissions": [permission]}
        if permission != "memory.save":
            if reach == "datatypes":
                row["datatypes"] = list(categories) or ["the categories picked"]
            elif reach == "about":
                row["about"] = ["topic"]
        (line,) = Row.from_json(row).headlines()
        return line.replace("about this topic", f"about {topic}") if topic else line

    def _say_permissions(self) -> None:
        """The "may" list in the words of what is picked to reach; what is chosen stays chosen."""
        topic = self.topic.label if self.reach.value == "about" and self.topic.value else None
        options = [
            (self.wording(p, self.reach.value, tuple(self.categories.value), topic), p) for p in MEMORY_PERMISSIONS
        ]
        if list(self.permissions.options) != options:
            chosen = self.permissions.value
            self.permissions.options = options
            self.permissions.value = chosen

    @property
    def rows(self) -> list[dict]:
        chosen = [p for p in MEMORY_PERMISSIONS if p in self.permissions.value]
        rows: list[dict] = [dict(r) for r in self._kept]
        if "memory.save" in chosen:
            rows.append({"permissions": ["memory.save"]})
        rest = [p for p in chosen if p != "memory.save"]
        if rest:
            row: dict = {"permissions": rest}
            if self.reach.value == "datatypes":
                row["datatypes"] = list(self.categories.value)
            elif self.reach.value == "about" and self.topic.value:
                row["about"] = [self.topic.value]
            rows.append(row)
        return rows

    def show(self, rows: list[dict]) -> None:
        """Load a grant's rows: its memory permissions and the first selection among them."""
        mine = [r for r in rows if set(r.get("permissions") or []) <= set(MEMORY_PERMISSIONS)]
        self._kept = [r for r in rows if r not in mine]
        self.permissions.value = tuple(p for p in MEMORY_PERMISSIONS if any(p in r["permissions"] for r in mine))
        picked = next((r for r in mine if "datatypes" in r or "about" in r), {})
        if picked.get("datatypes"):
            self.categories.value = tuple(c for c in picked["datatypes"] if c in vocab.CATEGORIES)
            self.reach.value = "datatypes"
        elif picked.get("about") and picked["about"][0] in {v for _, v in self.topic.options}:
            self.topic.value = picked["about"][0]
            self.reach.value = "about"
        else:
            self.reach.value = "all"
