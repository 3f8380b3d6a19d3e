"""The sandbox in layers, one sub-package each: a leaf core, then stores/, checks/, phone/, routes/,
and app / server / testing on top; no import cycle, route modules apart. (Size is judged for the
whole package by tests/package/test_layers.py, as a smell to look at, never a cap.)

The project's standard: "Layers (a module imports only layers below it) … The sandbox sits beside
the client and imports only the lower layers (never http or client) — it must stay an independent
check of the client" (ARCHITECTURE)."""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from support.source import Module, cycles, imports, modules

SANDBOX = "decoy_lab.sandbox"
# Bottom first: a module imports only its own layer and those below it. "" is the top level:
# core.py is its own layer at the bottom; app, server, testing and __main__ sit on top.
LAYERS = ["core", "stores", "checks", "phone", "routes", ""]
SUBPACKAGES = ["stores", "checks", "phone", "routes"]
# decoy_lab's leaves and the layers the sandbox may share with the client (never its rules).
MAY_IMPORT = {"errors", "vocab", "shapes", "gcpause", "secret", "argtypes", "wire", "recipes", "memory"}

MODULES = [m for m in modules() if m.name == SANDBOX or m.name.startswith(SANDBOX + ".")]
IMPORTS = [i for m in MODULES for i in imports(m)]


def _short(name: str) -> str:
    return name.removeprefix(SANDBOX).removeprefix(".")


def _layer(name: str) -> int:
    """core → 0, stores.* → 1, …, the top-level modules (app, server, testing, __main__) → top."""
    short = _short(name)
    first = short.split(".")[0]
    if first == "core":
        return 0
    if first in SUBPACKAGES and "." in short:
        return LAYERS.index(first)
    return len(LAYERS) - 1  # a top-level module or a sub-package's __init__ (docstring only)


def _order(package: str) -> list[str]:
    """The order a sub-package's __init__ docstring lists its modules in (import order)."""
    doc = importlib.import_module(f"{SANDBOX}.{package}").__doc__ or ""
    return re.findall(r"^    (\w+)\.py ", doc, flags=re.M)


def test_every_module_has_a_layer():
    names = {_short(m.name) for m in MODULES}
    top = {n for n in names if "." not in n} - {"", "core", *SUBPACKAGES}
    assert top == {"app", "server", "testing", "__main__"}, "a new module goes into its layer's sub-package"
    assert all(n.split(".")[0] in SUBPACKAGES for n in names if "." in n)


def test_core_is_a_leaf():
    assert [i for i in IMPORTS if i.source == f"{SANDBOX}.core" and i.target.startswith(SANDBOX)] == []


def test_imports_go_down_the_layers():
    up = [
        f"{i.source}:{i.line} ({i.where}) imports {i.target}"
        for i in IMPORTS
        if i.target.startswith(SANDBOX + ".") and _layer(i.target) > _layer(i.source)
    ]
    assert up == []


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_imports_only_modules_listed_above_them(package):
    order = _order(package)
    prefix = f"{SANDBOX}.{package}."
    present = sorted(_short(m.name).split(".")[1] for m in MODULES if m.name.startswith(prefix))
    assert sorted(order) == present, f"{package}/__init__.py lists every module of the package, in order"
    bad = []
    for i in IMPORTS:
        if not i.source.startswith(prefix):
            continue
        if i.target == f"{SANDBOX}.{package}" or i.target == SANDBOX:
            bad.append(f"{i.source}:{i.line} imports a package's __init__")
        elif i.target.startswith(prefix):
            src, dst = (order.index(n.rsplit(".", 1)[1]) for n in (i.source, i.target))
            if dst >= src:
                bad.append(f"{i.source}:{i.line} ({i.where}) imports {i.target}, listed below it")
    assert bad == []


def test_no_import_cycle_counting_function_local_imports():
    edges: dict[str, set[str]] = {}
    for i in IMPORTS:
        edges.setdefault(i.source, set()).add(i.target)
    assert [sorted(c) for c in cycles(edges)] == []


def _has_routes(m: Module) -> bool:
    return any(
        isinstance(n, ast.Assign | ast.AnnAssign) and "routes" in ast.unparse(n).split("=")[0] for n in m.tree.body
    )


def test_route_modules_never_import_each_other():
    routes = {m.name for m in MODULES if m.name.startswith(f"{SANDBOX}.routes.")}
    named = {_short(n).split(".")[1] for n in routes}
    assert {"memories", "memwrites", "spaces", "sync", "surface", "oauth", "authorize"} <= named
    assert all(_has_routes(m) for m in MODULES if m.name in routes), "routes/ holds route modules only"
    assert [
        f"{i.source}:{i.line} imports {i.target}" for i in IMPORTS if i.source in routes and i.target in routes
    ] == []


def test_the_sandbox_never_imports_the_client_side():
    """Only decoy_lab's leaves, wire, recipes and memory: never transport, store, vault, rules or client."""
    bad = [
        f"{i.source}:{i.line} imports {i.target}"
        for i in IMPORTS
        if not i.target.startswith(SANDBOX) and i.target.removeprefix("decoy_lab.").split(".")[0] not in MAY_IMPORT
    ]
    assert bad == []
