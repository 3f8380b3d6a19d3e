"""The owner panel in real JupyterLab (Debian chromium, Playwright), at the demo vault.

A notebook of the test's own starts a sandbox with the demo vault, pairs two connections, leaves
two pairings waiting and shows `OwnerPanel(sb.owner)`. The test then does every action through
the page (approve, deny, edit, re-file, delete, page on, rename, set a grant, give one, revoke a
grant, share now, key setup off and on, revoke a connection, approve narrowed), each timed in the page from
the click to its visible result; a pairing made from outside shows with no click at all. After
all of it the panel still renders: no widget error in the page, nothing on the browser console,
and it is compact; its text is readable (4.5:1) in JupyterLab Light and Dark. Screenshots:
build/owner-panel-before.png, build/owner-panel-after.png, build/owner-panel-dark.png.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.lab import KERNEL_READY, running_lab
from support.readable import AA, low_contrast

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
BUDGET_MS = 300  # issue 22: "each action ≤ 300 ms to its visible result at the demo vault"
MAX_HEIGHT = 1300  # px; the panel that rebuilt itself was 4,770 px tall

pytestmark = BROWSER_MARKS

SETUP = """\
import httpx
from decoy_lab.client.connection import Connection
from decoy_lab.sandbox.server import Sandbox
from decoy_lab.widgets import OwnerPanel

sb = Sandbox.start(seed="demo")
quiet = dict(profile=None, on_link=lambda *a: None)
trip = Connection.pair(sb.url, name="Trip planner", permissions=[{"permissions": ["memory.read", "memory.edit"]}, {"permissions": ["memory.save"]}], **quiet)
food = Connection.pair(sb.url, name="Food guide", permissions=[{"permissions": ["memory.read"], "datatypes": ["food"]}], **quiet)
sb.owner.share()
sb.state.approve = "manual"
for name in ("Calendar bot", "Spam bot"):
    ask = {"client_id": name.lower().replace(" ", "-"), "name": name, "authorization_details": [{"permissions": ["memory.read"]}]}
    httpx.post(sb.url + "/oauth/device", json=ask).raise_for_status()
print("SANDBOX=" + sb.url)
panel = OwnerPanel(sb.owner)
panel
"""

# Click `click`, then resolve with the milliseconds until `watch`'s text contains `expect`.
TIMED = """async ([click, watch, expect]) => {
  const target = document.querySelector(watch);
  const t0 = performance.now();
  return await new Promise((resolve) => {
    const check = () => {
      if (target.textContent.includes(expect)) { obs.disconnect(); resolve([performance.now() - t0, target.textContent]); }
    };
    const obs = new MutationObserver(check);
    obs.observe(target, {subtree: true, childList: true, characterData: true, attributes: true});
    setTimeout(() => { obs.disconnect(); resolve([-1, target.textContent]); }, 15000);
    document.querySelector(click).click();
  });
}"""

P = ".decoy-owner"
STATUS = f"{P} .decoy-owner-status"


def _notebook(folder: Path) -> Path:
    folder.mkdir(parents=True)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": SETUP}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}}
    nb.update(nbformat=4, nbformat_minor=5)
    (folder / "owner-panel.ipynb").write_text(json.dumps(nb))
    return folder


@pytest.fixture
def lab(tmp_path):
    with running_lab(tmp_path, _notebook(tmp_path / "nb")) as served:
        yield served


def test_every_action_in_jupyterlab_is_quick_and_leaves_the_panel_whole(lab):
    from playwright.sync_api import sync_playwright

    base, token = lab
    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            console: list[str] = []  # errors and uncaught exceptions
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console.append(str(e)))
            page.goto(f"{base}/lab/tree/notebooks/owner-panel.ipynb?token={token}")
            page.wait_for_function(KERNEL_READY, timeout=90_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(f"{P} .decoy-owner-approve", timeout=120_000)
            page.wait_for_function(
                f"() => document.querySelector('{P} .decoy-owner-memories').textContent.includes('page 1 of')"
            )
            url = re.search(r"SANDBOX=(\S+)", page.inner_text(".jp-OutputArea")).group(1)
            panel = page.locator(P)
            panel.screenshot(path=str(BUILD / "owner-panel-before.png"))
            low = {"JupyterLab Light": low_contrast(page, P)}
            times = _every_action(page, url)
            page.wait_for_timeout(300)
            panel.screenshot(path=str(BUILD / "owner-panel-after.png"))
            text = page.inner_text(".jp-Notebook")
            height = panel.bounding_box()["height"]
            listed = page.locator(f"{P} .decoy-owner-memory select option").count()
            page.evaluate(
                "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
            )
            page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
            page.wait_for_timeout(500)
            panel.screenshot(path=str(BUILD / "owner-panel-dark.png"))
            low["JupyterLab Dark"] = low_contrast(page, P)
        finally:
            browser.close()
    print("\n".join(f"{name}: {ms:.0f} ms" for name, ms in times.items()), f"\nheight {height:.0f} px")
    broken = [w for w in ("javascript error", "model not found", "error displaying widget") if w in text.lower()]
    assert not broken, text[-2000:]
    assert listed == 10, "after every action the memories still show, ten to a page"
    assert console == [], console
    assert low == {"JupyterLab Light": [], "JupyterLab Dark": []}, f"text under {AA}:1 contrast: {low}"
    assert height <= MAX_HEIGHT, f"the panel is {height:.0f} px tall"
    slow = {name: round(ms) for name, ms in times.items() if ms > BUDGET_MS}
    assert not slow, f"over {BUDGET_MS} ms to the visible result: {slow} (all: {times})"


def _text(page, selector: str) -> str:
    """An element's text as read (ipywidgets writes a choice's spaces as no-break spaces)."""
    return page.evaluate("(s) => document.querySelector(s).textContent", selector).replace("\xa0", " ")


def _every_action(page, url: str) -> dict[str, float]:
    """Each action through the page; returns its milliseconds from click to visible result."""
    times: dict[str, float] = {}

    def act(name: str, button: str, expect: str, watch: str = STATUS) -> None:
        ms, shown = page.evaluate(TIMED, [f"{P} .decoy-owner-{button}", watch, expect])
        assert ms >= 0, f"{name}: {expect!r} never showed; the status reads {shown!r}"
        assert "✗" not in shown, f"{name}: refused: {shown}"
        times[name] = ms

    def choose(field: str, **option) -> None:
        page.select_option(f"{P} .decoy-owner-{field} select", **option)
        page.wait_for_timeout(150)  # the choice reaches the kernel before the button is pressed

    act("approve", "approve", "Approved Calendar bot's pairing")
    act("deny", "deny", "Denied Spam bot's pairing")
    choose("memory", index=2)
    page.fill(f"{P} .decoy-owner-text input", "Window seats, always.")
    page.wait_for_timeout(150)
    act("edit", "edit", "Saved “Window seats, always.”")
    choose("topic", index=1)
    act("re-file", "refile", "Filed “Window seats, always.” under")
    choose("memory", index=3)
    act("delete", "delete", "Deleted “")
    act("next page", "next", "page 2 of", watch=f"{P} .decoy-owner-memories")
    choose("topic-pick", index=0)
    page.fill(f"{P} .decoy-owner-name input", "Renamed in the browser")
    page.wait_for_timeout(150)
    act("rename", "rename", "to “Renamed in the browser”")
    choose("connection", label="Food guide")
    page.select_option(f"{P} .decoy-owner-connections .decoy-grant-categories select", ["food", "music"])
    page.wait_for_timeout(150)
    act("set grant", "set-grant", "Food guide's grant is now: Read memories in food, music")
    page.select_option(f"{P} .decoy-owner-connections .decoy-grant-reach select", label="all memories")
    page.wait_for_timeout(150)
    act("give", "give", "Gave Food guide a new grant: Read all memories")
    act("revoke grant", "revoke-grant", "Revoked Food guide's grant")
    act("share now", "share", "Shared: ")
    act("key setup off", "key", "Key setup put back")
    act("key setup on", "key", "Key setup finished")
    choose("connection", label="Calendar bot")
    act("revoke connection", "revoke", "Revoked Calendar bot")
    ask = {"client_id": "late", "name": "Late bot", "authorization_details": [{"permissions": ["memory.read"]}]}
    httpx.post(url + "/oauth/device", json=ask).raise_for_status()
    t0 = time.monotonic()
    while "Late bot asks to pair" not in _text(page, f"{P} .decoy-owner-waiting"):  # no click: it follows
        assert time.monotonic() - t0 < 2.5, "a new pairing did not show within 2.5 s (the panel looks every 1 s)"
        page.wait_for_timeout(50)
    live = (time.monotonic() - t0) * 1000
    print(f"a new pairing shows with no click after {live:.0f} ms (the panel looks every second)")
    page.select_option(f"{P} .decoy-owner-waiting .decoy-grant-reach select", label="memories in these categories")
    page.select_option(f"{P} .decoy-owner-waiting .decoy-grant-categories select", ["travel"])
    page.wait_for_timeout(150)
    act("approve narrowed", "approve-narrowed", "Approved Late bot's pairing as narrowed: Read memories in travel")
    return times
