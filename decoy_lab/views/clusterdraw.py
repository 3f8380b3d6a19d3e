"""A large Map drawn with matplotlib as its clusters: one tinted circle per cluster (a topic and
what it includes, or the topics of one type), named on its rim with its counts, largest first
wherever a name fits; the topics inside as dots coloured by type; and a topic's own name only
where it has room (the most memories first). The type key stands right of the map, with a note
of how many topics are drawn but not named (the live map zooms for those)."""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
from matplotlib import patheffects
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle

from decoy_lab.views.layout import YOU_SLOT, Cluster, MapLayout
from decoy_lab.views.nodes import ACCOUNT_COLOUR, TYPE_COLOURS, USER, USER_COLOUR, YOU, shorten
from decoy_lab.views.placement import Board, beside, bounds, box

HIGHLIGHT = "#d4a017"
TOPIC_ROOM = 9.0  # px: a topic's slot this wide or more leaves room to name topics; else only clusters


def cluster_counts(G: nx.DiGraph, c: Cluster) -> tuple[int, int]:
    """(topics, memories) inside a cluster, nested ones included."""
    return len(c.members), sum(int(G.nodes[n].get("memories") or 0) for n in c.members if n in G)


def cluster_text(G: nx.DiGraph, c: Cluster, width: int = 26) -> str:
    """A cluster's name and counts; a nested one's in short."""
    topics = len(c.members)
    if c.level > 1:
        return f"{shorten(c.name, 18)} · {topics:,}"
    return f"{shorten(c.name, width)} · {topics:,} topics"


def full_dot(G: nx.DiGraph) -> int:
    """The memory count at which a dot fills its slot: the 95th percentile's, so one huge topic
    does not shrink every other dot to a speck (those above it are drawn full)."""
    counts = sorted(int(d.get("memories") or 0) for n, d in G.nodes(data=True) if n != USER)
    return max(1, counts[int(len(counts) * 0.95)] if counts else 1)


def dot_radius(memories: int, full: int, slot: float) -> float:
    """A topic's dot in data units: its area grows with its memory count up to `full`, and it
    stays inside its slot, so no two dots of a cluster ever touch, at any zoom."""
    return slot * (0.3 + 0.5 * math.sqrt(min(max(memories, 0), full) / full))


def draw_clusters(G: nx.DiGraph, lay: MapLayout, marked: set[str], ax: Any = None, title: str | None = None) -> Figure:
    pos = lay.pos
    tops = [c for c in lay.clusters if c.level == 1]
    extent = [(c.x, c.y, c.r) for c in tops] + [(*pos[USER], YOU_SLOT)]
    x0, x1 = min(x - r for x, _, r in extent), max(x + r for x, _, r in extent)
    y0, y1 = min(y - r for _, y, r in extent), max(y + r for _, y, r in extent)
    y0, y1 = y0 - 0.03 * (y1 - y0), y1 + 0.03 * (y1 - y0)  # room for the names on the outer rims
    if ax is None:
        fig = Figure(figsize=(13, 13 * min(1.3, max(0.6, (y1 - y0) / (x1 - x0)))))
        ax = fig.add_axes((0.01, 0.01, 0.78, 0.98))
    fig = ax.figure
    renderer = (fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)).get_renderer()
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    ax.apply_aspect()
    _circles(ax, lay.clusters, marked)
    _spokes(ax, G, lay, marked)
    full = full_dot(G)
    px = {n: tuple(ax.transData.transform(p)) for n, p in pos.items()}
    scale = ax.transData.transform((1.0, 0.0))[0] - ax.transData.transform((0.0, 0.0))[0]  # px per unit
    radius = {n: dot_radius(int(G.nodes[n].get("memories") or 0), full, lay.slot) for n in G if n != USER}
    _dots(ax, G, pos, radius, marked, scale * 72 / fig.dpi)
    labels = _Labels(ax, renderer, px[USER])
    labels.dots.take_dot(px[USER], max(YOU_SLOT * scale, 12))
    for n, r in radius.items():
        labels.dots.take_dot(px[n], r * scale)
    by_count = sorted(radius, key=lambda n: (-int(G.nodes[n].get("memories") or 0), n))
    named = sum(labels.topic(n, G, px[n], radius[n] * scale, True) for n in by_count if n in marked)
    for c in sorted(lay.clusters, key=lambda c: (c.level, -len(c.members))):  # over dots, haloed
        any(
            labels.cluster(c, text, scale) for text in (cluster_text(G, c), f"{shorten(c.name, 16)} · {len(c.members)}")
        )
    if lay.slot * scale >= TOPIC_ROOM:  # room between the dots for topics' own names
        named += sum(labels.topic(n, G, px[n], radius[n] * scale, False) for n in by_count if n not in marked)
    _key(ax, G, renderer, len(radius) - named)
    return fig


def _circles(ax: Any, clusters: tuple[Cluster, ...], marked: set[str]) -> None:
    """Each cluster a circle tinted by its type, a nested one drawn over the one holding it."""
    for level in sorted({c.level for c in clusters}):
        row = [c for c in clusters if c.level == level]
        colours = [TYPE_COLOURS.get(c.type, TYPE_COLOURS[""]) for c in row]
        patches = [Circle((c.x, c.y), c.r) for c in row]
        ax.add_collection(
            PatchCollection(
                patches,
                facecolors=colours,
                edgecolors=[HIGHLIGHT if c.node in marked else col for c, col in zip(row, colours)],
                linewidths=[2.5 if c.node in marked else 1.0 for c in row],
                linestyles=["-" if c.node else "--" for c in row],
                alpha=0.16 if level == 1 else 0.22,
                zorder=0.5 + level * 0.1,
            )
        )


def _spokes(ax: Any, G: nx.DiGraph, lay: MapLayout, marked: set[str]) -> None:
    """A topic's tie to the topic it hangs from, inside its cluster (You's are left out, and a
    type's circle's: the circles say those); a highlighted topic's every relation is drawn."""
    inner, near, pos, homes = [], [], lay.pos, lay.homes()
    for u, v in G.edges():
        if {u, v} & marked:
            near.append([pos[u], pos[v]])
        elif u != USER and G.nodes[v].get("parent") == u and lay.spoke(homes, u, v):
            inner.append([pos[u], pos[v]])
    ax.add_collection(LineCollection(inner, colors="#8c8c8c", linewidths=0.3, alpha=0.35, zorder=1))
    ax.add_collection(LineCollection(near, colors=HIGHLIGHT, linewidths=1.5, zorder=1.5))


def _dots(ax: Any, G: nx.DiGraph, pos: dict, radius: dict[str, float], marked: set[str], pt_per_unit: float) -> None:
    nodes = list(radius)
    ax.scatter(
        [pos[n][0] for n in nodes],
        [pos[n][1] for n in nodes],
        s=[(2 * radius[n] * pt_per_unit) ** 2 for n in nodes],
        c=[G.nodes[n].get("color", TYPE_COLOURS[""]) for n in nodes],
        edgecolors=[HIGHLIGHT if n in marked else "white" for n in nodes],
        linewidths=[2.0 if n in marked else 0.3 for n in nodes],
        zorder=3,
        gid="dots",
    )
    x, y = pos[USER]
    ax.scatter(
        [x],
        [y],
        s=max(2 * YOU_SLOT * 0.9 * pt_per_unit, 22) ** 2,
        c=USER_COLOUR,
        edgecolors="white",
        zorder=3,
        gid="you",
    )
    ax.text(x, y, YOU, color="white", fontsize=9, fontweight="bold", ha="center", va="center", zorder=4)


class _Labels:
    """Names where they fit, in display pixels: none over another name or off the axes, and a
    topic's name over no dot (a cluster's, haloed, may cross the small dots inside it)."""

    def __init__(self, ax: Any, renderer: Any, middle: tuple[float, float]):
        self.ax, self.renderer, self.middle = ax, renderer, middle
        self.names, self.dots = Board(), Board()
        self.to_data = ax.transData.inverted()
        self.area = ax.get_window_extent(renderer)  # names stay on the axes: the key is right of them

    def _fit(self, text: str, spots_of: Any, gid: str, over_dots: bool, **style: Any) -> bool:
        t = self.ax.text(0, 0, text, ha="left", va="center", zorder=5, **style)
        ext = t.get_window_extent(self.renderer)
        a = self.area
        for spot in spots_of(ext.width, ext.height):
            x0, y0, x1, y1 = bounds(spot)
            inside = x0 >= a.x0 and x1 <= a.x1 and y0 >= a.y0 and y1 <= a.y1
            if inside and self.names.free(spot) and (over_dots or self.dots.free(spot)):
                t.set_position(self.to_data.transform((x0, y0 + ext.height / 2)))
                t.set_gid(gid)
                self.names.take(spot)
                return True
        t.remove()
        return False

    def cluster(self, c: Cluster, text: str, scale: float) -> bool:
        """A cluster's name on its top rim, else just inside it, across its middle, just inside its
        foot or under it."""
        if c.r * scale < (14 if c.level == 1 else 28):  # too small to name on this page
            return False
        cx, cy = self.ax.transData.transform((c.x, c.y))
        r = c.r * scale
        size = 9 if c.level == 1 else 7.5
        colour = "#1f2328" if c.level == 1 else "#3d444d"

        def spots(w: float, h: float) -> list:
            return [
                box(cx - w / 2, cy + r + 1, w, h),
                box(cx - w / 2, cy + r - h - 2, w, h),
                box(cx - w / 2, cy - h / 2, w, h),
                box(cx - w / 2, cy - r + 2, w, h),
                box(cx - w / 2, cy - r - h - 1, w, h),
            ]

        halo = [patheffects.withStroke(linewidth=2.5, foreground="white")]
        style = {"fontsize": size, "fontweight": "bold", "color": colour, "path_effects": halo}
        return self._fit(text, spots, c.id, True, **style)

    def topic(self, n: str, G: nx.DiGraph, centre: tuple, r: float, marked: bool) -> bool:
        d = G.nodes[n]
        count = int(d.get("memories") or 0)
        text = shorten(str(d.get("name", n)), 20) + (f" ({count:,})" if count else "")
        left, up = centre[0] < self.middle[0], centre[1] >= self.middle[1]

        def spots(w: float, h: float) -> list:
            return beside(centre, r, w, h, left=left, up=up)

        style: dict[str, Any] = {"fontsize": 7, "color": "#24292f"}
        if marked:  # a highlighted topic is named even where its name must cross other dots
            style |= {"fontweight": "bold", "path_effects": [patheffects.withStroke(linewidth=2.5, foreground="white")]}
        return self._fit(text, spots, f"label:{n}", marked, **style)


def _key(ax: Any, G: nx.DiGraph, renderer: Any, unnamed: int) -> None:
    """The type key and the note of topics drawn but not named, right of the map."""
    types = sorted({d.get("type", "") for _, d in G.nodes(data=True) if d.get("kind") == "topic"})
    rows = [(TYPE_COLOURS.get(t, TYPE_COLOURS[""]), t or "(no type)") for t in types]
    if any(d.get("kind") == "account" for _, d in G.nodes(data=True)):
        rows.append((ACCOUNT_COLOUR, "an account"))
    handles = [Line2D([], [], marker="o", ls="", markersize=8, color=c) for c, _ in rows]
    key = ax.legend(
        handles,
        [label for _, label in rows],
        title="topic type\n(circles: a topic and what\nit includes, or one type)",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title_fontsize=8,
        frameon=False,
        alignment="left",
    )
    key.set_clip_on(False)
    note = f"{unnamed:,} of {len(G) - 1:,} topics drawn\nbut not named, for room\n(the live map names them\nas you zoom in)"
    ax.text(1.02, 0.0, note, transform=ax.transAxes, fontsize=8, color="#555555", va="bottom", gid="note")
