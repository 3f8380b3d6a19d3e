"""The owner panel in real JupyterLab (Debian chromium, Playwright), at the demo vault.

A notebook of the test's own starts a sandbox with the demo vault, pairs four connections, leaves
two pairings, an unlock and a queued address edit waiting, and shows `OwnerPanel(sb.owner)`. The
test then does every action through the page (approve, deny, allow the unlock, apply the edit,
edit, re-file, delete, page on, rename, set a grant, give one, revoke a grant, share now, key
setup off and on, revoke a connection, approve narrowed), each until its visible result (the
times are printed; `make bench` judges them: bench/owner.py); a pairing made from outside shows
with no click at all. After all of it the panel still renders: no widget error in the page,
nothing on the browser console, and it is compact; its text is readable (4.5:1) in JupyterLab
Light and Dark. Screenshots:
build/owner-panel-before.png, build/owner-panel-after.png, build/owner-panel-dark.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS, chromium_page
from support.lab import KERNEL_READY, running_lab
from support.ownerpanel import P, every_action, notebook
from support.readable import AA, low_contrast

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
MAX_HEIGHT = 1300  # px; the panel that rebuilt itself was 4,770 px tall

pytestmark = BROWSER_MARKS


@pytest.fixture
def lab(tmp_path):
    with running_lab(tmp_path, notebook(tmp_path / "nb")) as served:
        yield served


def test_every_action_in_jupyterlab_shows_its_result_and_leaves_the_panel_whole(lab):
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
            times = every_action(page, url)
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


ACCOUNTS = """\
from decoy_lab.client.connection import Connection
from decoy_lab.sandbox.server import Sandbox
from decoy_lab.widgets import OwnerPanel

sb = Sandbox.start(seed="none")
sb.state.phone.auto_share_after = 60  # the phone's own pass, late enough that the test runs it
quiet = dict(profile=None, on_link=lambda *a: None)
maker = Connection.pair(sb.url, name="Sign-up helper", permissions=[{"permissions": ["account.create"]}], **quiet)
shopper = Connection.pair(sb.url, name="Shopping agent", permissions=[{"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"}], **quiet)
acme = maker.create_account("Acme", username="me@acme.test")
sb.state.approve = "manual"
assert shopper.unlock(acme.account_id, reason="Sign in to Acme").status == "pending"
assert maker.rename_decoy(acme.decoy_id, name="Acme Pro").status == "pending"
print("SANDBOX=" + sb.url)
OwnerPanel(sb.owner, follow=0)  # no follower: the list stays as it was when the phone applies the edit
"""


# The buttons of `root` whose label does not fit them (drawn cut, as "All…" for "Allow"), or that
# run past the panel's right edge (cut off by it).
CUT = """(root) => {
  const edge = document.querySelector(root).closest('.decoy-owner').getBoundingClientRect().right;
  return Array.from(document.querySelectorAll(root + ' button'))
    .filter((b) => b.offsetParent !== null
      && (b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().right > edge + 1))
    .map((b) => b.textContent.trim());
}"""


def test_accounts_allow_an_unlock_and_an_edit_the_phone_applied_first_reads_as_done(tmp_path):
    """001, `decoy_edit_request`: "the owner's devices are woken by a silent push, apply it to the
    sealed details and re-seal them". A queued edit is the phone's to apply on its own: the title
    says when, and Apply pressed after the phone did it says so rather than showing a refusal.
    No button's words are cut beside the long choices, in a wide notebook or a narrow one.
    Screenshots: build/owner-accounts-{light,dark,after}.png."""
    import httpx

    from support.contrast import DARK, LIGHT, set_lab_theme
    from support.lab import notebook_json, run_notebook
    from support.ownerpanel import STATUS, text_of

    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "accounts.ipynb").write_text(notebook_json([ACCOUNTS]))
    section = f"{P} .decoy-owner-accounts"
    low = {}
    with (
        running_lab(tmp_path, tmp_path / "nb") as (base, token),
        chromium_page({"width": 1200, "height": 900}) as (
            page,
            errors,
        ),
    ):
        assert run_notebook(page, base, token, "notebooks/accounts.ipynb", timeout_ms=120_000) == []
        page.wait_for_selector(f"{P} .decoy-owner-apply-edit", state="visible", timeout=30_000)
        url = re.search(r"SANDBOX=(\S+)", page.inner_text(".jp-OutputArea")).group(1)
        title = text_of(page, section)
        cut = {}  # a button whose words do not fit it, at the test's width and at a narrow one
        for width in (1200, 800, 640):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(200)  # the layout follows the resize
            cut[width] = page.evaluate(CUT, section)
        page.set_viewport_size({"width": 1200, "height": 900})
        for theme in (LIGHT, DARK):
            set_lab_theme(page, theme)
            low[theme] = low_contrast(page, section)
            page.locator(section).screenshot(path=str(BUILD / f"owner-accounts-{theme.split()[-1].lower()}.png"))
        set_lab_theme(page, LIGHT)
        page.click(f"{P} .decoy-owner-allow-unlock")
        page.wait_for_function(
            "(s) => document.querySelector(s).textContent.includes('Allowed Shopping agent to read Acme')", arg=STATUS
        )
        assert httpx.post(url + "/_sandbox/keep", json={}).json()["edits"] == 1  # the phone's own pass
        page.click(f"{P} .decoy-owner-apply-edit")
        page.wait_for_function(
            "(s) => document.querySelector(s).textContent.includes('on its own')", arg=STATUS, timeout=15_000
        )
        said = text_of(page, STATUS)
        page.wait_for_selector(f"{P} .decoy-owner-apply-edit", state="hidden", timeout=15_000)
        after = text_of(page, section)
        page.locator(section).screenshot(path=str(BUILD / "owner-accounts-after.png"))
    assert "1 unlock, 1 address edit" in title
    assert "the phone applies a queued edit on its own about 60 s after it comes" in title
    assert said.startswith("✓ The phone had already applied Sign-up helper's edit of ") and "✗" not in said, said
    assert "nothing is waiting" in after, after
    assert cut == {1200: [], 800: [], 640: []}, f"buttons cut or cut off: {cut}"
    assert low == {LIGHT: [], DARK: []}, f"text under {AA}:1 contrast: {low}"
    assert errors == []
