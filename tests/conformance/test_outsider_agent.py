"""An account agent none of us wrote into the check: tests/outsider/account_agent.py was written
from 000 and 001 alone, by an engineer who read none of decoy_lab's code, rules or tests, with
twelve faults of its own choosing (`--fault NAME`), each against a plain sentence of the spec.

Before the check was judged by the whole contract it caught six of the twelve, and failed the
correct agent twice. Here the correct agent fails no rule in the scenarios the faults need, and
each fault fails the rule that quotes its sentence — and no other. One run per fault, in the one
scenario that stages what it gets wrong (a lost address answer, other connections); the runs are
made WORKERS side by side on first use.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from decoy_lab.conformance import RULES, SCENARIOS, Run, Scorecard, run_scenario, score
from decoy_lab.conformance.runner import WORKERS

AGENT = Path(__file__).resolve().parents[1] / "outsider" / "account_agent.py"
TIMEOUT = 120.0

# fault → (the scenario that stages it, the rules it must fail, and the sentence it breaks)
FAULTS = {
    "password-in-memory": (
        "clean",
        {"contents.no-secrets", "accounts.no-credentials-in-memory"},
        "000: Keep credentials out of this memory store.",
    ),
    "api-key-string-field": (
        "clean",
        {"accounts.api-key-field"},
        '001: Use "fieldType":"string" for a value that is not secret.',
    ),
    "second-account": (
        "clean",
        {"accounts.one-address"},
        "001: do not create a second account for the same service.",
    ),
    "new-idempotency-key": (
        "lost-answers",
        {"accounts.idempotency-key"},
        "001: Same idempotency_key again (a timeout, a retry) → 200, same id … Never a second address.",
    ),
    "metadata-seal-to-owner": (
        "clean",
        {"accounts.owner-opens"},
        "001: one entry for this connection (the same record sealed to this connection's own public key)",
    ),
    "field-owner-wrap-raw": (
        "clean",
        {"accounts.owner-opens"},
        "001: whose plaintext is the base64 text of the field key (not JSON-quoted)",
    ),
    "unlock-ignore-retry-after": (
        "clean",
        {"accounts.unlock-retry-after"},
        "001: send the same request again after retry_after_seconds",
    ),
    "password-own-key": (
        "clean",
        {"accounts.owner-opens"},
        "001: a headerless envelope to public_key from GET /api/agent/accounts/public-key",
    ),
    "refused-writes": (
        "clean",
        {"outcome.finished"},
        "000: use or verify the documented path rather than reporting a plan as a save",
    ),
    "memory-about-name": (
        "clean",
        {"rows.about-once"},
        '000: {…"about":["account:<account uuid>"]} (never the account\'s name)',
    ),
    "unlock-preparing-gives-up": (
        "clean",
        {"accounts.unlock-retry-after"},
        "001: preparing (…: send the same request again after retry_after_seconds)",
    ),
    "field-wrap-to-stranger": (
        "other-connections",
        {"accounts.owner-opens"},
        "001: optionally grantee_wraps — the same to each connection field-grantees lists",
    ),
}
# scenario → the account rules the correct agent must pass in it (what the faults there break)
CORRECT_IN = {
    "clean": ("accounts.owner-opens", "accounts.api-key-field", "accounts.one-address", "accounts.unlock-retry-after"),
    "lost-answers": ("accounts.idempotency-key",),
    "other-connections": ("accounts.owner-opens",),
}


def command(fault: str | None) -> list[str]:
    return [sys.executable, str(AGENT), *(["--fault", fault] if fault else [])]


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str | None], tuple[Run, Scorecard]]:
    """Every run this module judges, made once, WORKERS side by side (a run mostly waits)."""

    def make(key: tuple[str, str | None]) -> tuple[Run, Scorecard]:
        scenario, fault = key
        run = run_scenario(SCENARIOS[scenario], command(fault), timeout=TIMEOUT)
        return run, score(RULES, [run], " ".join(command(fault)))

    keys = [(s, None) for s in CORRECT_IN] + [(s, fault) for fault, (s, _, _) in FAULTS.items()]
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(keys, pool.map(make, keys), strict=True))


def failed(card: Scorecard) -> dict[str, list[str]]:
    return {v.rule.id: v.evidence for v in card.failed}


def explain(run: Run, card: Scorecard) -> str:
    return f"exit {run.exit_code}, failed {failed(card)}\n--- agent stderr ---\n{run.stderr[-3000:]}"


def test_every_fault_the_agent_knows_is_judged_here() -> None:
    assert {scenario for scenario, _, _ in FAULTS.values()} == set(CORRECT_IN)
    source = AGENT.read_text(encoding="utf-8")
    known = source[source.index("FAULTS = {") : source.index("}", source.index("FAULTS = {"))]
    assert {line.split('"')[1] for line in known.splitlines() if line.strip().startswith('"')} == set(FAULTS)


@pytest.mark.parametrize("scenario", list(CORRECT_IN))
def test_the_correct_agent_fails_no_rule(runs, scenario: str) -> None:
    run, card = runs[(scenario, None)]
    assert not run.timed_out and run.exit_code == 0, explain(run, card)
    assert failed(card) == {}, explain(run, card)
    for rule_id in CORRECT_IN[scenario]:
        assert card.status_of(rule_id) == "passed", f"{rule_id}: {card.status_of(rule_id)}\n{explain(run, card)}"


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_fails_the_rule_of_its_sentence_and_no_other(runs, fault: str) -> None:
    scenario, rules, sentence = FAULTS[fault]
    run, card = runs[(scenario, fault)]
    assert not run.timed_out, explain(run, card)
    assert set(failed(card)) == rules, f"{fault} breaks {sentence!r}\n{explain(run, card)}"
    for rule_id in rules:
        assert all(line.startswith(f"[{scenario}]") for line in failed(card)[rule_id]), failed(card)[rule_id]
