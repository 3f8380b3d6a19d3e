"""The pickers the map and the memory table share: topic, category and "mine only".

`Filters` is a row of controls whose choices are public traits (`topic`, `category`, `mine`),
so a view links them to the map and the table with `link` instead of reaching into either.
A trait holds the filter itself: "" for "(all)", a map node (`user`, `topic:<id>`, …) for a topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as W
import networkx as nx
import traitlets as T

from decoy_lab.views import topicmap

if TYPE_CHECKING:
    from decoy_lab.vault.read import Vault

ALL = "(all)"
ANY = ""  # the value of the "(all)" choice (ipywidgets shows no label for a None value)


def chosen(value: str | None) -> str | None:
    """A control's value as a filter: the "(all)" choice means no filter (None)."""
    return None if value in (ANY, None) else value


def plural(n: int, one: str, many: str | None = None) -> str:
    """ "1 memory", "2 memories": counts read as words, never "1 memories"."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def topic_options(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """(label, value) pairs for a topic picker: all, You (no topic), then every node on the map
    by name, so whatever the map can select the picker can show."""
    named = sorted(
        ((topicmap.shorten(str(d.get("name", n)), 60), n) for n, d in graph.nodes(data=True) if n != topicmap.USER),
        key=lambda p: (p[0].lower(), p[1]),
    )
    return [(ALL, ANY), (topicmap.YOU, topicmap.USER), *named]


def category_options(vault: Vault) -> list[tuple[str, str]]:
    cats: set[str] = set()
    memories = vault.memories
    if "categories" in memories:
        for c in memories["categories"]:
            cats |= set(c if isinstance(c, list | tuple) else [])
    return [(ALL, ANY)] + [(c, c) for c in sorted(cats)]


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
