"""End to end in a real browser: JupyterLab + Debian chromium + Playwright run the tour.

The test starts its own JupyterLab (temporary HOME, config, data and runtime directories, a
random token, a free port), opens the tour, runs every cell through JupyterLab's own command,
and checks that the pairing widget, the memory table and the map rendered. A screenshot is
kept at build/browser-tour.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.lab import RUN_CELL, notebook_json, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[2]
SHOT = ROOT / "build" / "browser-tour.png"

pytestmark = BROWSER_MARKS


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server serving a copy of notebooks/; yields (base_url, token)."""
    with running_lab(tmp_path) as served:
        yield served


def test_tour_runs_in_jupyterlab_and_renders_pairing_table_and_map(lab):
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    SHOT.parent.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
            page = context.new_page()
            page.goto(f"{base}/lab/tree/notebooks/01-tour.ipynb?token={token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                "&& window.jupyterapp.shell.currentWidget.sessionContext "
                "&& window.jupyterapp.shell.currentWidget.sessionContext.session "
                "&& window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                timeout=90_000,
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                ".connectionStatus === 'connected'",
                timeout=90_000,
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # Every cell has run when the last one shows an execution count and the kernel is
            # idle; an error stops run-all, so stop waiting as soon as one shows.
            page.wait_for_function(
                "() => { const nb = window.jupyterapp.shell.currentWidget.content;"
                " const cells = nb.widgets.filter(c => c.model.type === 'code');"
                " const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));"
                " const last = cells[cells.length - 1];"
                " return failed || (last.model.executionCount !== null"
                "  && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'); }",
                timeout=240_000,
            )
            errors = page.evaluate(
                "() => window.jupyterapp.shell.currentWidget.content.widgets"
                ".flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])"
                ".filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"
            )
            assert errors == [], errors

            pairing = page.locator(".decoy-pairing").first
            expect(pairing).to_be_visible(timeout=30_000)
            expect(pairing.locator(".decoy-pair-status")).to_contain_text("done")
            expect(pairing.locator(".decoy-consent-card")).to_contain_text("Held now")
            code = pairing.locator(".decoy-user-code").inner_text().strip()
            pairing.get_by_role("button", name="Copy code").click()
            assert page.evaluate("() => navigator.clipboard.readText()") == code
            table = page.locator(".jp-RenderedHTMLCommon table.dataframe").first
            expect(table).to_be_visible()
            assert table.locator("tbody tr").count() >= 1
            # `G` (what `%decoy map` returned) shows as the live map, the first one on the page.
            live_map = page.locator(".decoy-map").first
            expect(live_map.locator("svg.decoy-map-svg")).to_be_visible()
            assert live_map.evaluate("el => !el.closest('.decoy-vaultview')")
            # The table and the map are two views of one vault: click a topic on the map and the
            # table lists its memories; the kernel hears of it too (the topic picker follows).
            view = page.locator(".decoy-vaultview").first
            view.scroll_into_view_if_needed()
            node = view.locator(".decoy-map-node.kind-topic").first
            # Quick clicks on three topics: the page and the kernel agree on the last one.
            for other in (1, 2):
                view.locator(".decoy-map-node.kind-topic").nth(other).dispatch_event("click")
            node.dispatch_event("click")
            expect(view.locator(".decoy-map-node.selected")).to_have_attribute(
                "data-node", node.get_attribute("data-node")
            )
            node.hover()  # its name, from the hover details
            topic = view.locator(".decoy-map-tip .decoy-map-tip-name").inner_text().strip()
            picked = view.locator(".decoy-filters select").first.locator("option:checked")
            expect(picked).to_have_text(topic, timeout=20_000)  # the kernel's picker ends on the last click
            listed = view.locator(".decoy-grid-row .col-topic")
            expect(listed.first).to_have_text(topic)
            assert set(listed.all_inner_texts()) == {topic}
            expect(view.locator(".decoy-grid-count")).to_contain_text(f"{listed.count()} of ")
            # A row picked in the table rings its topic on the map.
            view.locator(".decoy-grid-row").first.click()
            expect(view.locator(".decoy-map-node.ringed")).to_have_attribute(
                "data-node", node.get_attribute("data-node")
            )
            view.screenshot(path=str(SHOT.with_name("browser-vaultview.png")))

            # The recipe view answers clicks in the browser: Next opens the following step.
            stepper = page.locator(".decoy-stepper").first
            stepper.scroll_into_view_if_needed()
            where = stepper.locator(".dr-where")
            expect(where).to_have_text(re.compile(r"^step \d+ of \d+$"))
            n = int(where.inner_text().split()[1])
            stepper.get_by_role("button", name="Next ▶").click()
            expect(where).to_contain_text(f"step {n + 1} of")
            expect(stepper.locator(".decoy-step")).to_contain_text(f"{n + 1}.")
            stepper.screenshot(path=str(SHOT.with_name("browser-stepper.png")))

            # One picture with the pairing widget, the memory table and the map: hide the side
            # bar, make the window tall, and scroll the pairing cell to the top.
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            page.set_viewport_size({"width": 1300, "height": 3400})
            pairing.evaluate("el => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(500)  # let the layout settle after the resize
            page.screenshot(path=str(SHOT), full_page=False)
            href = pairing.locator(".decoy-pair-link").get_attribute("href")
            assert href and href.startswith("http://127.0.0.1:")  # the sandbox's pairing page
        finally:
            browser.close()


# -- the first minute: pairing that never blocks, honest empty states, short mistakes ----------------
FIRST_MINUTE = [
    "%load_ext decoy_lab\n%config DecoyMagics.sandbox_options = {'approve': 'manual'}\n%config DecoyMagics.qr = True",
    'w = %decoy connect --sandbox --name "Cancelled in the browser"',
    'w2 = %decoy connect --sandbox --name "Approved in the browser"',
    "df = %decoy memories\ndf",
    "%decoy memries",
    "%decoy connect --sandbox",
    "df = %decoy memories --wait\ndf",
]
SHOTS = ROOT / "build"


def _open(page, base, token, path):
    open_notebook(page, base, token, path)
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")


def _output(page, i):
    return page.locator(".jp-Notebook .jp-Cell").nth(i).locator(".jp-OutputArea")


def test_the_first_minute_in_a_browser_pairing_never_blocks_and_mistakes_are_short(lab, tmp_path):
    """Issue 12, in JupyterLab: "connect with manual approval returns the cell within 3 s, Cancel
    works while waiting, approval through the sandbox's owner page shows done without the kernel
    ever busy; the first `memories` after pairing shows rows or says why; a typo gets a suggestion
    in a few lines; a second connect reuses"."""
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    (tmp_path / "work" / "notebooks" / "first-minute.ipynb").write_text(notebook_json(FIRST_MINUTE))
    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1100})
            page = context.new_page()
            _open(page, base, token, "notebooks/first-minute.ipynb")
            page.evaluate(RUN_CELL, 0)

            # connect with an owner who answers later: the cell is done while the pairing still
            # waits (how soon is a figure of the bench, bench/responsive.py), and Cancel works
            page.evaluate(RUN_CELL, 1)
            first = _output(page, 1).locator(".decoy-pairing")
            expect(first.locator(".decoy-pair-status")).to_contain_text("waiting", timeout=20_000)
            expect(first.locator(".decoy-pair-qr svg")).to_be_visible()
            expect(first.locator(".decoy-pair-link")).to_have_css("text-decoration-line", "underline")
            first.screenshot(path=str(SHOTS / "after-pairing-widget.png"))
            first.get_by_role("button", name="Cancel").click()
            expect(first.locator(".decoy-pair-status")).to_contain_text("cancelled", timeout=10_000)
            assert "Traceback" not in _output(page, 1).inner_text()

            # a second pairing, approved on the sandbox's owner page while the kernel stays idle
            page.evaluate(RUN_CELL, 2)  # done while the pairing waits for the owner page below
            second = _output(page, 2).locator(".decoy-pairing")
            expect(second.locator(".decoy-pair-status")).to_contain_text("waiting", timeout=20_000)
            page.evaluate(
                "() => { window.__kernel = []; const k = window.jupyterapp.shell.currentWidget.sessionContext"
                ".session.kernel; window.__watch = setInterval(() => window.__kernel.push(k.status), 25); }"
            )
            owner = context.new_page()
            owner.goto(second.locator(".decoy-pair-link").get_attribute("href"))
            owner.get_by_role("button", name="Approve").click()
            expect(second.locator(".decoy-pair-status")).to_contain_text("done", timeout=30_000)
            expect(second.locator(".decoy-consent-card")).to_contain_text("Held now", timeout=30_000)
            seen = page.evaluate("() => { clearInterval(window.__watch); return window.__kernel; }")
            assert seen and "busy" not in seen, set(seen)

            # the first read after pairing: rows, or a sentence that says why there are none yet
            page.evaluate(RUN_CELL, 3)
            frame = _output(page, 3)
            # the table, or the note printed above the empty frame (it shows when assigned, too)
            expect(frame).to_contain_text(re.compile(r"No memories yet|\btext\b"), timeout=30_000)
            text = frame.inner_text()
            rows = frame.locator("table.dataframe tbody tr").count()
            assert rows > 0 or re.search(
                r"No memories yet: \d+ rows? (is|are) \(memories, topics, links\) on their way", text
            ), text
            frame.screenshot(path=str(SHOTS / "after-first-frame.png"))

            # a typo: one line and a suggestion, not the whole usage
            page.evaluate(RUN_CELL, 4)
            mistake = _output(page, 4)
            expect(mistake).to_contain_text("did you mean 'memories'?")
            assert len([x for x in mistake.inner_text().splitlines() if x.strip()]) <= 3
            mistake.screenshot(path=str(SHOTS / "after-mistake.png"))

            # connecting again reuses the live connection and says so
            page.evaluate(RUN_CELL, 5)
            expect(_output(page, 5)).to_contain_text("Already connected")

            # --wait reads again as the server says: the phone shares on its own, no button pressed
            page.evaluate(RUN_CELL, 6)
            waited = _output(page, 6)
            expect(waited.locator("table.dataframe tbody tr").first).to_be_visible(timeout=60_000)
            waited.screenshot(path=str(SHOTS / "after-first-frame-waited.png"))
        finally:
            browser.close()
