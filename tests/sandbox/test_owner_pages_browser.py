"""The sandbox's home page in Debian chromium: the owner follows a pairing from the home page to
its page and approves it, landing on a page that says what was approved, then allows an unlock
waiting there (an agent asking for an account its grant does not cover: 001, "otherwise the owner
is asked on their phone and the request is `pending`"); text is readable (WCAG AA, 4.5:1, measured
on the rendered page) in the light and the dark colour scheme.
Screenshots: build/sandbox-home.png, build/sandbox-home-dark.png, build/sandbox-approved.png,
build/sandbox-unlock-allowed.png.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent

from support.acctfamily_kit import create
from support.browser import BROWSER_MARKS, CHROMIUM, FLAGS
from support.readable import AA, low_contrast
from support.sandbox_kit import LoopbackLab

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"

pytestmark = BROWSER_MARKS


@pytest.fixture
def sb():
    with Sandbox.start(approve="manual", seed="demo") as running:
        ask = {
            "client_id": "trip-cli-7f3a",
            "name": "Trip planner",
            "authorization_details": [{"permissions": ["memory.read"], "datatypes": ["travel"]}],
        }
        httpx.post(running.url + "/oauth/device", json=ask).raise_for_status()
        tok = pair_agent(running.url, None, [{"permissions": ["memory.save"]}], name="Food guide")
        more = {"permissions": ["memory.read"], "datatypes": ["food"], "reason": "Suggest dinners"}
        headers = {"Authorization": f"Bearer {tok['access_token']}"}
        httpx.post(running.url + "/api/agent/grant-request", json=more, headers=headers).raise_for_status()
        lab = LoopbackLab(running)
        account = create(lab.pair("Sign-ups", "account.create"), {"name": "Acme", "username": "me@acme.test"})
        other = {"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"}
        unlock = {"target": {"kind": "account", "id": account["id"]}, "reason": "Sign in to check the order"}
        assert lab.pair("Shopping helper", other).post("/api/agent/unlock", unlock).json()["status"] == "pending"
        yield running


def test_the_home_page_leads_to_an_approval_and_reads_in_both_schemes(sb):
    from playwright.sync_api import expect, sync_playwright

    BUILD.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            low: dict[str, list] = {}
            for scheme in ("light", "dark"):
                page = browser.new_page(viewport={"width": 1000, "height": 1100}, color_scheme=scheme)
                page.goto(sb.url + "/")
                expect(page.locator("h1")).to_have_text("Your Decoy sandbox")
                page.screenshot(
                    path=str(BUILD / f"sandbox-home{'-dark' if scheme == 'dark' else ''}.png"), full_page=True
                )
                low[scheme] = low_contrast(page)
                if scheme == "dark":
                    page.close()
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(sb.url + "/")
            page.get_by_role("link", name=page.locator(".item a").first.inner_text()).click()
            expect(page.locator("h1")).to_have_text("Connect “Trip planner”")
            expect(page.locator("body")).not_to_contain_text("trip-cli-7f3a")
            page.get_by_role("button", name="Approve").click()
            expect(page.locator("h1")).to_have_text("Approved “Trip planner”")
            expect(page.locator("li")).to_have_text(["Read memories in travel"])
            page.screenshot(path=str(BUILD / "sandbox-approved.png"), full_page=True)
            page.get_by_role("link", name="Back to the home page").click()
            expect(page.locator("body")).to_contain_text("Waiting for you (2)")
            expect(page.locator(".item").first).to_contain_text("“Food guide” asks for more access: Suggest dinners")
            unlock = page.locator(".item.unlock")
            expect(unlock).to_contain_text("“Shopping helper” asks to unlock Acme: Sign in to check the order")
            unlock.get_by_role("button", name="Allow").click()
            expect(page.locator("h1")).to_have_text("Allowed “Shopping helper”")
            expect(page.locator("body")).to_contain_text("Your phone sealed Acme to it, once")
            page.screenshot(path=str(BUILD / "sandbox-unlock-allowed.png"), full_page=True)
            page.get_by_role("link", name="Back to the home page").click()
            expect(page.locator("body")).to_contain_text("Waiting for you (1)")
            expect(page.locator(".item.unlock")).to_have_count(0)
        finally:
            browser.close()
    assert low == {"light": [], "dark": []}, f"text under {AA}:1 contrast: {low}"
    assert errors == [], errors
    assert "Trip planner" in [c["name"] for c in sb.owner.connections()]
    assert httpx.get(sb.url + "/_sandbox/unlocks").json() == {"unlocks": []}, "the unlock was decided"
