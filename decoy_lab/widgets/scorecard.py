"""The conformance check in a notebook: its progress per scenario as it runs (`CheckProgress`,
told from the scenarios' threads), then the scorecard (`ScorecardView`): a scenario whose agent
ended badly or sent nothing, with its exit status and the tail of its stderr; every rule's
verdict in a table, failed first; and each failed rule's evidence with a button that opens the
exchange it names in a flows view of that scenario's recording (widgets.flows.FlowsPanel), what
to do instead, and how to send it again (`--replay`, a short `curl` line whose body is a file).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from decoy_lab.conformance.report import MARKS, STDERR_SHOWN, counts_line, evidence_refs, shown_path
from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, WARNING
from decoy_lab.widgets.html import BAD_COLOUR, OK_COLOUR, PENDING_COLOUR, esc

if TYPE_CHECKING:
    from decoy_lab.conformance.report import Scorecard, Verdict
    from decoy_lab.conformance.rulebook import Run
    from decoy_lab.widgets.flows import FlowsPanel

COLOURS = {FAILED: BAD_COLOUR, WARNING: PENDING_COLOUR, PASSED: OK_COLOUR, NOT_EXERCISED: "#57606a"}
REDRAW_EVERY = 0.25  # seconds: a busy scenario redraws its progress line at most this often


class CheckProgress(W.HTML):
    """One line per scenario: waiting, running (exchanges so far, seconds), or how it ended."""

    def __init__(self, names: list[str], **kw: Any):
        self.names = list(names)
        self.state = dict.fromkeys(self.names, "waiting")
        self.exchanges = dict.fromkeys(self.names, 0)
        self.began: dict[str, float] = {}
        self.summary = ""
        self._drawn = 0.0
        self._lock = threading.Lock()  # scenarios run side by side tell it from their threads
        super().__init__(**kw)
        self.add_class("decoy-check-progress")
        self._draw()

    def started(self, name: str) -> None:
        with self._lock:
            self.state[name], self.began[name] = "running", time.monotonic()
            self._draw()

    def flow(self, name: str) -> None:
        """An exchange of `name` finished (any thread)."""
        with self._lock:
            self.exchanges[name] += 1
            if time.monotonic() - self._drawn >= REDRAW_EVERY:
                self._draw()

    def finished(self, name: str, run: Run) -> None:
        with self._lock:
            took = time.monotonic() - self.began.get(name, time.monotonic())
            ended = f"timed out after {took:.0f} s" if run.timed_out else f"exit {run.exit_code}"
            self.exchanges[name] = len(run.exchanges)
            self.state[name] = f"done: {ended}" + ("" if run.exchanges else ", sent nothing")
            self._draw()

    def done(self, card: Scorecard) -> None:
        with self._lock:
            self.summary = counts_line(card)
            self._draw()

    def _draw(self) -> None:
        self._drawn = time.monotonic()
        rows = []
        for n in self.names:
            secs = f"{time.monotonic() - self.began[n]:.0f} s" if self.state[n] == "running" else ""
            rows.append(
                f"<tr data-scenario='{esc(n)}'><th scope='row'>{esc(n)}</th><td class='state'>{esc(self.state[n])}</td>"
                f"<td>{self.exchanges[n]} exchanges</td><td>{secs}</td></tr>"
            )
        tail = f"<p class='decoy-check-summary'>{esc(self.summary)}</p>" if self.summary else ""
        self.value = f"<table aria-label='scenarios'><tbody>{''.join(rows)}</tbody></table>{tail}"


class ScorecardView(W.VBox):
    """The scorecard: rules in a table, then each failed rule's evidence linked to its flow."""

    def __init__(self, card: Scorecard, **kw: Any):
        self.card = card
        self._panels: dict[str, FlowsPanel] = {}
        self.slot = W.VBox()  # the flows view of the scenario whose exchange was opened
        parts: list[W.Widget] = [W.HTML(_table(card))]
        troubles = _troubles(card)
        if troubles:
            parts.insert(0, W.HTML(troubles))
        for v in card.by_status():
            if v.status in (FAILED, WARNING):
                parts.append(self._failure(v))
        super().__init__([*parts, self.slot], **kw)
        self.add_class("decoy-scorecard")

    def _failure(self, v: Verdict) -> W.Widget:
        head = W.HTML(
            f"<h4 style='color:{COLOURS[v.status]}'>{MARKS[v.status]} {esc(v.rule.id)}: {esc(v.rule.title)}</h4>"
            f"<blockquote>“{esc(v.rule.spec)}” <small>{esc(v.rule.doc)} · {esc(v.rule.section)}</small></blockquote>"
        )
        lines: list[W.Widget] = [head]
        for ev in v.evidence:
            scenario, ids = evidence_refs(ev)
            buttons = [self._button(scenario, i) for i in ids if self._has(scenario, i)]
            lines.append(W.HBox([*buttons, W.HTML(f"<span class='decoy-evidence'>{esc(ev)}</span>")]))
        if v.fix:
            lines.append(W.HTML(f"<p class='decoy-fix'><b>What to do instead:</b> {esc(v.fix)}</p>"))
        if v.reproducers:
            lines.append(W.HTML(self._again(v)))
        return W.VBox(lines)

    def _again(self, v: Verdict) -> str:
        """How to send the failure's exchanges again: `--replay` (a sandbox staged the same way),
        and each one's curl line, its body in a file beside the report."""
        first, saved = v.reproducers[0], self.card.saved
        replay = (
            f"<p class='decoy-replay'>send it again: <code>decoy-lab check --replay {esc(shown_path(saved))} "
            f"{esc(first['key'])}</code>"
            + (f" (the body: <code>{esc(first['body'])}</code>, {first['bytes']:,} bytes)" if first.get("body") else "")
            + "</p>"
            if saved is not None
            else ""
        )
        shown = "".join(
            f"<p>[{esc(r['scenario'])}] {esc(r['exchange'])}, answered {r['status']}:</p>"
            f"<pre class='decoy-curl' style='white-space:pre-wrap;overflow-wrap:anywhere'>{esc(r['curl'])}</pre>"
            for r in v.reproducers
        )
        return (
            f"{replay}<details><summary>reproduce with curl ($DECOY_BASE_URL, $DECOY_TOKEN)</summary>{shown}</details>"
        )

    def _has(self, scenario: str, flow_id: int) -> bool:
        try:
            return any(f.id == flow_id for f in self.card.run(scenario).flows)
        except KeyError:
            return False

    def _button(self, scenario: str, flow_id: int) -> W.Button:
        b = W.Button(description=f"open #{flow_id}", tooltip=f"open exchange #{flow_id} of {scenario}")
        b.add_class("decoy-open-flow")
        b.on_click(lambda _: self.open_flow(scenario, flow_id))
        return b

    def open_flow(self, scenario: str, flow_id: int) -> FlowsPanel:
        """Show `scenario`'s recording as a flows view, with exchange `flow_id` opened."""
        from decoy_lab.widgets.flows import FlowsPanel

        panel = self._panels.get(scenario)
        if panel is None:
            panel = self._panels[scenario] = FlowsPanel(self.card.run(scenario).flows)
        panel.flows.pick(flow_id)
        title = W.HTML(f"<h4>scenario {esc(scenario)}: exchange #{flow_id}</h4>")
        self.slot.children = (title, panel)
        return panel


def _troubles(card: Scorecard) -> str:
    """Each scenario whose agent timed out, ended with an error or sent nothing: its exit status
    and the tail of its stderr (an agent that could not start says why there)."""
    out = []
    for run in card.runs:
        if run.exchanges and not run.timed_out and run.exit_code in (0, None):
            continue
        ended = "timed out" if run.timed_out else f"exit {run.exit_code}"
        said = "" if run.exchanges else ": the agent sent nothing through the inspector (does it read DECOY_BASE_URL?)"
        tail = "\n".join([t for t in run.stderr.strip().splitlines() if t.strip()][-STDERR_SHOWN:])
        stderr = f"<pre style='white-space:pre-wrap;overflow-wrap:anywhere'>{esc(tail)}</pre>" if tail else ""
        out.append(
            f"<div class='decoy-check-trouble' data-scenario='{esc(run.scenario)}'><p style='color:{BAD_COLOUR}'>"
            f"scenario {esc(run.scenario)}: {esc(ended)} · {len(run.exchanges)} exchanges{esc(said)}</p>{stderr}</div>"
        )
    return "".join(out)


def _table(card: Scorecard) -> str:
    rows = "".join(
        f"<tr data-rule='{esc(v.rule.id)}' data-status='{v.status}'><td style='color:{COLOURS[v.status]}'>"
        f"{MARKS[v.status]}</td><th scope='row' style='text-align:left'><code>{esc(v.rule.id)}</code></th><td>{esc(v.rule.title)}</td>"
        f"<td>{len(v.evidence)}</td></tr>"
        for v in card.by_status()
    )
    saved = f" · report: <code>{esc(shown_path(card.saved))}</code>" if card.saved is not None else ""
    return (
        f"<p><code>{esc(card.command)}</code>: {esc(counts_line(card))}{saved}</p>"
        "<table aria-label='scorecard' style='text-align:left'><thead><tr><th>verdict</th><th>rule</th><th>title</th>"
        "<th>evidence</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
