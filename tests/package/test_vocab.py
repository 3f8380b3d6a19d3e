"""One vocabulary: the literals the spec gives live in decoy_lab/vocab.py, and nowhere else."""

from __future__ import annotations

import ast
import itertools

from decoy_lab import memory, vocab
from decoy_lab.views import topicmap

from support.source import modules


def _literal(node: ast.expr) -> object:
    """The value of a constant, tuple/list/set literal or frozenset({...}) call, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "frozenset" and node.args:
        inner = _literal(node.args[0])
        return frozenset(inner) if isinstance(inner, tuple | frozenset) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # 100 * 1024
        left, right = _literal(node.left), _literal(node.right)
        return left * right if isinstance(left, int) and isinstance(right, int) else None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    if isinstance(value, list | set):
        try:
            return frozenset(value)
        except TypeError:
            return None
    return value if isinstance(value, str | int | tuple) else None


def _key(value: object) -> object:
    """Order does not make a copy different: compare collections as sets."""
    return frozenset(value) if isinstance(value, tuple | frozenset) else value


SPEC_LITERALS = {_key(getattr(vocab, name)): name for name in vocab.__all__}


def test_no_module_but_vocab_spells_out_a_spec_literal():
    """The spec gives each of these once ("mem0's default categories", the device grant's URN, the
    100 KiB limit, the selection keys …); a second spelling is how the client and the sandbox drift."""
    copies = []
    for mod in modules():
        if mod.name == "decoy_lab.vocab":
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                value = _literal(node.value)
                try:
                    known = value is not None and _key(value) in SPEC_LITERALS
                except TypeError:  # a tuple holding a dict: nothing the vocabulary holds
                    known = False
                if known:
                    copies.append(f"{mod.name}:{node.lineno} copies vocab.{SPEC_LITERALS[_key(value)]}")
            elif isinstance(node, ast.Constant) and node.value == vocab.DEVICE_GRANT:
                copies.append(f"{mod.name}:{node.lineno} spells out vocab.DEVICE_GRANT")
    assert copies == []


def test_the_vocabulary_is_a_leaf_with_its_spec_source_beside_each_literal():
    """A leaf (it imports nothing), and every literal says where in the spec it comes from."""
    (mod,) = [m for m in modules() if m.name == "decoy_lab.vocab"]
    imports = [n for n in ast.walk(mod.tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [n.module for n in imports if isinstance(n, ast.ImportFrom)] == ["__future__"]
    body = mod.tree.body
    documented = {
        t.id
        for stmt, nxt in itertools.pairwise(body)
        if isinstance(stmt, ast.Assign)
        for t in stmt.targets
        if isinstance(t, ast.Name)
        and isinstance(nxt, ast.Expr)
        and isinstance(nxt.value, ast.Constant)
        and ("000 " in nxt.value.value or "001 " in nxt.value.value)
    }
    assert sorted(documented) == vocab.__all__ == sorted(vocab.__all__)


def test_the_memory_model_and_the_map_use_the_vocabulary_itself():
    """The same objects, not equal copies: one place to change when the spec changes."""
    assert memory.CATEGORIES is vocab.CATEGORIES and memory.ENTITY_TYPES is vocab.ENTITY_TYPES
    assert memory.USER_NAMES is vocab.USER_NAMES and memory.MAX_CIPHERTEXT == vocab.MAX_CIPHERTEXT
    # every entity type, and "" (no type), has its colour on the map
    assert set(topicmap.TYPE_COLOURS) == {*vocab.ENTITY_TYPES, ""}


def test_the_tables_keyed_by_a_spec_literal_cover_exactly_that_literal():
    """The sandbox's rule tables that attach something to each selection key (the permission
    families that take it; the selection it belongs to) are keyed by exactly the vocabulary's
    keys, so a key the spec adds cannot be left without its rule. (The map's colour table is
    checked above.)"""
    from decoy_lab.sandbox.checks import grants

    assert set(grants.SELECTION_KEYS) == set(vocab.SELECTION_KEYS)
    assert set(grants.SELECTION_GROUP) == set(vocab.SELECTION_KEYS)
