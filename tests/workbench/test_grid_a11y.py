"""The memory table as a grid, in chromium: the demo vault read from the sandbox over HTTP, shown
by VaultView (as `%decoy browse` shows it) on a saved widget page 1440 px wide.

WAI-ARIA grid pattern: `role=grid` holding `row`s of `columnheader`s and `gridcell`s,
"aria-rowcount … the total number of rows" and "aria-rowindex … an element's position with
respect to the total number of rows" when only some rows are in the page, `aria-sort` on the
sorted header; ↑/↓, PageUp/PageDown, Home/End move the active row, Enter opens it.
Screenshot: build/grid-1440.png, build/grid-keyboard.png.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from decoy_lab.vault.waiting import answer_waits
from decoy_lab.widgets import VaultView

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.connections import paired
from support.contrast import drop_theme_variables, offenders, report, text_nodes
from support.widgetpage import vendored_scripts, widget_page

expect = pytest.importorskip("playwright.sync_api").expect
BUILD = Path(__file__).resolve().parents[2] / "build"
pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def demo():
    """The demo vault as a paired connection reads it once the phone has shared every row."""
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start() as sb:
        sb.state.device_interval = 0
        conn = paired(sb, ["memory.read"], name="Grid check")
        deadline = time.monotonic() + 60
        vault = conn.load()
        while answer_waits(vault.answer) and time.monotonic() < deadline:
            time.sleep(0.3)
            vault = conn.load()
        assert len(vault.memories) > 30 and not answer_waits(vault.answer)
        yield vault


@pytest.fixture(scope="module")
def shown(demo, tmp_path_factory):
    """(page, view): the vault's VaultView in chromium, every http(s) request refused."""
    from playwright.sync_api import sync_playwright

    view = VaultView(demo)
    path = widget_page([view], tmp_path_factory.mktemp("grid") / "grid.html", vendored_scripts())
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.route("http*://**", lambda route: route.abort())
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.get_by_role("grid", name="memories").get_by_role("gridcell").first.wait_for(timeout=30_000)
            page.errors = errors
            yield page, view
        finally:
            browser.close()


def grid_of(page):
    return page.get_by_role("grid", name="memories")


def active_row(page) -> dict:
    """The row aria-activedescendant names: its position, its id, whether it is selected."""
    return page.evaluate(
        "() => { const g = document.querySelector('[role=grid]');"
        " const r = document.getElementById(g.getAttribute('aria-activedescendant'));"
        " return r && {index: +r.getAttribute('aria-rowindex'), id: r.dataset.id,"
        " selected: r.getAttribute('aria-selected'), focused: document.activeElement === g,"
        " outline: getComputedStyle(r).outlineStyle}; }"
    )


def cut_off(page) -> list[str]:
    """Headers, dates and `mine` values that do not fit their cells."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.decoy-grid-sort, .decoy-grid-td.col-updated, .decoy-grid-td.col-mine')]"
        ".filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent)"
    )


def test_roles_rowcount_and_rowindex_under_virtual_scrolling(shown):
    page, view = shown
    total = len(view.vault.memories)
    grid = grid_of(page)
    expect(grid).to_have_attribute("aria-rowcount", str(total + 1))  # the header row counts
    headers = grid.get_by_role("columnheader")
    assert headers.all_inner_texts() == ["text", "topic", "categories", "mine", "updated"]
    rows = grid.get_by_role("row")
    in_page = rows.count()
    assert 2 < in_page < total + 1, "only the rows in view are in the page"
    first = rows.nth(1)
    assert first.get_by_role("gridcell").count() == 5
    indexes = [int(rows.nth(i).get_attribute("aria-rowindex")) for i in range(in_page)]
    assert indexes == list(range(1, in_page + 1))
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = b.scrollHeight")
    last = grid.locator(f"[role=row][aria-rowindex='{total + 1}']")
    expect(last).to_have_attribute("data-id", view.vault.memories["id"].iloc[-1])
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = 0")
    assert page.errors == []


def test_the_sorted_header_says_so_with_aria_sort(shown):
    page, _view = shown
    updated = grid_of(page).get_by_role("columnheader", name="updated")
    assert updated.get_attribute("aria-sort") is None
    updated.get_by_role("button").click()
    expect(updated).to_have_attribute("aria-sort", "ascending")
    dates = grid_of(page).locator("[role=gridcell].col-updated").all_inner_texts()
    assert dates == sorted(dates)
    assert grid_of(page).locator("[role=columnheader][aria-sort]").count() == 1
    updated.get_by_role("button").click()
    expect(updated).to_have_attribute("aria-sort", "descending")
    updated.get_by_role("button").click()  # back to the order as loaded
    assert grid_of(page).locator("[role=columnheader][aria-sort]").count() == 0


def test_keyboard_moves_the_active_row_and_enter_opens_it(shown):
    page, view = shown
    total = len(view.vault.memories)
    page.locator(".decoy-grid-search").click()
    page.keyboard.press("Tab")  # from the filter box to the grid
    at = active_row(page)
    assert at and at["focused"] and at["index"] == 2 and at["selected"] == "true"
    assert at["outline"] == "solid", "the active row shows where the focus is"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert active_row(page)["index"] == 4
    page.keyboard.press("ArrowUp")
    assert active_row(page)["index"] == 3
    assert grid_of(page).locator("[role=row][aria-selected=true]").count() == 1
    page.keyboard.press("End")
    assert active_row(page)["index"] == total + 1
    expect(grid_of(page).locator(f"[role=row][aria-rowindex='{total + 1}']")).to_be_in_viewport()
    page.keyboard.press("Home")
    assert active_row(page)["index"] == 2
    page.keyboard.press("PageDown")
    down = active_row(page)["index"]
    assert down > 10, "a page is more than a few rows"
    page.keyboard.press("PageUp")
    assert active_row(page)["index"] == 2
    page.keyboard.press("ArrowDown")
    chosen = active_row(page)
    page.keyboard.press("Enter")
    text = view.vault.memories.set_index("id").at[chosen["id"], "text"]
    expect(page.locator(".decoy-grid-details .decoy-grid-text")).to_have_text(text)
    page.locator(".decoy-grid").screenshot(path=str(BUILD / "grid-keyboard.png"))


def test_the_filter_finds_memories_by_topic_and_category_not_only_text(shown):
    """ "lisbon" lists the memories in the Lisbon topics (and the topics they include, such as a
    day trip from Lisbon), not only the texts with the word; the count line says how many."""
    page, view = shown
    graph, mem = view.map.graph, view.vault.memories
    lisbon = {n for n, d in graph.nodes(data=True) if "lisbon" in str(d.get("name", "")).lower()}
    below = {n for n, d in graph.nodes(data=True) if d.get("parent") in lisbon}
    expected = {
        mid
        for mid, text, tid in zip(mem["id"], mem["text"], mem["topic_id"])
        if tid in lisbon | below or "lisbon" in text.lower()
    }
    in_text = int(mem["text"].str.lower().str.contains("lisbon").sum())
    assert below and len(expected) > in_text, "the vault has Lisbon topics beyond the texts"
    box = page.locator(".decoy-grid-search")
    box.fill("lisbon")
    count = page.locator(".decoy-grid-count")
    expect(count).to_have_text(f"{len(expected)} of {len(mem)} memories shown")
    shown_ids = set(grid_of(page).locator("[role=row][data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)"))
    assert shown_ids <= expected and len(shown_ids) == min(len(expected), len(shown_ids))
    view.browser.grid.search = "lisbon"  # the kernel's copy says the same
    assert view.browser.grid.count == count.inner_text() and set(view.browser.frame["id"]) == expected
    box.fill("user_preferences")  # a category
    with_category = int(mem["categories"].map(lambda c: "user_preferences" in c).sum())
    assert int(count.get_attribute("data-shown")) >= with_category > 0
    box.fill("")
    view.browser.grid.search = ""


def test_columns_fit_their_values_at_1440_px(shown):
    """No header runs into the next ("mineupdated"), `mine` shows a value, no date is cut, and
    the text takes what is left."""
    page, _view = shown
    grid = grid_of(page)
    heads = grid.get_by_role("columnheader")
    boxes = [heads.nth(i).bounding_box() for i in range(heads.count())]
    for a, b in itertools.pairwise(boxes):
        assert a["x"] + a["width"] <= b["x"] + 0.5, (a, b)
    assert cut_off(page) == []
    mine = set(grid.locator("[role=gridcell].col-mine").all_inner_texts())
    assert mine and mine <= {"yes", "no"}
    widths = [b["width"] for b in boxes]
    assert widths[0] == max(widths), f"the text column is not the widest: {widths}"
    page.locator(".decoy-grid").screenshot(path=str(BUILD / "grid-1440.png"))


def test_the_saved_page_reads_without_jupyterlab_theme_variables(shown):
    """Outside JupyterLab (exported HTML, the offline tour) no `--jp-*` variable is set: the
    fallbacks still give WCAG AA contrast, with a row picked and its details open, and the
    columns are measured again in the font that comes with them."""
    page, _view = shown
    layout = "() => getComputedStyle(document.querySelector('.decoy-grid')).getPropertyValue('--jp-layout-color0')"
    assert drop_theme_variables(page) > 10 and page.evaluate(layout) == ""
    grid_of(page).locator("[role=row][data-id]").nth(2).click()
    page.locator(".decoy-grid-details .decoy-grid-text").wait_for()
    assert text_nodes(page, ".decoy-grid") > 40
    found = offenders(page, ".decoy-grid")
    assert cut_off(page) == [], "the columns follow the page's font"
    page.locator(".decoy-grid").screenshot(path=str(BUILD / "grid-no-theme.png"))
    assert found == [], report(found)
