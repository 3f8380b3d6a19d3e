"""`decoy_lab.text.plural`: a count and its noun, the one way every view and command writes one."""

from __future__ import annotations

import ast

from decoy_lab.text import plural

from support.source import modules


def test_plural_says_one_once_and_separates_thousands():
    assert plural(1, "memory", "memories") == "1 memory"
    assert plural(0, "memory", "memories") == "0 memories"
    assert plural(1204, "memory", "memories") == "1,204 memories"
    assert plural(2, "row") == "2 rows"  # `many` defaults to `one` + "s"
    assert plural(1_000_000, "row is", "rows are") == "1,000,000 rows are"


def test_no_other_module_writes_its_own_plural():
    """Callers import `plural` (vault/counts.py and widgets/pickers.py hand it on), never define one."""
    found = [
        f"{m.name}.{node.name}"
        for m in modules()
        if m.name != "decoy_lab.text"
        for node in ast.walk(m.tree)
        if isinstance(node, ast.FunctionDef) and node.name in ("plural", "counted", "_count")
    ]
    assert found == []
