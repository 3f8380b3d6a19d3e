"""The Map as a readable matplotlib drawing (a large one is its clusters: clusterdraw.py): topics coloured by type, each dot's area by its
memory count (with a size key), relation types along the edges, and every label placed beside
its own dot where it covers no other label, no dot and not the legend (placement.py).

The legend stands right of everything drawn, so it can never hide a label; a label that finds
no free spot is left out and counted in a note under the map (the live map zooms for those).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from decoy_lab.views.clusterdraw import draw_clusters
from decoy_lab.views.layout import map_layout
from decoy_lab.views.nodes import ACCOUNT_COLOUR, TYPE_COLOURS, USER, USER_COLOUR, YOU, shorten
from decoy_lab.views.placement import Board, beside, bounds, box, outward, rotated
from decoy_lab.views.selection import find_node

EDGE_LABELS_UP_TO = 80  # nodes; beyond that only a highlighted topic's relations are labelled
KEY_COUNTS = (1, 5, 20, 50, 100, 200, 500, 1000, 2000, 5000)  # the size key's steps
YOU_AREA = 900.0  # pt², the dot in the middle


@dataclass(frozen=True)
class SizeScale:
    """A dot's area (pt², as scatter takes it) grows with its memory count from a floor, so 2 and
    5 memories differ as 2 and 5 do; the slope shrinks only when the biggest topic would be huge."""

    floor: float
    per_memory: float

    @classmethod
    def of(cls, G: nx.DiGraph, many: bool) -> SizeScale:
        most = max((int(d.get("memories") or 0) for n, d in G.nodes(data=True) if n != USER), default=0)
        floor, slope, biggest = (24.0, 20.0, 500.0) if many else (60.0, 44.0, 1400.0)
        return cls(floor, min(slope, (biggest - floor) / max(most, 1)))

    def area(self, count: int) -> float:
        return self.floor + self.per_memory * max(0, count)

    def key(self, most: int) -> list[int]:
        """The counts the size key shows: 1, 5, 20, … and the biggest topic's, at most four."""
        steps = [c for c in KEY_COUNTS if c <= max(most, 1)]
        if most > steps[-1]:
            steps.append(most)
        if len(steps) > 4:
            steps = [steps[0], steps[len(steps) // 3], steps[2 * len(steps) // 3], steps[-1]]
        return steps


def draw(
    G: nx.DiGraph,
    *,
    highlight: str | Iterable[str] | None = None,
    ax: Any = None,
    title: str | None = None,
    label_width: int = 24,
) -> Figure:
    """Draw the map and return its Figure (never shows it; never touches pyplot state).

    Topics are coloured by type and sized by memory count; relation types label the edges;
    labels are shortened and placed beside their dots without covering one another, a dot or
    the legend. `highlight` (node ids or names) rings those topics and fades the rest.
    """
    lay = map_layout(G)
    marked = _highlighted(G, highlight)
    if lay.clusters:  # a large map: its clusters, named, and topics named where they have room
        return draw_clusters(G, lay, marked, ax=ax, title=title)
    pos = lay.pos
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    pad = 0.5  # data units: room for the outermost dots and a label above or below one
    x0, x1, y0, y1 = min(xs) - pad, max(xs) + pad, min(ys) - pad, max(ys) + pad
    if ax is None:
        n = G.number_of_nodes()
        side = 7 if n <= 16 else 9 if n <= 30 else 11
        tall = min(1.4, max(0.5, (y1 - y0) / (x1 - x0)))  # the figure takes the map's own shape
        fig = Figure(figsize=(side, side * tall))
        ax = fig.add_axes((0.05, 0.05, 0.9, 0.9))
    else:
        fig = ax.figure
    own = fig.axes == [ax]  # nothing else on the figure: the keys may stand right of the map
    canvas = (
        fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    )  # a pyplot figure keeps its own
    many = G.number_of_nodes() > 24
    scale = SizeScale.of(G, many)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    ax.apply_aspect()  # the axes box is final now, so data → pixel conversions below hold

    nodes = [n for n in G if n != USER]
    painter = _Painter(ax, canvas.get_renderer(), G, pos, marked, many)
    _draw_edges(ax, G, pos, marked)
    _draw_nodes(ax, G, nodes, pos, marked, scale)
    radius = painter.take_dots(nodes, scale)
    keys = _Keys(ax, painter, scale)
    # On a caller's axes (neighbours may sit right of them) the keys take a corner free of dots
    # first, and the labels keep out of it; on the map's own figure they stand right of it all.
    cornered = not own and keys.in_a_free_corner()
    left_out = painter.node_labels(nodes, radius, label_width)
    if G.number_of_nodes() <= EDGE_LABELS_UP_TO or marked:
        painter.relation_labels(crowded=G.number_of_nodes() > EDGE_LABELS_UP_TO)
    if cornered:
        keys.note_below_axes(left_out)
    else:
        keys.right_of_everything(left_out)
    return fig


class _Painter:
    """Writes the labels, each where the board has room, in display pixels."""

    def __init__(self, ax: Any, renderer: Any, G: nx.DiGraph, pos: dict, marked: set[str], many: bool):
        self.ax, self.renderer, self.G, self.marked, self.many = ax, renderer, G, marked, many
        self.px = {n: tuple(ax.transData.transform(p)) for n, p in pos.items()}
        self.to_data = ax.transData.inverted()
        self.board = Board()
        self.drawn: list[Any] = []  # every text placed, for the legend to stand clear of
        self._advances: dict[tuple, tuple[dict[str, float], FontProperties, float]] = {}

    def _text(self, text: str, **kw: Any) -> tuple[Any, float, float]:
        """A text artist, not yet placed, and its width and height in pixels."""
        t = self.ax.text(0, 0, text, ha="left", va="center", zorder=4, **kw)
        ext = t.get_window_extent(self.renderer)
        return t, ext.width, ext.height

    def take_dots(self, nodes: list[str], scale: SizeScale) -> dict[str, float]:
        """Every dot on the board (no label covers one); returns each dot's radius in pixels."""
        G, dpi = self.G, self.ax.figure.dpi
        radius = {n: math.sqrt(scale.area(int(G.nodes[n].get("memories") or 0))) / 2 * dpi / 72 + 1 for n in nodes}
        radius[USER] = math.sqrt(YOU_AREA) / 2 * dpi / 72 + 1
        for n, r in radius.items():
            self.board.take_dot(self.px[n], r)
        return radius

    def node_labels(self, nodes: list[str], radius: dict[str, float], label_width: int) -> int:
        """Each node's name and count beside its dot, the most important placed first; returns
        how many found no room."""
        width = label_width if not self.many else min(label_width, 20)
        order = sorted(nodes, key=lambda n: self._rank(n))
        left_out = 0
        for node in order:
            if not self._place_node_label(node, radius[node], width):
                left_out += 1
        return left_out

    def _rank(self, n: str) -> tuple:
        d = self.G.nodes[n]
        return (n not in self.marked, -int(d.get("memories") or 0), d.get("depth", 0), str(d.get("name", n)).lower())

    def _place_node_label(self, node: str, radius: float, width: int) -> bool:
        data = self.G.nodes[node]
        count = int(data.get("memories") or 0)
        name = str(data.get("name", node))
        faded = bool(self.marked) and node not in self.marked
        style = {
            "fontsize": 7 if self.many else 9,
            "fontweight": "bold" if node in self.marked else "normal",
            "alpha": 0.55 if faded else 1.0,
        }
        centre, origin = self.px[node], self.px[USER]
        for w_chars in (width, 12):
            text = shorten(name, w_chars) + (f" ({count})" if count else "")
            t = self._place_text(text, style, centre, origin, radius)
            if t is not None:
                t.set_gid(f"label:{node}")
                return True
        return False

    def _place_text(self, text: str, style: dict, centre: tuple, origin: tuple, radius: float) -> Any:
        """The label at the first free spot beside its dot (or, on a crowded map, along its spoke),
        or None. Spots are tried at the label's estimated size, and only a label that may fit is
        made and measured: the spot is taken at its measured size once that is free too."""
        left, up = centre[0] < origin[0], centre[1] >= origin[1]
        t, (w, h) = None, self._estimate(text, style)
        spots = beside(centre, radius, w, h, left=left, up=up)
        for i in range(len(spots) + 1):
            turned = i == len(spots)  # the last resort, only where the ring is crowded
            if turned and not self.many:
                break
            spot = outward(centre, origin, radius, w, h) if turned else spots[i]
            if not self.board.free(spot):
                continue
            if t is None:  # measured now: the spots again at the true size
                t, w, h = self._text(text, **style)
                spots = beside(centre, radius, w, h, left=left, up=up)
                spot = outward(centre, origin, radius, w, h) if turned else spots[i]
                if not self.board.free(spot):
                    continue
            if turned:
                self._turn(t, centre, origin, radius)
            else:
                x0, y0, _x1, _y1 = bounds(spot)
                t.set_position(self.to_data.transform((x0, y0 + h / 2)))
            self.board.take(spot)
            self.drawn.append(t)
            return t
        if t is not None:
            t.remove()
        return None

    def _estimate(self, text: str, style: dict) -> tuple[float, float]:
        """A label's size from its characters' advances (measured once per character and style),
        without making a text artist: close to the true size, never relied on for the result."""
        key = (style["fontsize"], style["fontweight"])
        if key not in self._advances:
            props = FontProperties(size=style["fontsize"], weight=style["fontweight"])
            t, _w, h = self._text("(Ag|)", **style)  # as tall as any label: brackets reach lowest
            t.remove()
            self._advances[key] = ({}, props, h)
        advances, props, h = self._advances[key]
        for c in set(text) - advances.keys():
            pair = self.renderer.get_text_width_height_descent("x" + c + "x", props, ismath=False)[0]
            advances[c] = pair - self.renderer.get_text_width_height_descent("xx", props, ismath=False)[0]
        return sum(advances[c] for c in text), h

    def _turn(self, t: Any, centre: tuple[float, float], origin: tuple[float, float], radius: float) -> None:
        angle = math.atan2(centre[1] - origin[1], centre[0] - origin[0])
        ux, uy = math.cos(angle), math.sin(angle)
        start = (centre[0] + (radius + 3) * ux, centre[1] + (radius + 3) * uy)
        left = ux < 0
        t.set_position(self.to_data.transform(start))
        t.set_rotation(math.degrees(angle) + (180 if left else 0))
        t.set_rotation_mode("anchor")
        t.set_ha("right" if left else "left")

    def _keep(self, t: Any, spot: list, gid: str) -> bool:
        self.board.take(spot)
        t.set_gid(gid)
        self.drawn.append(t)
        return True

    def relation_labels(self, crowded: bool) -> None:
        """Each relation type along its edge, where it covers no label and no dot."""
        for u, v, data in self.G.edges(data=True):
            label = data.get("label") or ""
            faded = bool(self.marked) and not ({u, v} & self.marked)
            if not label or (faded and self.many) or (crowded and not {u, v} & self.marked):
                continue
            (x1, y1), (x2, y2) = self.px[u], self.px[v]
            angle = math.atan2(y2 - y1, x2 - x1)
            if abs(angle) > math.pi / 2:
                angle += math.pi
            t, w, h = self._text(label, fontsize=6 if self.many else 7, color="#555555", alpha=0.4 if faded else 1.0)
            for along in (0.55, 0.4, 0.7):  # the middle of the edge, else nearer either end
                mid = (x1 + (x2 - x1) * along, y1 + (y2 - y1) * along)
                up = (mid[0] - math.sin(angle) * (h / 2 + 1), mid[1] + math.cos(angle) * (h / 2 + 1))
                spot = rotated(up, w, h, angle, -w / 2)
                if self.board.free(spot):
                    break
            else:
                t.remove()
                continue
            t.set_position(self.to_data.transform(up))
            t.set_rotation(math.degrees(angle))
            t.set_rotation_mode("anchor")
            t.set_ha("center")
            t.set_zorder(2)
            self._keep(t, spot, f"relation:{u}->{v}")


def _draw_edges(ax: Any, G: nx.DiGraph, pos: dict[str, tuple[float, float]], marked: set[str]) -> None:
    """The relations as lines: one collection per style, fast at 500 topics."""
    segments: dict[tuple[bool, bool], list] = {}
    for u, v, data in G.edges(data=True):
        faded = bool(marked) and not ({u, v} & marked)
        segments.setdefault((faded, bool(data.get("inferred"))), []).append([pos[u], pos[v]])
    for (faded, inferred), segs in segments.items():
        ax.add_collection(
            LineCollection(
                segs,
                colors="#999999",
                linewidths=1.0,
                alpha=0.25 if faded else 0.8,
                linestyles=":" if inferred else "-",
                zorder=1,
            )
        )


def _draw_nodes(
    ax: Any, G: nx.DiGraph, nodes: list[str], pos: dict[str, tuple[float, float]], marked: set[str], scale: SizeScale
) -> None:
    """The topics and accounts as dots (colour by type, area by memory count), You in the middle."""
    if nodes:
        ax.scatter(
            [pos[n][0] for n in nodes],
            [pos[n][1] for n in nodes],
            s=[scale.area(int(G.nodes[n].get("memories") or 0)) for n in nodes],
            c=[G.nodes[n].get("color", TYPE_COLOURS[""]) for n in nodes],
            alpha=[0.3 if marked and n not in marked else 1.0 for n in nodes],
            edgecolors=["#d4a017" if n in marked else "white" for n in nodes],
            linewidths=[3.0 if n in marked else 1.0 for n in nodes],
            zorder=3,
            gid="dots",
        )
    ax.scatter(
        [0.0],
        [0.0],
        s=YOU_AREA,
        c=USER_COLOUR,
        edgecolors="#d4a017" if USER in marked else "white",
        linewidths=3.0 if USER in marked else 1.0,
        zorder=3,
        gid="you",
    )
    ax.text(0.0, 0.0, YOU, color="white", fontsize=10, fontweight="bold", ha="center", va="center", zorder=4)


def _highlighted(G: nx.DiGraph, highlight: str | Iterable[str] | None) -> set[str]:
    if highlight is None:
        return set()
    items = [highlight] if isinstance(highlight, str) else list(highlight)
    found = {find_node(G, h) for h in items}
    return {n for n in found if n is not None}


class _Keys:
    """The type key and the size key, stacked, placed by their top-left corner in pixels, with a
    note of the labels left out below them."""

    def __init__(self, ax: Any, painter: _Painter, scale: SizeScale):
        self.ax, self.painter, self.renderer = ax, painter, painter.renderer
        G = painter.G
        types = sorted({d.get("type", "") for _, d in G.nodes(data=True) if d.get("kind") == "topic"})
        self.colours = [(TYPE_COLOURS.get(t, TYPE_COLOURS[""]), t or "(no type)") for t in types]
        if any(d.get("kind") == "account" for _, d in G.nodes(data=True)):
            self.colours.append((ACCOUNT_COLOUR, "an account"))
        most = max((int(d.get("memories") or 0) for n, d in G.nodes(data=True) if n != USER), default=0)
        self.sizes = [(math.sqrt(scale.area(c)), f"{c:,}") for c in scale.key(most)]

    def _stack(self, x: float, top: float, left_out: int = 0) -> list[Any]:
        to_axes = self.ax.transAxes.inverted()
        kw: dict[str, Any] = {"loc": "upper left", "fontsize": 7, "frameon": False, "title_fontsize": 8}
        parts: list[Any] = []
        for title, rows, spacing in (
            ("topic type", [(8.0, c, label) for c, label in self.colours], 0.5),
            ("memories", [(size, "#9a9a9a", label) for size, label in self.sizes], 1.1),  # room for big dots
        ):
            if not rows:
                continue
            handles = [Line2D([], [], marker="o", ls="", markersize=m, color=c) for m, c, _ in rows]
            at = tuple(to_axes.transform((x, top)))
            key = Legend(
                self.ax,
                handles,
                [r[2] for r in rows],
                title=title,
                bbox_to_anchor=at,
                alignment="left",
                labelspacing=spacing,
                **kw,
            )
            self.ax.add_artist(key).set_clip_on(False)  # it may stand outside the axes, which would clip it
            parts.append(key)
            top = key.get_window_extent(self.renderer).y0 - 8
        if left_out:
            parts.append(self._note(to_axes.transform((x + 4, top + 2)), left_out))
        return parts

    def _note(self, at: Any, left_out: int) -> Any:
        note = f"{left_out:,} labels left out for room\n(the live map zooms)"
        return self.ax.text(*at, note, transform=self.ax.transAxes, fontsize=7, color="#555555", va="top", gid="note")

    def in_a_free_corner(self) -> bool:
        """The keys in the first corner of the axes that no dot touches (then taken on the board,
        so no label covers them); False when every corner is taken."""
        parts = self._stack(0.0, 0.0)  # a trial stack, to measure from its anchor
        ext = Bbox.union([p.get_window_extent(self.renderer) for p in parts])
        for p in parts:
            p.remove()
        w, h = ext.x1 + 4, -ext.y0 + 4  # the keys' own padding sits inside the anchor
        area = self.ax.get_window_extent(self.renderer)
        for x, top in ((area.x1 - w, area.y1), (area.x0, area.y1), (area.x1 - w, area.y0 + h), (area.x0, area.y0 + h)):
            spot = box(x, top - h, w, h)
            if self.painter.board.free(spot):
                self._stack(x, top)
                self.painter.board.take(spot)
                return True
        return False

    def note_below_axes(self, left_out: int) -> None:
        if left_out:
            self._note((0.0, -0.01), left_out)

    def right_of_everything(self, left_out: int) -> None:
        drawn = Bbox.union(
            [
                self.ax.get_window_extent(self.renderer),
                *(t.get_window_extent(self.renderer) for t in self.painter.drawn),
            ]
        )
        self._stack(drawn.x1 + 12, drawn.y1, left_out)
