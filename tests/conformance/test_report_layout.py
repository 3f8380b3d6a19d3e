"""Verdicts a person can act on: the scorecard leads with what failed, each failed rule gives
its sentence, its exchange, the bytes (a file beside the report, never inline) and what to do
instead, and reasons do not stutter. Issue: each failed rule repeated a curl line with a
5,330-character body for up to four scenarios (81 KB of terminal, mostly base64); the HTML page
was 11,727 px wide and its table unsorted; `rows.owner-opens` said "the owner's app cannot open
it: the owner's app cannot open owner_wrap: …"."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from decoy_lab.conformance.fixes import FIXES
from decoy_lab.conformance.report import folder_of, page, text
from decoy_lab.conformance.rules import RULES

from support.check_agents import AGENT, ROOT
from support.report_cards import BLOB, big_card


def test_every_rule_says_what_to_do_instead():
    assert {r.id for r in RULES} <= set(FIXES), "a rule with no fix"
    assert all(0 < len(FIXES[r.id]) <= 240 for r in RULES), "a line or two each"


def test_the_text_leads_with_what_failed_and_stays_short_whatever_the_bodies(tmp_path):
    card = big_card(tmp_path)
    shown = text(card)
    lines = shown.splitlines()
    assert re.match(r"\d failed,", lines[1]) and lines[3].startswith("FAILED  ")
    # four failed rules and the ids not exercised (a line per rule id, so it grows with the rulebook);
    # whatever the bodies hold
    assert len(shown) < 4800 + 28 * len(RULES), len(shown)
    assert BLOB[:40] not in shown and max(map(len, lines)) < 300
    block = shown[shown.index("FAILED  rows.owner-opens") :].split("\n\n")[0]
    assert "spec:  000 Direct HTTP contract: “The server never decrypts" in block
    assert "saw:   [clean] POST /api/agent/context/memories #3, row 00000000…" in block
    assert "fix:   Seal owner_wrap as [0x01][0x02]" in block
    body = folder_of(card.saved) / "clean-exchange-3.body"
    assert f"bytes: {body}" in block or "bytes: " + str(body.relative_to(os.getcwd())) in block
    assert body.read_bytes().count(BLOB.encode()) == 8
    assert f"again: decoy-lab check --replay {card.saved}" in block and "clean#3" in block
    assert "… 15 more (in clean, lost-answers, owner-edits, preparing): the report has them all" in block


def test_a_reason_that_says_the_owner_cannot_open_it_is_not_said_twice(tmp_path):
    card = big_card(tmp_path)
    (v,) = [v for v in card.verdicts if v.rule.id == "rows.owner-opens"]
    assert v.evidence and all(e.count("the owner's app cannot open") == 1 for e in v.evidence), v.evidence[0]


def test_the_pages_table_lists_failed_rules_first_and_its_long_lines_wrap(tmp_path):
    card = big_card(tmp_path)
    html = page(card, tmp_path / "card.html")
    verdicts = re.findall(r"<tr><td class='([a-z-]+) v'>", html)
    order = ["failed", "warning", "passed", "not-exercised"]
    assert verdicts == sorted(verdicts, key=order.index) and verdicts[0] == "failed"
    assert "overflow-wrap:anywhere" in html and "white-space:pre-wrap" in html
    assert "What to do instead:" in html and "href='card.json.d/clean-exchange-3.body'" in html


def test_checking_a_buggy_example_agent_prints_a_few_kb(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--scenario", "clean", "--scenario", "lost-answers",
         "--scenario", "preparing", "--json", str(tmp_path / "card.json"), "--timeout", "90",
         "--", sys.executable, str(AGENT), "--bug", "raw-owner-wrap"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(done.stdout) < 4096 and len(done.stderr) < 512, (len(done.stdout), len(done.stderr))
    assert done.stdout.splitlines()[3].startswith("FAILED  rows.owner-opens — ")
    assert "fix:   Seal owner_wrap" in done.stdout and "again: decoy-lab check --replay" in done.stdout
    assert "AQ" not in re.sub(r"\S*\.body", "", done.stdout), "no base64 in the terminal"
