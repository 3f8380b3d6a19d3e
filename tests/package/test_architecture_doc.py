"""docs/architecture.md is the map of the code, and it stays true: every package (and every leaf
module beside them) is named in it with a line of what it holds, every module it names exists, and
each package's `__init__.py` lists its own modules."""

from __future__ import annotations

import ast
import re

from support.source import PACKAGE, ROOT, modules

DOC = ROOT / "docs" / "architecture.md"


def _packages() -> list[str]:
    """How the map names each package (`memory/`, `sandbox/routes/`) and each leaf (`errors.py`)."""
    names = []
    for m in modules():
        rel = m.path.relative_to(PACKAGE).as_posix()
        if rel.endswith("/__init__.py"):
            names.append(rel.removesuffix("__init__.py"))
        elif "/" not in rel and rel not in ("__init__.py", "__main__.py"):
            names.append(rel)
    return names


def test_every_package_is_on_the_map():
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in _packages() if f"`{name}`" not in text]
    assert missing == [], "name each in docs/architecture.md's one line per package"


def test_each_package_lists_its_modules():
    """The one place to look for a module: its package's docstring names it."""
    missing = []
    for m in modules():
        if m.path.name in ("__init__.py", "__main__.py") or m.path.parent == PACKAGE:
            continue
        doc = ast.get_docstring(_parse_init(m.path.parent)) or ""
        if m.path.name not in doc and m.path.stem not in doc.split():
            missing.append(m.path.relative_to(PACKAGE).as_posix())
    assert missing == [], "list each module in its package's __init__.py docstring"


def _parse_init(folder):
    return ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))


def test_every_module_the_map_names_exists():
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:\w+/)?\w+\.py)`", text))
    stale = sorted(n for n in named if not (PACKAGE / n).exists() and not (ROOT / n).exists())
    assert stale == []


def test_the_map_draws_the_layers_the_contract_checks():
    """The drawing's rows name the same modules as tests/package/test_layers.py's LAYERS."""
    text = DOC.read_text(encoding="utf-8")
    drawing = text.split("```", 2)[1]
    drawn = {w.rstrip("/") for w in re.findall(r"[\w/]+", drawing)}
    for m in modules():
        top = m.name.removeprefix("decoy_lab").removeprefix(".").split(".")[0] or "__init__"
        assert top in drawn, f"{top} is not in the drawing of the layers"
