"""topicmap: a vault's frames → the Map graph, its filters, and a readable drawing."""

from __future__ import annotations

import io

import matplotlib
import pandas as pd
import pytest
from matplotlib.figure import Figure

from decoy_lab.errors import MemoryModelError
from decoy_lab.views import drawing
from decoy_lab.views import topicmap as tm

from support.frames import make_frames

matplotlib.use("Agg")


def test_you_at_the_centre_and_every_topic_linked(frames):
    """Spec: a relation row "runs from default_user (You) by default, or from an existing topic"."""
    G = tm.build_graph(frames)
    assert G.nodes[tm.USER]["label"] == "You"
    topics = frames["topics"]
    assert set(topics["id"]) | {tm.USER} == set(G)
    first, last = topics["id"].iloc[0], topics["id"].iloc[-1]
    assert G.has_edge(tm.USER, first) and G.edges[tm.USER, first]["relation"] == "is planning"
    assert G.has_edge(first, last) and G.edges[first, last]["relation"] == "includes"
    assert G.nodes[last]["depth"] == 2 and G.nodes[last]["parent"] == first
    assert isinstance(G, tm.TopicGraph)


def test_size_from_memory_count_and_colour_from_type():
    f = make_frames(3, nested=0, memories_per_topic=0)
    tid = f["topics"]["id"].iloc[1]
    extra = pd.DataFrame(
        [{"id": f"m{i}", "text": "x", "topic": "Topic 1", "topic_id": tid, "categories": ["food"]} for i in range(5)]
    )
    G = tm.build_graph({**f, "memories": pd.concat([f["memories"], extra])})
    assert G.nodes[tid]["memories"] == 5
    assert G.nodes[f["topics"]["id"].iloc[0]]["memories"] == 0
    assert G.nodes[tid]["color"] == tm.TYPE_COLOURS[f["topics"]["type"].iloc[1]]


def test_topic_known_only_from_a_memory_hangs_from_you(frames):
    """Spec: visible topics include "every topic:<id> named by a memory you can open (its name
    from that memory's entityName, its type unknown)"."""
    mem = frames["memories"].copy()
    mem = mem.astype(object)
    mem.loc[len(mem)] = {
        "id": "m-x",
        "text": "y",
        "topic": "Hidden trip",
        "topic_id": "topic:zzz",
        "about": ["topic:zzz"],
        "categories": ["travel"],
    }
    G = tm.build_graph({**frames, "memories": mem})
    assert G.nodes["topic:zzz"]["name"] == "Hidden trip" and G.nodes["topic:zzz"]["type"] == ""
    assert G.edges[tm.USER, "topic:zzz"].get("inferred") is True


def test_copies_of_a_topic_count_under_the_listed_one(frames):
    """Spec: same-name topics are listed once "under the oldest id ... memories combining their memories"."""
    topics = frames["topics"].copy()
    first = topics["id"].iloc[0]
    topics.at[0, "ids"] = [first, "topic:copy"]
    mem = frames["memories"].copy()
    mem = mem.astype(object)
    mem.loc[len(mem)] = {"id": "m-c", "text": "c", "topic": "Topic 0", "topic_id": "topic:copy", "categories": []}
    G = tm.build_graph({**frames, "topics": topics, "memories": mem})
    assert "topic:copy" not in G
    assert G.nodes[first]["memories"] == 3


def test_filters_topic_depth_category(frames):
    G = tm.build_graph(frames)
    ids = list(frames["topics"]["id"])
    sub = tm.build_graph(frames, topic="topic 0")  # by normalized name
    assert set(sub) == {tm.USER, ids[0], ids[-1]}
    assert set(tm.build_graph(frames, depth=1)) == set(G) - {ids[-1]}
    assert set(tm.build_graph(frames, topic=ids[0], depth=0)) == {tm.USER, ids[0]}
    travel = tm.build_graph(frames, category="travel")
    has_travel = {r["topic_id"] for r in frames["memories"].to_dict("records") if "travel" in r["categories"]}
    assert set(travel) - {tm.USER} == has_travel - {None}
    assert all(travel.nodes[n]["memories"] == 1 for n in has_travel if n)
    with pytest.raises(MemoryModelError):
        tm.build_graph(frames, topic="nope")


def test_memories_of_a_topic_and_of_you(frames):
    G = tm.build_graph(frames)
    tid = frames["topics"]["id"].iloc[2]
    got = tm.memories_of(frames, G, tid)
    assert len(got) == 2 and set(got["topic_id"]) == {tid}
    assert list(tm.memories_of(frames, G, tm.USER)["text"]) == ["Prefers short answers."]


def test_shorten_keeps_short_labels_and_cuts_long_ones_at_a_word():
    assert tm.shorten("Golf") == "Golf"
    cut = tm.shorten("Trip to Lisbon in spring with the whole family", 20)
    assert len(cut) <= 20 and cut.endswith("…") and cut.startswith("Trip to Lisbon")


def test_layout_rings_by_depth_and_nested_topics_outside_their_parent(frames):
    G = tm.build_graph(frames)
    pos = tm.radial_layout(G)
    assert pos[tm.USER] == (0.0, 0.0)
    r = {n: (x * x + y * y) ** 0.5 for n, (x, y) in pos.items()}
    ids = list(frames["topics"]["id"])
    assert r[ids[-1]] > r[ids[0]] > 0
    assert len({round(v, 6) for n, v in r.items() if G.nodes[n]["depth"] == 1}) == 1


def _label_quads(fig: Figure) -> list[list[tuple[float, float]]]:
    """Each topic label's rotated rectangle, in display pixels."""
    import math

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    quads = []
    for t in fig.axes[0].texts:
        if t.get_fontsize() < 7 or t.get_text() == "You":
            continue
        rot = t.get_rotation()
        t.set_rotation(0)
        box = t.get_window_extent(renderer)
        t.set_rotation(rot)
        w, h = box.width, box.height
        ax_, ay_ = t.get_transform().transform(t.get_position())
        x0 = -w if t.get_ha() == "right" else (-w / 2 if t.get_ha() == "center" else 0)
        corners = [(x0, -h / 2), (x0 + w, -h / 2), (x0 + w, h / 2), (x0, h / 2)]
        a = math.radians(rot)
        quads.append(
            [(ax_ + x * math.cos(a) - y * math.sin(a), ay_ + x * math.sin(a) + y * math.cos(a)) for x, y in corners]
        )
    return quads


def _separated(p: list, q: list) -> bool:
    """Separating-axis test for two convex quadrilaterals (1 px tolerance)."""
    for poly in (p, q):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx_, ny_ = y2 - y1, x1 - x2
            pa = [nx_ * x + ny_ * y for x, y in p]
            qa = [nx_ * x + ny_ * y for x, y in q]
            norm = (nx_ * nx_ + ny_ * ny_) ** 0.5 or 1.0
            if max(pa) < min(qa) + norm or max(qa) < min(pa) + norm:
                return True
    return False


def test_fifty_topics_draw_without_overlapping_topic_labels():
    """50 topics (ten nested) stay readable: no two topic labels overlap."""
    f = make_frames(50, nested=10, memories_per_topic=1)
    fig = tm.draw(tm.build_graph(f))
    quads = _label_quads(fig)
    assert len(quads) >= 50
    clashes = [
        (i, j) for i in range(len(quads)) for j in range(i + 1, len(quads)) if not _separated(quads[i], quads[j])
    ]
    assert clashes == []


def test_draw_returns_a_figure_and_highlight_marks_a_topic(frames):
    G = tm.build_graph(frames)
    tid = frames["topics"]["id"].iloc[1]
    fig = tm.draw(G, highlight="Topic 1")
    bold = [t.get_text() for t in fig.axes[0].texts if t.get_fontweight() == "bold"]
    assert any(t.startswith("Topic 1") for t in bold)
    assert drawing._highlighted(G, [tid, "nope"]) == {tid}
    png = G._repr_png_()
    assert png.startswith(b"\x89PNG")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"


def test_topics_that_include_each_other_still_hang_from_you_at_distinct_places():
    f = make_frames(3, nested=0)
    links = f["links"].copy()
    a, b = f["topics"]["id"].iloc[1], f["topics"]["id"].iloc[2]
    links = links[~links["to_id"].isin([a, b])]
    loop = pd.DataFrame(
        [
            {"id": "l1", "from": "Topic 1", "to": "x", "relation_type": "includes", "endpoints": [a, b]},
            {"id": "l2", "from": "x", "to": "Topic 1", "relation_type": "includes", "endpoints": [b, a]},
        ]
    )
    G = tm.build_graph({**f, "links": pd.concat([links, loop], ignore_index=True)})
    assert G.nodes[a]["depth"] + G.nodes[b]["depth"] == 3  # one hangs from You, the other from it
    pos = tm.radial_layout(G)
    assert len({pos[n] for n in G}) == len(G)


def test_topic_listing_counts_are_used_without_a_memory_frame(frames):
    G = tm.build_graph({"topics": frames["topics"], "links": frames["links"]})
    assert [G.nodes[t]["memories"] for t in frames["topics"]["id"]] == list(frames["topics"]["memories"])


def test_select_memories_matches_the_map(frames):
    """The table and the map filter by one rule: a topic by any spelling, "You" = no topic."""
    G = tm.build_graph(frames)
    tid = frames["topics"]["id"].iloc[0]
    assert list(tm.select_memories(frames, topic="  TOPIC 0 ")["id"]) == list(tm.memories_of(frames, G, tid)["id"])
    assert list(tm.select_memories(frames, topic="you")["text"]) == ["Prefers short answers."]
    assert set(tm.select_memories(frames, category="travel", mine=True)["mine"]) == {True}
    with pytest.raises(MemoryModelError):
        tm.select_memories(frames, topic="Atlantis")


def test_a_crowded_map_labels_only_the_highlighted_topics_relations():
    f = make_frames(120, nested=0, memories_per_topic=0)
    G = tm.build_graph(f)
    tid = f["topics"]["id"].iloc[5]
    texts = [t.get_text() for t in tm.draw(G, highlight=tid).axes[0].texts]
    assert texts.count("is planning") == 1
    assert (
        sum(t.get_text() == "is planning" for t in tm.draw(tm.build_graph(make_frames(20, nested=0))).axes[0].texts)
        == 20
    )


def test_an_empty_vault_is_just_you():
    G = tm.build_graph({})
    assert list(G) == [tm.USER]
    assert G._repr_png_().startswith(b"\x89PNG") and tm.draw(G, highlight="You").axes[0].texts[0].get_text() == "You"


def test_an_unknown_category_is_an_error_that_lists_the_categories(frames):
    """A misspelt category must not look like an empty vault: the table and the map both say so."""
    with pytest.raises(MemoryModelError, match="unknown category 'travle'.*travel"):
        tm.select_memories(frames, category="travle")
    with pytest.raises(MemoryModelError, match="unknown category 'Travel'"):
        tm.build_graph(frames, category="Travel")
    assert tm.select_memories(frames, category="health").empty  # known but unused: just no rows
    odd = frames["memories"].assign(categories=[["custom_label"]] * len(frames["memories"]))
    assert len(tm.select_memories({**frames, "memories": odd}, category="custom_label")) == len(odd)


def test_why_each_topic_is_visible_in_words(frames):
    """Spec: "`via` records the access reason: `self`, `all`, `category:<c>`, `topic:<id>`,
    `account:<id>`, or an all-of reason such as `and:topic:<a>+account:<b>`"."""
    topics = frames["topics"].copy().astype(object)
    first, second = topics["id"].iloc[0], topics["id"].iloc[1]
    topics.at[0, "via"] = [first]
    topics.at[1, "readable"] = False
    mem = frames["memories"].copy().astype(object)
    mem["via"] = [["category:travel"] if isinstance(t, str) and t == second else ["self"] for t in mem["topic_id"]]
    source = {**frames, "topics": topics, "memories": mem}
    why = tm.visible_because(source, tm.build_graph(source))
    assert "the topic 'Topic 0' is granted" in why[first] and "saved it" in why[first]
    assert why[second] == "the travel category is granted; named by a memory you can open"
    assert why[tm.USER].startswith("you")
    names = {"topic:a": "Golf"}
    assert tm.via_words("and:topic:a+account:b", names) == "every end is granted: Golf, account:b"
    assert tm.via_words("all") == "the whole-vault grant (all)"


def test_memory_nodes_file_copies_under_the_listed_topic(frames):
    topics = frames["topics"].copy()
    first = topics["id"].iloc[0]
    topics.at[0, "ids"] = [first, "topic:copy"]
    mem = frames["memories"].copy().astype(object)
    mem.loc[len(mem)] = {"id": "m-c", "text": "c", "topic": "Topic 0", "topic_id": "topic:copy", "categories": []}
    nodes = tm.memory_nodes({**frames, "topics": topics, "memories": mem})
    assert nodes.iloc[-1] == first and (nodes[mem["topic_id"].isna()] == tm.USER).all()
