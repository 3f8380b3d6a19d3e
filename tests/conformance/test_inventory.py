"""The sentence inventory: every normative sentence of the spec's memory sections is placed, quoted
exactly, and each placement names a rule that exists (or says why no rule can see it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from decoy_lab.conformance import inventory
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.conformance.spectext import flat, normative, sentences

from support.spec_files import SPEC_FILES, spec_dir


def _spec(doc: str) -> str:
    path: Path = spec_dir() / SPEC_FILES[doc]
    if not path.exists():
        pytest.skip(f"spec not found at {path} (the shared spec beside the clone: ../shared/spec)")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", sorted(SPEC_FILES))
def test_every_normative_sentence_is_placed(doc):
    placed = {flat(s.text) for s in inventory.SENTENCES if s.doc == doc}
    found = [(sec, s) for sec, s in sentences(doc, _spec(doc)) if normative(s)]
    assert len(found) > 50  # the wording finder still finds the sections
    missing = [f"[{sec}] {s}" for sec, s in found if flat(s) not in placed]
    assert not missing, "not in decoy_lab/conformance/inventory.py:\n" + "\n".join(missing)


@pytest.mark.parametrize("doc", sorted(SPEC_FILES))
def test_each_sentence_is_quoted_exactly(doc):
    text = flat(_spec(doc))
    wrong = [s.text for s in inventory.SENTENCES if s.doc == doc and flat(s.text) not in text]
    assert not wrong, wrong


def test_each_sentence_is_placed_once_and_by_rules_that_exist():
    for s in inventory.SENTENCES:
        assert bool(s.rules) + bool(s.unobservable) + bool(s.gap) == 1, s.text
        assert all(r in BY_ID for r in s.enforced_by), (s.text, s.enforced_by)
    enforced = {r for s in inventory.SENTENCES for r in s.enforced_by}
    assert set(BY_ID) <= enforced  # every rule enforces a sentence of the inventory


def test_the_wording_finder():
    assert normative("Never build new rows for a retry; that makes a second topic.")
    assert normative("Keep booking references, passwords and keys out of the text; they belong on the account.")
    assert not normative("A topic is a subject the person and their agents keep coming back to.")
    enforced, observable = inventory.coverage()
    assert 0 < enforced <= observable and enforced / observable >= 0.7
