"""The suite's own layout: each test module's name is unique across folders (pytest's report and
`-k` name a test by its file), and an optional test tool is imported with `importorskip`, so a
checkout without it skips those tests instead of failing to collect."""

from __future__ import annotations

import re
from collections import Counter

from support.source import ROOT

TESTS = ROOT / "tests"
OPTIONAL = ("nbformat", "nbclient", "playwright")


def test_no_two_test_modules_share_a_name():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []


def test_optional_test_tools_are_imported_with_importorskip():
    plain = re.compile(rf"^(?:import|from) ({'|'.join(OPTIONAL)})\b", re.M)
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in TESTS.rglob("*.py")
        for m in plain.finditer(p.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_no_test_module_imports_another():
    """What tests share lives in tests/support/ ("helpers in tests/support/, no test imports another")."""
    found = [
        f"{p.relative_to(TESTS)}: {line.strip()}"
        for p in TESTS.rglob("*.py")
        for line in p.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(from test_\w+ import|import test_\w+)", line)
    ]
    assert found == []
