"""Words as a browser lays them out: the dump's "Why it failed" wraps between words, never inside
one ("owne r_envelope"), in a page of the widget's saved state opened in chromium (no kernel, no
network). The screenshot is build/recipe-reason.png."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from decoy_lab.recipes.dump import open_blob
from decoy_lab.widgets import Stepper

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.widgetpage import vendored_scripts, widget_page

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = BROWSER_MARKS

# Each word of the reason: does it lie on one line? (a Range over it has one box per line it spans)
WORDS_ON_ONE_LINE = """el => {
  const node = el.firstChild, text = node.textContent, out = [];
  for (const m of text.matchAll(/\\S+/g)) {
    const r = document.createRange();
    r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
    const tops = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
    out.push([m[0], tops.size]);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def vendor() -> Path:
    return vendored_scripts()


def test_the_dumps_reason_breaks_between_words(vendor, tmp_path):
    from playwright.sync_api import sync_playwright

    trace = open_blob("aGVsbG8gd29ybGQ=")  # fits no layout: the reason names owner_envelope and the rest
    path = widget_page([Stepper(trace)], tmp_path / "reason.html", vendor)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 560, "height": 900})  # narrow: the reason must wrap
            page.route(re.compile(r"^https?://"), lambda route: route.abort())
            page.goto(path.as_uri())
            reason = page.wait_for_selector(".dr-reason code", timeout=30_000)
            assert reason.bounding_box()["height"] > 40  # it does wrap, over several lines
            words = reason.evaluate(WORDS_ON_ONE_LINE)
            assert any(w.startswith("owner_envelope") for w, _ in words)
            assert [w for w, lines in words if lines != 1] == []
            BUILD.mkdir(exist_ok=True)
            page.screenshot(path=str(BUILD / "recipe-reason.png"), full_page=True)
        finally:
            browser.close()


def test_a_run_saved_in_jupyterlab_leaves_the_tracked_notebooks_as_committed(tmp_path):
    """`make lab`'s JupyterLab, started as `make lab` starts it in a fresh clone (its config,
    rooted at notebooks/: the page saves "/01-tour.ipynb"): open the tour, run a cell, save; the
    file on disk is still the committed one, `git status` is clean, and the tour opens unmodified."""
    import nbformat
    from playwright.sync_api import sync_playwright

    from support.lab import KERNEL_READY, MAKE_LAB, MAKE_LAB_ARGS, checkout_copy, git_status, lab_in

    assert MAKE_LAB in (ROOT / "Makefile").read_text()
    clone = checkout_copy(tmp_path / "clone")
    with lab_in(tmp_path, clone, args=MAKE_LAB_ARGS) as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/lab/tree/01-tour.ipynb?token={token}")
            page.wait_for_function(KERNEL_READY, timeout=90_000)
            page.wait_for_timeout(2000)  # whatever the kernel's info changes has landed by now
            dirty = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")
            assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path") == "01-tour.ipynb"
            page.evaluate(
                "() => { const nb = window.jupyterapp.shell.currentWidget.content;"
                " nb.activeCellIndex = nb.widgets.findIndex(c => c.model.type === 'code'); }"
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.content.widgets"
                ".some(c => c.model.type === 'code' && c.model.executionCount !== null)",
                timeout=60_000,
            )
            page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        finally:
            browser.close()
        saved = nbformat.read(clone / "notebooks" / "01-tour.ipynb", as_version=4)
    assert saved == nbformat.read(ROOT / "notebooks" / "01-tour.ipynb", as_version=4)
    assert git_status(clone) == "", "a run saved in make lab's JupyterLab leaves the clone as committed"
    assert dirty is False, "opening the tour marks it modified"
