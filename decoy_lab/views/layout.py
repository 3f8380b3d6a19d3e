"""Where the Map's nodes sit: You in the middle, every topic on the ring of its distance from You,
inside its parent's wedge, so nested topics sit behind the topic they belong to and labels never
share a spoke."""

from __future__ import annotations

import math

import networkx as nx

from decoy_lab.views.nodes import USER
from decoy_lab.views.selection import _children

RING_GAP = 1.35
FIRST_RING = 1.6


def radial_layout(G: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """You at (0, 0); each topic on the ring of its depth, inside its parent's angular wedge.

    A wedge is proportional to the number of leaves below it, so siblings spread evenly and a
    nested topic sits just outside the topic it belongs to. A topic with nested topics keeps
    an empty slot in the middle of its wedge, so its own label runs out between its children.
    """
    tree = _children(G)
    slots: dict[str, int] = {}

    def count(n: str) -> int:
        kids = sum(count(c) for c in tree[n])
        slots[n] = kids + 1 if kids and n != USER else max(1, kids)
        return slots[n]

    count(USER)
    pos: dict[str, tuple[float, float]] = {USER: (0.0, 0.0)}
    first = max(FIRST_RING, len(tree[USER]) / 14)

    def radius(ring: int) -> float:  # rings far enough apart for a shortened label between them
        return first + RING_GAP * (ring - 1)

    def place(n: str, lo: float, hi: float, ring: int) -> None:
        kids = tree[n]
        unit = (hi - lo) / slots[n]
        half = len(kids) // 2 if n != USER else -1
        start = lo
        for i, c in enumerate(kids):
            if i == half:  # the parent's label slot
                start += unit
            span = unit * slots[c]
            mid = start + span / 2
            pos[c] = (radius(ring) * math.cos(mid), radius(ring) * math.sin(mid))
            place(c, start, start + span, ring + 1)
            start += span

    place(USER, math.pi / 2, math.pi / 2 + 2 * math.pi, 1)
    missing = [n for n in G if n not in pos]
    if missing:  # anything unreachable (should not happen) goes on an outer ring
        outer = -radius(max((d or 0 for _, d in G.nodes(data="depth")), default=1) + 1)
        for n in missing:
            pos[n] = (0.0, outer)
    return pos
