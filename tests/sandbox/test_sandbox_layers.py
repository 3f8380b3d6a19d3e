"""The sandbox in layers: a leaf core, no import cycle, route modules apart, small modules.

The project's standard: "Layers (a module imports only layers below it) … The sandbox sits beside
the client and imports only the lower layers (never http or client) — it must stay an independent
check of the client", and "small files (sandbox modules under ~450 lines)"."""

from __future__ import annotations

import ast
from pathlib import Path

import decoy_lab.sandbox

PACKAGE = Path(decoy_lab.sandbox.__file__).parent
MAX_LINES = 470  # "~450": a module past this is split before it grows further


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(sandbox modules, other decoy_lab modules) a module imports anywhere, function-local
    and TYPE_CHECKING imports included."""
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                inside.add(node.module.split(".")[0])
            else:
                inside.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            outside.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("decoy_lab."):
            part = node.module.split(".")[1]
            (inside if part == "sandbox" else outside).add(part)
    return inside, outside


MODULES = {p.stem: _imports(p) for p in PACKAGE.glob("*.py")}


def _routes(stem: str) -> bool:
    return any(
        isinstance(n, (ast.Assign, ast.AnnAssign)) and "routes" in ast.unparse(n).split("=")[0]
        for n in ast.parse((PACKAGE / f"{stem}.py").read_text()).body
    )


def test_core_is_a_leaf():
    assert MODULES["core"][0] == set(), "core.py imports nothing of the sandbox"


def test_no_import_cycle_counting_function_local_imports():
    graph = {m: {d for d in deps if d in MODULES} for m, (deps, _) in MODULES.items() if m != "__init__"}
    graph = {m: deps - {"__init__"} for m, deps in graph.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            assert state.get(d) != 1, "import cycle: " + " → ".join([*path, m, d])
            if d not in state:
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_route_modules_never_import_each_other():
    routes = {m for m in MODULES if m not in ("__init__", "app") and _routes(m)}
    assert {"memories", "memwrites", "spaces", "sync", "surface", "oauth", "authorize"} <= routes
    for m in routes:
        assert not (MODULES[m][0] & routes), f"{m} imports route module(s) {MODULES[m][0] & routes}"


def test_the_sandbox_never_imports_the_client_side():
    for m, (_, outside) in MODULES.items():
        assert not outside & {"http", "client", "session", "writes", "access", "legacy", "frames", "widgets"}, m


def test_no_module_is_large():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}
