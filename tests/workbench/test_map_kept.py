"""The built map kept with a saved profile's sealed cache (views/mapcache.py, store/sealed.py).

Issue 23: "`%decoy browse` opened ≤ 2 s" at 100,000 memories; of the map: "built in the kernel
once, cached with the vault". A notebook reopened with nothing changed shows the map an earlier
session built (no graph built, nothing laid out); an edit the map shows builds it anew, and the
map never shows what the vault no longer holds. Each reopen here is what a new kernel does: the
in-memory caches dropped (`mapcache.forget()`), the profile resumed, `load()` through its cache.
"""

from __future__ import annotations

import logging
import os
import pickle
import stat

import pytest

from decoy_lab import Connection, Sandbox
from decoy_lab.store import cache
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.views import graph, layout, mapcache, mapfile
from decoy_lab.widgets.vaultview import VaultView


@pytest.fixture(scope="module")
def demo():
    with Sandbox.start() as sandbox:  # the demo vault: memories in nested topics, links, accounts
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture
def store(tmp_path):
    return ProfileStore(tmp_path / "cfg", use_keyring=False)


@pytest.fixture
def paired(demo, store):
    """A connection saved under profile "p", the demo vault shared with it, loaded and browsed once."""
    conn = Connection.pair(demo.url, name="map kept", on_link=lambda *a: None, profile="p", store=store)
    demo.owner.share()
    mapcache.forget()
    first = VaultView(conn.load())
    cache.settle()  # the cache and the map are written on threads of their own
    yield conn, first
    conn.close()
    mapcache.forget()


@pytest.fixture
def builds(monkeypatch):
    """Every graph built and every layout made from here on."""
    made: list[str] = []
    for module, name in ((mapcache, "build_graph"), (layout, "radial_layout"), (layout, "cluster_layout")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: made.append(_name) or _real(*a, **k))
    return made


def reopened(store: ProfileStore):
    """What a new kernel's `%decoy browse` meets: nothing in memory, the profile's cache reopened."""
    mapcache.forget()
    conn = Connection.resume("p", store=store)
    return conn, conn.load()


def node_names(view: VaultView) -> dict[str, tuple]:
    return {n["id"]: (n["name"], n["memories"], n["x"], n["y"]) for n in view.map.nodes}


def test_a_reopened_vault_with_nothing_changed_builds_no_map(paired, store, builds):
    _conn, first = paired
    conn, vault = reopened(store)
    view = VaultView(vault)
    assert builds == [], "no graph built, nothing laid out: the map was read back"
    assert mapcache.counts["read"] == 1
    assert view.map.nodes == first.map.nodes and view.map.edges == first.map.edges
    assert view.map.clusters == first.map.clusters
    assert sorted(view.map.graph.nodes(data=True)) == sorted(first.map.graph.nodes(data=True))
    assert sorted(view.map.graph.edges(data=True)) == sorted(first.map.graph.edges(data=True))
    assert view.filters._category.options == first.filters._category.options
    assert view.browser.grid.rows == first.browser.grid.rows
    assert mapcache.graph_digest(view.map.graph) == mapcache.graph_digest(graph.build_graph(vault))
    conn.close()


def saved_and_browsed(conn, text: str) -> tuple[str, str, VaultView]:
    """A memory of this connection's under one of the demo's topics, loaded and browsed (its map
    kept): its id, its topic's map node, the view."""
    topic = next(t for t in conn.session.vault.topic_list if t.name)
    mid = conn.save(text, topic=topic.name)
    view = VaultView(conn.load())
    cache.settle()
    return mid, view.map.node_of(topic.name), view


def test_a_memory_moved_to_a_new_topic_builds_the_map_anew(paired, store, builds):
    conn, _first = paired
    mid, node, before = saved_and_browsed(conn, "Sows the broad beans in March.")
    conn.edit(mid, topic="Allotment by the canal")
    builds.clear()
    again, vault = reopened(store)
    view = VaultView(vault)
    assert mapcache.counts["read"] == 0, "the kept map is of other content: not used"
    assert builds.count("build_graph") == 1 and len(builds) == 2, "the graph built and laid out once"
    names = {n["name"] for n in view.map.nodes}
    assert names - {n["name"] for n in before.map.nodes} == {"Allotment by the canal"}
    assert view.map.graph.nodes[view.map.node_of("Allotment by the canal")]["memories"] == 1
    assert view.map.graph.nodes[node]["memories"] == before.map.graph.nodes[node]["memories"] - 1
    cache.settle()
    builds.clear()
    last, reread = reopened(store)  # the next session reads the new map back
    assert node_names(VaultView(reread)) == node_names(view) and builds == []
    for c in (again, last):
        c.close()


def test_an_edit_the_map_does_not_show_keeps_the_map_and_the_table_shows_it(paired, store, builds):
    conn, _first = paired
    mid, _node, before = saved_and_browsed(conn, "Waters the beans in the morning.")
    conn.edit(mid, text="Waters the beans at dusk.")
    builds.clear()
    again, vault = reopened(store)
    view = VaultView(vault)
    assert builds == [] and view.map.nodes == before.map.nodes  # a memory's text is not on the map
    view.browser.set_filters(search="beans at dusk")
    assert view.browser.frame["id"].tolist() == [mid]
    again.close()


def test_a_map_kept_by_other_code_is_built_anew(paired, store, builds, monkeypatch):
    """Another version of the views (or of networkx, pandas) may build another map from the same
    frames: a map it kept is not used."""
    monkeypatch.setattr(mapfile, "code", lambda: "another version of the views")
    conn, vault = reopened(store)
    VaultView(vault)
    assert mapcache.counts["read"] == 0 and builds.count("build_graph") == 1
    conn.close()


def test_the_map_file_is_sealed_private_and_goes_with_the_cache(paired, store, demo):
    conn, first = paired
    path = store.cache_path("p").with_suffix(".map")
    assert path.exists() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = path.read_bytes()
    for n in first.map.nodes:
        assert n["name"].encode() not in data and n["id"].encode() not in data, n["name"]
    key = store.load("p").cache_key or ""
    assert key.encode() not in data
    said = str(cache.describe(store.cache_path("p")))  # what `%decoy cache` shows
    assert f"the built map {path}: {path.stat().st_size:,} bytes, sealed the same way" in said
    assert cache.cleared(store.cache_path("p")) == f"Removed {store.cache_path('p')} and {path}."
    assert not path.exists(), "clearing the cache removes the map too"
    VaultView(conn.load())
    cache.settle()
    assert path.exists()
    conn.unpair()
    assert not path.exists() and not store.cache_path("p").exists()


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "another profile's"])
def test_a_damaged_map_file_is_ignored_removed_and_made_again(paired, store, builds, caplog, damage):
    _conn, first = paired
    path = store.cache_path("p").with_suffix(".map")
    blob = path.read_bytes()
    if damage == "flipped byte":
        path.write_bytes(blob[:40] + bytes([blob[40] ^ 1]) + blob[41:])
    elif damage == "truncated":
        path.write_bytes(blob[:20])
    else:  # profile q: the same connection and cache key, p's map file under q's name
        other = Connection.resume("p", store=store)
        other.profile = "q"
        other.save_profile()
        other.close()
        path = store.cache_path("q").with_suffix(".map")
        path.write_bytes(blob)
    with caplog.at_level(logging.WARNING, logger="decoy_lab.store.sealed"):
        mapcache.forget()
        conn = Connection.resume("q" if damage == "another profile's" else "p", store=store)
        view = VaultView(conn.load())
    assert "ignored and removed" in caplog.text
    assert "build_graph" in builds and view.map.nodes == first.map.nodes
    cache.settle()
    assert path.exists(), "made again from this session's map"
    conn.close()


def test_a_pickled_vault_carries_no_key(paired, store):
    conn, _first = paired
    vault = conn.load()
    assert vault.map_file is not None
    key = vault.map_file._key
    copy = pickle.loads(pickle.dumps(vault))
    assert copy.map_file is None and key not in pickle.dumps(vault)
