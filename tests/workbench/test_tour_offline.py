"""`make tour`'s HTML renders its widgets with no network: the tour is built as the Makefile
builds it (vendored scripts, scripts/tour_nbconvert_config.py) into a temporary directory,
opened from disk in chromium with every http(s) request aborted, and each widget view must
render. Skips only when the npm registry (source of the vendored scripts) cannot be reached.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, chromium, offline_context

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [*BROWSER_MARKS, pytest.mark.notebook]


@pytest.fixture
def tour(tmp_path) -> Path:
    """A fresh tour.html with vendor/ beside it, built in tmp_path (no race with `make tour`)."""
    vendor = subprocess.run(
        ["bash", "scripts/vendor-widgets.sh", "build/vendor"],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if vendor.returncode == 3:  # the script's code for "npm cannot be reached"
        pytest.skip("npm cannot be reached to vendor the widget scripts: " + vendor.stderr.strip())
    assert vendor.returncode == 0, vendor.stderr
    out = tmp_path / "tour"
    shutil.copytree(ROOT / "build" / "vendor", out / "vendor")
    env = {**os.environ, "DECOY_LAB_CONFIG_DIR": str(tmp_path / "config")}  # no profile lands in $HOME
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--config",
            "scripts/tour_nbconvert_config.py",
            "--to",
            "html",
            "--execute",
            "notebooks/01-tour.ipynb",
            "--output-dir",
            str(out),
            "--output",
            "tour",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return out / "tour.html"


def test_tour_html_renders_widgets_with_no_network(tour):
    from playwright.sync_api import expect

    html = tour.read_text()
    views = html.count('<script type="application/vnd.jupyter.widget-view+json">')
    assert views >= 5, "the tour should hold its widget views"
    with chromium() as browser:
        context, online = offline_context(browser, {"width": 1300, "height": 1000})
        page = context.new_page()
        failed: list[str] = []
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.goto(tour.as_uri())

        # Each view's output area gets the rendered widget beside its state script.
        rendered = page.locator("div.jupyter-widgets.jp-OutputArea-output > .widget-subarea")
        expect(rendered).to_have_count(views, timeout=30_000)
        for i in range(views):
            expect(rendered.nth(i)).to_be_visible()
        # Known widgets of the tour: the pairing panel, the map and the table, the unseal recipe
        # view (anywidgets: their renderer comes from vendor/anywidget.js; they need no kernel).
        expect(page.locator(".widget-html .decoy-pair-status").first).to_contain_text("done")
        # The map and the table draw themselves from the saved state, and stay linked
        # with no kernel: a click on a topic filters the table in the page alone.
        view = page.locator(".decoy-vaultview").first
        expect(view.locator(".decoy-map-label").first).to_be_visible()
        expect(view.locator(".decoy-grid-row").first).to_be_visible()
        total = view.locator(".decoy-grid-count").inner_text()
        view.locator(".decoy-map-node.kind-topic").first.click()
        expect(view.locator(".decoy-grid-count")).not_to_have_text(total)
        expect(view.locator(".decoy-grid-count")).to_contain_text(" of ")
        recipe = page.locator(".decoy-recipe").first
        expect(recipe.locator(".dr-where")).to_have_text(re.compile(r"^step \d+ of \d+$"))
        expect(recipe.locator(".dr-step.open .dr-hex .dr-b").first).to_be_visible()
        before = recipe.locator(".dr-where").inner_text()
        recipe.get_by_role("button", name="Next ▶").click()
        expect(recipe.locator(".dr-where")).not_to_have_text(before)
        # Button icons come from the vendored Font Awesome, found through require.js's paths.
        assert page.evaluate(
            "() => document.fonts.ready.then(fs => [...fs].some("
            "f => f.family.includes('Font Awesome') && f.status === 'loaded'))"
        )
        assert online == [], f"the page asked the network for {online}"
        assert failed == [], f"requests failed: {failed}"
