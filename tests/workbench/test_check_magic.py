"""`%decoy check` in a real IPython shell: the example agent with one bug runs under a scenario
(a real sandbox, inspector and staging hop over loopback HTTP); progress is shown per scenario
as it goes, the scorecard is a widget whose failed rule's evidence opens its flow in a flows view
of that scenario's recording, and the result has `.rules` / `.violations()` as `--json` does."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import ipywidgets as W
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from decoy_lab.conformance.report import Scorecard
from decoy_lab.widgets.flows import FlowsPanel
from decoy_lab.widgets.scorecard import CheckProgress, ScorecardView

from support.magics import decoy_shell, shown_widgets

AGENT = Path(__file__).resolve().parents[2] / "examples" / "agents" / "check" / "memory_agent.py"


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    with decoy_shell(tmp_path_factory.mktemp("decoy-config")) as shell:
        yield shell


@pytest.fixture(scope="module")
def checked(ip):
    """One check of the agent whose owner_wrap seals the raw key (not its base64 text), in clean."""
    with capture_output() as shown:
        card = ip.run_line_magic(
            "decoy", f"check --scenario clean --timeout 90 -- {sys.executable} {AGENT} --bug raw-owner-wrap"
        )
    return card, shown_widgets(shown)


def test_the_result_is_the_scorecard_with_rules_and_violations_as_the_json_has(checked):
    card, _ = checked
    assert isinstance(card, Scorecard)
    by_id = {r["id"]: r for r in card.rules}
    assert set(by_id["rows.owner-opens"]) >= {"id", "title", "spec", "status", "fix", "evidence"}
    assert by_id["rows.owner-opens"]["status"] == "failed"
    assert by_id["rows.owner-opens"]["spec"].startswith("The server never decrypts")  # 000 › Direct HTTP contract
    failed = {v.split(":")[0] for v in card.violations()}
    assert failed == {"rows.owner-opens"}, card.violations()
    assert card.exit_code() == 1


def test_progress_is_shown_per_scenario_then_the_scorecard(checked):
    card, shown = checked
    progress, view = shown
    assert isinstance(progress, CheckProgress) and isinstance(view, ScorecardView)
    run = card.run("clean")
    assert progress.state == {"clean": f"done: exit {run.exit_code}"}  # (it cannot read its rows back: exit 1)
    assert f"{len(run.exchanges)} exchanges" in progress.value
    assert "1 failed" in progress.value
    table = next(c for c in view.children if isinstance(c, W.HTML) and "aria-label='scorecard'" in c.value)
    assert "data-rule='rows.owner-opens' data-status='failed'" in table.value
    statuses = re.findall(r"data-status='([a-z-]+)'", table.value)
    assert statuses[0] == "failed" and statuses.index("passed") > statuses.index("failed")  # failed first
    assert "What to do instead:" in repr(view.children) or any(
        "decoy-fix" in getattr(w, "value", "") for box in view.children for w in getattr(box, "children", ())
    )


def test_a_failed_rules_evidence_opens_its_flow_in_that_scenarios_flows_view(checked):
    card, (_, view) = checked
    buttons = [
        b
        for box in view.children
        if isinstance(box, W.VBox)
        for line in box.children
        if isinstance(line, W.HBox)
        for b in line.children
        if isinstance(b, W.Button)
    ]
    assert buttons, "each evidence line that names an exchange has a button"
    first = buttons[0]
    flow_id = int(first.description.removeprefix("open #"))
    first.click()
    title, panel = view.slot.children
    assert isinstance(panel, FlowsPanel) and f"#{flow_id}" in title.value
    assert panel.flows.picked == flow_id
    flow = panel.flows.flow(flow_id)
    assert (flow.method, flow.path) == ("POST", "/api/agent/context/memories")
    assert panel.flows.detail["id"] == flow_id
    assert len(panel.flows.flows) == len(card.run("clean").exchanges)


@pytest.mark.parametrize(
    "line, said",
    [
        ("check", "give the agent's command after --"),
        ("check -- /no/such/agent", "/no/such/agent: no such command"),
        ("check -- python examples/agents/check/no_such_agent.py", "no_such_agent.py: no such file"),
        (f"check --scenario cleen -- {sys.executable}", "no scenario 'cleen'"),
        (f"check --agent-key /no/such.pem -- {sys.executable}", "--agent-key /no/such.pem: no such file"),
        (f"check --agent-key {__file__} -- {sys.executable}", f"--agent-key {__file__}: not an unencrypted RSA"),
        ("check --timeout soon -- true", "'soon' is not a number of seconds"),
        ("check --timeout 0 -- true", "0 must be more than 0 seconds"),
    ],
)
def test_mistakes_are_one_line(ip, line, said):
    with pytest.raises(UsageError, match="^%decoy check: ") as got:
        ip.run_line_magic("decoy", line)
    assert said in str(got.value)


def test_tab_completes_its_flags(ip):
    m = ip.magics_manager.registry["DecoyMagics"]
    assert set(m.complete("%decoy check --")) == {"--scenario", "--timeout", "--agent-key", "--env"}


def test_the_progress_line_of_a_running_scenario_counts_its_exchanges_as_they_come():
    import time

    from decoy_lab.widgets.scorecard import REDRAW_EVERY

    progress = CheckProgress(["clean", "preparing"])
    assert progress.value.count("waiting") == 2
    progress.started("clean")
    assert "<td class='state'>running</td>" in progress.value
    time.sleep(REDRAW_EVERY)
    progress.flow("clean")
    assert "1 exchanges" in progress.value and progress.value.count("waiting") == 1


@pytest.fixture
def in_notebooks():
    """The kernel's working folder as `make lab` gives it: the checkout's notebooks/."""
    was = os.getcwd()
    os.chdir(AGENT.parents[3] / "notebooks")
    try:
        yield
    finally:
        os.chdir(was)


def test_the_readmes_line_works_as_written_from_notebooks(ip, in_notebooks):
    """Issue: from notebooks/ the README's `python examples/…/memory_agent.py` showed "exit 2 · 0
    exchanges" and nothing else. The agent's file is now found in the checkout, and `python` is the
    kernel's own interpreter (the one with the examples' httpx and cryptography)."""
    with capture_output() as shown:
        card = ip.run_line_magic("decoy", "check --scenario clean -- python examples/agents/check/memory_agent.py")
    assert card.exit_code() == 0, card.violations() or card.run("clean").stderr
    assert card.run("clean").exchanges and card.command.split()[1] == str(AGENT)
    assert card.saved is not None and card.saved.is_file()
    assert not any(isinstance(w, ScorecardView) and "decoy-check-trouble" in repr(w) for w in shown_widgets(shown))


def test_an_agent_that_sent_nothing_shows_its_exit_status_and_the_tail_of_its_stderr(ip, tmp_path):
    agent = tmp_path / "broken_agent.py"
    agent.write_text(
        "import sys\nprint('first line', file=sys.stderr)\nprint('cannot reach Decoy: boom', file=sys.stderr)\nsys.exit(2)\n"
    )
    with capture_output() as shown:
        card = ip.run_line_magic("decoy", f"check --scenario clean -- {sys.executable} {agent}")
    progress, view = shown_widgets(shown)
    assert progress.state == {"clean": "done: exit 2, sent nothing"}
    trouble = view.children[0].value
    assert "decoy-check-trouble" in trouble and "scenario clean: exit 2 · 0 exchanges" in trouble
    assert "the agent sent nothing" in trouble and "cannot reach Decoy: boom" in trouble and "first line" in trouble
    assert card.exit_code() != 0
