"""The recipe view in a real browser: JupyterLab + Debian chromium + Playwright, the unseal trace
of a 69 KB memory shown as the stepper. Measured in the page, from the key press (→ / ←) or the
pointer press on Next to the DOM showing the other step, painted (the next animation frame);
and from a click on a field in the tree to its bytes lit. Target: a stepper step ≤ 50 ms.

Left out under --quick (it starts a browser and a JupyterLab: run `make bench`)."""

from __future__ import annotations

import statistics
from pathlib import Path

from .context import Context
from .report import Figure, missing, within

CHROMIUM = "/usr/bin/chromium"
BUDGET = 0.050
PRESSES = 30
TEXT_BYTES = 69_000  # the largest memory the issue measured

SETUP = f"""
from decoy_lab import memory
from decoy_lab.wire.crypto import AgentKey
from decoy_lab.recipes.trace import Trace
from decoy_lab.widgets import Stepper

me, owner = AgentKey.generate(), AgentKey.generate()
keys = memory.RecipientKeys(owner.public_key_b64, me.public_key_b64)
row = memory.new_memory_row(keys, "x" * {TEXT_BYTES})
served = {{"id": row["id"], "kid": row["kid"], "ciphertext": row["ciphertext"], "wrapped_key": row["self_wrap"]}}
t = Trace("unseal a 69 KB memory")
memory.read_memory_row(served, me, trace=t)
Stepper(t).add_class("bench-recipe")
"""

# Arms one measurement: the time of the next key or pointer press, then of the first animation
# frame after the step label changed; the result lands in window.__lat (ms).
ARM = """(event) => {
  window.__lat = null;
  const root = document.querySelector('.bench-recipe .decoy-recipe');
  const where = root.querySelector('.dr-where');
  const before = where.textContent;
  let t0 = null;
  document.addEventListener(event, (e) => { t0 = e.timeStamp; }, {capture: true, once: true});
  const obs = new MutationObserver(() => {
    if (where.textContent === before) return;
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__lat = performance.now() - t0; }, 0));
  });
  obs.observe(where, {childList: true, characterData: true, subtree: true});
}"""
ARM_LIT = """() => {
  window.__lat = null;
  const root = document.querySelector('.bench-recipe .decoy-recipe');
  let t0 = null;
  document.addEventListener('pointerdown', (e) => { t0 = e.timeStamp; }, {capture: true, once: true});
  const obs = new MutationObserver(() => {
    if (!root.querySelector('.dr-lit')) return;
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__lat = performance.now() - t0; }, 0));
  });
  obs.observe(root, {childList: true, subtree: true, attributes: true});
}"""


def run(ctx: Context) -> list[Figure]:
    names = (
        "recipe view: step by key (→/←)",
        "recipe view: step by click (Next)",
        "recipe view: field click → bytes lit",
    )
    if ctx.quick:  # a smoke run stays quick: no browser, no JupyterLab
        ctx.say("  skipped under --quick: the recipe view is measured in a real browser by `make bench`")
        return []
    if not Path(CHROMIUM).exists():
        return [missing(n, "≤ 50 ms", f"needs Debian's chromium at {CHROMIUM}") for n in names]
    from tests.support.lab import notebook_page

    with notebook_page("bench-recipe-", [SETUP.strip()], {"width": 1300, "height": 1000}) as page:
        root = page.locator(".bench-recipe .decoy-recipe")
        root.locator(".dr-where").wait_for()
        n = root.locator(".dr-step").count()
        keys, clicks, lits = [], [], []
        root.locator(".dr-step.open .dr-step-head").click()
        at = int(root.locator(".dr-where").inner_text().split()[1]) - 1
        for _ in range(PRESSES):
            step = 1 if at < n - 1 else -1
            key = "ArrowRight" if step > 0 else "ArrowLeft"
            page.evaluate(ARM, "keydown")
            page.keyboard.press(key)
            keys.append(_wait(page))
            at += step
        nxt = root.get_by_role("button", name="Next ▶")
        prev = root.get_by_role("button", name="◀ Prev")
        for _ in range(PRESSES):
            button = nxt if at < n - 1 else prev
            page.evaluate(ARM, "pointerdown")
            button.click()
            clicks.append(_wait(page))
            at += 1 if button is nxt else -1
        root.locator(".dr-step").nth(2).locator(".dr-step-head").click()  # a blob with a field tree
        nodes = root.locator(".dr-step.open .dr-node")
        for i in range(min(PRESSES, 10)):
            page.evaluate("() => document.querySelectorAll('.dr-lit').forEach(e => e.classList.remove('dr-lit'))")
            page.evaluate(ARM_LIT)
            nodes.nth(1 + i % max(1, nodes.count() - 1)).click()
            lits.append(_wait(page))
    return [_figure(names[0], keys, n), _figure(names[1], clicks, n), _figure(names[2], lits, n)]


def _wait(page) -> float:
    page.wait_for_function("() => window.__lat !== null", timeout=10_000)
    return page.evaluate("() => window.__lat") / 1000


def _figure(name: str, samples: list[float], steps: int) -> Figure:
    median = statistics.median(samples)
    p95 = sorted(samples)[int(0.95 * (len(samples) - 1))]
    return within(
        name,
        median,
        BUDGET,
        f"≤ {BUDGET * 1000:g} ms",
        f"median of {len(samples)}, p95 {p95 * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms; "
        f"{steps}-step unseal of a {TEXT_BYTES // 1000} KB memory, chromium headless",
    )
