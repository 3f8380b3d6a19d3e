"""The sentence inventory: every normative sentence of the spec's memory sections, and where it stands.

Each `Sentence` is quoted exactly as in the spec (`doc` `000` the memory contract, `001` the Agent
API), with its section, and is placed one of three ways:

- `rules=(…)`: the rules that enforce it (a rule also enforces every sentence its quoted `spec`
  text lies in: `Sentence.enforced_by`);
- `unobservable="why"`: nothing of it shows in the traffic a check records (what an agent reads
  or decides inside itself, what it tells the person, what the server does);
- `gap="why"`: it shows in traffic, and no rule judges it yet (counted against coverage).

The sentences are data, in inventory.toml beside this module (a reason named there once, in its
`[reasons]` table, stands for its text). `coverage()` is enforced ÷ observable (enforced + gap): docs/rules.md prints it. The test
(tests/conformance/test_inventory.py) finds the normative sentences in the spec by their wording
(spectext.py) and fails on one this inventory does not place.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from decoy_lab.conformance.rules import RULES


@dataclass(frozen=True)
class Sentence:
    doc: str
    section: str
    text: str
    rules: tuple[str, ...] = ()
    unobservable: str = ""
    gap: str = ""

    @property
    def enforced_by(self) -> tuple[str, ...]:
        """Its rules, and every rule whose quoted spec text lies in it."""
        quoting = [r.id for r in RULES if r.doc == self.doc and r.spec in self.text]
        return tuple(dict.fromkeys([*self.rules, *quoting]))

    @property
    def status(self) -> str:
        if self.enforced_by:
            return "enforced"
        return "unobservable" if self.unobservable else "gap"


FILE = Path(__file__).with_name("inventory.toml")


def load(path: Path = FILE) -> list[Sentence]:
    """The sentences of the inventory file, each reason named in `[reasons]` given its text."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    reasons = data.get("reasons", {})
    return [
        Sentence(
            e["doc"],
            e["section"],
            e["text"],
            tuple(e.get("rules", ())),
            reasons.get(e.get("unobservable", ""), e.get("unobservable", "")),
            reasons.get(e.get("gap", ""), e.get("gap", "")),
        )
        for e in data["sentence"]
    ]


SENTENCES: list[Sentence] = load()


def _quoted_by_rules() -> list[Sentence]:
    """Each rule's own quoted sentence that no entry above holds (a fragment of a longer sentence,
    or a sentence the wording test does not pick: "`429`: wait `retry_after_seconds`.")."""
    out: list[Sentence] = []
    for r in RULES:
        if r.doc in ("000", "001") and not any(r.spec in s.text for s in [*SENTENCES, *out]):
            out.append(Sentence(r.doc, r.section, r.spec, (r.id,)))
    return out


SENTENCES += _quoted_by_rules()


def coverage() -> tuple[int, int]:
    """(sentences enforced by a rule, observable sentences: enforced + gaps)."""
    enforced = sum(s.status == "enforced" for s in SENTENCES)
    return enforced, enforced + sum(s.status == "gap" for s in SENTENCES)


def coverage_line() -> str:
    enforced, observable = coverage()
    unobservable = sum(s.status == "unobservable" for s in SENTENCES)
    return (
        f"{enforced} of {observable} observable sentences enforced by a rule ({100 * enforced / observable:.0f} %); "
        f"{observable - enforced} gaps; {unobservable} not observable in traffic; {len(SENTENCES)} in all"
    )
