"""docs/security.md names the test behind every defence it claims: each named test module exists,
and each named test function is defined in it (a renamed or deleted test makes the page false)."""

from __future__ import annotations

import ast
import re

from support.source import ROOT

DOC = ROOT / "docs" / "security.md"


def _named() -> list[tuple[str, str | None]]:
    text = DOC.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in re.finditer(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)]


def test_the_page_names_tests():
    assert len([n for n in _named() if n[1]]) >= 25


def test_every_test_the_page_names_exists():
    missing = []
    for path, name in _named():
        file = ROOT / path
        if not file.exists():
            missing.append(path)
            continue
        if name is None:
            continue
        defined = {n.name for n in ast.walk(ast.parse(file.read_text())) if isinstance(n, ast.FunctionDef)}
        if name not in defined:
            missing.append(f"{path}::{name}")
    assert missing == []
