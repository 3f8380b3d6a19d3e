"""The layer contract: a module imports only its own layer and the layers below it, and no import
cycle exists, counting imports inside functions and under `if TYPE_CHECKING:` too (they are how
cycles hide: the code runs, and the two modules still cannot be understood or changed apart).

The layers, bottom first, are LAYERS below; docs/architecture.md draws the same picture. A new
module takes its place in LAYERS (or matches a sub-package's `*`) before it lands.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from fnmatch import fnmatch

import pytest

from support.source import Import, cycles, imports, modules

# Bottom first. Within a layer modules may import each other (without a cycle); across layers
# imports go down only.
LAYERS: list[tuple[str, list[str]]] = [
    (
        "leaves: the error tree, the spec's literals, shapes, gc pause, Secret, lazy exports, option types",
        ["errors", "vocab", "shapes", "gcpause", "secret", "lazy", "argtypes", "text"],
    ),
    ("bytes: layouts, primitives, dumps of bytes", ["wire", "wire.*"]),
    ("recipes: seal / open, each recording its steps", ["recipes", "recipes.*"]),
    ("the memory model", ["memory", "memory.*"]),
    (
        "the boundary, the store and the loaded vault",
        ["transport", "transport.*", "store", "store.*", "vault", "vault.*"],
    ),
    ("the rules of talking to Decoy", ["protocol", "protocol.*"]),
    ("the sandbox, beside the client", ["sandbox", "sandbox.*"]),
    ("the client facade", ["client", "client.*"]),
    ("views of a vault", ["views", "views.*"]),
    ("the inspector: a recording proxy that opens what it carries", ["inspector", "inspector.*"]),
    ("conformance: rules, scenarios, scorecards", ["conformance", "conformance.*"]),
    ("widgets: thin ipywidgets and anywidgets over the layers below", ["widgets", "widgets.*"]),
    ("the workbench: what a person types; it renders and dispatches", ["workbench", "workbench.*", ""]),
]
# The sandbox is an independent check of the client: it may import these layers only (never the
# boundary, the rules or the client).
SANDBOX_MAY_IMPORT = {
    "leaves: the error tree, the spec's literals, shapes, gc pause, Secret, lazy exports, option types",
    "bytes: layouts, primitives, dumps of bytes",
    "recipes: seal / open, each recording its steps",
    "the memory model",
}

# The only cycles allowed, each named after the open work that removes it (module patterns): a
# cycle is excused only when every module in it matches one entry, so nothing else can join it.
# None today — the five the package had are gone; an entry is for a cycle on its way out, never
# for a new one.
ALLOWED_CYCLES: dict[str, list[str]] = {}


def _layer_of(name: str) -> int | None:
    short = name.removeprefix("decoy_lab").removeprefix(".")
    for i, (_, patterns) in enumerate(LAYERS):
        if any(short == p or (p.endswith("*") and fnmatch(short, p)) for p in patterns):
            return i
    return None


def _excused(members: set[str]) -> str | None:
    for why, patterns in ALLOWED_CYCLES.items():
        if all(any(fnmatch(m, p) for p in patterns) for m in members):
            return why
    return None


def _all_imports() -> list[Import]:
    return [i for m in modules() for i in imports(m)]


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for i in _all_imports():
        edges[i.source].add(i.target)
    return edges


def test_every_module_has_a_layer_and_every_import_names_a_module():
    """(An import under TYPE_CHECKING is the type checker's to judge: it may name a module that is
    still being written.)"""
    known = {m.name for m in modules()}
    assert [m.name for m in modules() if _layer_of(m.name) is None] == [], "place it in LAYERS"
    missing = [i for i in _all_imports() if i.target not in known and i.where != "type-checking"]
    assert [f"{i.source}:{i.line} imports {i.target}" for i in missing] == []


def test_imports_go_down_the_layers():
    """A module imports only its own layer and those below it (ARCHITECTURE: "data flows one way")."""
    up = []
    for i in _all_imports():
        src, dst = _layer_of(i.source), _layer_of(i.target)
        if src is None or dst is None or dst <= src:
            continue
        if _excused({i.source, i.target}):
            continue
        up.append(f"{i.source}:{i.line} ({i.where}) imports {i.target}, a layer above it")
    assert up == []


def test_the_sandbox_imports_only_the_lower_layers():
    """ "The sandbox sits beside the client and imports only the lower layers (never http or
    client) — it must stay an independent check of the client.\""""
    bad = []
    for i in _all_imports():
        if not i.source.startswith("decoy_lab.sandbox") or i.target.startswith("decoy_lab.sandbox"):
            continue
        layer = _layer_of(i.target)
        if layer is None or LAYERS[layer][0] not in SANDBOX_MAY_IMPORT:
            bad.append(f"{i.source}:{i.line} ({i.where}) imports {i.target}")
    assert bad == []


def test_no_import_cycle_but_the_named_exceptions():
    """Counting function-local and TYPE_CHECKING imports, the only cycles are the ones ALLOWED_CYCLES
    names, and no other module has joined one of them."""
    found = cycles(_edges())
    assert [sorted(c) for c in found if _excused(c) is None] == []


def _memory_order() -> list[str]:
    """The order memory/__init__.py's docstring lists its modules in ("each importing only those
    above it")."""
    import decoy_lab.memory

    return re.findall(r"^    (\w+)\.py ", decoy_lab.memory.__doc__ or "", flags=re.M)


def test_the_memory_modules_import_only_those_listed_above_them():
    order = _memory_order()
    present = sorted(m.name.rsplit(".", 1)[1] for m in modules() if m.name.startswith("decoy_lab.memory."))
    assert sorted(order) == present, "memory/__init__.py lists every module of the package, in order"
    bad = []
    for i in _all_imports():
        if not i.source.startswith("decoy_lab.memory."):
            continue
        if i.target == "decoy_lab.memory":
            bad.append(f"{i.source}:{i.line} imports its own package")
        elif i.target.startswith("decoy_lab.memory."):
            src, dst = (order.index(n.rsplit(".", 1)[1]) for n in (i.source, i.target))
            if dst >= src:
                bad.append(f"{i.source}:{i.line} ({i.where}) imports {i.target}, listed below it")
    assert bad == []


@pytest.mark.parametrize("where", ["function", "type-checking"])
def test_hidden_imports_are_counted(where):
    """The contract sees the imports a top-of-file reading misses; the package has some of each."""
    counts = Counter(i.where for i in _all_imports())
    assert counts[where] > 0 and counts["top"] > counts[where]


# -- size as a smell: an outlier is flagged for a look, never a reason to cut a concept in two --
LOOK_AT_MODULE_LINES, LOOK_AT_FUNCTION_LINES = 800, 120


def _sizes() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    mods, funcs = [], []
    for m in modules():
        mods.append((len(m.path.read_text(encoding="utf-8").splitlines()), m.name))
        for node in ast.walk(m.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                funcs.append(((node.end_lineno or node.lineno) - node.lineno + 1, f"{m.name}.{node.name}"))
    return mods, funcs


@pytest.mark.parametrize("kind, bound", [("module", LOOK_AT_MODULE_LINES), ("function", LOOK_AT_FUNCTION_LINES)])
def test_no_outlier_in_size(kind, bound):
    """ARCHITECTURE: "Size is a smell to look at (a module past ~800 lines, a function past ~120),
    never a reason to cut a concept in two". The failure names the biggest first."""
    mods, funcs = _sizes()
    found = {"module": mods, "function": funcs}[kind]
    over = sorted(((n, name) for n, name in found if n > bound), reverse=True)
    assert [f"{name}: {n} lines" for n, name in over] == []
