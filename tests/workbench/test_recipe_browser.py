"""The recipe view in a real browser (JupyterLab + Debian chromium + Playwright): a flipped byte
is marked, clicking a field lights its bytes, clicking a byte finds its field, ←/→ step, and an
edit that puts the flipped byte back turns the ✗ into a ✓ through the kernel.

Screenshots of a passing trace, a failing (flipped byte) trace and a keyless dump are kept at
build/recipe-pass.png, build/recipe-flipped.png and build/recipe-dump.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.lab import run_notebook, running_lab

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
pytestmark = BROWSER_MARKS
FLIP_AT = 21  # inside the ciphertext of a VAULT blob

CELLS = [
    f"""
from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey
from decoy_lab.recipes.dump import open_blob
from decoy_lab.recipes.trace import Trace
from decoy_lab.widgets import Stepper

me, owner = AgentKey.generate(), AgentKey.generate()
row = memory.new_memory_row(memory.RecipientKeys(owner.public_key_b64, me.public_key_b64), "Prefers short answers.")
served = {{"id": row["id"], "kid": row["kid"], "ciphertext": row["ciphertext"], "wrapped_key": row["self_wrap"]}}
key = sealing.unwrap_as_agent(row["self_wrap"], me)
blob = wire.b64decode(row["ciphertext"])
raw = bytearray(blob)
raw[{FLIP_AT}] ^= 0x01
""",
    """
passing = Trace("unseal")
memory.read_memory_row(served, me, trace=passing)
Stepper(passing).add_class("recipe-pass")
""",
    f"""
flipped = Trace("open with byte {FLIP_AT} flipped", served=blob)
try:
    sealing.open_vault(key, bytes(raw), trace=flipped)
except Exception:
    pass
Stepper(flipped).add_class("recipe-flipped")
""",
    """
Stepper(open_blob(row["self_wrap"])).add_class("recipe-dump")
""",
    """
Stepper(open_blob("aGVsbG8gd29ybGQ=")).add_class("recipe-hello")
""",
    """
Stepper(open_blob(sealing.seal_vault(key, bytes(70_000)), key=key)).add_class("recipe-large")
""",
]


@pytest.fixture
def lab(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.strip()) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "recipe.ipynb")
    with running_lab(tmp_path, folder) as served:
        yield served


def test_recipe_view_marks_links_steps_and_reruns_in_the_browser(lab):
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            assert run_notebook(page, base, token, "notebooks/recipe.ipynb") == []

            # A passing trace opens on the layout, not on base64 decode.
            passing = page.locator(".recipe-pass .decoy-recipe")
            expect(passing.locator(".dr-step.open .dr-name")).to_contain_text("parse agent envelope")
            expect(passing.locator(".dr-headline")).to_contain_text("✓ all")
            passing.screenshot(path=str(BUILD / "recipe-pass.png"))
            # A step's output is there byte for byte too: the decrypted memory, with its JSON members.
            passing.locator(".dr-step-head", has_text="AES-256-GCM open").last.click()
            passing.get_by_role("button", name="output bytes").click()
            expect(passing.locator(".dr-summary")).to_contain_text("given out by this step")
            expect(passing.locator(".dr-node", has_text="observation").first).to_be_visible()

            # The flipped byte is marked, in the failing step that is open.
            view = page.locator(".recipe-flipped .decoy-recipe")
            expect(view.locator(".dr-step.open .dr-mark")).to_have_text("✗")
            changed = view.locator(".dr-step.open .dr-b.dr-changed")
            expect(changed).to_have_count(1)
            assert changed.get_attribute("data-o") == str(FLIP_AT)
            expect(view.locator(".dr-summary")).to_contain_text("1 byte differs from the served blob")

            # Clicking a field lights exactly its bytes; clicking a byte finds its field and step.
            view.locator(".dr-node", has_text="tag").first.click()
            lit = view.locator(".dr-hex .dr-b.dr-lit")
            expect(lit).to_have_count(16)
            offsets = sorted(int(x) for x in lit.evaluate_all("els => els.map(e => e.dataset.o)"))
            total = int(view.locator(".dr-node").first.locator(".dr-range").inner_text().split(":")[1].rstrip("]"))
            assert offsets == list(range(total - 16, total))
            view.locator(f'.dr-hex .dr-b[data-o="{FLIP_AT}"]').click()
            expect(view.locator(".dr-node-sel")).to_contain_text("ciphertext")
            expect(view.locator(".dr-info")).to_contain_text("changed from the served blob")
            expect(view.locator(".dr-info .dr-steplink")).to_have_count(2)
            # the steps that read it, as a list: one line each, never run-on text
            steps = view.locator(".dr-info ul.dr-info-steps > li")
            expect(steps).to_have_text(["step 1: parse vault", "step 2: AES-256-GCM open"])
            tops = steps.evaluate_all("els => els.map(e => e.getBoundingClientRect().top)")
            assert tops[0] < tops[1], "each step on its own line"
            expect(view.locator(".dr-info-label")).to_have_text("read in steps:")
            view.screenshot(path=str(BUILD / "recipe-flipped.png"))

            # ←/→ move between steps.
            where = view.locator(".dr-where")
            expect(where).to_have_text("step 2 of 2")
            view.locator(".dr-step.open .dr-step-head").click()
            page.keyboard.press("ArrowLeft")
            expect(where).to_have_text("step 1 of 2")
            expect(view.locator(".dr-step.open .dr-name")).to_contain_text("parse vault")
            page.keyboard.press("ArrowRight")
            expect(where).to_have_text("step 2 of 2")

            # Edit the flipped byte back in place and re-run: the ✗ turns into a ✓.
            cell = view.locator(f'.dr-hex .dr-b[data-o="{FLIP_AT}"]')
            flipped_hex = cell.inner_text()
            cell.dblclick()
            field = view.locator(".dr-edit-hex")
            expect(field).to_have_value(flipped_hex)
            field.fill(f"{int(flipped_hex, 16) ^ 0x01:02x}")
            field.press("Enter")
            expect(view.locator(".dr-headline")).to_contain_text("✓ all 2 steps passed", timeout=20_000)
            expect(view.locator('.dr-step[data-step="1"] .dr-mark')).to_have_text("✓")
            expect(view.locator(".dr-step.open .dr-b.dr-changed")).to_have_count(0)
            expect(where).to_have_text("step 2 of 2")

            # A field edited in place: the mode byte set to 07 stops the parse, and it is marked.
            view.locator('.dr-step[data-step="0"] .dr-step-head').click()
            view.locator(".dr-node").filter(has=page.locator("b", has_text=re.compile(r"^mode$"))).dblclick()
            expect(field).to_have_value("01")
            field.fill("07")
            field.press("Enter")
            expect(view.locator(".dr-headline")).to_contain_text("failed at step 1 of 1: parse vault", timeout=20_000)
            expect(view.locator('.dr-step.open .dr-b.dr-changed[data-o="1"]')).to_have_count(1)
            # the failing field is the mode byte alone, not the blob from it on
            bad = view.locator(".dr-node", has_text="✗ mode")
            expect(bad.locator(".dr-range").first).to_have_text("[1:2]")
            bad.first.click()
            expect(view.locator(".dr-hex .dr-b.dr-lit")).to_have_count(1)
            expect(view.locator(".dr-info")).to_have_text("✗ mode [1:2] · 1 byte · parsing failed here")
            view.screenshot(path=str(BUILD / "recipe-mode.png"))

            # Export: the kernel writes the script, the browser saves it.
            with page.expect_download() as saved:
                view.get_by_role("button", name="Export Python").click()
            script = Path(saved.value.path()).read_text()
            assert saved.value.suggested_filename.endswith(".py") and "AESGCM(key).decrypt" in script
            assert "DECOY_KEY" in script and 'parse(blob("blob"), "vault")' in script

            # A keyless dump opens on the layout it found and says how sure it is.
            dump = page.locator(".recipe-dump .decoy-recipe")
            expect(dump.locator(".dr-verdict")).to_contain_text("key length 256 matches RSA-2048")
            expect(dump.locator(".dr-step.open .dr-name")).to_contain_text("parse agent envelope")
            # its headline says it was not opened, never "all passed" over a body that says so
            expect(dump.locator(".dr-headline")).to_contain_text("2 steps passed, not opened")
            expect(dump.locator(".dr-headline")).not_to_contain_text("all")
            dump.screenshot(path=str(BUILD / "recipe-dump.png"))
            hello = page.locator(".recipe-hello .decoy-recipe")
            expect(hello.locator(".dr-verdict")).to_contain_text("no known layout fits")
            expect(hello.locator(".dr-head")).not_to_contain_text(re.compile("envelope —"))
            expect(hello.locator(".dr-step.open .dr-asc")).to_contain_text("hello world")

            # A 70 KB blob: every byte is reachable, but only the rows in view are in the page.
            large = page.locator(".recipe-large .decoy-recipe")
            hexview = large.locator(".dr-step.open .dr-hex")
            assert large.locator(".dr-row").count() <= 30
            hexview.evaluate("el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
            last = 2 + 12 + 70_000 + 16 - 1
            expect(large.locator(f'.dr-b[data-o="{last}"]')).to_be_attached()
            assert large.locator(".dr-row").count() <= 30
        finally:
            browser.close()
