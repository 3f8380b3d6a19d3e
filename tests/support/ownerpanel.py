"""The owner panel driven in a real JupyterLab page: the notebook that shows it at the demo vault,
and every action done through the page, each timed from the click to its visible result.
tests/workbench/test_owner_panel_browser.py checks what the actions leave behind; bench/owner.py
prints their times beside the 300 ms target."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from .lab import notebook_json

SETUP = """\
import httpx
from decoy_lab.client.connection import Connection
from decoy_lab.sandbox.server import Sandbox
from decoy_lab.widgets import OwnerPanel

sb = Sandbox.start(seed="demo")
quiet = dict(profile=None, on_link=lambda *a: None)
trip = Connection.pair(sb.url, name="Trip planner", permissions=[{"permissions": ["memory.read", "memory.edit"]}, {"permissions": ["memory.save"]}], **quiet)
food = Connection.pair(sb.url, name="Food guide", permissions=[{"permissions": ["memory.read"], "datatypes": ["food"]}], **quiet)
maker = Connection.pair(sb.url, name="Sign-up helper", permissions=[{"permissions": ["account.create"]}], **quiet)
shopper = Connection.pair(sb.url, name="Shopping agent", permissions=[{"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"}], **quiet)
acme = maker.create_account("Acme", username="me@acme.test")
sb.owner.share()
sb.state.approve = "manual"
assert shopper.unlock(acme.account_id, reason="Sign in to Acme").status == "pending"
assert maker.rename_decoy(acme.decoy_id, name="Acme Pro").status == "pending"
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


def notebook(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "owner-panel.ipynb").write_text(notebook_json([SETUP]))
    return folder


def text_of(page, selector: str) -> str:
    """An element's text as read (ipywidgets writes a choice's spaces as no-break spaces)."""
    return page.evaluate("(s) => document.querySelector(s).textContent", selector).replace("\xa0", " ")


# Resolves once the kernel has been idle for `quiet` ms on end. ipywidgets holds back a state
# change while an earlier one is unanswered and sends it when the kernel goes idle, while a
# button's click is sent at once: under load, a click pressed a fixed time after a choice could
# reach the kernel before the choice did.
SETTLED = """async (quiet) => {
  const kernel = () => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const t0 = performance.now();
  let since = t0;
  while (performance.now() - t0 < 15000) {
    if (kernel().status !== "idle") since = performance.now();
    else if (performance.now() - since >= quiet) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}"""


def settled(page, quiet: int = 150) -> None:
    """What was chosen or typed has reached the kernel: it is idle, and stays so for `quiet` ms."""
    page.wait_for_timeout(50)  # the change is on its way (the kernel may not be busy with it yet)
    page.evaluate(SETTLED, quiet)


def every_action(page, url: str) -> dict[str, float]:
    """Each action through the page; returns its milliseconds from click to visible result."""
    times: dict[str, float] = {}

    def act(name: str, button: str, expect: str, watch: str = STATUS) -> None:
        ms, shown = page.evaluate(TIMED, [f"{P} .decoy-owner-{button}", watch, expect])
        assert ms >= 0, f"{name}: {expect!r} never showed; the status reads {shown!r}"
        assert "✗" not in shown, f"{name}: refused: {shown}"
        times[name] = ms

    def choose(field: str, **option) -> None:
        page.select_option(f"{P} .decoy-owner-{field} select", **option)
        settled(page)

    act("approve", "approve", "Approved Calendar bot's pairing")
    act("deny", "deny", "Denied Spam bot's pairing")
    act("allow unlock", "allow-unlock", "Allowed Shopping agent to read Acme")
    act("apply edit", "apply-edit", "Applied Sign-up helper's edit of")
    choose("memory", index=2)
    page.fill(f"{P} .decoy-owner-text input", "Window seats, always.")
    settled(page)
    act("edit", "edit", "Saved “Window seats, always.”")
    choose("topic", index=1)
    act("re-file", "refile", "Filed “Window seats, always.” under")
    choose("memory", index=3)
    act("delete", "delete", "Deleted “")
    act("next page", "next", "page 2 of", watch=f"{P} .decoy-owner-memories")
    choose("topic-pick", index=0)
    page.fill(f"{P} .decoy-owner-name input", "Renamed in the browser")
    settled(page)
    act("rename", "rename", "to “Renamed in the browser”")
    choose("connection", label="Food guide")
    # Choosing the connection makes the kernel set these categories to its grant's; under load that
    # echo can land after the choice below and undo it, so choose until the choice stands.
    categories = f"{P} .decoy-owner-connections .decoy-grant-categories select"
    for _ in range(3):
        page.select_option(categories, ["food", "music"])
        settled(page)
        chosen = page.eval_on_selector(categories, "(s) => Array.from(s.selectedOptions, (o) => o.textContent.trim())")
        if sorted(chosen) == ["food", "music"]:
            break
    act("set grant", "set-grant", "Food guide's grant is now: Read memories in food, music")
    page.select_option(f"{P} .decoy-owner-connections .decoy-grant-reach select", label="all memories")
    settled(page)
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
    # The panel looks every second (the phone's schedule): a new pairing shows with no click. How soon
    # is the figure printed below (bench/owner.py); the bound only says it came, with slack for
    # two busy cores.
    while "Late bot asks to pair" not in text_of(page, f"{P} .decoy-owner-waiting"):
        assert time.monotonic() - t0 < 1 + 9, "a new pairing did not show (the panel looks every 1 s)"
        page.wait_for_timeout(50)
    live = (time.monotonic() - t0) * 1000
    print(f"a new pairing shows with no click after {live:.0f} ms (the panel looks every second)")
    page.select_option(f"{P} .decoy-owner-waiting .decoy-grant-reach select", label="memories in these categories")
    page.select_option(f"{P} .decoy-owner-waiting .decoy-grant-categories select", ["travel"])
    settled(page)
    act("approve narrowed", "approve-narrowed", "Approved Late bot's pairing as narrowed: Read memories in travel")
    return times
