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
    types it by a Protocol of what it uses (client/connect.py's `Made`)."""
    assert _any_stand_ins() == []


# A file name two packages share is one subject met in two layers (the client's rule, the
# sandbox's route, the check's judgement of it); each shared name says which subject it is.
# A name shared by different concepts is renamed for what each holds.
SHARED_SUBJECTS = {
    "access": "what a connection holds and asks for: protocol/, and the check's rules on it",
    "accounts": "the account family: the sandbox's routes and the check's rules on them",
    "command": "a package's own `decoy-lab` sub-command (inspector/, conformance/)",
    "completion": "Tab completion: the verbs' table and the notebook's matcher over it",
    "edit": "editing a memory: its PUT bodies (memory/) and their send-and-retry (protocol/)",
    "grants": "named permissions: the sandbox's model and the client's copy of /policies",
    "legacy": "the legacy space: its edits (protocol/) and their bodies opened (inspector/)",
    "opening": "opening a row as the owner's app does: the phone's and the inspector's",
    "pages": "the owner's pages: their HTML (phone/) and their routes (routes/)",
    "pairing": "the device grant: protocol/, the check's rules on it",
    "read": "reading rows: one row (memory/) and a whole load (vault/)",
    "reading": "reading the vault: the shell's tables and the check's rules on waiting reads",
    "sync": "the change feed: the sandbox's route and the shell's sub-commands",
    "topics": "topics: their rows (memory/), reuse before create (protocol/), the check's rules",
    "waiting": "rows the phone still owes: the sandbox's report and the client's words for it",
}


def test_a_file_name_two_packages_share_names_one_subject():
    """ "no two modules share a file name for different concepts" (issue 45)."""
    by_name: dict[str, list[str]] = {}
    for m in modules():
        if not m.is_package and not m.name.endswith(".__main__"):
            by_name.setdefault(m.name.rsplit(".", 1)[1], []).append(m.name)
    shared = {name: where for name, where in by_name.items() if len(where) > 1}
    unexplained = {name: where for name, where in shared.items() if name not in SHARED_SUBJECTS}
    assert unexplained == {}, "rename these for what each holds, or name their one subject"
    assert sorted(set(SHARED_SUBJECTS) - set(shared)) == [], "no longer shared: drop from the list"
