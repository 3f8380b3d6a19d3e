"""The flows view in a real browser (JupyterLab + Debian chromium + Playwright): notebook 05 runs an
agent through the inspector; in the page the table is an ARIA grid whose count line agrees with
its rows as the filter is typed, a header sorts, and clicking the bad flow shows its verdict and
the opened row; its "recipe view" button opens the recipe at the failing step, through the kernel.

A request held mid-body shows in flight, its time counting up, and then how it ended; with
`keep=5` the count line says how many older flows were dropped.

Screenshots: build/flows-bad-row.png (the bad flow opened), build/flows-dark.png (Dark theme),
build/flows-in-flight.png (an exchange in flight, opened; older flows dropped).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS, chromium, chromium_page, offline_context
from support.lab import KERNEL_READY, run_notebook, running_lab
from support.node import NODE
from support.widgetpage import vendored_scripts

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(NODE is None, reason="notebook 05 runs a Node agent")]


@pytest.fixture
def lab(tmp_path):
    with running_lab(tmp_path) as served:
        yield served


def data_rows(view):
    return view.get_by_role("row").filter(has=view.page.get_by_role("gridcell"))


def shoot(page, view, path: Path) -> None:
    """The whole view in one picture: a window tall enough, the view at its top."""
    page.set_viewport_size({"width": 1400, "height": 2600})
    view.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(400)
    view.screenshot(path=str(path))
    page.set_viewport_size({"width": 1400, "height": 1100})


def test_flows_view_filters_sorts_and_opens_the_bad_row_in_jupyterlab(lab):
    from playwright.sync_api import expect

    base, token = lab
    BUILD.mkdir(exist_ok=True)
    with chromium_page({"width": 1400, "height": 1100}) as (page, errors):
        assert run_notebook(page, base, token, "notebooks/05-inspect-an-agent.ipynb") == []
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
        view = page.locator(".decoy-flows").first
        view.scroll_into_view_if_needed()
        grid = view.get_by_role("grid", name="exchanges")
        count = view.locator(".decoy-flows-count")
        # The notebook left the filter on "unreadable": one flow, the POST of the rows.
        expect(count).to_have_text(re.compile(r"^1 of \d+ exchanges$"))
        total = int(count.get_attribute("data-total"))
        assert total >= 6
        expect(view.get_by_role("columnheader")).to_have_count(7)

        search = view.get_by_role("searchbox")
        search.fill("")
        expect(count).to_have_text(f"{total} exchanges")
        expect(data_rows(view)).to_have_count(total)
        assert grid.get_attribute("aria-rowcount") == str(total + 1)
        search.press_sequentially("memories", delay=20)  # filter as you type
        shown = int(count.get_attribute("data-shown"))
        expect(count).to_have_text(f"{shown} of {total} exchanges")
        expect(data_rows(view)).to_have_count(shown)
        assert all("memories" in p for p in data_rows(view).locator(".col-path").all_inner_texts())
        search.fill("201")
        expect(count).to_have_text(f"1 of {total} exchanges")

        # Sort by status, descending: the 201 comes before every 200.
        search.fill("")
        status = view.get_by_role("columnheader", name="status")
        status.get_by_role("button").click()
        expect(status).to_have_attribute("aria-sort", "ascending")
        status.get_by_role("button").click()
        expect(status).to_have_attribute("aria-sort", "descending")
        expect(data_rows(view).first.locator(".col-status")).to_have_text("201")

        # Click the bad flow: its verdict, the opened row and the reason are visible.
        search.fill("unreadable")
        bad = data_rows(view).first
        expect(bad.get_by_role("rowheader")).to_have_text(re.compile(r"^\d+$"))
        bad.click()
        detail = view.locator(".decoy-flows-detail")
        expect(detail.locator(".decoy-flows-title")).to_contain_text("POST /api/agent/context/memories")
        card = detail.locator(".decoy-flows-rowcard[data-verdict='unreadable']")
        expect(card).to_have_count(1)
        expect(card).to_be_visible()
        expect(card.locator(".decoy-flows-badge")).to_have_text("unreadable")
        expect(card.locator(".decoy-flows-reason")).to_contain_text("RSA-OAEP-SHA256")
        expect(card.locator(".decoy-flows-steps li.failed")).to_contain_text("RSA-OAEP-SHA256 unwrap")
        readable = detail.locator(".decoy-flows-rowcard[data-verdict='readable']")
        expect(readable.first.locator(".decoy-flows-text")).to_contain_text("Lisbon trip")
        # the request body as a tree, the bad row marked where it sits, a blob in hex
        tree = detail.get_by_role("tree", name="request body")
        expect(tree.locator(".decoy-flows-badge", has_text="unreadable")).to_have_count(1)
        wrap = tree.locator("details.decoy-flows-leaf", has_text="owner_wrap").last
        wrap.locator("summary").click()
        expect(wrap.locator(".decoy-hexdump")).to_be_visible()
        expect(wrap.locator(".decoy-flows-certainty")).to_contain_text("matches RSA-2048")
        wrap.locator("summary").click()

        # The recipe view of the bad row, through the kernel, open at the failing step.
        card.get_by_role("button", name="recipe view").click()
        panel = page.locator(".decoy-flows-panel").first
        expect(panel.locator(".decoy-recipe .dr-step.open .dr-name").first).to_contain_text(
            "RSA-OAEP-SHA256 unwrap", timeout=20_000
        )
        shoot(page, view, BUILD / "flows-bad-row.png")

        # Dark theme: the text follows JupyterLab's colours.
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        page.wait_for_timeout(500)
        colour = view.evaluate("el => getComputedStyle(el).color")
        rgb = [int(x) for x in re.findall(r"\d+", colour)[:3]]
        assert sum(rgb) > 3 * 150, f"text is {colour} on a dark page"
        shoot(page, view, BUILD / "flows-dark.png")
        assert errors == []


# -- live: the view shown first, the agent run after it -------------------------------------------
LIVE = [
    """
from decoy_lab.inspector import Inspector
from decoy_lab.widgets.flows import FlowsView
ins = Inspector.start(sandbox=True)
view = FlowsView(ins)
view.add_class("live-flows")
view
""",
    f"""
import os, subprocess, time
for bug in ([], ["--bug", "owner-wrap"]):  # two runs, a moment apart: the page hears of each flow
    subprocess.run([{str(NODE)!r}, {str(ROOT / "examples" / "agents" / "memory-agent.mjs")!r}, *bug],
                   env={{**os.environ, "DECOY_BASE_URL": ins.url}}, check=True, timeout=120, capture_output=True)
    time.sleep(1)
ins.settle()
time.sleep(0.5)
print("FLOWS", len(view.flows))
""",
]


def test_new_flows_appear_in_the_page_while_the_agent_runs(tmp_path):
    import nbformat
    from playwright.sync_api import expect, sync_playwright

    folder = tmp_path / "nb"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.strip()) for c in LIVE])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "live.ipynb")
    with running_lab(tmp_path, folder) as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            page.goto(f"{base}/lab/tree/notebooks/live.ipynb?token={token}")
            page.wait_for_function(KERNEL_READY, timeout=90_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell-and-select-next')")
            count = page.locator(".live-flows .decoy-flows-count")
            expect(count).to_have_text("0 exchanges", timeout=60_000)
            # every count the page shows from now on, as it shows it
            count.evaluate(
                "el => { window.__counts = []; new MutationObserver(() => window.__counts.push(el.textContent))"
                ".observe(el, {childList: true, characterData: true, subtree: true}); }"
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell-and-select-next')")
            printed = page.locator(".jp-OutputArea-output pre", has_text="FLOWS")
            expect(printed).to_be_visible(timeout=180_000)
            total = int(printed.inner_text().split()[-1])
            assert total >= 12
            expect(count).to_have_text(f"{total} exchanges")
            counts = page.evaluate("() => window.__counts")
            # it grew while the agents ran: at least once per run (a quick run may fit one 100 ms batch)
            assert len(set(counts)) >= 2, counts
            assert [int(c.split()[0]) for c in counts] == sorted(int(c.split()[0]) for c in counts)
            expect(page.locator(".live-flows .decoy-flows-row.tone-bad")).to_have_count(1)
        finally:
            browser.close()


# -- offline: the view saved with its state, opened from disk with every request aborted -------------
@pytest.fixture(scope="module")
def vendor() -> Path:
    return vendored_scripts()


def test_an_exported_page_filters_and_opens_the_bad_flow_offline(vendor, tmp_path):
    import os
    import subprocess

    from playwright.sync_api import expect

    from decoy_lab.inspector import Inspector
    from decoy_lab.widgets.flows import FlowsView

    from support.widgetpage import widget_page

    with Inspector.start(sandbox=True) as ins:
        agent = ROOT / "examples" / "agents" / "memory-agent.mjs"
        env = {**os.environ, "DECOY_BASE_URL": ins.url}
        subprocess.run([NODE, str(agent), "--bug", "owner-wrap"], env=env, check=True, timeout=120, capture_output=True)
        ins.settle()
        view = FlowsView(ins)
    page_path = widget_page([view], tmp_path / "flows.html", vendor)
    bad_flow = view.bad_rows()[0][0].id
    with chromium() as browser:
        context, online = offline_context(browser, {"width": 1300, "height": 1000})
        page = context.new_page()
        page.goto(page_path.as_uri())
        root = page.locator(".decoy-flows")
        count = root.locator(".decoy-flows-count")
        expect(count).to_have_text(f"{len(view.flows)} exchanges", timeout=30_000)
        root.get_by_role("searchbox").fill("unread")
        expect(count).to_have_text(f"1 of {len(view.flows)} exchanges")
        data_rows(root).first.click()
        card = root.locator(".decoy-flows-rowcard[data-verdict='unreadable']")
        expect(card).to_be_visible()  # opened ahead: in the saved state
        expect(card.locator(".decoy-flows-reason")).to_contain_text("cannot open owner_wrap")
        root.get_by_role("searchbox").fill("")
        data_rows(root).filter(has_not_text="1 unreadable").first.click()
        expect(root.locator(".decoy-flows-detail .decoy-flows-hint")).to_contain_text("opening…")
        assert bad_flow >= 1 and online == []


# -- in flight and bounded: a request held mid-body, older flows dropped ----------------------------
HELD = [
    """
import socket, httpx
from decoy_lab.inspector import Inspector
from decoy_lab.widgets.flows import FlowsView
ins = Inspector.start(sandbox=True, keep=5)
view = FlowsView(ins)
view.add_class("held-flows")
view
""",
    """
for i in range(8):
    httpx.get(ins.url + "/.well-known/oauth-authorization-server", params={"n": i}, trust_env=False)
host, port = ins.url.removeprefix("http://").rsplit(":", 1)
held = socket.create_connection((host, int(port)))  # an agent that sends half its body and waits
held.sendall(f"POST /api/agent/context/memories HTTP/1.1\\r\\nHost: {host}\\r\\nContent-Length: 5000\\r\\n\\r\\n".encode() + b'{"rows": [')
print("HELD")
""",
    """
held.close()
print("CLOSED")
""",
]


def test_an_exchange_in_flight_counts_up_then_says_how_it_ended_and_older_flows_are_dropped(tmp_path):
    import nbformat
    from playwright.sync_api import expect

    folder = tmp_path / "nb"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.strip()) for c in HELD])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "held.ipynb")
    BUILD.mkdir(exist_ok=True)
    run_next = "() => window.jupyterapp.commands.execute('notebook:run-cell-and-select-next')"
    with (
        running_lab(tmp_path, folder) as (base, token),
        chromium_page({"width": 1300, "height": 1000}) as (page, errors),
    ):
        page.goto(f"{base}/lab/tree/notebooks/held.ipynb?token={token}")
        page.wait_for_function(KERNEL_READY, timeout=90_000)
        page.evaluate(run_next)
        view = page.locator(".held-flows .decoy-flows")
        count = view.locator(".decoy-flows-count")
        expect(count).to_have_text("0 exchanges", timeout=60_000)
        page.evaluate(run_next)
        expect(page.locator(".jp-OutputArea-output pre", has_text="HELD")).to_be_visible(timeout=60_000)
        # 9 exchanges, the newest 5 kept: the count line says what was let go
        expect(count).to_have_text("5 exchanges · 4 older dropped")
        grid = view.get_by_role("grid", name="exchanges")
        assert grid.get_attribute("aria-rowcount") == "6"
        held = data_rows(view).last
        expect(held.locator(".col-status")).to_have_text("…")
        expect(held).to_have_attribute("aria-rowindex", "6")
        first = held.locator(".col-ms").inner_text()
        page.wait_for_timeout(1200)
        later = held.locator(".col-ms").inner_text()
        assert first.endswith("…") and later.endswith("…")
        assert int(later.rstrip("…").replace(",", "")) > int(first.rstrip("…").replace(",", "")), (first, later)
        held.click()  # the kernel makes the opening (`picked` → `detail`): a round trip, slow on a busy machine
        expect(view.locator(".decoy-flows-detail .decoy-flows-facts")).to_contain_text("in flight", timeout=30_000)
        shoot(page, view, BUILD / "flows-in-flight.png")
        # the click made the view's cell the active one: the third cell is run by its index
        page.evaluate(
            "() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 2;"
            " return window.jupyterapp.commands.execute('notebook:run-cell'); }"
        )
        expect(held.locator(".col-status")).to_have_text("agent disconnected", timeout=30_000)
        expect(view.locator(".decoy-flows-detail .decoy-flows-facts")).to_contain_text(
            "agent disconnected: the agent closed its connection while sending its body", timeout=30_000
        )
        assert not held.locator(".col-ms").inner_text().endswith("…")
        assert errors == []
