"""Concepts kept whole (ARCHITECTURE: "Concepts, not counts"): a helper two modules need is public
in the module that owns its concept, and the project's own classes are typed, never stood in for.
Read from the source tree (`support.source`)."""

from __future__ import annotations

import ast

from support.source import modules


def _private_imports() -> list[str]:
    found = []
    for m in modules():
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("decoy_lab"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{m.name} imports {node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_name():
    """ "no module imports another's `_private` names": such a helper is public in its owner."""
    assert _private_imports() == []


def _any_stand_ins() -> list[str]:
    found = []
    for m in modules():
        for node in m.tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id[:1].isupper()
                and isinstance(node.value, ast.Name)
                and node.value.id == "Any"
            ):
                found.append(f"{m.name}: {node.targets[0].id} = Any")
    return found


def test_no_class_of_ours_is_stood_in_for_by_any():
    """ "no `X = Any` stand-ins for our own classes": a module that needs a class it cannot import
    types it by a Protocol of what it uses (client/pairing.py's `Made`)."""
    assert _any_stand_ins() == []
