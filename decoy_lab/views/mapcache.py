"""The Map of a vault, built once: its graph (for each set of filters) and what is derived from
it (the live map's nodes, the layout, each memory's node, the categories) are kept by the
content of the frames they are made from, so a second map or browse of the same vault builds
nothing again, and a vault whose rows changed (a sync, a reload, an edit) is built afresh: its
frames hash differently.

A vault loaded through a saved profile's cache also keeps its built map on disk, sealed beside
that cache (`Vault.map_file`, store/sealed.py; mapfile.py says what is kept): `keep(vault)` writes
what was made for its content, and the next session's first view of a vault whose frames hash
the same (a notebook reopened with nothing changed) reads it back instead of building the graph
and laying it out. A file made from other content (or by other code) is never used: it is
replaced when the new content's map is kept.

The hash of a vault's frames (tens of ms at 100,000 memories) is itself kept per Vault object
while that object and its frames live (weakly: a dropped vault takes its entry with it), so the
views opened over one vault hash it once. What is kept in memory is bounded (KEPT vaults' worth).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import networkx as nx
import orjson
import pandas as pd

from decoy_lab.views import layout, mapfile, selection
from decoy_lab.views.graph import TopicGraph, build_graph
from decoy_lab.views.nodes import frames_of

log = logging.getLogger(__name__)
KEPT = 3  # vault contents remembered (each: its graphs and the live map's data, a few MB at 2,000 topics)
# what build_graph and visible_because read: a memory's filing and reasons, a topic's listing
MAP_COLUMNS = ("topic_id", "topic", "entity_name", "categories", "account", "account_name", "account_label", "via")
TOPIC_COLUMNS = ("id", "topic_id", "name", "type", "entity_type", "ids", "memories", "readable", "via")

_by_object: dict[int, tuple[weakref.ref, tuple, str]] = {}  # id(vault) -> (ref, its frames' refs, their digest)
_kept: OrderedDict[str, dict[Hashable, Any]] = OrderedDict()  # digest -> what was made from it
_frozen_digests: weakref.WeakKeyDictionary[nx.DiGraph, str] = weakref.WeakKeyDictionary()
_on_disk: dict[tuple[str, str], set] = {}  # (map file, digest) -> the keys that file holds
# how often something was made or found kept, and how many contents were read back from disk
counts = {"made": 0, "reused": 0, "read": 0}


def _other(value: Any) -> dict:
    """A cell JSON has no word for (pandas' NA, a set…), as a value no list of strings can equal."""
    return {"\0type": type(value).__qualname__, "repr": repr(value)}


def _column_digest(values: pd.Series) -> bytes:
    """A column's cells hashed by value, never by which objects hold them (a session that reads the
    same rows holds other objects): lists (categories, via, ids), texts and mixed cells as JSON (in
    C: a text column so in a third of the time pandas' hash takes, which factorizes it first)."""
    if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
        cells = values.tolist() if values.dtype == object else values.to_numpy(dtype=object, na_value=None).tolist()
        try:
            text = orjson.dumps(cells, default=_other, option=orjson.OPT_NON_STR_KEYS)
        except orjson.JSONEncodeError:  # a cell JSON cannot hold even so (a huge integer): its text
            text = repr(cells).encode()
        return hashlib.blake2b(text, digest_size=20).digest()
    return pd.util.hash_pandas_object(values, index=False).to_numpy().tobytes()


def frames_digest(source: Any) -> str:
    """A digest of what the Map reads from a vault: every link cell, the topics' listing (not
    their memory ids, which the memories' own topic ids say) and the memories' topic, account,
    category and via columns (not their texts, which the Map never shows)."""
    memories, topics, links = frames_of(source)
    h = hashlib.blake2b(digest_size=20)
    for name, frame, columns in (
        ("memories", memories, [c for c in MAP_COLUMNS if c in memories]),
        ("topics", topics, [c for c in TOPIC_COLUMNS if c in topics]),
        ("links", links, list(links.columns)),
    ):
        h.update(f"{name}:{len(frame)}:{','.join(map(str, columns))};".encode())
        for col in columns:
            h.update(_column_digest(frame[col]))
    return h.hexdigest()


def vault_digest(vault: Any) -> str:
    """frames_digest, worked out once per vault object while its frames stay the same objects."""
    frames, key = frames_of(vault), id(vault)
    try:
        ref = weakref.ref(vault, lambda _r: _by_object.pop(key, None))
    except TypeError:  # a mapping of frames, a tuple: nothing to hang the digest on
        return frames_digest(frames)
    kept = _by_object.get(key)
    if kept is not None and kept[0]() is vault and all(a() is b for a, b in zip(kept[1], frames)):
        return kept[2]
    digest = frames_digest(frames)
    _by_object[key] = (ref, tuple(weakref.ref(f) for f in frames), digest)  # frames not kept alive here
    return digest


def remembered(vault: Any, key: Hashable, make: Callable[[], Any]) -> Any:
    """What `make()` gives for this vault's content and `key`, made once and kept (the first
    time a content is met, what its map file holds of it is read back)."""
    digest = vault_digest(vault)
    shelf = _kept.get(digest)
    if shelf is None:
        shelf = _kept[digest] = _read(vault, digest)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    _kept.move_to_end(digest)
    if key in shelf:
        counts["reused"] += 1
        return shelf[key]
    counts["made"] += 1
    value = shelf[key] = make()
    return value


def graph_of(
    vault: Any, *, topic: str | None = None, depth: int | None = None, category: str | None = None
) -> TopicGraph:
    """build_graph(vault, …), built once per vault content and filters. The graph is shared, so it
    is frozen (networkx raises on a change); `TopicGraph(graph)` is a copy one may change."""

    def make() -> TopicGraph:
        return nx.freeze(build_graph(vault, topic=topic, depth=depth, category=category))

    return remembered(vault, ("graph", topic, depth, category), make)


def memory_nodes(vault: Any) -> list[str]:
    """The map node each memory is filed under (selection.memory_nodes), aligned with the
    memories frame: worked out once per vault content."""
    return remembered(vault, ("nodes",), lambda: selection.memory_nodes(vault).astype(object).tolist())


def categories(vault: Any) -> list[str]:
    """Every category a memory of the vault is in, sorted: worked out once per vault content."""

    def make() -> list[str]:
        memories, _, _ = frames_of(vault)
        if "categories" not in memories:
            return []
        cells = (c for c in memories["categories"] if isinstance(c, list | tuple))
        return sorted(set(itertools.chain.from_iterable(cells)))

    return remembered(vault, ("categories",), make)


def _read(vault: Any, digest: str) -> dict[Hashable, Any]:
    """What the vault's map file holds of this content (nothing: another content, no file)."""
    file = getattr(vault, "map_file", None)
    found = mapfile.restored(file.read(), digest) if file is not None else None
    if file is None or found is None:
        return {}
    shelf, layouts, digests = found
    for tree, lay in layouts.items():
        layout.remember(tree, lay)
    for graph, its in digests.items():
        _frozen_digests[graph] = its
    _on_disk[(str(file.path), digest)] = set(shelf)
    counts["read"] += 1
    return shelf


def keep(vault: Any) -> None:
    """Write what was made for this vault's content to its map file (sealed, on a thread of its
    own), unless the file holds all of it already; a vault with no map file keeps nothing."""
    file = getattr(vault, "map_file", None)
    if file is None:
        return
    digest = vault_digest(vault)
    shelf = _kept.get(digest) or {}
    where = (str(file.path), digest)
    if not shelf or (set(shelf) <= _on_disk.get(where, set()) and file.path.exists()):
        return
    graphs = [g for g in shelf.values() if isinstance(g, nx.Graph)]
    layouts = dict(found for g in graphs if (found := layout.known(g)) is not None)
    try:
        file.keep(mapfile.plain(digest, shelf, layouts, {g: graph_digest(g) for g in graphs}))
    except ValueError as exc:  # something marshal cannot keep: the map is made again next session
        log.warning("the map of this vault was not kept on disk: %s", exc)
        return
    _on_disk[where] = set(shelf)


def graph_digest(G: nx.DiGraph) -> str:
    """A digest of a graph's nodes and edges with their attributes (what a view draws of it);
    a frozen graph's (graph_of's, which no one can change) is worked out once."""
    if nx.is_frozen(G):
        if G not in _frozen_digests:
            _frozen_digests[G] = _digest_of(G)
        return _frozen_digests[G]
    return _digest_of(G)


def _digest_of(G: nx.DiGraph) -> str:
    h = hashlib.blake2b(digest_size=20)
    for n in sorted(G):
        d = G.nodes[n]
        h.update(repr((n, sorted((k, sorted(v) if isinstance(v, set) else v) for k, v in d.items()))).encode())
    for u, v in sorted(G.edges()):
        h.update(repr((u, v, sorted(G.edges[u, v].items()))).encode())
    return h.hexdigest()


def forget() -> None:
    """Drop everything kept in memory (the next view reads its map file, or builds afresh) and
    zero the counts."""
    _by_object.clear()
    _kept.clear()
    _on_disk.clear()
    layout.forget()
    counts.update(made=0, reused=0, read=0)
