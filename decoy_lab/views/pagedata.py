"""What the live map's page draws (widgets/topicmap_view.py, assets/topicmap.js): each node with its
laid-out position and hover details, each edge, and a large map's clusters, as plain lists of
dicts. Made once per vault content and graph (mapcache.py), and kept with the map on disk."""

from __future__ import annotations

from typing import Any

from decoy_lab.views import mapcache
from decoy_lab.views.clusterdraw import cluster_counts, dot_radius, full_dot
from decoy_lab.views.graph import TopicGraph
from decoy_lab.views.layout import Cluster, map_layout
from decoy_lab.views.nodes import TYPE_COLOURS, USER, shorten
from decoy_lab.views.selection import visible_because

PageData = tuple[list[dict], list[dict], list[dict]]  # nodes, edges, clusters


def graph_data(vault: Any, graph: TopicGraph) -> PageData:
    """The nodes (with their laid-out position and hover details), edges and clusters the page
    draws: made once per vault content and graph (mapcache), so a second view sends what the
    first made, and a reopened vault with nothing changed what an earlier session made."""
    return mapcache.remembered(vault, ("page", mapcache.graph_digest(graph)), lambda: _graph_data(vault, graph))


def _graph_data(vault: Any, graph: TopicGraph) -> PageData:
    lay = map_layout(graph)
    pos = lay.pos
    why = visible_because(vault, graph, nodes=mapcache.memory_nodes(vault))
    full = full_dot(graph)
    nodes = []
    for node, d in graph.nodes(data=True):
        parent = d.get("parent")
        edge = graph.edges[parent, node] if parent is not None and graph.has_edge(parent, node) else {}
        x, y = pos[node]
        nodes.append(
            {
                "id": node,
                "name": str(d.get("name", node)),
                "label": str(d.get("label") or shorten(str(d.get("name", node)), 24)),
                "kind": d.get("kind", "topic"),
                "type": d.get("type", ""),
                "color": d.get("color", TYPE_COLOURS[""]),
                "memories": int(d.get("memories") or 0),
                "depth": int(d.get("depth") or 0),
                "parent": parent,
                "relation": str(edge.get("relation") or ""),
                "reason": why.get(node, ""),
                "x": round(float(x), 4),
                "y": round(float(y), 4),
            }
        )
        if lay.clusters and node != USER:  # a large map's dot, in data units (it zooms)
            nodes[-1]["dot_r"] = round(dot_radius(nodes[-1]["memories"], full, lay.slot), 3)
    edges = [
        {"source": u, "target": v, "relation": str(e.get("relation") or ""), "inferred": bool(e.get("inferred"))}
        for u, v, e in graph.edges(data=True)
    ]
    if lay.clusters:  # a large map draws a topic's tie to its parent inside their cluster only
        homes = lay.homes()
        for e in edges:
            tree = graph.nodes[e["target"]].get("parent") == e["source"] != USER
            e["spoke"] = tree and lay.spoke(homes, e["source"], e["target"])
    return nodes, edges, [_cluster(graph, c) for c in lay.clusters]


def _cluster(graph: TopicGraph, c: Cluster) -> dict:
    topics, memories = cluster_counts(graph, c)
    return {
        "id": c.id,
        "name": c.name,
        "type": c.type,
        "node": c.node,
        "color": TYPE_COLOURS.get(c.type, TYPE_COLOURS[""]),
        "x": c.x,
        "y": c.y,
        "r": c.r,
        "level": c.level,
        "parent": c.parent,
        "topics": topics,
        "memories": memories,
    }
