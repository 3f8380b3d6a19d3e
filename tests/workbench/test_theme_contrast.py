"""Every view readable in every JupyterLab theme, measured on the rendered page.

A notebook shows the pairing widget with its consent card, a memories frame, the browse view
(table and details), the recipe view and a grant request card in a real JupyterLab; for each of
Light, Dark and Dark High Contrast (switched with JupyterLab's own `apputils:change-theme`),
every visible text node of those views is measured against its effective background (WCAG 2.x
1.4.3: "a contrast ratio of at least 4.5:1", "large-scale text … at least 3:1"). The map is
measured by its own tests; so are the fallback colours the views carry for pages with no
JupyterLab styles. Screenshots: build/theme-<view>-<theme>.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.contrast import (
    DARK,
    HIGH_CONTRAST,
    LIGHT,
    drop_theme_variables,
    offenders,
    report,
    set_lab_theme,
    text_nodes,
)
from support.lab import notebook_json, run_notebook, running_lab

expect = pytest.importorskip("playwright.sync_api").expect
BUILD = Path(__file__).resolve().parents[2] / "build"
pytestmark = BROWSER_MARKS

CELLS = [
    "%load_ext decoy_lab",
    'conn = %decoy connect --sandbox --name "Theme check" --permission memory.read memory.save',
    "df = %decoy memories --wait\ndf",
    "%decoy browse",
    "t = %decoy unseal {df[df.source == 'memories'].id.iloc[0]}\nt",
    '%decoy request memory.edit --datatypes travel --reason "correct travel notes"',
]
# view name → (what to measure, what inside it another test measures)
VIEWS = {
    "pairing": (".decoy-pairing", ""),
    "frame": (".decoy-frame", ""),
    "browse": (".decoy-vaultview", ".decoy-map"),
    "recipe": (".decoy-recipe", ""),
    "consent": (".decoy-request", ""),
}


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("themes")
    nb = tmp / "nb"
    nb.mkdir()
    (nb / "themes.ipynb").write_text(notebook_json(CELLS))
    with running_lab(tmp, nb) as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            errors = run_notebook(page, base, token, "notebooks/themes.ipynb")
            assert errors == [], errors
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            for selector, _ in VIEWS.values():
                page.locator(selector).first.wait_for(timeout=60_000)
            grid = page.locator(".decoy-vaultview .decoy-grid")
            grid.locator("[role=row][data-id], .decoy-grid-row").nth(1).click()  # its details show too
            page.locator(".decoy-grid-details .decoy-grid-text").wait_for()
            yield page
        finally:
            browser.close()


@pytest.mark.parametrize("theme", [LIGHT, DARK, HIGH_CONTRAST])
def test_every_view_reads_at_wcag_aa_in_the_theme(page, theme):
    set_lab_theme(page, theme)
    short = theme.removeprefix("JupyterLab ").lower().replace(" ", "-")
    BUILD.mkdir(exist_ok=True)
    bad: dict[str, list[dict]] = {}
    for name, (selector, exclude) in VIEWS.items():
        view = page.locator(selector).first
        view.scroll_into_view_if_needed()
        assert text_nodes(page, selector, exclude=exclude) >= 3, f"{name}: no text to measure"
        view.screenshot(path=str(BUILD / f"theme-{name}-{short}.png"))
        found = offenders(page, selector, exclude=exclude)
        if found:
            bad[name] = found
    assert not bad, f"{theme}: text under WCAG AA\n" + "\n".join(
        f"[{name}]\n{report(found)}" for name, found in bad.items()
    )


def test_every_view_reads_on_its_fallback_colours(page):
    """With every `--jp-*` variable unset (a page with no JupyterLab styles), each
    `var(--jp-…, fallback)` takes its fallback, and those read at WCAG AA too."""
    set_lab_theme(page, LIGHT)
    assert drop_theme_variables(page) > 50
    try:
        bad = {name: found for name, (sel, ex) in VIEWS.items() if (found := offenders(page, sel, exclude=ex))}
        page.locator(".decoy-recipe").first.screenshot(path=str(BUILD / "theme-recipe-fallbacks.png"))
    finally:
        page.evaluate("() => document.getElementById('no-theme-variables').remove()")
    assert not bad, "\n".join(f"[{name}]\n{report(found)}" for name, found in bad.items())


def test_the_grid_keeps_its_keys_inside_jupyterlab(page):
    """↑/↓ in the focused grid move its active row, not JupyterLab's selected cell."""
    grid = page.get_by_role("grid", name="memories")
    cell_before = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex")
    page.locator(".decoy-vaultview .decoy-grid-search").click()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.getAttribute('role')") == "grid"
    start = int(grid.locator("[role=row][aria-selected=true]").get_attribute("aria-rowindex"))
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    expect(grid.locator("[role=row][aria-selected=true]")).to_have_attribute("aria-rowindex", str(start + 1))
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex") == cell_before
