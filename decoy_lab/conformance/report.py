"""The scorecard: every rule judged over every scenario run, as text, JSON, JUnit XML and HTML.

What failed leads: the text and the page give each failed rule (then each warning) its spec
sentence, the exchanges that prove it, what to do instead (fixes.py) and how to send those bytes
again; what passed is a list of ids. Long bodies never reach the terminal: `save(card, REPORT)`
writes the JSON report and, in `REPORT.d/`, each exchange a failure names
(`clean-exchange-7.body`, as the agent sent it) and the check's throwaway owner key
(`owner-key.pem`, 0600), so `decoy-lab check --replay REPORT clean#7` (reproduce.replay) stages
the same sandbox and sends them again.

Each scenario lists every refusal the sandbox answered in it (`refusals(run)`, from `Run.refusals`),
what counts against the agent first: a write refused (nothing stored), another call refused, then
a trigger whose recovery a rule of its own judges (a 401 to refresh, a 403 with a
`permission_request`, a 409, a 429), each marked when the staging hop staged it. The terminal
gives a scenario's refusals one line, grouped; the JSON and the page list them all, with the
server's message; a refused write's body goes to `REPORT.d/` like the bodies a failure names.

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
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decoy_lab.conformance import reproduce
from decoy_lab.conformance.fixes import fix_for
from decoy_lab.conformance.reproduce import OWNER_KEY, body_name, folder_of, shown_path
from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, STATUSES, WARNING, Evidence, Result, Rule, Run
from decoy_lab.conformance.rules.outcome import WRITE_PATHS, recoverable
from decoy_lab.text import escaped

if TYPE_CHECKING:
    from decoy_lab.conformance.runner import Staging

MARKS = {PASSED: "PASSED", WARNING: "WARNING", FAILED: "FAILED", NOT_EXERCISED: "NOT EXERCISED"}
EVIDENCE_SHOWN = 3  # evidence lines a failed rule shows in the terminal (the report keeps them all)
# exchanges a failed rule keeps a reproducer (and a body file) for: a rule failing on every one of
# 9,000 writes would otherwise make 9,000 curl lines, files and HTML blocks that say the same
REPRODUCERS_KEPT = 50
LINE_SHOWN = 240  # characters of one evidence line in the terminal
STDERR_SHOWN = 5  # lines of an agent's stderr under a scenario that went wrong
REFUSALS_SHOWN = 3  # kinds of refusal on a scenario's line in the terminal (the report keeps them all)
MESSAGE_KEPT = 300  # characters of a refusal's message in the report
# what a refusal means for the verdict, worst first
WRITE_REFUSED, REFUSED, TRIGGER = "write refused", "refused", "trigger"
REFUSAL_ORDER = {WRITE_REFUSED: 0, REFUSED: 1, TRIGGER: 2}
ORDER = {s: i for i, s in enumerate(STATUSES)}
UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\ud800-\udfff]")  # DEL, C1, lone surrogates: json.dumps keeps them raw


@dataclass
class Verdict:
    rule: Rule
    status: str
    evidence: list[str] = field(default_factory=list)
    by_scenario: dict[str, str] = field(default_factory=dict)
    reproducers: list[dict[str, Any]] = field(default_factory=list)  # one per exchange a failure names (kept)
    named: int = 0  # how many exchanges the failure names, reproducers kept or not

    def spec_line(self) -> str:
        return f"{self.rule.doc} {self.rule.section}: “{self.rule.spec}”"

    @property
    def fix(self) -> str:
        """What to do instead (fixes.py): the format or the flow the spec asks for."""
        return fix_for(self.rule)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule.id,
            "title": self.rule.title,
            "severity": self.rule.severity,
            "spec": self.rule.spec,
            "doc": self.rule.doc,
            "section": self.rule.section,
            "status": self.status,
            "fix": self.fix,
            "evidence": list(self.evidence),
            "scenarios": dict(self.by_scenario),
            "reproducers": list(self.reproducers),
            "exchanges_named": max(self.named, len(self.reproducers)),
        }


NOTHING_JUDGED = 3  # the exit status of a check that exercised no rule


@dataclass
class Scorecard:
    verdicts: list[Verdict]
    runs: list[Run]
    command: str = ""
    staging: Staging | None = None  # how the check's sandboxes were staged (runner.py), for --replay
    seconds: float | None = None  # the check's wall time
    saved: Path | None = None  # the JSON report, once `save` wrote it (its exchanges in `folder_of(saved)`)

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == FAILED]

    def by_status(self) -> list[Verdict]:
        """The verdicts worst first (failed, warning, passed, not exercised), each in rule order."""
        return sorted(self.verdicts, key=lambda v: ORDER[v.status])

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
        """Every rule's verdict, as `--json` writes it: id, title, spec, status, fix, evidence, …"""
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
        doc: dict[str, Any] = {
            "command": self.command,
            "counts": self.counts(),
            "seconds": None if self.seconds is None else round(self.seconds, 1),
            "rules": [v.to_dict() for v in self.by_status()],
            "scenarios": [_run_dict(r, folder_of(self.saved) if self.saved is not None else None) for r in self.runs],
        }
        if self.staging is not None:
            doc["staging"] = {
                "owner_key": OWNER_KEY if self.saved is not None else None,  # in the report's folder, 0600
                "seeds": dict(self.staging.seeds),
                "clocks": dict(self.staging.clocks),
            }
        doc["exchanges"] = _saved_exchanges(self)
        return doc


def score(rules: list[Rule], runs: list[Run], command: str = "", *, staging: Staging | None = None) -> Scorecard:
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
            named = _named(runs, evidence)
            verdict.reproducers = _reproducers(runs, evidence, named=named)
            verdict.named = sum(len(ids) for _, ids in named)
        verdicts.append(verdict)
    return Scorecard(verdicts, runs, command, staging)


def _named(runs: list[Run], evidence: list[str]) -> list[tuple[Run, list[int]]]:
    """Each run and the exchange ids the evidence links to in it, once each, in the order linked."""
    wanted: dict[str, dict[int, None]] = {}  # an ordered set per scenario
    for line in evidence:
        scenario, ids = evidence_refs(line)
        wanted.setdefault(scenario, {}).update(dict.fromkeys(ids))
    return [(run, list(wanted[run.scenario])) for run in runs if run.scenario in wanted]


def _kept(
    runs: list[Run], evidence: list[str], named: list[tuple[Run, list[int]]] | None = None
) -> list[tuple[Run, list[int]]]:
    """`_named` (given, or found), the first REPRODUCERS_KEPT exchanges of them: those a report keeps
    reproducers for."""
    out, room = [], REPRODUCERS_KEPT
    for run, ids in _named(runs, evidence) if named is None else named:
        if room <= 0:
            break
        out.append((run, ids[:room]))
        room -= len(ids[:room])
    return out


def _reproducers(
    runs: list[Run],
    evidence: list[str],
    folder: Path | None = None,
    *,
    named: list[tuple[Run, list[int]]] | None = None,
) -> list[dict[str, Any]]:
    """How to send again each exchange the evidence links to (reproduce.reproducers), the first
    REPRODUCERS_KEPT of them."""
    return [r for run, ids in _kept(runs, evidence, named) for r in reproduce.reproducers(run, ids, folder)]


def save(card: Scorecard, report: Path | str) -> Path:
    """Write the JSON report to `report` and, in `REPORT.d/`, each exchange a failure or warning
    names (its body as sent) and the check's owner key (0600): what `--replay` needs. The
    reproducers then send the body from its file (`--data-binary @REPORT.d/…`)."""
    path = Path(report)
    folder = folder_of(path)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    card.saved = path
    if card.staging is not None:
        _write_private(folder / OWNER_KEY, card.staging.owner_pem)
    for v in card.verdicts:
        if v.status in (FAILED, WARNING):
            for run, ids in _kept(card.runs, v.evidence):
                reproduce.write_bodies(run, ids, folder)
            v.reproducers = _reproducers(card.runs, v.evidence, folder)
    for run in card.runs:  # a refused write's body, as sent: what the server said no to
        reproduce.write_bodies(run, [r["exchange"] for r in refusals(run) if r["kind"] == WRITE_REFUSED], folder)
    path.write_text(to_json(card), encoding="utf-8")
    return path


def _write_private(path: Path, data: bytes) -> None:
    """`data` in a file only its owner reads (0600 from the start, whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


def _saved_exchanges(card: Scorecard) -> dict[str, dict[str, Any]]:
    """Each exchange a failure or warning names, by its key (`clean#7`): what replays it."""
    if card.saved is None:
        return {}
    folder = folder_of(card.saved)
    out: dict[str, dict[str, Any]] = {}
    for v in card.by_status():
        if v.status in (FAILED, WARNING):
            for run, ids in _kept(card.runs, v.evidence):
                for record in reproduce.records(run, ids, folder):
                    out.setdefault(record["key"], {**record, "rules": []})["rules"].append(v.rule.id)
    return out


def refusals(run: Run) -> list[dict[str, Any]]:
    """Every refusal the sandbox answered in `run` (`Run.refusals`), what counts against the agent
    first: each with the server's `message`, its `kind` (a write refused: nothing was stored; a
    call refused; a trigger, whose recovery a rule judges) and whether the staging hop `staged` it."""
    by_id = {x.id: x for x in run.exchanges}
    staged: dict[tuple[str, str, int], int] = {}  # the hop's answers, counted per request and status
    for e in run.events:
        if e["kind"] == "answer":
            k = (e["method"], e["path"], int(e.get("status") or 0))
            staged[k] = staged.get(k, 0) + 1
    expired = any(e["kind"] in ("expire", "token-expired") for e in run.events)
    out = []
    for r in run.refusals:
        x = by_id[r["exchange"]]
        body = x.response if isinstance(x.response, dict) else {}
        k = (x.method, x.path, x.status or 0)
        hop = staged.get(k, 0) > 0  # the hop answers before the sandbox: its answers come first, in order
        if hop:
            staged[k] -= 1
        hop = hop or (expired and x.status == 401 and x.code == "TOKEN_EXPIRED")
        if recoverable(x):
            kind = TRIGGER
        elif x.path in WRITE_PATHS and x.method in ("POST", "PUT"):
            kind = WRITE_REFUSED
        else:
            kind = REFUSED
        message = str(body.get("message") or body.get("error_description") or "")
        out.append({**r, "kind": kind, "staged": hop, "message": message[:MESSAGE_KEPT]})
    return sorted(out, key=lambda r: (REFUSAL_ORDER[r["kind"]], r["exchange"]))


def refusals_line(run: Run) -> str:
    """One line for the terminal: the scenario's refusals grouped (status, code, request), worst first."""
    found = refusals(run)
    if not found:
        return ""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in found:
        groups.setdefault((r["kind"], r["status"], r["code"], r["method"], r["path"]), []).append(r)
    parts = []
    for (kind, status, code, method, path), rs in list(groups.items())[:REFUSALS_SHOWN]:
        times = f" ×{len(rs)}" if len(rs) > 1 else ""
        how = f"{kind}, staged" if all(r["staged"] for r in rs) else kind
        where = path.removeprefix("/api/agent")  # the line stays short: every agent route starts so
        parts.append(f"{status} {code or '(no code)'} {method} {where} #{rs[0]['exchange']}{times} ({how})")
    more = len(groups) - REFUSALS_SHOWN
    tail = f"; +{more} more in the report" if more > 0 else ""
    return _cut(f"    refused {len(found)}: " + "; ".join(parts) + tail)


def _run_dict(run: Run, folder: Path | None = None) -> dict[str, Any]:
    listed = refusals(run)
    if folder is not None:
        sent = {x.id for x in run.exchanges if x.body}
        for r in listed:
            if r["kind"] == WRITE_REFUSED and r["exchange"] in sent:
                r["body"] = body_name(run.scenario, r["exchange"])
    return {
        "name": run.scenario,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "exchanges": len(run.exchanges),
        "refusals": listed,
        "faults": [{k: v for k, v in e.items() if k != "result"} for e in run.events],
        "notes": list(run.notes),
        "stdout": run.stdout,
        "stderr": run.stderr,
    }


def counts_line(card: Scorecard) -> str:
    c = card.counts()
    took = f" in {card.seconds:.0f} s" if card.seconds is not None else ""
    n = len(card.runs)
    return (
        f"{c[FAILED]} failed, {c[WARNING]} warnings, {c[PASSED]} passed, {c[NOT_EXERCISED]} not exercised"
        f" over {n} scenario{'' if n == 1 else 's'}{took}"
    )


def text(card: Scorecard) -> str:
    """The scorecard printed by `decoy-lab check`, what failed first: each failed rule (then each
    warning) with its spec sentence, a few of its exchanges, what to do instead and how to send
    those bytes again; then what passed as a list of ids, the scenarios, and where the report is.
    No body is printed (they are in the report's folder). Each line is escaped on its own
    (`escaped`): a row id, a stderr line or a method cannot act on the terminal, nor start a line
    of its own."""
    lines = [f"decoy-lab check: {card.command}" if card.command else "decoy-lab check", counts_line(card)]
    for v in card.by_status():
        if v.status in (FAILED, WARNING):
            lines += ["", *_failure_lines(card, v)]
    lines.append("")
    for status in (PASSED, NOT_EXERCISED):
        ids = [v.rule.id for v in card.verdicts if v.status == status]
        if ids:
            head = f"{MARKS[status].lower()} ({len(ids)}): "
            wrapped = textwrap.wrap(
                ", ".join(ids), 100, initial_indent=head, subsequent_indent=" " * 4, break_on_hyphens=False
            )
            lines += wrapped
    lines.append("scenarios:")
    for run in card.runs:
        lines += _scenario_lines(run)
    if card.saved is not None:
        lines += ["", f"report: {shown_path(card.saved)} (its exchanges and the sandbox's owner key in "
                  f"{shown_path(folder_of(card.saved))}/)"]  # fmt: skip
    return "\n".join(map(escaped, lines)) + "\n"


def _failure_lines(card: Scorecard, v: Verdict) -> list[str]:
    pad = " " * 9
    lines = [f"{MARKS[v.status]}  {v.rule.id} — {v.rule.title}", f"  spec:  {v.spec_line()}"]
    shown = _distinct(v.evidence)
    for i, e in enumerate(shown):
        lines.append(f"{'  saw:   ' if i == 0 else pad}{_cut(e)}")
    rest = [e for e in v.evidence if e not in shown]
    if rest:
        where = sorted({evidence_refs(e)[0] for e in rest} - {""})
        also = f" (in {', '.join(where)})" if where else ""
        lines.append(f"{pad}… {len(rest)} more{also}: the report has them all")
    if v.fix:
        wrapped = textwrap.wrap(v.fix, 100)
        lines += [f"  fix:   {wrapped[0]}", *(pad + w for w in wrapped[1:])]
    if v.reproducers:
        first = v.reproducers[0]
        named = max(v.named, len(v.reproducers))
        more = f" (+{named - 1} more exchanges)" if named > 1 else ""
        if first.get("body"):
            lines.append(f"  bytes: {first['body']} ({first['bytes']:,} bytes, answered {first['status']}){more}")
        elif first["bytes"]:
            lines.append(f"  bytes: {first['bytes']:,} bytes sent (saved beside the report){more}")
        if card.saved is not None:
            lines.append(f"  again: decoy-lab check --replay {shown_path(card.saved)} {first['key']}")
    return lines


def _distinct(evidence: list[str]) -> list[str]:
    """Up to EVIDENCE_SHOWN lines, each saying something the others do not (the same reason about
    another row or scenario is one of the "more"), in the order found."""
    seen: dict[str, str] = {}
    for e in evidence:
        seen.setdefault(e.split(": ", 1)[-1], e)
    return list(seen.values())[:EVIDENCE_SHOWN]


def _cut(line: str) -> str:
    return line if len(line) <= LINE_SHOWN else line[: LINE_SHOWN - 1] + "…"


def _scenario_lines(run: Run) -> list[str]:
    ended = "timed out" if run.timed_out else f"exit {run.exit_code}"
    fired = ", ".join(sorted({e["kind"] for e in run.events})) or "none"
    lines = [f"  {run.scenario:<19} {ended}, {len(run.exchanges)} exchanges, faults fired: {fired}"]
    refused = refusals_line(run)
    if refused:
        lines.append(refused)
    if not run.exchanges:
        lines.append("    the agent sent nothing through the inspector: does it read DECOY_BASE_URL (or take {url})?")
    if run.timed_out or run.exit_code not in (0, None) or not run.exchanges:
        tail = [t for t in run.stderr.strip().splitlines() if t.strip()][-STDERR_SHOWN:]
        lines += [f"    | {_cut(t)}" for t in tail]
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
    "body{font:14px system-ui,sans-serif;margin:2em auto;padding:0 1em;max-width:70em;box-sizing:border-box}"
    "h2{font-size:1.1em;margin-top:2em}h3{font-size:1em}"
    ".failed{color:#a00}.warning{color:#850}.passed{color:#060}.not-exercised{color:#555}"
    "table{border-collapse:collapse;max-width:100%}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
    "blockquote{margin:.3em 0;padding-left:1em;border-left:3px solid #ccc}"
    "pre,code,li,td,p{overflow-wrap:anywhere}pre{white-space:pre-wrap;max-height:30em;overflow-y:auto}"
    ".fix{background:#f4f8f4;border-left:3px solid #060;padding:.3em .8em}"
    "td.v,td.r{white-space:nowrap;overflow-wrap:normal}"
)


def page(card: Scorecard, at: Path | str | None = None) -> str:
    """An offline HTML page, what failed first: the verdicts sorted worst first, then each failed
    rule (and warning) with its sentence, evidence, fix, exchanges and reproducers. It fits its
    window: long lines (base64) wrap. `at`: where the page is written, so its links to the
    report's exchange files are relative to it."""
    e = _html
    rows = "".join(
        f"<tr><td class='{v.status} v'>{MARKS[v.status]}</td><td class='r'><a href='#{e(v.rule.id)}'>{e(v.rule.id)}</a>"
        f"</td><td>{e(v.rule.title)}</td></tr>"
        if v.status in (FAILED, WARNING)
        else f"<tr><td class='{v.status} v'>{MARKS[v.status]}</td><td class='r'>{e(v.rule.id)}</td>"
        f"<td>{e(v.rule.title)}</td></tr>"
        for v in card.by_status()
    )
    failed = []
    for v in card.by_status():
        if v.status not in (FAILED, WARNING):
            continue
        items = "".join(f"<li>{e(x)}</li>" for x in v.evidence)
        fix = f"<p class='fix'><b>What to do instead:</b> {e(v.fix)}</p>" if v.fix else ""
        failed.append(
            f"<h2 class='{v.status}' id='{e(v.rule.id)}'>{MARKS[v.status]} {e(v.rule.id)}: {e(v.rule.title)}</h2>"
            f"<blockquote>{e(v.rule.spec)}<br><small>{e(v.rule.doc)} · {e(v.rule.section)}</small></blockquote>"
            f"{fix}<ul>{items}</ul>{_exchanges(card, v)}{_curl_html(card, v, at)}"
        )
    runs = "".join(
        f"<h2>scenario {e(r.scenario)}</h2><p>{'timed out' if r.timed_out else f'exit {r.exit_code}'}, "
        f"{len(r.exchanges)} exchanges</p>{_refusals_html(r)}<pre>{e(r.stdout[-4000:])}</pre>"
        + (f"<pre>{e(r.stderr[-4000:])}</pre>" if r.stderr.strip() else "")
        for r in card.runs
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>decoy-lab check</title>"
        f"<style>{CSS}</style></head><body><h1>decoy-lab check</h1><p><code>{e(card.command)}</code></p>"
        f"<p>{e(counts_line(card))}</p>"
        f"<table><tr><th>verdict</th><th>rule</th><th>title</th></tr>{rows}</table>{''.join(failed)}{runs}</body></html>\n"
    )


def _refusals_html(run: Run) -> str:
    """The scenario's refusals, worst first: what the server said no to, and what it said."""
    e = _html
    found = refusals(run)
    if not found:
        return ""
    rows = "".join(
        f"<tr><td class='{'failed' if r['kind'] == WRITE_REFUSED else 'warning' if r['kind'] == REFUSED else 'not-exercised'} v'>"
        f"{e(r['kind'])}{' (staged)' if r['staged'] else ''}</td><td class='r'>#{r['exchange']} {e(r['method'])} "
        f"{e(r['path'])}</td><td class='r'>{r['status']} {e(r['code'])}</td><td>{e(r['message'])}</td></tr>"
        for r in found
    )
    return f"<table class='refusals'><tr><th>refusal</th><th>request</th><th>answer</th><th>message</th></tr>{rows}</table>"


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


def _curl_html(card: Scorecard, v: Verdict, at: Path | str | None) -> str:
    e = _html
    items = []
    for r in v.reproducers:
        body = ""
        if r.get("file") and card.saved is not None:
            target = folder_of(card.saved) / r["file"]
            href = os.path.relpath(target, Path(at).resolve().parent) if at is not None else target.resolve().as_uri()
            body = f" <a href='{e(href)}'>the body ({r['bytes']:,} bytes)</a>"
        replay = (
            f"<p><code>decoy-lab check --replay {e(shown_path(card.saved))} {e(r['key'])}</code></p>"
            if card.saved is not None
            else ""
        )
        items.append(
            f"<p>[{e(r['scenario'])}] {e(r['exchange'])}, answered {r['status']}:{body}</p>{replay}"
            f"<pre class='curl'>{e(r['curl'])}</pre>"
        )
    if not items:
        return ""
    staged = (
        f" (<code>decoy-lab sandbox --owner-key {e(shown_path(folder_of(card.saved) / OWNER_KEY))}</code>, "
        "an agent paired with it)"
        if card.saved is not None and card.staging is not None
        else ""
    )
    return f"<h3>Reproduce (with DECOY_BASE_URL and DECOY_TOKEN for a sandbox{staged})</h3>{''.join(items)}"


def to_json(card: Scorecard) -> str:
    """The scorecard as JSON (UTF-8 text): a DEL, a C1 control or a lone surrogate an agent sent is
    written as its \\u escape, so the file can be written, and shown, whatever the evidence holds."""
    text = json.dumps(card.to_dict(), indent=2, ensure_ascii=False)
    return UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
