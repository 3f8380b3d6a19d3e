"""`decoy-lab check` as a user runs it: the scorecard, the exit codes, --json, --junit, --html."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from decoy_lab.conformance.command import main

from support.check_agents import AGENT, NEW_TOPIC, ROOT, check
from support.polling import holds_within, process_running


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "give the agent's command after --"),
        (["--scenario", "nope", "--", sys.executable, str(AGENT)], "no scenario 'nope'"),
        (["--", "no-such-program-here"], "no-such-program-here: no such command"),
        (["--json", "/no/such/dir/x.json", "--", sys.executable], "its folder does not exist"),
        (["--", sys.executable, "no/such/agent.py"], "no/such/agent.py: no such file"),
        (["--replay", "/no/such/report.json", "clean#1"], "/no/such/report.json: No such file"),
        (["--jobs", "0", "--", sys.executable], "give 1 to 16 scenarios at once"),
    ],
)
def test_a_usage_mistake_is_one_line_and_exit_2(capsys, argv, says):
    with pytest.raises(SystemExit) if "--jobs" in argv else _returns() as ended:
        assert main(argv) == 2
    if "--jobs" in argv:
        assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(("error: ", "usage: ")) and says in err and "Traceback" not in err


@contextlib.contextmanager
def _returns():
    yield None


def test_decoy_lab_check_with_no_agent_is_one_line_and_exit_2():
    """Issue: `decoy-lab check` printed the whole top-level help and exited 0 (the check's
    positional took the name `command`, which the `decoy-lab` parser keeps its sub-command in)."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from decoy_lab.workbench.shell.cli import main; sys.exit(main(['check']))"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: give the agent's command after --")


def test_a_failed_rule_exits_1_with_its_sentence_and_exchange_and_every_report(tmp_path):
    out = {k: tmp_path / f"card.{k}" for k in ("json", "xml", "html")}
    done = check(
        "--scenario", "clean", "--json", str(out["json"]), "--junit", str(out["xml"]), "--html", str(out["html"]),
        "--timeout", "90", "--", sys.executable, str(AGENT), "--bug", "raw-owner-wrap", "--topic", NEW_TOPIC,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[2:4] == [
        "",
        "FAILED  rows.owner-opens — The owner's app opens every row the agent writes",
    ]
    assert "“The server never decrypts, so it accepts a wrongly sealed row" in done.stdout
    assert "POST /api/agent/context/memories #" in done.stdout and "32 raw bytes" in done.stdout
    card = json.loads(out["json"].read_text())
    by_id = {r["id"]: r for r in card["rules"]}
    assert set(by_id["rows.owner-opens"]) >= {"id", "title", "spec", "status", "fix", "evidence"}
    assert by_id["rows.owner-opens"]["status"] == "failed" and by_id["rows.owner-opens"]["doc"] == "000"
    assert any("32 raw bytes" in e for e in by_id["rows.owner-opens"]["evidence"])
    assert by_id["writes.same-rows-on-retry"]["status"] == "not-exercised"
    assert card["scenarios"][0]["name"] == "clean" and "Paired." in card["scenarios"][0]["stdout"]
    suite = ET.parse(out["xml"]).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failing = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failing == ["rows.owner-opens"]
    page = out["html"].read_text()
    assert "FAILED rows.owner-opens" in page and "<details>" in page and "owner_wrap" in page
    assert "http" not in page.split("<style>")[0].replace("http-equiv", "")  # offline: nothing fetched


def test_the_correct_agent_exits_0(tmp_path):
    done = check("--scenario", "clean", "--timeout", "90", "--", sys.executable, str(AGENT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 failed" in done.stdout and "\npassed (" in done.stdout and "\nnot exercised (" in done.stdout


def test_url_in_the_arguments_is_replaced():
    done = check("--scenario", "clean", "--timeout", "90", "--", sys.executable, str(AGENT), "--url", "{url}")
    assert done.returncode == 0, done.stdout + done.stderr


def test_help_names_every_exit_status():
    for command in (
        check("--help"),
        subprocess.run(
            [sys.executable, "-c", 'from decoy_lab.workbench.shell.cli import main; main(["check", "--help"])'],
            capture_output=True,
            text=True,
            cwd=ROOT,
        ),
    ):
        text = " ".join(command.stdout.split())
        assert "exit status: 0 no rule failed, 1 a rule failed, 2 a usage mistake, 3 no rule was exercised" in text


def test_rules_md_and_list():
    assert check("--rules-md").stdout.startswith("# The rules `decoy-lab check` judges")
    listing = check("--list").stdout
    assert "lost-answers" in listing and "rows.self-wrap" in listing


def test_an_agent_that_does_nothing_exercises_nothing_and_is_told_why():
    done = check("--scenario", "clean", "--", sys.executable, "-c", "pass")
    assert done.returncode == 3, done.stderr  # nothing was checked: not a pass a CI job could take
    assert "does it read DECOY_BASE_URL" in done.stdout
    assert "0 failed, 0 warnings, 0 passed" in done.stdout and "\npassed (" not in done.stdout


def test_an_interrupted_check_stops_the_agent_too():
    """Ctrl-C (or a notebook's interrupt) during a scenario ends the agent's process group as well."""
    import os
    import signal
    import threading

    from decoy_lab.conformance.scenarios import SCENARIOS, run_scenario

    marker = f"decoy-check-interrupt-{os.getpid()}"
    script = f"import time\n# {marker}\ntime.sleep(60)"

    def running() -> bool:
        return process_running(marker)

    seen_running: list[bool] = []

    def interrupt() -> None:  # Ctrl-C once the agent is running, not after a fixed guess
        seen_running.append(holds_within(running, 30))
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Thread(target=interrupt, daemon=True)
    # as at a terminal, whatever started the suite (a background job starts it with SIGINT ignored)
    was = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_scenario(SCENARIOS["clean"], [sys.executable, "-c", script], timeout=60)
    finally:
        signal.signal(signal.SIGINT, was)
    timer.join(5)
    assert seen_running == [True], "the interrupt came while the agent was running"
    holds_within(lambda: not running(), 10)  # the group is killed; its processes may take a moment to go
    assert not running()
