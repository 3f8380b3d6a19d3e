"""The Map at 2,000 topics: packed clusters by parent topic and by type (none overlapping, every
topic placed inside its own, parents in the middle of what they include, the same layout for
the same tree), built once per vault content (a second view builds nothing; a changed vault is
built afresh), and the PNG drawn as its clusters, named, not as a hairball of labels."""

from __future__ import annotations

import gc
import itertools
import math

import matplotlib
import pandas as pd
import pytest
from matplotlib.legend import Legend

from decoy_lab.views import layout, mapcache
from decoy_lab.views import topicmap as tm
from decoy_lab.widgets.topicmap_view import LiveMap, TopicMapWidget

from support.bigmap import big_frames
from support.widgetpage import PageVault

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def frames() -> dict:
    return big_frames(2000, 20_000)


@pytest.fixture(scope="module")
def laid(frames):
    G = tm.build_graph(frames)
    return G, layout.cluster_layout(G)


def test_two_thousand_topics_are_clusters_by_parent_and_by_type(laid):
    G, lay = laid
    assert len(G) == 2001 and set(lay.pos) == set(G)
    by_id = {c.id: c for c in lay.clusters}
    tops = [c for c in lay.clusters if c.level == 1]
    parents = {n for n in G if n != tm.USER and any(G.nodes[k].get("parent") == n for k in G)}
    # every topic that includes others has a cluster of its own, amid what it includes
    assert {c.node for c in lay.clusters if c.node} == parents
    for c in lay.clusters:
        if c.node:
            assert c.node in c.members
    # the topics hanging straight from You that include nothing are grouped by type
    loose = [n for n in G if G.nodes[n].get("parent") == tm.USER and n not in parents]
    typed = [c for c in tops if c.node is None]
    assert {c.type for c in typed} == {G.nodes[n]["type"] for n in loose}
    assert all(G.nodes[m]["type"] == c.type for c in typed for m in c.members)
    # every topic lies inside each cluster that holds it, a nested cluster inside its parent
    for c in lay.clusters:
        for m in c.members:
            assert math.dist(lay.pos[m], (c.x, c.y)) + layout.SLOT <= c.r + 1e-6
        if c.parent:
            p = by_id[c.parent]
            assert math.dist((c.x, c.y), (p.x, p.y)) + c.r <= p.r + 1e-6 and set(c.members) <= set(p.members)
    # a child sits within its parent's cluster: near it
    radius = {c.node: c.r for c in lay.clusters if c.node}
    for n in G:
        parent = G.nodes[n].get("parent")
        if parent in radius:
            assert math.dist(lay.pos[n], lay.pos[parent]) < radius[parent]


def test_no_two_clusters_or_topics_overlap(laid):
    _, lay = laid
    siblings = itertools.groupby(sorted(lay.clusters, key=lambda c: str(c.parent)), key=lambda c: c.parent)
    for _, group in siblings:
        row = list(group)
        for a, b in itertools.combinations(row, 2):
            assert math.dist((a.x, a.y), (b.x, b.y)) >= a.r + b.r - 1e-6, (a.name, b.name)
    cells: dict[tuple[int, int], list[str]] = {}
    for n, (x, y) in lay.pos.items():
        cells.setdefault((math.floor(x / 2), math.floor(y / 2)), []).append(n)
    for (i, j), here in cells.items():
        near = [m for di in (-1, 0, 1) for dj in (-1, 0, 1) for m in cells.get((i + di, j + dj), [])]
        for n in here:
            for m in near:
                if m != n:
                    assert math.dist(lay.pos[n], lay.pos[m]) >= 2 * layout.SLOT - 1e-6, (n, m)


def test_the_layout_is_the_same_for_the_same_tree_in_any_row_order(frames, laid):
    _, lay = laid
    shuffled = {k: f.sample(frac=1.0, random_state=4).reset_index(drop=True) for k, f in frames.items()}
    again = layout.cluster_layout(tm.build_graph(shuffled))
    assert again.pos == lay.pos and again.clusters == lay.clusters


def test_a_small_map_keeps_its_rings():
    from support.frames import make_frames

    G = tm.build_graph(make_frames(12, nested=3))
    lay = layout.map_layout(G)
    assert lay.clusters == () and lay.pos == tm.radial_layout(G)


def test_a_second_view_of_the_same_vault_builds_nothing_again(frames, monkeypatch):
    mapcache.forget()
    made = []
    real = layout.cluster_layout
    monkeypatch.setattr(layout, "cluster_layout", lambda G: made.append(1) or real(G))
    vault = PageVault(frames)
    first = TopicMapWidget(vault)
    assert made == [1] and mapcache.counts["made"] == 3  # the graph, each memory's node, the page's nodes
    second = TopicMapWidget(vault)
    assert second.graph is first.graph and second.nodes == first.nodes and second.clusters == first.clusters
    assert mapcache.counts["made"] == 3
    # a reload that reads the same rows is a new Vault object with equal frames: nothing is built
    reloaded = PageVault({k: f.copy(deep=True) for k, f in frames.items()})
    assert LiveMap.of(reloaded).widget.nodes == first.nodes
    assert made == [1] and mapcache.counts["made"] == 3
    with pytest.raises(Exception, match="[Ff]rozen"):  # the shared graph cannot be changed by a caller
        first.graph.add_node("topic:new")


def test_a_changed_vault_is_built_afresh(frames):
    mapcache.forget()
    before = TopicMapWidget(PageVault(frames))
    topics = frames["topics"]
    old = frames["memories"]["topic_id"].iloc[0]
    assert old in set(topics["id"]), "the first memory is filed under a topic of the vault"
    to = next(i for i in range(len(topics)) if topics["id"].iloc[i] != old)  # always a topic it was not under
    moved = frames["memories"].copy()
    moved.loc[0, ["topic_id", "topic"]] = [topics["id"].iloc[to], topics["name"].iloc[to]]  # a memory filed elsewhere
    after = TopicMapWidget(PageVault({**frames, "memories": moved}))
    count = {n["id"]: n["memories"] for n in after.nodes}
    was = {n["id"]: n["memories"] for n in before.nodes}
    assert count[topics["id"].iloc[to]] == was[topics["id"].iloc[to]] + 1 and count[old] == was[old] - 1
    renamed = topics.copy()
    renamed.loc[5, "name"] = "A topic renamed meanwhile"
    again = TopicMapWidget(PageVault({**frames, "topics": renamed}))
    assert {n["name"] for n in again.nodes} - {n["name"] for n in before.nodes} == {"A topic renamed meanwhile"}


def test_a_dropped_vault_takes_its_digest_with_it(frames):
    mapcache.forget()
    vault = PageVault(frames)
    mapcache.graph_of(vault)
    assert len(mapcache._by_object) == 1
    del vault
    gc.collect()
    assert mapcache._by_object == {}


def test_the_png_at_two_thousand_topics_names_its_clusters_not_every_topic(laid):
    G, lay = laid
    fig = tm.draw(G)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    names = [t for t in ax.texts if (t.get_gid() or "").startswith("cluster:")]
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:")]
    assert len(names) >= 0.8 * sum(1 for c in lay.clusters if c.level == 1), "most clusters are named"
    assert len(names) + len(labels) < 250, "not a hairball of labels"
    boxes = [t.get_window_extent(renderer) for t in names + labels]
    keys = [a.get_window_extent(renderer) for a in ax.get_children() if isinstance(a, Legend)]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    for a in boxes:
        assert not any(a.overlaps(k) for k in keys)
    texts = {t.get_text() for t in names}
    biggest = max((c for c in lay.clusters if c.level == 1), key=lambda c: len(c.members))
    assert f"{biggest.name} · {len(biggest.members):,} topics" in texts
    note = next(t.get_text() for t in ax.texts if t.get_gid() == "note")
    assert note.startswith(f"{2000 - len(labels):,} of 2,000 topics drawn")


def test_a_highlighted_topic_is_named_on_the_large_png(laid):
    G, _ = laid
    quiet = min((n for n in G if n != tm.USER), key=lambda n: (G.nodes[n]["memories"], n))
    fig = tm.draw(G, highlight=quiet)
    gids = {t.get_gid() for t in fig.axes[0].texts}
    assert f"label:{quiet}" in gids


def test_frames_digest_sees_every_column_the_map_reads(frames):
    base = mapcache.frames_digest(frames)
    assert mapcache.frames_digest({k: f.copy() for k, f in frames.items()}) == base
    # another session reads the same rows into other objects: equal cells hash the same
    again = frames["memories"].copy()
    again["categories"] = again["categories"].map(lambda c: [("." + x)[1:] for x in c])
    assert mapcache.frames_digest({**frames, "memories": again}) == base
    cats = frames["memories"].copy()
    cats.at[3, "categories"] = ["health", "work"]
    assert mapcache.frames_digest({**frames, "memories": cats}) != base
    text = frames["memories"].copy()
    text.loc[3, "text"] = "a text the map never shows"
    assert mapcache.frames_digest({**frames, "memories": text}) == base
    links = pd.concat([frames["links"], frames["links"].iloc[:1]], ignore_index=True)
    assert mapcache.frames_digest({**frames, "links": links}) != base
    # the text columns the map reads (`string`): hashed by value, a changed cell or a missing one seen
    assert str(frames["memories"]["topic"].dtype) == "string"
    same = frames["memories"].copy()
    same["topic"] = same["topic"].map(lambda t: t if t is pd.NA else ("." + t)[1:]).astype("string")
    assert mapcache.frames_digest({**frames, "memories": same}) == base
    renamed = frames["memories"].copy()
    renamed.loc[3, "topic"] = "Another name"
    assert mapcache.frames_digest({**frames, "memories": renamed}) != base
    named, unnamed = frames["memories"].copy(), frames["memories"].copy()
    named.loc[3, "account_name"], unnamed.loc[3, "account_name"] = "", pd.NA
    assert mapcache.frames_digest({**frames, "memories": named}) != mapcache.frames_digest(
        {**frames, "memories": unnamed}
    )


def test_new_memories_move_no_topic(frames, laid):
    """A layout depends on the tree only: a sync that files memories elsewhere lays out the same."""
    _, lay = laid
    memories = frames["memories"].copy()
    memories.loc[: len(memories) // 2, ["topic_id", "topic"]] = [
        frames["topics"]["id"].iloc[7],
        frames["topics"]["name"].iloc[7],
    ]
    G = tm.build_graph({**frames, "memories": memories})
    assert layout.cluster_layout(G).pos == lay.pos
