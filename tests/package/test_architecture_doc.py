"""docs/architecture.md is the map of the code, and it stays true: every module of the package is
named in it, and every module it names exists."""

from __future__ import annotations

import re

from support.source import PACKAGE, ROOT, modules

DOC = ROOT / "docs" / "architecture.md"


def _doc_name(path) -> str:
    """How the map names a module: `wire.py`, `memory/read.py`, a sub-package as `memory/`."""
    rel = path.relative_to(PACKAGE).as_posix()
    if rel.endswith("/__init__.py"):
        return rel.removesuffix("__init__.py")
    return rel


def test_every_module_of_the_package_is_on_the_map():
    text = DOC.read_text(encoding="utf-8")
    missing = [_doc_name(m.path) for m in modules() if f"`{_doc_name(m.path)}`" not in text]
    assert missing == [], "name each in docs/architecture.md: where it sits and what it holds"


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
