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
from support.lab import running_lab

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
            map_png = page.locator(".jp-RenderedImage img[src^='data:image/png']").first
            expect(map_png).to_be_visible()
            assert map_png.evaluate("img => img.naturalWidth") > 300
            # The table and the map are two views of one vault: pick a topic on the Map tab and
            # the Memories tab filters to it (the round trip goes through the kernel).
            view = page.locator(".decoy-browser").first.locator(
                "xpath=ancestor::div[contains(@class,'jp-OutputArea-output')]"
            )
            view.get_by_role("tab", name="Map").click()
            map_widget = view.locator(".decoy-topicmap")
            picker = map_widget.locator("select").first
            picker.select_option(index=2)  # (all), You, then the first topic
            topic = picker.locator("option:checked").inner_text().replace("\xa0", " ").strip()
            listed = map_widget.locator(".decoy-memory-table tbody tr td:nth-child(2)")
            expect(listed.first).to_have_text(topic, timeout=20_000)
            assert {t.replace("\xa0", " ") for t in listed.all_inner_texts()} == {topic}
            view.get_by_role("tab", name="Memories").click()
            table = view.locator(".decoy-browser .decoy-memory-table tbody tr td:nth-child(2)")
            expect(view.locator(".decoy-browser select").first.locator("option:checked")).to_have_text(topic)
            expect(table.first).to_have_text(topic)
            assert {t.replace("\xa0", " ") for t in table.all_inner_texts()} == {topic}
            assert table.count() == listed.count()

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
