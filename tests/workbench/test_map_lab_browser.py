"""`%decoy map` in a real JupyterLab (Debian chromium): the output is the explorable map, an SVG
one hovers and clicks, not a picture; in the Dark theme its words stay readable; and nbconvert
of the notebook as JupyterLab saved it shows the PNG from the same output bundle.
Screenshots: build/map-lab.png, build/map-lab-dark.png."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.lab import run_notebook, running_lab

nbformat = pytest.importorskip("nbformat")
expect = pytest.importorskip("playwright.sync_api").expect

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = [*BROWSER_MARKS, pytest.mark.notebook]

CELLS = [
    '%load_ext decoy_lab\nconn = %decoy connect --sandbox --name "Map in Lab"\n'
    "conn.sandbox_handle.owner.share()  # the owner's phone shares the demo vault's keys",
    "%decoy map",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# The colour of a label's text and of the stage behind it, as the page computes them.
COLOURS = """() => {
  const label = document.querySelector('.jp-OutputArea-output .decoy-map-label:not(.on-dot)');
  const stage = document.querySelector('.jp-OutputArea-output .decoy-map-stage');
  return [getComputedStyle(label).fill, getComputedStyle(stage).backgroundColor];
}"""


def rgba(css: str) -> tuple[float, float, float, float]:
    v = [float(x) for x in re.findall(r"[\d.]+", css)]
    return v[0], v[1], v[2], v[3] if len(v) > 3 else 1.0


def luminance(rgb: tuple[float, ...]) -> float:
    """WCAG relative luminance of an sRGB colour (0–255 channels)."""
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (x / 255 for x in rgb[:3])]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast of text `fg` (its alpha laid over `bg`) against `bg`."""
    *f, a = rgba(fg)
    b = rgba(bg)[:3]
    seen = tuple(a * x + (1 - a) * y for x, y in zip(f, b))
    hi, lo = sorted((luminance(seen), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "map.ipynb")
    with running_lab(tmp_path, folder) as lab:
        yield lab, tmp_path / "work" / "notebooks" / "map.ipynb"


def test_map_is_the_live_map_in_jupyterlab_and_the_png_in_nbconvert(served):
    from playwright.sync_api import sync_playwright

    (base, token), saved = served
    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            assert run_notebook(page, base, token, "notebooks/map.ipynb") == []
            out = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
            surface = out.locator("svg.decoy-map-svg")
            expect(surface).to_be_visible(timeout=30_000)
            assert out.locator("img").count() == 0, "JupyterLab shows the picture, not the live map"
            lisbon = out.locator(".decoy-map-label", has_text="Lisbon trip")
            expect(lisbon).to_be_visible()
            node = lisbon.get_attribute("data-node")
            dot = out.locator(f".decoy-map-node[data-node='{node}']")
            dot.hover()
            expect(out.locator(".decoy-map-tip-name")).to_have_text("Lisbon trip")
            dot.click()
            expect(out.locator(".decoy-map-node.selected")).to_have_attribute("data-node", node)
            # the picked topic's own relations are named on their lines, no other relation
            expect(out.locator(".decoy-map-relation")).to_have_count(4)
            assert sorted(out.locator(".decoy-map-relation").all_text_contents()) == ["includes"] * 3 + ["is planning"]
            page.mouse.move(2, 2)
            out.screenshot(path=str(BUILD / "map-lab.png"))
            fill, ground = page.evaluate(COLOURS)
            assert contrast(fill, ground) >= 4.5, (fill, ground)

            page.evaluate(
                "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
            )
            page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
            page.wait_for_timeout(500)
            out.screenshot(path=str(BUILD / "map-lab-dark.png"))
            dark_fill, dark_ground = page.evaluate(COLOURS)
            assert luminance(rgba(dark_ground)) < luminance(rgba(ground)), "the stage follows the Dark theme"
            assert contrast(dark_fill, dark_ground) >= 4.5, (dark_fill, dark_ground)

            page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        finally:
            browser.close()

    stored = nbformat.read(saved, as_version=4).cells[1].outputs
    assert [set(o.get("data", {})) for o in stored] == [{"text/plain", "image/png", WIDGET_VIEW}]
    html = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--stdout", str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert re.search(r'<img [^>]*src="data:image/png;base64,', html), "nbconvert shows the map's PNG"
    assert f'<script type="{WIDGET_VIEW}">' not in html  # no widget state was saved: the picture stands in
