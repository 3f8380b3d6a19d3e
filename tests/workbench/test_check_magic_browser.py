"""`%decoy check` in a real JupyterLab (Debian chromium + Playwright): while the check runs, the
progress table says which scenario is running; then the scorecard shows the failed rule, and its
evidence's "open #N" button opens that exchange in a flows view of the scenario's recording.

Screenshot: build/check-magic-scorecard.png (the scorecard with the exchange opened).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, chromium_page
from support.lab import notebook_json, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
AGENT = ROOT / "examples" / "agents" / "check" / "memory_agent.py"
pytestmark = [*BROWSER_MARKS, pytest.mark.timeout(600)]

CELLS = [
    "%load_ext decoy_lab",
    # the README's line as written: the kernel runs in notebooks/, the agent's file is the checkout's
    "card = %decoy check --scenario clean --timeout 120 -- python examples/agents/check/memory_agent.py --bug raw-owner-wrap",
    "print(card.violations()[0].split(':')[0])",
]
START_CELL = """(i) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = i;
  window.jupyterapp.commands.execute('notebook:run-cell');
}"""
DONE = "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.executionCount !== null"


@pytest.fixture
def lab(tmp_path):
    with running_lab(tmp_path) as served:
        (tmp_path / "work" / "notebooks" / "check-magic.ipynb").write_text(notebook_json(CELLS))
        yield served


def test_check_shows_progress_then_a_scorecard_whose_evidence_opens_its_flow(lab):
    from playwright.sync_api import expect

    base, token = lab
    BUILD.mkdir(exist_ok=True)
    with chromium_page({"width": 1400, "height": 1100}) as (page, errors):
        open_notebook(page, base, token, "notebooks/check-magic.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
        page.evaluate(START_CELL, 0)
        page.wait_for_function(DONE, arg=0, timeout=60_000)
        page.evaluate(START_CELL, 1)
        cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        progress = cell.locator(".decoy-check-progress")
        # while it runs, the scenario's line says so (the output is live, not held to the end)
        expect(progress.locator("tr[data-scenario='clean'] .state")).to_have_text("running", timeout=60_000)
        page.wait_for_function(DONE, arg=1, timeout=240_000)
        expect(progress.locator("tr[data-scenario='clean'] .state")).to_have_text(re.compile(r"^done: exit \d$"))
        expect(progress).to_contain_text("1 failed")
        board = cell.locator(".decoy-scorecard")
        expect(board.locator("tr[data-rule='rows.owner-opens']")).to_have_attribute("data-status", "failed")
        expect(board.get_by_text("“The server never decrypts", exact=False)).to_be_visible()
        expect(board.locator(".decoy-fix").first).to_contain_text("What to do instead: Seal owner_wrap")
        expect(board.locator(".decoy-replay").first).to_contain_text("decoy-lab check --replay")
        opener = board.locator(".decoy-open-flow").first
        number = (opener.inner_text() or "").removeprefix("open #")
        opener.click()
        view = board.locator(".decoy-flows")
        detail = view.locator(".decoy-flows-detail")
        expect(detail.locator(".decoy-flows-title")).to_contain_text(
            f"#{number} POST /api/agent/context/memories", timeout=20_000
        )
        expect(detail.locator(".decoy-flows-rowcard").first).to_be_visible()
        expect(board.locator("details", has_text="reproduce with curl")).to_have_count(1)
        page.evaluate(START_CELL, 2)
        page.wait_for_function(DONE, arg=2, timeout=30_000)
        out = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        expect(out).to_contain_text("rows.owner-opens")
        page.set_viewport_size({"width": 1400, "height": 3200})  # the whole cell in one picture
        cell.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        cell.screenshot(path=str(BUILD / "check-magic-scorecard.png"))
        assert errors == []
