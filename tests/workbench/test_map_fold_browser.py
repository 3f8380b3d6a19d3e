"""Folding on the live map, in chromium: the demo vault (loaded from the sandbox over HTTP) drawn
by the map widget on a page of its own (saved widget state, vendored scripts, network blocked).
Double-clicking "Lisbon trip" folds away the three topics it includes; their labels go with their
dots, every label left has its dot, and no two labels overlap."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.views import topicmap as tm
from decoy_lab.widgets import TopicMapWidget

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.connections import paired
from support.widgetpage import vendored_scripts, widget_page

expect = pytest.importorskip("playwright.sync_api").expect

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = BROWSER_MARKS

# Each visible label, its dot (shown or not) and both boxes, as the page lays them out.
SHOWN = """() => [...document.querySelectorAll('.decoy-map-label')]
  .filter(l => getComputedStyle(l).display !== 'none')
  .map(l => {
    const dot = document.querySelector(`.decoy-map-node[data-node="${CSS.escape(l.dataset.node)}"]`);
    const b = l.getBoundingClientRect(), d = dot && dot.getBoundingClientRect();
    return {node: l.dataset.node, text: l.textContent, x: b.x, y: b.y, w: b.width, h: b.height,
            dot: !!dot && getComputedStyle(dot).display !== 'none' && d.width > 0};
  })"""


@pytest.fixture(scope="module")
def vendor() -> Path:
    return vendored_scripts()


@pytest.fixture(scope="module")
def demo():
    """The demo vault as a connection reads it, once the owner's phone has shared its keys."""
    with Sandbox.start(seed="demo") as sb:
        conn = paired(sb, ["memory.read"], name="Map fold")
        sb.owner.share()
        try:
            yield conn.load()
        finally:
            conn.close()


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    return [
        (a["text"], b["text"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    ]


def test_folding_a_topic_takes_its_nested_labels_away_and_leaves_no_label_without_its_dot(demo, vendor, tmp_path):
    from playwright.sync_api import sync_playwright

    widget = TopicMapWidget(demo)
    lisbon = tm.find_node(widget.graph, "Lisbon trip")
    nested = {n for n, d in widget.graph.nodes(data=True) if d.get("parent") == lisbon}
    assert len(nested) == 3  # flights, hotel, the day trip to Sintra
    page_file = widget_page([widget], tmp_path / "map.html", vendor)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 800})
            context.route(re.compile(r"^https?://"), lambda route: route.abort())
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri())
            page.wait_for_selector(".decoy-map-label", timeout=30_000)
            page.wait_for_timeout(300)  # the first frames settle (fit, label placement)
            before = page.evaluate(SHOWN)
            assert nested <= {b["node"] for b in before}, "the nested topics are labelled before folding"

            page.locator(f".decoy-map-node[data-node='{lisbon}']").dblclick()
            expect(page.locator(".decoy-map-status")).to_contain_text("(3 folded away)")
            page.wait_for_timeout(200)
            page.locator(".decoy-map").screenshot(path=str(BUILD / "map-folded.png"))
            after = page.evaluate(SHOWN)
            assert not nested & {b["node"] for b in after}, "a folded topic's label stayed"
            assert [b["text"] for b in after if not b["dot"]] == [], "a label shows without its dot"
            assert lisbon in {b["node"] for b in after}
            assert overlapping(after) == []

            page.locator(f".decoy-map-node[data-node='{lisbon}']").dblclick()  # unfolded: all back
            expect(page.locator(".decoy-map-status")).not_to_contain_text("folded away")
            page.wait_for_timeout(200)
            again = page.evaluate(SHOWN)
            assert nested <= {b["node"] for b in again} and overlapping(again) == []
            assert errors == []
        finally:
            browser.close()
