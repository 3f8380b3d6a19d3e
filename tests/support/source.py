"""The package's modules read as source: names, paths and parsed trees, for the structure tests."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "decoy_lab"


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "decoy_lab.memory.read"
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def tree(self) -> ast.Module:
        return _parse(self.path)


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def modules() -> list[Module]:
    """Every module of the package, sorted by dotted name."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(Module(".".join(parts), path))
    return sorted(found, key=lambda m: m.name)
