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


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module of the package (a module, never a name inside one)
    line: int
    where: str  # "top" | "function" (imported when called) | "type-checking" (only for the checker)


def _resolve(mod: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.name.split(".")
    if not mod.is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(mod: Module) -> list[Import]:
    """Every import of another module of the package, wherever it is written: at the top, inside
    a function, or under `if TYPE_CHECKING:`. A name that is no module of the package (a typo,
    or a module not written yet) is kept as written so a test can name it."""
    known = {m.name for m in modules()}
    found: list[Import] = []

    def add(target: str, line: int, where: str) -> None:
        if (target == "decoy_lab" or target.startswith("decoy_lab.")) and target != mod.name:
            found.append(Import(mod.name, target, line, where))

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            here = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                here = "function" if where == "top" else where
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    visit_one(stmt, "type-checking")
                for stmt in child.orelse:
                    visit_one(stmt, where)
                continue
            visit_one(child, here)

    def visit_one(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, where)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base, node.lineno, where)
        else:
            visit(node, where)

    visit(mod.tree, "top")
    return found


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan), each an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found
