"""`%decoy map` as a picture: the demo vault's map drawn by matplotlib and measured with the
renderer's own boxes. Every topic is labelled, beside its own dot, and no label covers another
label, any dot or the keys; dots grow with memory count on a scale the size key shows.
The same graph's output bundle carries the live map and this PNG together."""

from __future__ import annotations

import base64
import itertools
import math

import matplotlib
import pytest
from matplotlib.legend import Legend

from decoy_lab.views import topicmap as tm
from decoy_lab.widgets.topicmap_view import LiveMap, TopicMapWidget

from support.frames import make_frames
from support.magics import WIDGET_VIEW, decoy_shell

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    """`%decoy` in IPython over the embedded sandbox with the demo vault, shared by the phone."""
    with decoy_shell(tmp_path_factory.mktemp("decoy-config")) as shell:
        magics = shell.magics_manager.registry["DecoyMagics"]
        magics.sandbox = None  # a sandbox of this module's own, seeded with the demo vault
        shell.run_line_magic("config", "DecoyMagics.sandbox_options = {'seed': 'demo'}")
        conn = shell.run_line_magic("decoy", "connect --sandbox --new --name map-png")
        conn.sandbox_handle.owner.share()
        yield shell
        conn.close()
        magics.sandbox.stop()
        magics.sandbox = None


Quad = list[tuple[float, float]]


def quad_of(t, renderer) -> Quad:
    """A text's rectangle in display pixels, turned as the text is (its box when upright)."""
    rot = t.get_rotation()
    t.set_rotation(0)
    ext = t.get_window_extent(renderer)
    t.set_rotation(rot)
    w, h = ext.width, ext.height
    ax_, ay_ = t.get_transform().transform(t.get_position())
    x0 = {"right": -w, "center": -w / 2}.get(t.get_ha(), 0.0)
    a = math.radians(rot)
    corners = [(x0, -h / 2), (x0 + w, -h / 2), (x0 + w, h / 2), (x0, h / 2)]
    return [(ax_ + x * math.cos(a) - y * math.sin(a), ay_ + x * math.sin(a) + y * math.cos(a)) for x, y in corners]


def box_quad(b) -> Quad:
    return [(b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1)]


def apart(p: Quad, q: Quad) -> bool:
    """Two convex quadrilaterals do not overlap: some edge normal separates them."""
    for poly in (p, q):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx_, ny_ = y2 - y1, x1 - x2
            pa, qa = [nx_ * x + ny_ * y for x, y in p], [nx_ * x + ny_ * y for x, y in q]
            if max(pa) <= min(qa) or max(qa) <= min(pa):
                return True
    return False


def distance_to(q: Quad, x: float, y: float) -> float:
    """From a point to a convex quadrilateral (0 inside it)."""
    inside = all(
        (bx - ax_) * (y - ay_) - (by - ay_) * (x - ax_) >= 0 for (ax_, ay_), (bx, by) in zip(q, q[1:] + q[:1])
    ) or all((bx - ax_) * (y - ay_) - (by - ay_) * (x - ax_) <= 0 for (ax_, ay_), (bx, by) in zip(q, q[1:] + q[:1]))
    if inside:
        return 0.0
    best = math.inf
    for (ax_, ay_), (bx, by) in zip(q, q[1:] + q[:1]):
        dx, dy = bx - ax_, by - ay_
        t = max(0.0, min(1.0, ((x - ax_) * dx + (y - ay_) * dy) / (dx * dx + dy * dy)))
        best = min(best, math.hypot(x - ax_ - t * dx, y - ay_ - t * dy))
    return best


class Drawn:
    """A drawn map's labels, dots and keys in display pixels, after a real render."""

    def __init__(self, fig, ax=None):
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        ax = ax or fig.axes[0]
        self.ax = ax
        self.labels = {t.get_gid()[len("label:") :]: t for t in ax.texts if (t.get_gid() or "").startswith("label:")}
        self.quads = {n: quad_of(t, r) for n, t in self.labels.items()}
        self.relations = [quad_of(t, r) for t in ax.texts if (t.get_gid() or "").startswith("relation:")]
        self.keys = [box_quad(a.get_window_extent(r)) for a in ax.get_children() if isinstance(a, Legend)]
        self.dots: list[tuple[float, float, float]] = []  # (x, y, radius px)
        for coll in ax.collections:
            if coll.get_gid() in ("dots", "you"):
                radii = [math.sqrt(s) / 2 * fig.dpi / 72 for s in coll.get_sizes()]
                for (x, y), rad in zip(ax.transData.transform(coll.get_offsets()), radii):
                    self.dots.append((x, y, rad))
        self.fig, self.renderer = fig, r


def check_readable(G, drawn: Drawn) -> None:
    """No label over another, a dot or a key; each within a few pixels of its own dot; no
    relation's words over a label or each other."""
    ax = drawn.ax
    pos = tm.radial_layout(G)
    quads = list(drawn.quads.items())
    name = {n: G.nodes[n]["name"] for n, _ in quads}
    for i, (n, q) in enumerate(quads):
        for m, p in quads[i + 1 :]:
            assert apart(q, p), f"labels of {name[n]!r} and {name[m]!r} overlap"
        for x, y, r in drawn.dots:
            assert distance_to(q, x, y) >= r, f"the label of {name[n]!r} covers a dot"
        for key in drawn.keys:
            assert apart(q, key), f"a key covers the label of {name[n]!r}"
        x, y = ax.transData.transform(pos[n])
        r = next(rad for dx, dy, rad in drawn.dots if math.hypot(dx - x, dy - y) < 0.5)
        assert distance_to(q, x, y) - r < 8, f"the label of {name[n]!r} is not beside its dot"
    for i, rel in enumerate(drawn.relations):
        assert all(apart(rel, q) for _, q in quads) and all(apart(rel, o) for o in drawn.relations[i + 1 :])


def test_the_demo_maps_every_label_beside_its_dot_and_clear_of_labels_dots_and_keys(ip):
    for line in ("map", "map --depth 1"):
        G = ip.run_line_magic("decoy", line)
        topics = {n for n, d in G.nodes(data=True) if d["kind"] == "topic"}
        assert len(topics) >= 9
        drawn = Drawn(tm.draw(G))
        assert set(drawn.labels) == topics, f"{line}: every topic is labelled"
        check_readable(G, drawn)
        names = [t.get_text() for t in drawn.labels.values()]
        assert "Grandma's 90th birthday (4)" in names, f"{line}: {names}"


def test_dot_sizes_follow_memory_counts_and_the_size_key_shows_the_scale(ip):
    G = ip.run_line_magic("decoy", "map")
    drawn = Drawn(tm.draw(G))
    fig = drawn.fig
    coll = next(c for c in fig.axes[0].collections if c.get_gid() == "dots")
    nodes = [n for n in G if n != tm.USER]
    area = dict(zip(nodes, coll.get_sizes()))
    counts = {n: G.nodes[n]["memories"] for n in nodes}
    sintra = tm.find_node(G, "Day trip to Sintra")
    biggest = max(nodes, key=counts.get)
    assert counts[sintra] == 2 and counts[biggest] >= 5
    # Area grows with the count (a floor for an empty topic): 2 and 5 memories are told apart.
    assert math.sqrt(area[biggest] / area[sintra]) >= 1.3
    ordered = sorted(nodes, key=counts.get)
    assert all(area[a] <= area[b] for a, b in itertools.pairwise(ordered))
    keys = [a for a in fig.axes[0].get_children() if isinstance(a, Legend)]
    titles = [k.get_title().get_text() for k in keys]
    assert titles == ["topic type", "memories"]
    size_key = keys[1]
    steps = [t.get_text() for t in size_key.get_texts()]
    assert steps == ["1", "5"]  # the demo's biggest topics hold 5 memories
    marks = [h.get_markersize() ** 2 for h in size_key.legend_handles]
    assert marks == sorted(marks) and marks[0] < marks[-1]


def test_five_hundred_topics_draw_as_their_clusters_each_named_and_clear():
    """Past layout.SMALL_MAP topics the picture is the map's clusters: each named on its rim, no
    name over another or the keys, and the topics not named counted in a note."""
    from decoy_lab.views.layout import SMALL_MAP, map_layout

    f = make_frames(500, nested=60, memories_per_topic=1)
    G = tm.build_graph(f)
    assert len(G) - 1 > SMALL_MAP
    drawn = Drawn(tm.draw(G))
    ax, r = drawn.ax, drawn.renderer
    names = [t for t in ax.texts if (t.get_gid() or "").startswith("cluster:")]
    lay = map_layout(G)
    assert {t.get_gid() for t in names} >= {c.id for c in lay.clusters if c.level == 1}
    assert "Topic 0 · 61 topics" in {t.get_text() for t in names}  # the topic and the 60 it includes
    quads = [quad_of(t, r) for t in names] + list(drawn.quads.values())
    for i, q in enumerate(quads):
        assert all(apart(q, p) for p in quads[i + 1 :]) and all(apart(q, k) for k in drawn.keys)
    notes = [t.get_text() for t in ax.texts if t.get_gid() == "note"]
    assert notes == [
        f"{500 - len(drawn.labels):,} of 500 topics drawn\nbut not named, for room\n(the live map names them\nas you zoom in)"
    ]


def test_map_output_bundle_holds_the_live_map_its_png_and_its_text(ip):
    G = ip.run_line_magic("decoy", "map --depth 1")
    assert isinstance(G, LiveMap) and isinstance(G, tm.TopicGraph)  # the graph, usable as before
    assert set(G) == set(tm.build_graph(G.vault, depth=1))
    bundle = G._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "image/png", WIDGET_VIEW}
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle[WIDGET_VIEW]["model_id"] == G.widget.model_id
    assert isinstance(G.widget, TopicMapWidget) and G.widget.graph is G
    assert {n["id"] for n in G.widget.nodes} == set(G)
    assert G.widget.depth == 1
    G.widget.category = "travel"  # the live map's own filters keep the magic's depth
    assert {n["id"] for n in G.widget.nodes} == set(tm.build_graph(G.vault, depth=1, category="travel"))
    # What IPython sends to the front end: the same three, the PNG computed once.
    data, _meta = ip.display_formatter.format(G)
    assert {"text/plain", "image/png", WIDGET_VIEW} <= set(data)
    # A copy networkx makes knows no vault: it still shows its picture.
    copy = G.subgraph(list(G)[:3]).copy()
    assert set(copy._repr_mimebundle_()) == {"text/plain", "image/png"}


def test_on_axes_beside_others_the_keys_stay_inside_their_own_axes_in_an_empty_corner():
    """A caller's subplot has neighbours: the keys take a free corner of its own axes instead."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    graphs = [tm.build_graph(make_frames(8, nested=2)), tm.build_graph(make_frames(5, nested=0))]
    for G, ax in zip(graphs, axes):
        tm.draw(G, ax=ax)
    for G, ax in zip(graphs, axes):
        drawn = Drawn(fig, ax)
        check_readable(G, drawn)
        area = ax.get_window_extent(drawn.renderer)
        assert len(drawn.keys) == 2
        for key in drawn.keys:
            assert all(area.x0 <= x <= area.x1 + 0.5 and area.y0 <= y <= area.y1 + 0.5 for x, y in key)
