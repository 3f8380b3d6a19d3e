"""The Map as a readable matplotlib drawing: topics coloured by type and sized by memory count,
relation types along the edges, labels shortened and written along each spoke."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import networkx as nx
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from decoy_lab.views.layout import radial_layout
from decoy_lab.views.nodes import ACCOUNT_COLOUR, TYPE_COLOURS, USER, USER_COLOUR, YOU, shorten
from decoy_lab.views.selection import find_node

EDGE_LABELS_UP_TO = 80  # nodes; beyond that only a highlighted topic's relations are labelled


def _size(count: int, many: bool) -> float:
    base, step = (90, 70) if many else (260, 140)
    return base + step * math.sqrt(max(0, count))


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
    labels are shortened and written along each spoke, so 50 topics stay legible.
    `highlight` (node ids or names) rings those topics and fades the rest.
    """
    if ax is None:
        n = G.number_of_nodes()
        side = 7 if n <= 12 else 9 if n <= 30 else 11
        fig = Figure(figsize=(side, side))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    marked = _highlighted(G, highlight)
    pos = radial_layout(G)
    many = G.number_of_nodes() > 24
    crowded = G.number_of_nodes() > EDGE_LABELS_UP_TO  # relation labels only where they can be read

    _draw_edges(ax, G, pos, marked, many, crowded)
    nodes = [n for n in G if n != USER]
    _draw_nodes(ax, G, nodes, pos, marked, many)
    _draw_labels(ax, G, nodes, pos, marked, many, label_width)

    lim = max(math.hypot(x, y) for x, y in pos.values()) + 1.5
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.axis("off")
    _legend(ax, G)
    if title:
        ax.set_title(title)
    return fig


def _draw_edges(
    ax: Any, G: nx.DiGraph, pos: dict[str, tuple[float, float]], marked: set[str], many: bool, crowded: bool
) -> None:
    """The relations: one line collection per style, each type written along its edge."""
    segments: dict[tuple[bool, bool], list] = {}
    for u, v, data in G.edges(data=True):
        (x1, y1), (x2, y2) = pos[u], pos[v]
        faded = bool(marked) and not ({u, v} & marked)
        segments.setdefault((faded, bool(data.get("inferred"))), []).append([(x1, y1), (x2, y2)])
        label = data.get("label") or ""
        if label and not (faded and many) and (not crowded or {u, v} & marked):
            t = 0.55
            mx, my = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
            ang = math.degrees(math.atan2(y2 - y1, x2 - x1))
            if ang > 90 or ang < -90:
                ang += 180
            ax.text(
                mx,
                my,
                label,
                fontsize=6 if many else 7,
                color="#555555",
                rotation=ang,
                rotation_mode="anchor",
                ha="center",
                va="bottom",
                zorder=2,
                alpha=0.4 if faded else 1.0,
            )
    for (faded, inferred), segs in segments.items():  # one collection per style: fast at 500 topics
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
    ax: Any, G: nx.DiGraph, nodes: list[str], pos: dict[str, tuple[float, float]], marked: set[str], many: bool
) -> None:
    """The topics and accounts as dots (colour by type, size by memory count), You in the middle."""
    xs = [pos[n][0] for n in nodes]
    ys = [pos[n][1] for n in nodes]
    if nodes:
        ax.scatter(
            xs,
            ys,
            s=[_size(int(G.nodes[n].get("memories") or 0), many) for n in nodes],
            c=[G.nodes[n].get("color", TYPE_COLOURS[""]) for n in nodes],
            alpha=[0.3 if marked and n not in marked else 1.0 for n in nodes],
            edgecolors=["#d4a017" if n in marked else "white" for n in nodes],
            linewidths=[3.0 if n in marked else 1.0 for n in nodes],
            zorder=3,
        )
    ax.scatter(
        [0.0],
        [0.0],
        s=900,
        c=USER_COLOUR,
        edgecolors="#d4a017" if USER in marked else "white",
        linewidths=3.0 if USER in marked else 1.0,
        zorder=3,
    )
    ax.text(0.0, 0.0, YOU, color="white", fontsize=10, fontweight="bold", ha="center", va="center", zorder=4)


def _draw_labels(
    ax: Any,
    G: nx.DiGraph,
    nodes: list[str],
    pos: dict[str, tuple[float, float]],
    marked: set[str],
    many: bool,
    label_width: int,
) -> None:
    """Each node's shortened name and memory count, written outward along its spoke."""
    width = label_width if not many else min(label_width, 20)
    for node in nodes:
        data = G.nodes[node]
        x, y = pos[node]
        faded = bool(marked) and node not in marked
        text = shorten(str(data.get("name", node)), width)
        count = int(data.get("memories") or 0)
        if count:
            text += f" ({count})"
        ang = math.atan2(y, x)
        deg = math.degrees(ang)
        left = math.cos(ang) < 0
        off = 0.12
        ax.text(
            x + off * math.cos(ang),
            y + off * math.sin(ang),
            text,
            fontsize=7 if many else 9,
            ha="right" if left else "left",
            va="center",
            rotation=deg + 180 if left else deg,
            rotation_mode="anchor",
            fontweight="bold" if node in marked else "normal",
            alpha=0.45 if faded else 1.0,
            zorder=4,
        )


def _highlighted(G: nx.DiGraph, highlight: str | Iterable[str] | None) -> set[str]:
    if highlight is None:
        return set()
    items = [highlight] if isinstance(highlight, str) else list(highlight)
    found = {find_node(G, h) for h in items}
    return {n for n in found if n is not None}


def _legend(ax: Any, G: nx.DiGraph) -> None:
    from matplotlib.lines import Line2D

    types = sorted({d.get("type", "") for _, d in G.nodes(data=True) if d.get("kind") == "topic"})
    colours = [(TYPE_COLOURS.get(t, TYPE_COLOURS[""]), t or "(no type)") for t in types]
    if any(d.get("kind") == "account" for _, d in G.nodes(data=True)):
        colours.append((ACCOUNT_COLOUR, "an account"))
    if not colours:
        return
    handles = [Line2D([], [], marker="o", ls="", markersize=8, color=c, label=label) for c, label in colours]
    ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False, title="topic type", title_fontsize=8)
