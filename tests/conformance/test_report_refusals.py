"""Every refusal the sandbox answered in a run (`Run.refusals`) is in the report: a line per
scenario in the terminal (grouped, what counts against the agent first), every one in the JSON
with the server's message, a table on the page; a refused write's body beside the report."""

from __future__ import annotations

import json

from decoy_lab.conformance.report import page, refusals, save, score, text
from decoy_lab.conformance.rulebook import Exchange, Run
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.runner import Staging

MEM = "/api/agent/context/memories"
LIMITED = {"code": "RATE_LIMITED", "message": "staged: too many requests", "retry_after_seconds": 3}
INSUFFICIENT = {"code": "INSUFFICIENT_GRANT", "message": "needs Save memories", "permission_request": {"permissions": ["memory.save"]}}  # fmt: skip
REJECTED = {"code": "PLAINTEXT_REJECTED", "message": "a field outside ciphertext: " + "x" * 900}


def x(i, method, path, status, response, body=b""):
    request = json.loads(body) if body else None
    return Exchange(i, method, path, "", status, "answered", float(i), i + 0.1, request, response, {}, [], "t1", body)


def run_with_refusals() -> Run:
    exchanges = [
        x(1, "GET", MEM, 429, LIMITED),  # staged by the hop (its event below)
        x(2, "GET", MEM, 200, {"memories": []}),
        x(3, "POST", MEM, 403, INSUFFICIENT, b'{"rows": [{"id": "r1"}]}'),
        x(4, "POST", MEM, 400, REJECTED, b'{"rows": [{"id": "r1", "preview": "secret"}]}'),
        x(5, "POST", MEM, 400, REJECTED, b'{"rows": [{"id": "r1", "preview": "secret"}]}'),
        x(6, "GET", "/api/agent/grant-request", 404, {"code": "NOT_FOUND", "message": "no such request"}),
        x(7, "POST", "/oauth/token", 400, {"error": "authorization_pending"}),  # the poll's answer: not a refusal
    ]
    events = [{"kind": "answer", "method": "GET", "path": MEM, "status": 429, "code": "RATE_LIMITED", "at": 0.0}]
    return Run("rate-limit", exchanges, events=events, exit_code=1, stderr="error: 400 PLAINTEXT_REJECTED\n")


def test_refusals_lead_with_the_writes_refused_then_calls_then_triggers():
    found = refusals(run_with_refusals())
    assert [(r["exchange"], r["kind"]) for r in found] == [
        (4, "write refused"), (5, "write refused"), (6, "refused"), (1, "trigger"), (3, "trigger"),
    ]  # fmt: skip
    assert [r["exchange"] for r in found if r["staged"]] == [1]
    assert found[0]["code"] == "PLAINTEXT_REJECTED" and len(found[0]["message"]) == 300


def test_the_terminal_gives_a_scenarios_refusals_one_short_line(tmp_path):
    card = score(RULES, [run_with_refusals()], "agent")
    lines = [ln for ln in text(card).splitlines() if ln.startswith("    refused ")]
    assert len(lines) == 1 and len(lines[0]) <= 240, lines
    line = lines[0]
    assert line.startswith("    refused 5: 400 PLAINTEXT_REJECTED POST /context/memories #4 ×2 (write refused)")
    assert "404 NOT_FOUND GET /grant-request #6 (refused)" in line
    assert "429 RATE_LIMITED GET /context/memories #1 (trigger, staged)" in line
    assert "; +1 more in the report" in line  # the 403 trigger: in the report
    assert "x" * 50 not in line and "rows" not in line  # no message, no body on it


def test_the_json_lists_every_refusal_and_the_refused_writes_bodies_are_beside_it(tmp_path):
    card = score(RULES, [run_with_refusals()], "agent", staging=Staging(b"-----BEGIN PRIVATE KEY-----\nx\n"))
    report = save(card, tmp_path / "card.json")
    (scenario,) = json.loads(report.read_text())["scenarios"]
    listed = scenario["refusals"]
    assert [r["exchange"] for r in listed] == [4, 5, 6, 1, 3]
    assert listed[0]["body"] == "rate-limit-exchange-4.body" and "body" not in listed[2]
    assert (tmp_path / "card.json.d" / "rate-limit-exchange-4.body").read_bytes().startswith(b'{"rows"')
    assert listed[-1]["message"] == "needs Save memories" and listed[-1]["kind"] == "trigger"


def test_the_page_has_a_table_of_refusals_per_scenario():
    html = page(score(RULES, [run_with_refusals()], "agent"))
    table = html[html.index("<table class='refusals'>") :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 6  # a head and five refusals
    assert table.index("#4 POST") < table.index("#6 GET") < table.index("#1 GET")
    assert "trigger (staged)" in table and "needs Save memories" in table


def test_a_run_without_refusals_says_nothing_of_them():
    run = Run("clean", [x(1, "GET", MEM, 200, {"memories": []})], exit_code=0)
    card = score(RULES, [run], "agent")
    assert "refused" not in text(card).split("scenarios:")[1] and "class='refusals'" not in page(card)
