"""The rules as data: quoted verbatim from the spec, documented, and none that cannot fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from decoy_lab.conformance import docs
from decoy_lab.conformance.rulebook import NOT_EXERCISED, Run
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.scenarios import SCENARIOS

from support.spec_files import SPEC_FILES, spec_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rule", [r for r in RULES if r.doc in SPEC_FILES], ids=lambda r: r.id)
def test_each_quoted_sentence_is_in_the_spec_file_it_names(rule):
    path = spec_dir() / SPEC_FILES[rule.doc]
    if not path.exists():
        pytest.skip(f"spec not found at {path}")
    assert rule.spec in path.read_text(encoding="utf-8"), f"{rule.id}: not verbatim in {path.name}"


def test_rules_name_a_known_scenario_a_bug_and_are_unique():
    assert len({r.id for r in RULES}) == len(RULES)
    for r in RULES:
        assert r.severity in ("fail", "warn")
        assert r.scenarios and all(s in SCENARIOS for s in r.scenarios), r.id
        assert r.bug and r.catches, r.id


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_a_run_that_did_nothing_exercises_no_rule(rule):
    assert rule.evaluate(Run("empty", [])).status == NOT_EXERCISED


def test_docs_rules_md_is_up_to_date():
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == docs.rules_md(), (
        "regenerate: python -m decoy_lab.conformance --rules-md > docs/rules.md"
    )
