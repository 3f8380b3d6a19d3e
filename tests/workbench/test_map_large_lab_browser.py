"""The map at 2,000 topics in a real JupyterLab (Debian chromium): VaultView over a vault of
2,000 topics in clusters. At the overview the clusters are named and the topics are not (nor is
a name or a line made for them before it is shown), yet
hovering any topic's dot shows its own details; the search box finds a topic the overview does
not name, highlights it and zooms to it, named; a click on a dot picks the topic, and the pick
reaches the kernel (the topic picker, linked there, follows) and filters the table.
Screenshots: build/map-2000-overview.png, build/map-2000-found.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from decoy_lab.views.layout import map_layout

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.lab import notebook_json, run_notebook, running_lab

expect = pytest.importorskip("playwright.sync_api").expect

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = [*BROWSER_MARKS, pytest.mark.notebook]

CELLS = [
    f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
    "from support.bigmap import big_frames\nfrom support.widgetpage import PageVault\n"
    "from decoy_lab.widgets import VaultView\nvault = PageVault(big_frames(2000, 20_000))",
    "view = VaultView(vault)\nview",
]


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "map2000.ipynb").write_text(notebook_json(CELLS))
    with running_lab(tmp_path, folder) as lab:
        yield lab


# Attribute changes to the map's dots from now on (a MutationObserver records every set).
WATCH_DOTS = """() => {
  window.__dotCount = 0;
  const svg = document.querySelector('.decoy-vaultview .decoy-map-svg');
  window.__dotChanges = new MutationObserver((records) => {
    window.__dotCount += records.filter((r) => r.target.classList.contains('decoy-map-node')).length;
  });
  window.__dotChanges.observe(svg, {attributes: true, subtree: true});
}"""
# The topics at the two ends of each edge on show, by the dots nearest its ends.
EDGE_ENDS = """() => {
  const dots = [...document.querySelectorAll('.decoy-vaultview .decoy-map-node')]
    .filter((d) => d.style.display !== 'none')
    .map((d) => [d.dataset.node, +d.getAttribute('cx'), +d.getAttribute('cy')]);
  const at = (x, y) => dots.reduce((b, d) => Math.hypot(d[1] - x, d[2] - y) < b[1] ? [d[0], Math.hypot(d[1] - x, d[2] - y)] : b, ['', 1e9])[0];
  return [...document.querySelectorAll('.decoy-vaultview .decoy-map-edge')]
    .filter((l) => l.style.display !== 'none')
    .map((l) => [at(+l.getAttribute('x1'), +l.getAttribute('y1')), at(+l.getAttribute('x2'), +l.getAttribute('y2'))]);
}"""


def graph_facts():
    """What the kernel will lay out, worked out here from the same frames (deterministic)."""
    from decoy_lab.views import topicmap as tm

    from support.bigmap import big_frames

    G = tm.build_graph(big_frames(2000, 20_000))
    topics = [n for n, d in G.nodes(data=True) if d["kind"] == "topic" and d["memories"] >= 2]
    return G, sorted(topics, key=lambda n: (G.nodes[n]["memories"], n))


def centre_of(locator) -> tuple[float, float]:
    box = locator.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_hover_search_and_pick_reach_every_topic_of_a_2000_topic_map(served):
    from playwright.sync_api import sync_playwright

    base, token = served
    G, by_size = graph_facts()
    names = [G.nodes[n]["name"].lower() for n in G]
    alone = [n for n in by_size if sum(G.nodes[n]["name"].lower() in m for m in names) == 1]  # no other name holds it
    quiet, other = alone[3], by_size[len(by_size) // 2]  # topics the overview leaves unnamed
    nested = next(n for n in reversed(by_size) if G.nodes[n]["parent"] not in ("user", other) and n != other)
    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            assert run_notebook(page, base, token, "notebooks/map2000.ipynb") == []
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            view = page.locator(".decoy-vaultview")
            view.scroll_into_view_if_needed()
            status = view.locator(".decoy-map-status")
            expect(status).to_contain_text("2,000 topics in", timeout=60_000)
            expect(view.locator(".decoy-map-cluster")).to_have_count(len(map_layout(G).clusters))
            page.wait_for_timeout(500)
            assert int(status.get_attribute("data-clusters-named")) >= 10, "the overview names clusters"
            label = view.locator(f".decoy-map-label[data-node='{quiet}']")
            expect(label).to_be_hidden()
            # the overview makes a name only for the topics it names, a line only for the relations
            # it draws: not 2,000 of each for the page to lay out before its first paint
            assert view.locator(".decoy-map-label[data-node]").count() < 200
            assert view.locator(".decoy-map-edge").count() < 200
            view.locator(".decoy-map").screenshot(path=str(BUILD / "map-2000-overview.png"))

            # hover: the tiny dot of an unnamed topic shows that topic's details
            dot = view.locator(f".decoy-map-node[data-node='{quiet}']")
            page.mouse.move(*centre_of(dot))
            tip = view.locator(".decoy-map-tip")
            expect(tip.locator(".decoy-map-tip-name")).to_have_text(G.nodes[quiet]["name"])
            parent = G.nodes[G.nodes[quiet]["parent"]]["name"] if G.nodes[quiet]["parent"] != "user" else "You"
            expect(tip).to_contain_text(f"memories{G.nodes[quiet]['memories']}")
            if parent != "You":
                expect(tip).to_contain_text(f"{parent} — ")
            page.mouse.move(2, 2)
            expect(tip).to_be_hidden()

            # search: found, highlighted, zoomed to and named; the table follows the pick
            name = G.nodes[quiet]["name"]
            box = view.locator(".decoy-map-search")
            box.fill(name)
            expect(view.locator(f".decoy-map-found-item[data-node='{quiet}']")).to_be_visible()
            expect(view.locator(f".decoy-map-node.match[data-node='{quiet}']")).to_have_count(1)
            expect(label).to_be_visible()  # the one match is brought into view as it is typed, named
            expect(status).not_to_contain_text("zoom in for the rest")
            expect(view.locator(".decoy-map-node.selected")).to_have_count(0)  # not picked until Enter
            box.press("Enter")
            expect(view.locator(".decoy-map-node.selected")).to_have_attribute("data-node", quiet)
            expect(label).to_be_visible()
            assert label.text_content().startswith(G.nodes[quiet]["label"][:10])
            assert int(status.get_attribute("data-named")) > 1, "zoomed in, its neighbours are named too"
            picker = view.locator(".decoy-filters select").first.locator("option:checked")
            expect(picker).to_have_text(name, timeout=30_000)  # the kernel heard the pick
            expect(view.locator(".decoy-grid-row .col-topic").first).to_have_text(name)
            view.locator(".decoy-map").screenshot(path=str(BUILD / "map-2000-found.png"))
            box.press("Escape")

            # pick: a click on a tiny dot at the overview picks that topic, in the page and the kernel
            view.locator(".decoy-map-fit").click()
            page.wait_for_timeout(300)
            page.mouse.click(*centre_of(view.locator(f".decoy-map-node[data-node='{other}']")))
            expect(view.locator(".decoy-map-node.selected")).to_have_attribute("data-node", other)
            expect(picker).to_have_text(G.nodes[other]["name"], timeout=30_000)
            listed = view.locator(".decoy-grid-row .col-topic")
            expect(listed.first).to_have_text(G.nodes[other]["name"])
            assert set(listed.all_inner_texts()) == {G.nodes[other]["name"]}

            # another pick restyles what it changes, not the 2,000 dots: the two dots, the edges
            # of the two topics (a picked topic's edges show), the names
            page.evaluate(WATCH_DOTS)
            page.mouse.click(*centre_of(view.locator(f".decoy-map-node[data-node='{nested}']")))
            expect(view.locator(".decoy-map-node.selected")).to_have_attribute("data-node", nested)
            expect(listed.first).to_have_text(G.nodes[nested]["name"])
            assert view.locator(".decoy-map-node.selected").count() == 1
            changed = page.evaluate("() => window.__dotChanges.takeRecords().length + window.__dotCount")
            assert changed <= 10, f"{changed} changes to the dots for one pick"
            near = view.locator(".decoy-map-edge.near:visible")
            assert near.count() >= 1, "the picked topic's edge to what includes it shows"
            ends = page.evaluate(EDGE_ENDS)  # every edge shown at the overview is the picked topic's
            assert ends and all(nested in pair for pair in ends), ends
        finally:
            browser.close()
