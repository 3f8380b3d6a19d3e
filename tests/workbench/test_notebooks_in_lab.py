"""Run All of every notebook in JupyterLab, in Light and in Dark, as a person opens them.

Each notebook of the repository is opened in a real JupyterLab (Debian chromium, Playwright),
every cell is run, and then, in JupyterLab Light and again after switching to JupyterLab Dark
(JupyterLab's own `apputils:change-theme`):
- no cell ends in an error, no output shows a widget error ("Error displaying widget",
  "model not found", "Click to show javascript error"), and the browser's console has no error
  from the page or a widget;
- no text of the page carries notebook 06's API key, nor does its recipe views' text at any step;
- every visible text of every output reads at WCAG AA ("a contrast ratio of at least 4.5:1",
  large text 3:1), measured on the rendered page (tests/support/contrast.py). The map's SVG
  labels are painted by `fill`, not `color`, and are measured by test_map_lab_browser.py.
Screenshots: build/notebooks-in-lab/<notebook>-<theme>.png.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.contrast import DARK, LIGHT, offenders, report, set_lab_theme, text_nodes
from support.lab import run_notebook, running_lab

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "notebooks-in-lab"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
OUTPUTS = ".jp-Notebook .jp-OutputArea-output"
NOT_TEXT = ".decoy-map-svg"  # SVG text: its colour is `fill` (measured by the map's own Lab test)
WIDGET_ERRORS = ("error displaying widget", "model not found", "click to show javascript error")

SECRET = re.compile(r"sk_live_[0-9a-f]{32}")  # notebook 06's API key (its code cell shows only the prefix)
pytestmark = [*BROWSER_MARKS, pytest.mark.timeout(600)]


def every_step(page) -> list[str]:
    """Each recipe view's text at each of its steps, walked with its Next button: a step that opens
    a secret (notebook 06's API key field) shows it masked, whichever step is open."""
    seen = []
    views = page.locator(".jp-Notebook .decoy-recipe")
    for i in range(views.count()):
        view = views.nth(i)
        view.get_by_text("1. ", exact=False).first.click()
        nxt = view.locator("button.dr-btn", has_text="Next")
        while True:
            seen.append(view.inner_text())
            if nxt.first.is_disabled():
                break
            nxt.first.click()
    return seen


def _needs(name: str) -> None:
    if name.startswith("05") and shutil.which("node") is None:
        pytest.skip("notebook 05 runs a Node agent: node is not installed")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_run_all_in_light_and_dark_shows_no_error_and_reads_at_wcag_aa(tmp_path, name):
    from playwright.sync_api import sync_playwright

    _needs(name)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with running_lab(tmp_path) as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            console: list[str] = []
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console.append(str(e)))
            assert run_notebook(page, base, token, f"notebooks/{name}", timeout_ms=420_000) == []
            page.wait_for_timeout(1500)  # widgets render after their kernel messages
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            low = {}
            for theme in (LIGHT, DARK):
                set_lab_theme(page, theme)
                low[theme] = report(offenders(page, OUTPUTS, exclude=NOT_TEXT))
                page.locator(".jp-Notebook").screenshot(
                    path=str(SHOTS / f"{name[:-6]}-{theme.split()[-1].lower()}.png")
                )
            measured = text_nodes(page, OUTPUTS, exclude=NOT_TEXT)
            text = page.inner_text(".jp-Notebook").lower()
            stepped = every_step(page) if name.startswith("06") else []  # the notebook with secrets
        finally:
            browser.close()
    assert measured > 20, f"only {measured} text nodes were measured: the outputs did not render"
    assert [w for w in WIDGET_ERRORS if w in text] == []
    assert [t for t in [text, *stepped] if SECRET.search(t)] == [], "an API key shows in the page"
    if name.startswith("06"):  # the unseal trace (17 steps) and the wrong-key trace (3) were walked
        assert len(stepped) == 17 + 3, len(stepped)
    ours = [c for c in console if "decoy" in c.lower() or "widget" in c.lower() or "model" in c.lower()]
    assert ours == [], "\n".join(console)
    assert low == {LIGHT: "", DARK: ""}, "\n".join(f"{t}:\n{r}" for t, r in low.items() if r)
