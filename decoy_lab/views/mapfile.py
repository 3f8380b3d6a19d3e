"""The built map of one vault content as plain data, for the file it is kept in on disk
(`Vault.map_file`: store/sealed.py seals it beside the profile's cache) and back.

What is kept is what mapcache.py remembers for that content — its graphs (nodes, edges and
their attributes, in order), the page's data, each memory's node, the categories — and the
layout of each graph (layout.py). It is tied to the content it was made from (mapcache's
frames digest, which covers every column the map reads) and to the code that made it (`code()`:
the source of the views and of what they read below them): a reopened vault whose frames hash
the same, read by the same code, gets it back whole; any other gets nothing, and builds afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import astuple
from functools import cache
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from decoy_lab.views.graph import TopicGraph
from decoy_lab.views.layout import Cluster, MapLayout

LAYOUT = "layout"  # a layout's entry: (LAYOUT, its tree digest)


@cache
def code() -> str:
    """What made the map: the source of the views and of what they read from the layers below
    (the spec's words in vocab.py, the memory model's names), and the networkx and pandas that
    ran it, read once per process."""
    package = Path(__file__).parents[1]
    sources = [*package.glob("views/*.py"), package / "vocab.py", *package.glob("memory/*.py")]
    h = hashlib.blake2b(f"networkx {nx.__version__}, pandas {pd.__version__}".encode(), digest_size=16)
    for path in sorted(sources):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def plain(digest: str, shelf: dict[Hashable, Any], layouts: dict[str, MapLayout], digests: dict) -> dict:
    """What is kept of `shelf` (made from the content `digest`) and the `layouts` of its graphs;
    `digests` holds each graph's digest (mapcache.graph_digest), kept beside it."""
    entries: dict[Hashable, Any] = {}
    for key, value in shelf.items():
        if isinstance(value, nx.Graph):
            entries[key] = {
                "graph": dict(value.graph),
                "nodes": [(n, dict(d)) for n, d in value.nodes(data=True)],
                "edges": [(u, v, dict(d)) for u, v, d in value.edges(data=True)],
                "digest": digests[value],
            }
        else:
            entries[key] = value
    for tree, lay in layouts.items():
        entries[(LAYOUT, tree)] = {"pos": lay.pos, "clusters": [astuple(c) for c in lay.clusters], "slot": lay.slot}
    return {"digest": digest, "code": code(), "entries": entries}


def restored(kept: Any, digest: str) -> tuple[dict, dict[str, MapLayout], dict] | None:
    """(shelf, layouts by tree digest, each graph's digest) of a kept map made from `digest` by
    this code; None for anything else (another content, other code, not a kept map)."""
    if not isinstance(kept, dict) or kept.get("digest") != digest or kept.get("code") != code():
        return None
    shelf: dict[Hashable, Any] = {}
    layouts: dict[str, MapLayout] = {}
    digests: dict = {}
    for key, value in kept["entries"].items():
        if isinstance(key, tuple) and len(key) == 2 and key[0] == LAYOUT:
            clusters = tuple(Cluster(*c) for c in value["clusters"])
            layouts[key[1]] = MapLayout(value["pos"], clusters, value["slot"])
        elif isinstance(value, dict) and key[0] == "graph":
            G = TopicGraph()
            G.graph.update(value["graph"])
            G.add_nodes_from(value["nodes"])
            G.add_edges_from(value["edges"])
            shelf[key] = nx.freeze(G)
            digests[shelf[key]] = value["digest"]
        else:
            shelf[key] = value
    return shelf, layouts, digests
