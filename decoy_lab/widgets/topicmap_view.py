"""The explorable topic map: networkx builds the graph and lays it out (topicmap.py), once per
vault content (mapcache.py; pagedata.py makes what the page draws), and a saved profile keeps
it on disk, so a reopened vault with nothing changed builds none of it again; the browser draws
it (assets/topicmap.js, an anywidget), so clicking, hovering, zooming, searching and expanding
never wait for the kernel. A large map
(layout.py's clusters) is drawn by level of detail: its clusters named first, topics' dots and
names as zooming gives them room, while hover and search reach every topic at any zoom.

Public traits: `selected` (the clicked topic, "" for none), `ringed` (the topic of the row
picked in the table), `collapsed` (topics whose nested topics are hidden; double-click toggles),
`category` and `depth` (filters that rebuild the graph). `figure()` is the matplotlib drawing
of the same graph, for PNG/SVG export and viewers without widgets.

`LiveMap` is what `%decoy map` returns: the TopicGraph itself, which displays as this widget
with its PNG and its text in the same output bundle, so a front end that runs widgets shows
the explorable map and nbconvert, GitHub or a closed kernel's page still show the picture.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as T
from matplotlib.figure import Figure

from decoy_lab.errors import MemoryModelError
from decoy_lab.views import mapcache, topicmap
from decoy_lab.views.pagedata import graph_data
from decoy_lab.widgets.html import ASSETS, widget_script
from decoy_lab.widgets.pickers import ANY, chosen

if TYPE_CHECKING:
    from decoy_lab.vault.read import Vault


class TopicMapWidget(anywidget.AnyWidget):
    """The map of one Vault, drawn in the browser; `graph` is the networkx graph on show."""

    _esm = widget_script("topicmap.js")
    _css = ASSETS / "topicmap.css"

    nodes = T.List(T.Dict()).tag(sync=True)
    edges = T.List(T.Dict()).tag(sync=True)
    clusters = T.List(T.Dict()).tag(sync=True)  # a large map's circles (empty: rings)
    selected = T.Unicode(ANY).tag(sync=True)
    ringed = T.Unicode(ANY).tag(sync=True)
    collapsed = T.List(T.Unicode()).tag(sync=True)
    category = T.Unicode(ANY)
    depth = T.Int(-1)  # -1: every depth

    def __init__(
        self,
        vault: Vault,
        *,
        graph: topicmap.TopicGraph | None = None,
        topic: str | None = None,
        depth: int | None = None,
        category: str | None = None,
        **kw: Any,
    ):
        """The map of `vault`; `topic`, `depth` and `category` filter it as build_graph does,
        and `graph` (built with those filters) spares building it again."""
        self.vault = vault
        self.topic = topic
        self.graph = (
            graph if graph is not None else mapcache.graph_of(vault, topic=topic, depth=depth, category=category)
        )
        nodes, edges, clusters = graph_data(vault, self.graph)
        filters = {"depth": -1 if depth is None else depth, "category": category or ANY}
        super().__init__(nodes=nodes, edges=edges, clusters=clusters, **filters, **kw)
        self.observe(lambda _ch: self.refresh(), names=["category", "depth"])
        mapcache.keep(vault)  # a saved profile keeps the built map for the next session

    def __repr__(self) -> str:
        topics = sum(1 for _, d in self.graph.nodes(data=True) if d.get("kind") == "topic")
        return f"<TopicMapWidget You + {topics} topics, selected={self.selected or None!r}>"

    def refresh(self) -> None:
        """Rebuild the graph for the current filters and send it to the page."""
        depth = None if self.depth < 0 else self.depth
        self.graph = mapcache.graph_of(self.vault, topic=self.topic, depth=depth, category=chosen(self.category))
        nodes, edges, clusters = graph_data(self.vault, self.graph)
        with self.hold_sync():
            self.nodes, self.edges, self.clusters = nodes, edges, clusters

    def node_of(self, topic: str) -> str:
        """The map node for a topic given by `topic:<id>`, id or name; a typed error if absent."""
        node = topicmap.find_node(self.graph, topic)
        if node is None:
            raise MemoryModelError(f"no topic named {topic!r} on the map")
        return node

    def pick(self, topic: str | None) -> None:
        """Select a topic by `topic:<id>` or name (None for none), as a click on it does."""
        self.selected = ANY if topic is None else self.node_of(topic)

    def figure(self, **kw: Any) -> Figure:
        """The same graph as a matplotlib Figure (`fig.savefig("map.svg")`), the selection ringed."""
        return topicmap.draw(self.graph, highlight=[n for n in (self.selected, self.ringed) if n], **kw)


class LiveMap(topicmap.TopicGraph):
    """The graph `%decoy map` returns: a TopicGraph (a networkx DiGraph, node for node what
    build_graph gives) that displays as the explorable map, with the drawn PNG beside it in the
    same bundle. A copy networkx makes (`subgraph(...).copy()`) knows no vault: it shows the PNG."""

    def __init__(self, incoming: Any = None, *, vault: Vault | None = None, filters: dict | None = None, **attr: Any):
        super().__init__(incoming, **attr)
        self.vault = vault
        self.filters = dict(filters or {})
        self._widget: TopicMapWidget | None = None

    @classmethod
    def of(
        cls, vault: Vault, *, topic: str | None = None, depth: int | None = None, category: str | None = None
    ) -> LiveMap:
        graph = mapcache.graph_of(vault, topic=topic, depth=depth, category=category)
        return cls(graph, vault=vault, filters={"topic": topic, "depth": depth, "category": category})

    @property
    def widget(self) -> TopicMapWidget:
        """The live map of this graph (made once; every display of the graph shows it)."""
        if self.vault is None:
            raise MemoryModelError("this copy of the map knows no vault to draw live: display it for its PNG")
        if self._widget is None:
            self._widget = TopicMapWidget(self.vault, graph=self, **self.filters)
        return self._widget

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {
            "text/plain": repr(self),
            "image/png": base64.b64encode(self._repr_png_()).decode("ascii"),
        }
        if self.vault is not None:
            view: Any = self.widget._repr_mimebundle_() or {}
            if isinstance(view, tuple):  # anywidget answers (data, metadata)
                view = view[0]
            bundle.update({k: v for k, v in view.items() if k != "text/plain"})
        return bundle
