"""Every logger of the package is named after its module (`logging.getLogger(__name__)`), so a
user's `logging.getLogger("decoy_lab.transport")` selects exactly what that package logs, and a
moved module takes its logger's name with it."""

from __future__ import annotations

import ast

from support.source import modules


def test_every_logger_is_named_after_its_module():
    bad = []
    for m in modules():
        for node in ast.walk(m.tree):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "logging.getLogger" and node.args):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id == "__name__":
                continue
            if isinstance(arg, ast.Constant) and not str(arg.value).startswith("decoy_lab"):
                continue  # another library's logger (uvicorn's), configured on purpose
            bad.append(f"{m.name}:{node.lineno} getLogger({ast.unparse(arg)})")
    assert bad == []


def test_the_check_sees_the_loggers():
    assert sum("getLogger(__name__)" in m.path.read_text() for m in modules()) >= 10
