"""The check's HTML page in a real browser (Debian chromium + Playwright): it fits a 1280 px
window, every exchange opened, with no horizontal scroll (issue: 11,727 px wide, a base64 wrap in
an unwrapped <pre>), and its table lists the failed rules first.

Screenshots: build/check-report.png (the top: the table, failed first) and
build/check-report-failure.png (a failed rule: sentence, fix, evidence, its exchange opened).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from decoy_lab.conformance.report import page

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.report_cards import big_card

BUILD = Path(__file__).resolve().parents[2] / "build"
pytestmark = [*BROWSER_MARKS, pytest.mark.timeout(120)]


def test_the_page_fits_a_1280_px_window_with_every_exchange_open(tmp_path):
    from playwright.sync_api import sync_playwright

    card = big_card(tmp_path)
    where = tmp_path / "card.html"
    where.write_text(page(card, where), encoding="utf-8")
    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            view = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            view.goto(where.as_uri())
            view.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            widths = view.evaluate(
                "() => [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]"
            )
            assert max(widths[:2]) <= widths[2], widths
            verdicts = view.eval_on_selector_all("table td:first-child", "tds => tds.map(t => t.textContent)")
            first_passed = verdicts.index("PASSED")
            assert set(verdicts[:first_passed]) == {"FAILED"} and "FAILED" not in verdicts[first_passed:]
            view.screenshot(path=str(BUILD / "check-report.png"))
            view.locator("h2[id='rows.owner-opens']").scroll_into_view_if_needed()
            view.evaluate("() => document.getElementById('rows.owner-opens').scrollIntoView()")
            view.screenshot(path=str(BUILD / "check-report-failure.png"))
            view.set_viewport_size({"width": 600, "height": 900})  # a narrow window too
            assert view.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
        finally:
            browser.close()
