"""Where the Map's nodes sit. A small map (up to SMALL_MAP topics) is rings: You in the middle,
every topic on the ring of its distance from You, inside its parent's wedge, so labels never
share a spoke. A large one is packed clusters: each topic that includes others sits amid a
circle holding them (a nested one a circle inside it), the topics hanging straight
from You are grouped by type, and the clusters pack around You, largest nearest; within a
cluster with many loose topics, those of one type are a circle of their own.

A layout depends only on the tree (nodes, parents, names, types), so it is kept by a digest of
those: a second view of the same vault, or a reload in which only memories changed, lays
nothing out again (`map_layout`); mapcache.py keeps it on disk with the rest of the map."""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from decoy_lab.views.nodes import USER
from decoy_lab.views.packing import enclosing, pack
from decoy_lab.views.selection import children_of

RING_GAP = 1.35
FIRST_RING = 1.6
SMALL_MAP = 150  # topics: up to this many, rings read well
SLOT = 1.0  # a topic's room in a cluster (radius, data units); its dot stays inside it
YOU_SLOT = 2.5
GAP = 0.3  # between slots in a cluster
CLUSTER_GAP = 1.0  # between clusters
RIM = 0.6  # a cluster's circle stands this far outside what it holds
TYPE_GROUP = 12  # loose topics in a cluster: from this many, one circle per type (of ≥ 3)
ASPECT = 1.3  # the clusters around You fill an ellipse this wide, as a page is wider than tall
KEPT = 16  # layouts remembered by digest


@dataclass(frozen=True)
class Cluster:
    """A circle on a large map: a topic and what it includes (`node` its topic, at the centre),
    or the topics of one type hanging from the same parent (`node` None)."""

    id: str
    name: str
    type: str
    node: str | None
    x: float
    y: float
    r: float
    level: int  # 1: around You; 2: inside a level-1 cluster; …
    parent: str | None  # the enclosing cluster's id
    members: tuple[str, ...]  # every node inside, nested ones included


@dataclass(frozen=True)
class MapLayout:
    pos: dict[str, tuple[float, float]]
    clusters: tuple[Cluster, ...] = ()
    slot: float = field(default=SLOT)

    def homes(self) -> dict[str, str]:
        """Each node's innermost cluster (its own, for a topic in the middle of one)."""
        out: dict[str, str] = {}
        for c in sorted(self.clusters, key=lambda c: c.level):
            out |= dict.fromkeys(c.members, c.id)
        return out

    def spoke(self, homes: dict[str, str], parent: str, child: str) -> bool:
        """Is parent → child drawn as a spoke: the child sits loose in the parent's cluster, or
        in the middle of its own cluster inside it (a topic in a type's circle is tied by that)."""
        return homes.get(child) in (f"cluster:{parent}", f"cluster:{child}")


@dataclass
class _Pack:
    """A packed group in its own coordinates, centred on (0, 0)."""

    r: float
    pos: dict[str, tuple[float, float]]
    clusters: list[dict]  # Cluster fields, in this pack's coordinates; the pack's own first

    def moved(self, dx: float, dy: float) -> _Pack:
        pos = {n: (x + dx, y + dy) for n, (x, y) in self.pos.items()}
        return _Pack(self.r, pos, [{**c, "x": c["x"] + dx, "y": c["y"] + dy} for c in self.clusters])


_KEPT: OrderedDict[str, MapLayout] = OrderedDict()


def map_layout(G: nx.DiGraph) -> MapLayout:
    """The layout of G: rings for a small map, clusters for a large one; kept by the digest of
    G's tree, so the same tree is laid out once."""
    key = tree_digest(G)
    if key in _KEPT:
        _KEPT.move_to_end(key)
        return _KEPT[key]
    topics = sum(1 for _, d in G.nodes(data=True) if d.get("kind") != "user")
    made = MapLayout(radial_layout(G)) if topics <= SMALL_MAP else cluster_layout(G)
    remember(key, made)
    return made


def forget() -> None:
    """Drop the kept layouts (mapcache.forget: the next view lays its map out afresh)."""
    _KEPT.clear()


def known(G: nx.DiGraph) -> tuple[str, MapLayout] | None:
    """G's tree digest and its layout when one is kept (nothing is laid out here)."""
    key = tree_digest(G)
    return (key, _KEPT[key]) if key in _KEPT else None


def remember(key: str, made: MapLayout) -> None:
    """Keep a layout made earlier (mapcache: one kept on disk) under its tree digest."""
    _KEPT[key] = made
    while len(_KEPT) > KEPT:
        _KEPT.popitem(last=False)


def tree_digest(G: nx.DiGraph) -> str:
    """What a layout depends on, hashed: each node's id, parent, kind, type and name."""
    h = hashlib.blake2b(digest_size=16)
    for n in sorted(G):
        d = G.nodes[n]
        h.update("\x1f".join(map(str, (n, d.get("parent"), d.get("kind"), d.get("type"), d.get("name")))).encode())
        h.update(b"\x1e")
    return h.hexdigest()


def cluster_layout(G: nx.DiGraph) -> MapLayout:
    """Packed clusters around You (see the module's docstring)."""
    tree = children_of(G)
    kids = tree[USER]
    groups = [_topic_pack(G, tree, c) for c in kids if tree[c]]
    loose = [c for c in kids if not tree[c]]
    by_type: dict[tuple[str, str], list[str]] = {}
    for c in loose:
        d = G.nodes[c]
        by_type.setdefault((d.get("kind", "topic"), d.get("type", "")), []).append(c)
    for (kind, ttype), members in sorted(by_type.items()):
        name = "accounts" if kind == "account" else ttype or "no type"
        groups.append(_type_pack(G, members, ttype, name, f"cluster:{USER}:{kind}:{ttype}"))
    groups.sort(key=lambda p: -p.r)
    centres = pack([YOU_SLOT, *(p.r for p in groups)], gap=CLUSTER_GAP, aspect=ASPECT)
    pos: dict[str, tuple[float, float]] = {USER: centres[0]}
    found: list[dict] = []
    for p, (x, y) in zip(groups, centres[1:]):
        placed = p.moved(x, y)
        pos |= placed.pos
        found += placed.clusters
    pos = {n: (round(x, 4), round(y, 4)) for n, (x, y) in pos.items()}
    for n in G:  # anything the tree missed (should not happen) sits beside You
        pos.setdefault(n, (0.0, -YOU_SLOT))
    return MapLayout(pos, tuple(_finish(found)))


def _finish(found: list[dict]) -> list[Cluster]:
    """Clusters with their levels and enclosing cluster, largest first within a level."""
    out = []
    for c in found:
        out.append(Cluster(**{**c, "x": round(c["x"], 4), "y": round(c["y"], 4), "r": round(c["r"], 4)}))
    return sorted(out, key=lambda c: (c.level, -c.r, c.id))


def _topic_pack(G: nx.DiGraph, tree: dict[str, list[str]], node: str, level: int = 1) -> _Pack:
    """A topic in the middle and what it includes packed around it."""
    kids = tree[node]
    subs = sorted((_topic_pack(G, tree, c, level + 1) for c in kids if tree[c]), key=lambda p: -p.r)
    loose = sorted((c for c in kids if not tree[c]), key=lambda c: _order(G, c))
    parts: list[_Pack] = list(subs)
    if len(loose) >= TYPE_GROUP:
        by_type: dict[str, list[str]] = {}
        for c in loose:
            by_type.setdefault(G.nodes[c].get("type", ""), []).append(c)
        if len(by_type) > 1:
            loose = []
            for ttype, members in sorted(by_type.items()):
                if len(members) >= 3:
                    cid = f"cluster:{node}:topic:{ttype}"
                    parts.append(_type_pack(G, members, ttype, ttype or "no type", cid, level + 1))
                else:
                    loose += members
            parts.sort(key=lambda p: -p.r)
    radii = [SLOT, *(p.r for p in parts), *([SLOT] * len(loose))]
    centres = pack(radii, gap=GAP)
    pos = {node: centres[0]}
    inner: list[dict] = []
    for p, (x, y) in zip(parts, centres[1:]):
        placed = p.moved(x, y)
        pos |= placed.pos
        inner += placed.clusters
    for c, xy in zip(loose, centres[1 + len(parts) :]):
        pos[c] = xy
    # The circle around them all (not centred on the topic: a chain of nested topics would double
    # it at every level); the topic sits where it was packed first, amid what it includes.
    cx, cy, r = enclosing([(x, y, rr) for (x, y), rr in zip(centres, radii)])
    r += RIM
    d = G.nodes[node]
    own: dict[str, Any] = {
        "id": f"cluster:{node}",
        "name": str(d.get("name", node)),
        "type": str(d.get("type", "")),
        "node": node,
    }
    own |= {"x": cx, "y": cy, "r": r, "level": level, "parent": None, "members": tuple(sorted(pos))}
    for sub in inner:
        if sub["level"] == level + 1:
            sub["parent"] = own["id"]
    return _Pack(r, pos, [own, *inner]).moved(-cx, -cy)


def _type_pack(G: nx.DiGraph, members: list[str], ttype: str, name: str, cid: str, level: int = 1) -> _Pack:
    """Topics of one type that include nothing, packed in a circle of their own."""
    members = sorted(members, key=lambda c: _order(G, c))
    centres = pack([SLOT] * len(members), gap=GAP)
    cx, cy, r = enclosing([(x, y, SLOT) for x, y in centres])
    pos = {c: (x - cx, y - cy) for c, (x, y) in zip(members, centres)}
    own: dict[str, Any] = {"id": cid, "name": name, "type": ttype, "node": None, "x": 0.0, "y": 0.0, "r": r + RIM}
    own |= {"level": level, "parent": None, "members": tuple(sorted(members))}
    return _Pack(r + RIM, pos, [own])


def _order(G: nx.DiGraph, n: str) -> tuple:
    """Inside a cluster topics go by name, not by memory count: new memories never move a topic."""
    return (str(G.nodes[n].get("name", "")).lower(), n)


def radial_layout(G: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """You at (0, 0); each topic on the ring of its depth, inside its parent's angular wedge.

    A wedge is proportional to the number of leaves below it, so siblings spread evenly and a
    nested topic sits just outside the topic it belongs to. A topic with nested topics keeps
    an empty slot in the middle of its wedge, so its own label runs out between its children.
    """
    tree = children_of(G)
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
