"""`%decoy inspect` in a real JupyterLab (Debian chromium + Playwright): the cell returns at once
with the flows view showing no exchanges; a later cell runs an agent (the example Python agent,
its own process) through the inspector's URL; the view fills with its exchanges while nothing
else runs, the POST of its rows is there, readable, and clicking it opens the rows.

Screenshot: build/inspect-magic-flows.png (the view filled, the POST opened).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, chromium_page
from support.lab import RUN_CELL, notebook_json, open_notebook, running_lab

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
AGENT = ROOT / "examples" / "agents" / "check" / "memory_agent.py"
pytestmark = [*BROWSER_MARKS, pytest.mark.timeout(600)]

CELLS = [
    "%load_ext decoy_lab\n%config DecoyMagics.sandbox_options = {'seed': 'none'}",
    "insp = %decoy inspect",
    "import os, subprocess, sys\n"
    f"done = subprocess.run([sys.executable, {str(AGENT)!r}, '--topic', 'Lisbon trip'],\n"
    "                      env={**os.environ, 'DECOY_BASE_URL': insp.url}, capture_output=True, text=True, timeout=180)\n"
    "print('agent exit', done.returncode)",
]

KERNEL_IDLE = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"


@pytest.fixture
def lab(tmp_path):
    with running_lab(tmp_path) as served:
        (tmp_path / "work" / "notebooks" / "inspect-magic.ipynb").write_text(notebook_json(CELLS))
        yield served


def test_inspect_shows_a_live_view_that_fills_as_a_later_cell_runs_an_agent(lab):
    from playwright.sync_api import expect

    base, token = lab
    BUILD.mkdir(exist_ok=True)
    with chromium_page({"width": 1400, "height": 1100}) as (page, errors):
        open_notebook(page, base, token, "notebooks/inspect-magic.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
        page.evaluate(RUN_CELL, 0)
        took = page.evaluate(RUN_CELL, 1)
        page.wait_for_function(KERNEL_IDLE, timeout=30_000)  # the proxy runs on its own thread
        assert took < 30_000, f"%decoy inspect held the cell for {took:.0f} ms"
        cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        expect(cell.locator(".decoy-inspect-url")).to_contain_text(re.compile(r"http://127\.0\.0\.1:\d+"))
        view = cell.locator(".decoy-flows")
        count = view.locator(".decoy-flows-count")
        expect(count).to_have_text("0 exchanges", timeout=30_000)

        page.evaluate(RUN_CELL, 2)  # the agent, in its own process, through the inspector
        out = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        expect(out).to_contain_text("agent exit 0", timeout=10_000)
        expect(count).to_have_text(re.compile(r"^\d+ exchanges$"), timeout=20_000)
        total = int(count.get_attribute("data-total") or 0)
        assert total >= 8, total  # pairing, reads, the POST, the edit, the rotation, the delete …
        view.get_by_role("searchbox").fill("201")
        post = view.get_by_role("row").filter(has=page.get_by_role("gridcell")).first
        expect(post.locator(".col-path")).to_have_text("/api/agent/context/memories")
        expect(post.locator(".col-verdict")).to_have_text("readable")
        post.click()
        detail = view.locator(".decoy-flows-detail")
        expect(detail.locator(".decoy-flows-title")).to_contain_text("POST /api/agent/context/memories")
        card = detail.locator(".decoy-flows-rowcard[data-verdict='readable']")
        expect(card.first.locator(".decoy-flows-text")).to_contain_text("Lisbon trip")
        view.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        cell.screenshot(path=str(BUILD / "inspect-magic-flows.png"))
        assert errors == []
