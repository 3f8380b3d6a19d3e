"""Debian's chromium as the browser tests start it (never a downloaded build)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless with FLAGS, closed afterwards however the test ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def chromium_page(viewport: dict[str, int]) -> Iterator[tuple[Any, list[str]]]:
    """A page of `chromium()` in a context of its own, sized `viewport`, and the list the errors
    it throws uncaught are gathered in (a test asserts it empty at its end)."""
    with chromium() as browser:
        page = browser.new_context(viewport=viewport).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page, errors


def offline_context(browser: Any, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    """A context of `browser`, sized `viewport`, that reaches no network: every http(s) request
    is aborted, and its URL kept in the list returned beside it (a saved page must need none)."""
    context = browser.new_context(viewport=viewport)
    online: list[str] = []
    context.route(re.compile(r"^https?://"), lambda route: (online.append(route.request.url), route.abort()))
    return context, online
