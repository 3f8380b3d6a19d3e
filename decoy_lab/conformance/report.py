"""The scorecard: every rule judged over every scenario run, as text, JSON, JUnit XML and HTML.

A rule's status over a check is the worst of its runs (failed, then warning, then passed); it is
`not-exercised` only when no run exercised it. Its evidence names the scenario and the exchange
(`[lost-answers] POST /api/agent/context/memories #12, row 3f2a…: …`); the exchanges a line links
to (its reproducers, its flows) are the ones its `Evidence` carries, never numbers read out of
its text, which holds what the agent sent. What the agent or the server chose is shown escaped
(`decoy_lab.text.escaped`): the text scorecard acts on no terminal, and the JUnit XML is
well-formed whatever the evidence holds.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from decoy_lab.conformance import reproduce
from decoy_lab.conformance.model import FAILED, NOT_EXERCISED, PASSED, STATUSES, WARNING, Evidence, Result, Rule, Run
from decoy_lab.text import escaped

MARKS = {PASSED: "PASSED", WARNING: "WARNING", FAILED: "FAILED", NOT_EXERCISED: "NOT EXERCISED"}
EVIDENCE_SHOWN = 4
UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\ud800-\udfff]")  # DEL, C1, lone surrogates: json.dumps keeps them raw


@dataclass
class Verdict:
    rule: Rule
    status: str
    evidence: list[str] = field(default_factory=list)
    by_scenario: dict[str, str] = field(default_factory=dict)
    reproducers: list[dict[str, Any]] = field(default_factory=list)  # a curl per exchange a failure names

    def spec_line(self) -> str:
        return f"{self.rule.doc} {self.rule.section}: “{self.rule.spec}”"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule.id,
            "title": self.rule.title,
            "severity": self.rule.severity,
            "spec": self.rule.spec,
            "doc": self.rule.doc,
            "section": self.rule.section,
            "status": self.status,
            "evidence": list(self.evidence),
            "scenarios": dict(self.by_scenario),
            "reproducers": list(self.reproducers),
        }


NOTHING_JUDGED = 3  # the exit status of a check that exercised no rule


@dataclass
class Scorecard:
    verdicts: list[Verdict]
    runs: list[Run]
    command: str = ""

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == FAILED]

    def status_of(self, rule_id: str) -> str:
        return next(v.status for v in self.verdicts if v.rule.id == rule_id)

    def counts(self) -> dict[str, int]:
        return {s: sum(v.status == s for v in self.verdicts) for s in STATUSES}

    def exit_code(self) -> int:
        """1 when a rule failed; 3 when none was exercised (nothing was checked, so a CI job
        must not read it as a pass, as pytest's 5 for no tests); else 0."""
        if self.failed:
            return 1
        return 0 if any(v.status != NOT_EXERCISED for v in self.verdicts) else NOTHING_JUDGED

    @property
    def rules(self) -> list[dict[str, Any]]:
        """Every rule's verdict, as `--json` writes it: id, title, spec, status, evidence, …"""
        return [v.to_dict() for v in self.verdicts]

    def violations(self, *, warnings: bool = False) -> list[str]:
        """Each failed rule (and warning, with `warnings=True`) as "rule id: evidence"."""
        worst = {FAILED, WARNING} if warnings else {FAILED}
        return [f"{v.rule.id}: {e}" for v in self.verdicts if v.status in worst for e in v.evidence or [v.status]]

    def run(self, scenario: str) -> Run:
        """The record of one scenario (its exchanges, and the inspector's flows in `.flows`)."""
        found = next((r for r in self.runs if r.scenario == scenario), None)
        if found is None:
            raise KeyError(f"no scenario {scenario!r} in this check: {', '.join(r.scenario for r in self.runs)}")
        return found

    def __repr__(self) -> str:
        c = self.counts()
        return (
            f"<Scorecard {self.command!r}: {c[FAILED]} failed, {c[WARNING]} warnings, {c[PASSED]} passed, "
            f"{c[NOT_EXERCISED]} not exercised over {len(self.runs)} scenario(s)>"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "rules": [v.to_dict() for v in self.verdicts],
            "scenarios": [_run_dict(r) for r in self.runs],
            "counts": self.counts(),
        }


def score(rules: list[Rule], runs: list[Run], command: str = "") -> Scorecard:
    verdicts = []
    for rule in rules:
        results: list[tuple[str, Result]] = [(run.scenario, rule.evaluate(run)) for run in runs]
        status = next((s for s in STATUSES if any(r.status == s for _, r in results)), NOT_EXERCISED)
        evidence: list[str] = [
            Evidence(f"[{name}] {e}", *getattr(e, "exchanges", ()), scenario=name)
            for name, r in results
            if r.status == status
            for e in r.evidence
        ]
        verdict = Verdict(rule, status, evidence, {name: r.status for name, r in results})
        if status in (FAILED, WARNING):
            verdict.reproducers = _reproducers(runs, evidence)
        verdicts.append(verdict)
    return Scorecard(verdicts, runs, command)


def _reproducers(runs: list[Run], evidence: list[str]) -> list[dict[str, Any]]:
    """A curl per exchange the evidence links to, once each, in the order linked."""
    wanted: dict[str, dict[int, None]] = {}  # an ordered set per scenario
    for line in evidence:
        scenario, ids = evidence_refs(line)
        wanted.setdefault(scenario, {}).update(dict.fromkeys(ids))
    return [r for run in runs for r in reproduce.reproducers(run, list(wanted.get(run.scenario, {})))]


def _run_dict(run: Run) -> dict[str, Any]:
    return {
        "name": run.scenario,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "exchanges": len(run.exchanges),
        "faults": [{k: v for k, v in e.items() if k != "result"} for e in run.events],
        "notes": list(run.notes),
        "stdout": run.stdout,
        "stderr": run.stderr,
    }


def text(card: Scorecard) -> str:
    """The scorecard printed by `decoy-lab check`: one block per rule, worst first. Each line is
    escaped on its own (`escaped`): a row id, a stderr line or a method cannot act on the
    terminal, nor start a line of its own."""
    lines = [f"decoy-lab check: {card.command}" if card.command else "decoy-lab check"]
    for run in card.runs:
        ended = "timed out" if run.timed_out else f"exit {run.exit_code}"
        fired = ", ".join(sorted({e["kind"] for e in run.events})) or "none"
        lines.append(f"  scenario {run.scenario}: {len(run.exchanges)} exchanges, {ended}, faults fired: {fired}")
        if not run.exchanges:
            lines.append(
                "    the agent sent nothing through the inspector: does it read DECOY_BASE_URL (or take {url})?"
            )
        if run.timed_out or run.exit_code not in (0, None):
            tail = [t for t in run.stderr.strip().splitlines()[-5:] if t.strip()]
            lines += [f"    | {t}" for t in tail]
    lines.append("")
    order = {s: i for i, s in enumerate(STATUSES)}
    for v in sorted(card.verdicts, key=lambda v: order[v.status]):
        lines.append(f"{MARKS[v.status]:<14} {v.rule.id}  {v.rule.title}")
        lines.append(f"{'':<15}{v.spec_line()}")
        for e in v.evidence[:EVIDENCE_SHOWN]:
            lines.append(f"{'':<15}- {e}")
        if len(v.evidence) > EVIDENCE_SHOWN:
            lines.append(f"{'':<15}- … {len(v.evidence) - EVIDENCE_SHOWN} more (--json has them all)")
        lines += _curl_lines(v)
    c = card.counts()
    lines.append("")
    lines.append(
        f"{c[FAILED]} failed, {c[WARNING]} warnings, {c[PASSED]} passed, {c[NOT_EXERCISED]} not exercised"
        f" over {len(card.runs)} scenario(s)"
    )
    return "\n".join(map(escaped, lines)) + "\n"


def _curl_lines(v: Verdict) -> list[str]:
    """The reproducers of a failure, each under a line saying what it re-sends (the command is
    left unindented, so it pastes into a shell as it is, here-doc and all)."""
    if not v.reproducers:
        return []
    lines = [f"{'':<15}reproduce (export DECOY_BASE_URL and DECOY_TOKEN for a sandbox first):"]
    for r in v.reproducers[:EVIDENCE_SHOWN]:
        lines += [f"{'':<15}# [{r['scenario']}] {r['exchange']} was answered {r['status']}", *r["curl"].split("\n")]
    if len(v.reproducers) > EVIDENCE_SHOWN:
        lines.append(f"{'':<15}# … {len(v.reproducers) - EVIDENCE_SHOWN} more (--json has them all)")
    return lines


def junit(card: Scorecard) -> str:
    """JUnit XML: one test case per rule; failed → <failure>, not exercised → <skipped>. Each
    evidence line is escaped (XML 1.0 has no form, not even a reference, for most controls)."""
    c = card.counts()
    suite = ET.Element(
        "testsuite",
        name="decoy-lab check",
        tests=str(len(card.verdicts)),
        failures=str(c[FAILED]),
        skipped=str(c[NOT_EXERCISED]),
        errors="0",
    )
    for v in card.verdicts:
        case = ET.SubElement(suite, "testcase", classname=v.rule.id.split(".")[0], name=v.rule.id)
        body = "\n".join(map(escaped, [v.spec_line(), *v.evidence]))
        if v.status == FAILED:
            ET.SubElement(case, "failure", message=v.rule.title, type="decoy.conformance").text = body
        elif v.status == NOT_EXERCISED:
            ET.SubElement(case, "skipped", message="no scenario run exercised this rule")
        elif v.status == WARNING:
            ET.SubElement(case, "system-out").text = "WARNING\n" + body
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


CSS = (
    "body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}h2{font-size:1.1em;margin-top:2em}"
    ".failed{color:#a00}.warning{color:#850}.passed{color:#060}.not-exercised{color:#555}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
    "blockquote{margin:.3em 0;padding-left:1em;border-left:3px solid #ccc}pre{white-space:pre-wrap}"
)


def page(card: Scorecard) -> str:
    """An offline HTML page: the scorecard, and each failed rule with the exchanges it names."""
    e = _html
    c = card.counts()
    rows = "".join(
        f"<tr><td class='{v.status}'>{MARKS[v.status]}</td><td>{e(v.rule.id)}</td><td>{e(v.rule.title)}</td></tr>"
        for v in card.verdicts
    )
    failed = []
    for v in card.failed:
        items = "".join(f"<li>{e(x)}</li>" for x in v.evidence)
        failed.append(
            f"<h2 class='failed' id='{e(v.rule.id)}'>FAILED {e(v.rule.id)}: {e(v.rule.title)}</h2>"
            f"<blockquote>{e(v.rule.spec)}<br><small>{e(v.rule.doc)} · {e(v.rule.section)}</small></blockquote>"
            f"<ul>{items}</ul>{_exchanges(card, v)}{_curl_html(v)}"
        )
    runs = "".join(
        f"<h2>scenario {e(r.scenario)}</h2><p>exit {r.exit_code}{' (timed out)' if r.timed_out else ''}, "
        f"{len(r.exchanges)} exchanges</p><pre>{e(r.stdout[-4000:])}</pre>"
        for r in card.runs
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>decoy-lab check</title>"
        f"<style>{CSS}</style></head><body><h1>decoy-lab check</h1><p><code>{e(card.command)}</code></p>"
        f"<p>{c[FAILED]} failed, {c[WARNING]} warnings, {c[PASSED]} passed, {c[NOT_EXERCISED]} not exercised</p>"
        f"<table><tr><th>verdict</th><th>rule</th><th>title</th></tr>{rows}</table>{''.join(failed)}{runs}</body></html>\n"
    )


def _html(text: str) -> str:
    """Text for the page: escaped (controls, bidi, surrogates) and then HTML-escaped."""
    return html.escape(escaped(text, newlines=True))


def evidence_refs(evidence: str) -> tuple[str, list[int]]:
    """The scenario and the exchange numbers one evidence line links to, as its `Evidence`
    carries them (a scorecard's evidence names its scenario); a plain string links nothing. The
    text is never parsed: "#1" in it may be a row id the agent chose."""
    if isinstance(evidence, Evidence):
        return evidence.scenario, list(evidence.exchanges)
    return "", []


def _exchanges(card: Scorecard, v: Verdict) -> str:
    """The exchanges a failed rule's evidence links to, request and answer."""
    e = _html
    out = []
    refs = [evidence_refs(ev) for ev in v.evidence]
    for run in card.runs:
        named = {n for scenario, ids in refs if scenario == run.scenario for n in ids}
        for x in run.exchanges:
            if x.id in named:
                req = json.dumps(x.request, indent=1)[:3000] if x.request is not None else json.dumps(x.form)[:3000]
                resp = json.dumps(x.response, indent=1)[:3000] if x.response is not None else ""
                out.append(
                    f"<details><summary>[{e(run.scenario)}] #{x.id} {e(x.method)} {e(x.path)} → {x.status} ({e(x.ended)})"
                    f"</summary><pre>{e(req)}</pre><pre>{e(resp)}</pre></details>"
                )
    return "".join(out)


def _curl_html(v: Verdict) -> str:
    e = _html
    items = "".join(
        f"<p>[{e(r['scenario'])}] {e(r['exchange'])}, answered {r['status']}:</p><pre class='curl'>{e(r['curl'])}</pre>"
        for r in v.reproducers
    )
    return f"<h3>Reproduce (with DECOY_BASE_URL and DECOY_TOKEN for a sandbox)</h3>{items}" if items else ""


def to_json(card: Scorecard) -> str:
    """The scorecard as JSON (UTF-8 text): a DEL, a C1 control or a lone surrogate an agent sent is
    written as its \\u escape, so the file can be written, and shown, whatever the evidence holds."""
    text = json.dumps(card.to_dict(), indent=2, ensure_ascii=False)
    return UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
