"""The map and the table in a real browser: JupyterLab runs a notebook that shows `VaultView`
over the bench's loaded vault (10,000 memories / 500 topics), and chromium, driven by
Playwright, times each interaction in the page, from the event to the DOM showing the result
and the next frame drawn. Targets (issue 13): topic pick → table ≤ 100 ms, hover → details
≤ 50 ms, filter keystroke → rows ≤ 100 ms, row click → details ≤ 100 ms, view opened ≤ 1 s.
Before: a pick redrew the PNG map in the kernel (1.4–1.6 s at 500 topics), the filter waited
for Enter, a row could not be clicked. Left out under --quick (it starts a browser and a
JupyterLab: run `make bench`)."""

from __future__ import annotations

import json
import pickle
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decoy_lab.views import topicmap
from decoy_lab.widgets.grid import MemoryGrid

from .context import Context
from .report import Figure, check, info, missing, within
from .stage import loaded_vault

CHROMIUM = "/usr/bin/chromium"
LIMIT = 5_000_000  # bytes of widget state a view sends (issue 23)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

# Runs `action`, then resolves with the ms until each of `dones` first holds and, last, until
# the frame after all of them is drawn.
TIMED = """async ([action, dones, timeout]) => {
  const act = new Function(action), oks = dones.map((d) => new Function(d));
  const at = dones.map(() => null);
  const t0 = performance.now();
  act();
  for (;;) {
    oks.forEach((ok, i) => { if (at[i] === null && ok()) at[i] = performance.now() - t0; });
    if (at.every((t) => t !== null)) break;
    if (performance.now() - t0 > timeout) throw new Error("timed out waiting for: " + dones);
    await new Promise((r) => setTimeout(r, 1));
  }
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return [...at, performance.now() - t0];
}"""
NB = "window.jupyterapp.shell.currentWidget"
VIEW = f"{NB}.content.widgets[1].node.querySelector('.decoy-vaultview')"


def notebook(vault_file: Path) -> list[str]:
    """The benchmark notebook's cells: the vault unpickled and its frames built, then the view."""
    return [
        f"import pickle\nfrom decoy_lab.widgets import VaultView\nvault = pickle.loads(open({str(vault_file)!r}, 'rb').read())\n"
        "_ = vault.memories, vault.topics, vault.links",
        "VaultView(vault)",
    ]


def run(ctx: Context) -> list[Figure]:
    if ctx.quick:  # a smoke run stays quick: no browser, no JupyterLab
        ctx.say("  skipped under --quick: the map and the table are measured in a real browser by `make bench`")
        return []
    if not Path(CHROMIUM).exists():
        return [missing("views in the browser", "", f"needs Debian's chromium at {CHROMIUM}")]
    vault = loaded_vault(ctx)
    G = topicmap.build_graph(vault)
    repeats = max(3, min(ctx.sizes.repeats * 2, 7))
    setting = Setting(vault, G, repeats, f"{len(vault.memories):,} memories / {len(G) - 1} topics")
    with tempfile.TemporaryDirectory(prefix="decoy-bench-views-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "vault.pickle").write_bytes(pickle.dumps(vault))
        figures = in_lab(tmp, notebook(tmp / "vault.pickle"), lambda page: measure(page, setting))
    return [*figures, state_figure(state_sizes(vault), f" ({len(vault.memories):,})", judged=False)]


def in_lab(tmp: Path, cells: list[str], then: Callable[[Any], list[Figure]]) -> list[Figure]:
    """A JupyterLab of its own on a notebook of `cells` (saved in tmp/nb), its first cell run, then `then(page)`."""
    from playwright.sync_api import sync_playwright

    from tests.support.lab import KERNEL_READY, notebook_json, running_lab

    (tmp / "nb").mkdir(exist_ok=True)
    (tmp / "nb" / "bench.ipynb").write_text(notebook_json(cells))
    with running_lab(tmp, tmp / "nb") as (base, token), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"{base}/lab/tree/notebooks/bench.ipynb?token={token}")
            page.wait_for_function(KERNEL_READY, timeout=120_000)
            page.evaluate(
                f"() => {{ {NB}.content.activeCellIndex = 0; window.jupyterapp.commands.execute('notebook:run-cell'); }}"
            )
            page.wait_for_function(
                f"() => {NB}.content.widgets[0].model.executionCount !== null"
                f" && {NB}.sessionContext.session.kernel.status === 'idle'",
                timeout=600_000,
            )
            errors = page.evaluate(
                f"() => {NB}.content.widgets[0].model.outputs.toJSON()"
                ".filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"
            )
            if errors:
                raise RuntimeError(f"the notebook's first cell failed: {errors}")
            return then(page)
        finally:
            browser.close()


def timed(page: Any, action: str, *dones: str, timeout: float = 10_000) -> list[float]:
    """Seconds from `action` until each of `dones` first held, then until the next frame was drawn."""
    try:
        return [ms / 1000 for ms in page.evaluate(TIMED, [action, list(dones), timeout])]
    except Exception as exc:
        seen = page.evaluate(
            f"() => {{ const v = {VIEW}; const o = v && v.querySelector('.decoy-filters select option:checked');"
            " const s = v && v.querySelector('.decoy-map-node.selected');"
            " return `picker: ${o && o.textContent}; map: ${s && s.dataset.node}; table: ${v && v.querySelector('.decoy-grid-count').textContent}`; }"
        )
        raise RuntimeError(f"{exc}; the page shows {seen}") from None


def state_sizes(vault: Any) -> dict[str, int]:
    """Bytes of JSON each kind of widget of VaultView(vault) sends as its state (`get_state()`)."""
    import ipywidgets as W

    from decoy_lab.widgets import VaultView

    before = set(W.Widget.widgets)
    VaultView(vault)
    sizes: dict[str, int] = {}
    for key in set(W.Widget.widgets) - before:
        w = W.Widget.widgets[key]
        sizes[type(w).__name__] = sizes.get(type(w).__name__, 0) + len(json.dumps(w.get_state(), default=str))
    return sizes


def state_figure(sizes: dict[str, int], tag: str, *, judged: bool = True) -> Figure:
    """The view's widget state in all, each kind's share in the note; judged against LIMIT."""
    total = sum(sizes.values())
    parts = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]) if v > 10_000)
    if not judged:
        return info(f"widget state sent to the page{tag}", total / 1e6, "MB", f"every widget of the view: {parts}")
    return check(
        f"widget state sent to the page{tag}",
        total / 1e6,
        "MB",
        total <= LIMIT,
        "≤ 5 MB",
        f"{total / LIMIT:.2f} of the bound",
        f"every widget of %decoy browse: {parts}",
    )


def grid_mode(grid: MemoryGrid) -> str:
    if grid.paged:
        return f"paged: the page holds what it shows, the kernel filters ({grid.table.n:,} rows)"
    return "whole in the page, filtered there"


def spread(samples: list[float]) -> str:
    """How many samples, their p95 and their max (the median is the figure)."""
    p95 = sorted(samples)[int(0.95 * (len(samples) - 1))]
    return f"median of {len(samples)}, p95 {p95 * 1000:.0f} ms, max {max(samples) * 1000:.0f} ms"


@dataclass
class Setting:
    """What one run of the views is measured on, and how its figures are named."""

    vault: Any
    G: Any
    repeats: int
    size: str
    opened: str = "VaultView opened"  # what the second cell does, and its target in seconds
    open_budget: float = 1.0
    open_note: str = "%decoy browse = load() (see load() reload) + this view"
    tag: str = ""  # after each interaction's name: "" at 10,000, the size at 100,000
    setup: str = ""  # the first cell's code: run again in a new kernel before each open, when given

    @property
    def per_node(self) -> Any:
        return topicmap.memory_nodes(self.vault).value_counts()

    def topics(self, count: int = 10) -> list[str]:
        """`count` topics spread from the biggest to the smallest."""
        per_node = self.per_node
        ranked = [n for n in sorted(self.G, key=lambda n: -int(per_node.get(n, 0))) if n != topicmap.USER]
        return ranked[:: max(1, len(ranked) // (count - 1))][:count]


def opened(page: Any, s: Setting) -> Figure:
    """The second cell run until the new view shows table rows and map labels, drawn; the note
    says when each of the two showed (the median of each)."""
    times, table, drawn_map = [], [], []
    for _ in range(s.repeats):
        if s.setup:
            new_kernel(page, s.setup)
        page.evaluate(f"() => window.__old = {VIEW}")
        rows, labels, done = timed(
            page,
            f"{NB}.content.activeCellIndex = 1; window.jupyterapp.commands.execute('notebook:run-cell');",
            f"const v = {VIEW}; return !!v && v !== window.__old && !!v.querySelector('.decoy-grid-row[data-id]');",
            f"const v = {VIEW}; return !!v && v !== window.__old && !!v.querySelector('.decoy-map-label');",
            timeout=120_000,
        )
        times.append(done)
        table.append(rows)
        drawn_map.append(labels)
        page.wait_for_function(f"() => {NB}.sessionContext.session.kernel.status === 'idle'", timeout=120_000)
    return within(
        f"{s.opened} ({s.size})",
        statistics.median(times),
        s.open_budget,
        f"≤ {s.open_budget:g} s",
        f"median of {s.repeats}, worst {max(times):.2f} s; the table's rows showed at "
        f"{statistics.median(table):.2f} s, the map's labels at {statistics.median(drawn_map):.2f} s; {s.open_note}",
    )


def new_kernel(page: Any, setup: str) -> None:
    """The notebook's kernel restarted and `setup` (its first cell) run in it: what a notebook
    reopened tomorrow has before its next cell, nothing of an earlier open in memory."""
    page.evaluate(f"async () => {{ await {NB}.sessionContext.session.kernel.restart(); }}")
    page.wait_for_function(f"() => {NB}.sessionContext.session.kernel.status === 'idle'", timeout=120_000)
    failed = page.evaluate(
        f"async (code) => {{ const f = {NB}.sessionContext.session.kernel.requestExecute({{code}});"
        " let error = null; f.onIOPub = (m) => { if (m.header.msg_type === 'error') error = m.content.evalue; };"
        " await f.done; return error; }",
        setup,
    )
    if failed:
        raise RuntimeError(f"the first cell failed in the new kernel: {failed}")


def measure(page: Any, s: Setting) -> list[Figure]:
    return [opened(page, s), *on_the_map(page, s), *in_the_table(page, s)]


def on_the_map(page: Any, s: Setting) -> list[Figure]:
    """Topics picked and hovered on the map; the table follows a pick, then the kernel's picker."""
    G, per_node, tag = s.G, s.per_node, s.tag
    topics = s.topics()

    picks, follows, hovers, map_share = [], [], [], []
    for node in topics:
        name = G.nodes[node]["name"]
        dot = f"{VIEW}.querySelector(\".decoy-map-node[data-node='{node}']\")"
        want = int(per_node.get(node, 0))
        heard, _, done = timed(
            page,
            f"{dot}.dispatchEvent(new MouseEvent('click', {{bubbles: true}}));",
            # the table has heard of the pick: it is filtering (paged) or shows the topic (whole)
            f"const c = {VIEW}.querySelector('.decoy-grid-count'); return !c.dataset.shown || c.dataset.shown === '{want}';",
            f"const v = {VIEW}; return v.querySelector('.decoy-grid-count').dataset.shown === '{want}'"
            f" && (!{want} || v.querySelector('.decoy-grid-row .col-topic').textContent === {json.dumps(name)});",
        )
        picks.append(done)
        map_share.append(heard)
        hovers.append(
            timed(
                page,
                f"const d = {dot}; const r = d.getBoundingClientRect();"
                " d.dispatchEvent(new MouseEvent('mouseover', {bubbles: true, clientX: r.x, clientY: r.y}));",
                f"const t = {VIEW}.querySelector('.decoy-map-tip'); return t.style.display === 'block'"
                f" && t.querySelector('.decoy-map-tip-name').textContent === {json.dumps(name)};",
            )[-1]
        )
        page.evaluate(f"() => {dot}.dispatchEvent(new MouseEvent('mouseout', {{bubbles: true}}))")
    for node in reversed(
        topics[:-1]
    ):  # the same picks again (but the last, still picked), now waiting for the kernel's copy
        dot = f"{VIEW}.querySelector(\".decoy-map-node[data-node='{node}']\")"
        label = topicmap.shorten(G.nodes[node]["name"], 60)
        follows.append(
            timed(
                page,
                f"{dot}.dispatchEvent(new MouseEvent('click', {{bubbles: true}}));",
                f"const o = {VIEW}.querySelector('.decoy-filters select option:checked');"
                f" return !!o && o.textContent.replace(/\\u00a0/g, ' ').trim() === {json.dumps(label)};",
            )[0]
        )
    base = "was 1.4–1.6 s: the PNG map redrawn in the kernel"
    figures = [
        within(
            f"topic pick on the map → table updated{tag}",
            statistics.median(picks),
            0.1,
            "≤ 100 ms",
            f"{spread(picks)}; the table heard of the pick after {statistics.median(map_share) * 1000:.0f} ms"
            f" (the map's click handling); {base}",
        )
    ]
    figures.append(
        info(
            f"topic pick → the kernel's picker follows{tag}",
            statistics.median(follows),
            "s",
            f"the round trip through the kernel, {spread(follows)}",
        )
    )
    figures.append(
        within(f"hover a topic → its details{tag}", statistics.median(hovers), 0.05, "≤ 50 ms", spread(hovers))
    )
    return figures


def in_the_table(page: Any, s: Setting) -> list[Figure]:
    """Nothing picked, then a filter typed one key at a time; then rows clicked."""
    vault, G, tag = s.vault, s.G, s.tag
    page.evaluate(
        f"() => {VIEW}.querySelector('.decoy-map-svg').dispatchEvent(new MouseEvent('click', {{bubbles: true}}))"
    )
    grid = MemoryGrid(vault, graph=G)  # the filter looks in the topics above, as the page does
    words = str(vault.memories["text"].iloc[len(vault.memories) // 2]).lower()[:12]
    keys = []
    for i in range(1, len(words) + 1):
        grid.search = words[:i]
        shown = grid.shown_positions()
        first = json.dumps(grid.table.cols["id"][shown[0]] if shown else "")
        keys.append(
            timed(
                page,
                f"const s = {VIEW}.querySelector('.decoy-grid-search'); s.value = {json.dumps(words[:i])};"
                " s.dispatchEvent(new InputEvent('input', {bubbles: true}));",
                f"const v = {VIEW}; const r = v.querySelector('.decoy-grid-row');"
                f" return v.querySelector('.decoy-grid-count').dataset.shown === '{len(shown)}'"
                f" && (!r || r.dataset.id === {first});",
            )[-1]
        )
    figures = [
        within(
            f"table filter keystroke → rows{tag}",
            statistics.median(keys),
            0.1,
            "≤ 100 ms",
            f"{spread(keys)} keys over {len(vault.memories):,} rows, {grid_mode(grid)}; was: Enter, then the kernel",
        )
    ]
    page.evaluate(
        f"() => {{ const s = {VIEW}.querySelector('.decoy-grid-search'); s.value = '';"
        " s.dispatchEvent(new InputEvent('input', {bubbles: true})); }"
    )
    clicks = []
    for k in range(max(s.repeats, 10)):
        clicks.append(
            timed(
                page,
                f"window.__row = {VIEW}.querySelectorAll('.decoy-grid-row')[{k * 2}]; window.__row.click();",
                f"const d = {VIEW}.querySelector('.decoy-grid-fields td'); return !!d && d.textContent === window.__row.dataset.id;",
            )[-1]
        )
    figures.append(
        within(
            f"row click → its details{tag}",
            statistics.median(clicks),
            0.1,
            "≤ 100 ms",
            f"{spread(clicks)}; was: a 10,000-option dropdown",
        )
    )
    return figures
