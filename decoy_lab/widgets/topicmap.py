"""Topic map widget: the drawn Map of a Vault with controls to filter it (category, depth,
focus on one topic) and to pick a topic, which rings it on the map and lists its memories.
"""

from __future__ import annotations

import io
from typing import Any

import ipywidgets as W

from .. import topicmap
from ..errors import MemoryModelError
from .browser import ALL, ANY, category_options, chosen, table_html, topic_options


def png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return buf.getvalue()


class TopicMapWidget(W.VBox):
    """`graph` is the networkx graph on show; `memories` the picked topic's memories."""

    def __init__(self, vault: Any):
        self.vault = vault
        self.graph = topicmap.build_graph(vault)
        self.memories = vault.memories.iloc[0:0]
        self._pick = W.Dropdown(description="topic", options=topic_options(vault), value=ANY)
        self._category = W.Dropdown(description="category", options=category_options(vault), value=ANY)
        self._depth = W.Dropdown(description="depth", options=[(ALL, ANY), ("1", 1), ("2", 2), ("3", 3)], value=ANY)
        self._focus = W.Checkbox(description="only the picked topic and what it includes", value=False, indent=False)
        self._image = W.Image(format="png", layout=W.Layout(max_width="760px"))
        self._list = W.HTML()
        for w in (self._pick, self._category, self._depth, self._focus):
            w.observe(lambda _ch: self.refresh(), names="value")
        super().__init__([W.HBox([self._pick, self._category, self._depth]), self._focus, self._image, self._list])
        self.add_class("decoy-topicmap")
        self.refresh()

    def __repr__(self) -> str:
        return f"<TopicMapWidget {self.graph!r} picked={self._pick.value or None!r}>"

    def pick(self, topic: str | None) -> None:
        """Pick a topic by `topic:<id>` or name (None for none)."""
        node = None if topic is None else topicmap.find_node(topicmap.build_graph(self.vault), topic)
        if topic is not None and node is None:
            raise MemoryModelError(f"no topic named {topic!r} on the map")
        self._pick.value = ANY if node is None else node

    def refresh(self) -> None:
        picked, category = chosen(self._pick.value), chosen(self._category.value)
        focus = picked if self._focus.value and picked not in (None, topicmap.USER) else None
        self.graph = topicmap.build_graph(self.vault, topic=focus, depth=chosen(self._depth.value), category=category)
        self._image.value = png(topicmap.draw(self.graph, highlight=picked if picked in self.graph else None))
        if picked is None:
            self.memories = self.vault.memories.iloc[0:0]
            self._list.value = "<i>Pick a topic to list its memories.</i>"
            return
        self.memories = topicmap.select_memories(self.vault, topic=picked, category=category)
        name = self.graph.nodes[picked]["name"] if picked in self.graph else picked
        self._list.value = f"<b>{topicmap.shorten(str(name), 60)}</b>" + table_html(self.memories)
