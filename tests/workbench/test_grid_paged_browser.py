"""The memory table at 100,000 memories in a real JupyterLab (chromium + Playwright): the table
is paged (the page holds the rows it shows, the kernel sends the others as asked), and what a
person sees is checked against pandas over the same frame, not against the table's own code:
a scroll far down shows the rows at those positions, a filter and a sort give the count and the
rows pandas gives, a topic picked on the map lists that topic, a click opens the details.
Saved without a kernel, the same view shows its first page and says the rest needs the kernel.
Screenshots: build/grid-100k.png, build/grid-100k-saved.png.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from decoy_lab.widgets import VaultView
from decoy_lab.widgets.grid import FIRST_PAGE, MemoryGrid

from support.browser import BROWSER_MARKS, chromium
from support.lab import notebook_json, open_notebook, running_lab
from support.widgetpage import PageVault, varied_frames, vendored_scripts, widget_page

expect = pytest.importorskip("playwright.sync_api").expect
ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
N = 100_000
pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def frames():
    return varied_frames(300, N, seed=5)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def lab(frames, browser, tmp_path_factory):
    """(page, vault): VaultView over 100,000 memories shown by a JupyterLab kernel."""
    tmp = tmp_path_factory.mktemp("paged")
    (tmp / "frames.pickle").write_bytes(pickle.dumps(frames))
    (tmp / "nb").mkdir()
    setup = (
        f"import pickle, sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "from support.widgetpage import PageVault\nfrom decoy_lab.widgets import VaultView\n"
        f"view = VaultView(PageVault(pickle.loads(open({str(tmp / 'frames.pickle')!r}, 'rb').read())))\nview"
    )
    (tmp / "nb" / "paged.ipynb").write_text(notebook_json([setup]))
    with running_lab(tmp, tmp / "nb") as (base, token):
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        open_notebook(page, base, token, "notebooks/paged.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.locator(".decoy-grid-row[data-id]").first.wait_for(timeout=180_000)
        page.errors = errors
        yield page, PageVault(frames)
        page.close()


def count_of(page) -> int:
    """The count line's number, once the kernel's answer is in (no number is shown before)."""
    shown = page.locator(".decoy-grid-count[data-shown]")
    shown.wait_for(timeout=20_000)
    return int(shown.get_attribute("data-shown"))


def ids_on_screen(page) -> list[str]:
    expect(page.locator(".decoy-grid-row.decoy-grid-coming")).to_have_count(0, timeout=20_000)
    return page.locator(".decoy-grid-row[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")


def run_in_kernel(page, code: str) -> None:
    page.evaluate(
        "async (code) => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
        " await k.requestExecute({code}).done; }",
        code,
    )


def kernel_says(page, code: str) -> str:
    """What `code` prints, run in the notebook's kernel."""
    return page.evaluate(
        "async (code) => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
        " const f = k.requestExecute({code}); let out = '';"
        " f.onIOPub = (m) => { if (m.header.msg_type === 'stream') out += m.content.text; };"
        " await f.done; return out; }",
        code,
    )


def search(page, text: str) -> None:
    box = page.locator(".decoy-grid-search")
    box.fill(text)


def test_the_state_holds_one_page_not_100000_rows(frames):
    """The issue's bound: the widget state sent to the page is at most 5 MB."""
    grid = MemoryGrid(PageVault(frames))
    state = json.dumps({k: v for k, v in grid.get_state().items() if k not in ("_esm", "_css")})
    assert grid.paged and len(grid.rows["id"]) == FIRST_PAGE and len(state) < 5_000_000
    assert grid.paging == {"total": N, "space": int((frames["memories"]["source"] == "space").sum())}


def test_once_the_first_page_is_painted_the_page_tells_the_kernel_which_builds_every_row(lab):
    """A search or a sort over 100,000 rows needs every row's columns, built in the kernel once
    the page says it has painted its first page (never while the view opens: test_widgets)."""
    page, _vault = lab
    said = ""
    for _ in range(100):
        said = kernel_says(page, "print(view.browser.grid.table.built)").strip()
        if said == "True":
            break
        page.wait_for_timeout(100)
    assert said == "True"


def test_scrolling_far_down_shows_the_rows_at_those_positions(lab):
    page, vault = lab
    mem = vault.memories
    space = int((mem["source"] == "space").sum())
    expect(page.locator(".decoy-grid-count")).to_have_text(f"100,000 memories ({space:,} from legacy space rows)")
    grid = page.get_by_role("grid", name="memories")
    expect(grid).to_have_attribute("aria-rowcount", str(N + 1))
    assert page.locator(".decoy-grid-row").count() < 60
    page.locator(".decoy-grid-body").evaluate(f"b => b.scrollTop = {70_000 * 26}")
    first = page.locator(".decoy-grid-row[aria-rowindex='70002']")
    expect(first).to_have_attribute("data-id", mem["id"].iloc[70_000], timeout=20_000)
    ids = ids_on_screen(page)
    start = int(page.locator(".decoy-grid-row").first.get_attribute("aria-rowindex")) - 2
    assert ids == mem["id"].iloc[start : start + len(ids)].tolist()
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = b.scrollHeight")
    expect(page.locator(f".decoy-grid-row[aria-rowindex='{N + 1}']")).to_have_attribute(
        "data-id", mem["id"].iloc[-1], timeout=20_000
    )
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = 0")
    assert page.errors == []


def test_filter_and_sort_at_100000_give_the_rows_pandas_gives(lab):
    page, vault = lab
    mem = vault.memories
    text = mem["text"].str.lower()
    hits = mem[text.str.contains("garden notes", regex=False)]
    search(page, "garden notes")
    assert count_of(page) == len(hits) > 1000
    space = int((hits["source"] == "space").sum())
    expect(page.locator(".decoy-grid-count")).to_have_text(
        f"{len(hits):,} of 100,000 memories shown ({space} from legacy space rows)", timeout=1
    )
    assert ids_on_screen(page) == hits["id"].iloc[: len(ids_on_screen(page))].tolist()
    page.locator(".decoy-grid-th[data-col='text'] button").click()  # sort by text, ascending
    expect(page.locator(".decoy-grid-th[data-col='text']")).to_have_attribute("aria-sort", "ascending")
    ordered = hits.assign(k=text[hits.index]).sort_values("k", kind="stable")
    page.wait_for_function("() => document.querySelector('.decoy-grid-count').dataset.shown !== undefined")
    shown = ids_on_screen(page)
    assert shown == ordered["id"].iloc[: len(shown)].tolist()
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = b.scrollHeight")
    expect(page.locator(f".decoy-grid-row[aria-rowindex='{len(hits) + 1}']")).to_have_attribute(
        "data-id", ordered["id"].iloc[-1], timeout=20_000
    )
    search(page, "memory 4242:")  # one row
    assert count_of(page) == 1
    assert ids_on_screen(page) == mem[text.str.contains("memory 4242:", regex=False)]["id"].tolist()
    search(page, "")
    page.locator(".decoy-grid-th[data-col='text'] button").click()
    page.locator(".decoy-grid-th[data-col='text'] button").click()  # desc → as loaded
    assert count_of(page) == N


def test_a_topic_picked_on_the_map_lists_it_and_a_click_opens_the_details(lab):
    page, vault = lab
    mem = vault.memories
    tid = mem["topic_id"].value_counts().index[3]
    name = mem.loc[mem["topic_id"] == tid, "topic"].iloc[0]
    page.locator(f".decoy-map-node[data-node='{tid}']").dispatch_event("click")
    want = mem[mem["topic_id"] == tid]
    assert count_of(page) == len(want)
    assert ids_on_screen(page) == want["id"].iloc[: len(ids_on_screen(page))].tolist()
    assert set(page.locator(".decoy-grid-row .col-topic").all_inner_texts()) == {name}
    row = page.locator(".decoy-grid-row[data-id]").nth(3)
    rid = row.get_attribute("data-id")
    row.click()
    expect(page.locator(".decoy-grid-details .decoy-grid-text")).to_have_text(mem.set_index("id").at[rid, "text"])
    expect(page.locator(".decoy-grid-fields td").first).to_have_text(rid)
    expect(page.locator(".decoy-map-node.ringed")).to_have_attribute("data-node", tid)
    page.locator(".decoy-map-svg").dispatch_event("click")  # nothing picked on the map
    assert count_of(page) == N
    page.locator(".decoy-grid").screenshot(path=str(BUILD / "grid-100k.png"))


def test_the_keyboard_reaches_the_last_of_100000_rows(lab):
    page, vault = lab
    page.locator(".decoy-grid-search").click()
    page.keyboard.press("Tab")
    page.keyboard.press("End")
    last = page.locator(f".decoy-grid-row[aria-rowindex='{N + 1}']")
    expect(last).to_have_attribute("data-id", vault.memories["id"].iloc[-1], timeout=20_000)
    expect(last).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")
    expect(page.locator(".decoy-grid-details .decoy-grid-text")).to_have_text(vault.memories["text"].iloc[-1])
    page.keyboard.press("Home")
    expect(page.locator(".decoy-grid-row[aria-rowindex='2']")).to_have_attribute("aria-selected", "true")


def test_saved_without_a_kernel_it_shows_the_first_page_and_says_so(frames, browser, tmp_path):
    """Exported HTML holds the first page only: it shows those rows, and says that the others,
    and filtering all of them, need the kernel."""
    vault = PageVault(frames)
    path = widget_page([VaultView(vault)], tmp_path / "saved.html", vendored_scripts())
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.route(re.compile(r"^https?://"), lambda route: route.abort())
    page.goto(path.as_uri())
    count = page.locator(".decoy-grid-count")
    expect(count).to_have_text(
        f"100,000 memories: this saved page holds the first {FIRST_PAGE} as loaded; the others,"
        " and filtering and sorting all of them, need the kernel",
        timeout=30_000,
    )
    page.locator(".decoy-grid-body").evaluate("b => b.scrollTop = b.scrollHeight")
    last = page.locator(f".decoy-grid-row[aria-rowindex='{FIRST_PAGE + 1}']")
    expect(last).to_have_attribute("data-id", vault.memories["id"].iloc[FIRST_PAGE - 1])
    page.locator(".decoy-grid-search").fill("memory 1")
    held = vault.memories["text"].iloc[:FIRST_PAGE].str.lower().str.contains("memory 1", regex=False).sum()
    expect(count).to_contain_text(f"{held} of the first {FIRST_PAGE} of 100,000 memories match")
    page.locator(".decoy-grid").screenshot(path=str(BUILD / "grid-100k-saved.png"))
    page.close()


def test_while_the_kernel_is_busy_the_count_line_names_no_stale_number(lab):
    """While the kernel is slow to answer, the line says it is filtering, and after a few
    seconds that it waits for the kernel; then the true count. Filters that only narrow rows the
    page holds all of are answered in the page, at once."""
    page, vault = lab
    text = vault.memories["text"].str.lower()
    search(page, "memory 424")  # 111 rows: the kernel sends them all
    assert count_of(page) == int(text.str.contains("memory 424", regex=False).sum()) == 111
    slow = (  # the kernel takes 6 s over each answer from now on
        "import time\ntable = view.browser.grid.table\nwindow = table.window\n"
        "table.window = lambda *a, **k: (time.sleep(6), window(*a, **k))[1]"
    )
    run_in_kernel(page, slow)
    # A longer search, and a sort, among rows the page holds all of: filtered there, at once.
    search(page, "memory 4242")
    narrowed = vault.memories[text.str.contains("memory 4242", regex=False)]
    expect(page.locator(".decoy-grid-count")).to_have_attribute("data-shown", str(len(narrowed)), timeout=1_000)
    page.locator(".decoy-grid-th[data-col='text'] button").click()
    page.locator(".decoy-grid-th[data-col='text'] button").click()  # descending
    by_text = narrowed.assign(k=text[narrowed.index]).sort_values("k", ascending=False, kind="stable")
    assert ids_on_screen(page) == by_text["id"].tolist()
    page.locator(".decoy-grid-th[data-col='text'] button").click()  # as loaded
    assert ids_on_screen(page) == narrowed["id"].tolist()
    # Wider filters need the kernel, busy for a while yet.
    search(page, "kyoto notes")
    count = page.locator(".decoy-grid-count")
    expect(count).to_have_text("filtering 100,000 memories…")
    assert count.get_attribute("data-shown") is None
    assert page.get_by_role("grid", name="memories").get_attribute("aria-busy") == "true"
    expect(count).to_have_text("filtering 100,000 memories… (waiting for the kernel)", timeout=5_000)
    want = int(text.str.contains("kyoto notes", regex=False).sum())
    assert count_of(page) == want
    expect(count).to_contain_text(f"{want:,} of 100,000 memories shown")
    run_in_kernel(page, "table.window = window")
    search(page, "")
    assert count_of(page) == N
