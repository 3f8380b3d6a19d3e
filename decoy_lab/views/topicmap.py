"""The Map, by its old name: `from decoy_lab.views import topicmap` and `topicmap.<name>` as before.

The Map lives in nodes.py, selection.py, layout.py, drawing.py and graph.py; this module only
re-exports their public names (the widgets, the magics, the notebooks and the bench use them).
"""

from __future__ import annotations

from decoy_lab.views.drawing import EDGE_LABELS_UP_TO, draw
from decoy_lab.views.graph import TopicGraph, build_graph, select_memories
from decoy_lab.views.layout import FIRST_RING, RING_GAP, radial_layout
from decoy_lab.views.nodes import (
    ACCOUNT,
    ACCOUNT_COLOUR,
    TYPE_COLOURS,
    USER,
    USER_COLOUR,
    YOU,
    account_node,
    shorten,
    topic_node,
)
from decoy_lab.views.selection import find_node, memories_of, memory_nodes, via_words, visible_because

__all__ = [
    "ACCOUNT",
    "ACCOUNT_COLOUR",
    "EDGE_LABELS_UP_TO",
    "FIRST_RING",
    "RING_GAP",
    "TYPE_COLOURS",
    "USER",
    "USER_COLOUR",
    "YOU",
    "TopicGraph",
    "account_node",
    "build_graph",
    "draw",
    "find_node",
    "memories_of",
    "memory_nodes",
    "radial_layout",
    "select_memories",
    "shorten",
    "topic_node",
    "via_words",
    "visible_because",
]
