"""Reproducers that reproduce. A check keeps beside its report (`REPORT.d/`) what stages the same
sandbox (its throwaway owner key, 0600, never inline; the seed and clock are in the report) and
the body of each exchange a failure names; `decoy-lab check --replay REPORT clean#N` sends it
again to a sandbox staged so, and gets the same verdict: the failing row fails again, the
correct rows beside it open (issue: sent to another sandbox, all four rows came back unreadable,
the correct ones too). The curl lines send the body from its file, and run against a sandbox
started with that owner key they store rows the owner opens."""

from __future__ import annotations

import html
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.wire.crypto import AgentKey

from support.check_agents import AGENT, NEW_TOPIC, ROOT, check

CURL = "/usr/bin/curl"
MEMORIES = "/api/agent/context/memories"


def checked(out, bug: str) -> tuple[str, dict, str]:
    done = check(
        "--scenario", "clean", "--json", str(out / "card.json"), "--html", str(out / "card.html"), "--timeout", "90",
        "--", sys.executable, str(AGENT), "--bug", bug, "--topic", NEW_TOPIC,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout, json.loads((out / "card.json").read_text()), (out / "card.html").read_text()


@pytest.fixture(scope="module")
def two_about(tmp_path_factory):
    """A POST of a new topic, its relation and a memory about two things: two correct rows, one not."""
    out = tmp_path_factory.mktemp("two-about")
    return out, *checked(out, "two-about")


@pytest.fixture(scope="module")
def raw_wrap(tmp_path_factory):
    """Every row's owner_wrap seals the raw key, not its base64 text."""
    out = tmp_path_factory.mktemp("raw-wrap")
    return out, *checked(out, "raw-owner-wrap")


def replay(report, which: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--replay", str(report), which],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def failing(doc: dict, rule_id: str) -> dict:
    return next(r for r in doc["rules"] if r["id"] == rule_id)


def test_the_report_keeps_the_owner_key_in_a_0600_file_and_each_named_body_beside_it(raw_wrap):
    out, text, doc, page = raw_wrap
    folder = out / "card.json.d"
    key = folder / "owner-key.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    pem = key.read_text()
    assert "PRIVATE KEY" in pem
    for shown in (text, json.dumps(doc), page):
        assert pem.strip().splitlines()[1] not in shown, "the key is never inline"
    assert doc["staging"] == {
        "owner_key": "owner-key.pem",
        "seeds": {"clean": "demo"},
        "clocks": {"clean": pytest.approx(doc["staging"]["clocks"]["clean"])},
    }
    rule = failing(doc, "rows.owner-opens")
    assert rule["status"] == "failed" and rule["fix"].startswith("Seal owner_wrap as [0x01][0x02]")
    first = rule["reproducers"][0]
    body = folder / first["file"]
    saved = doc["exchanges"][first["key"]]
    assert body.read_bytes() and len(body.read_bytes()) == first["bytes"] == saved["bytes"]
    assert (saved["method"], saved["path"], saved["token"]) == ("POST", MEMORIES, True)
    assert saved["rules"] == ["rows.owner-opens"] and saved["agent_public_key"]
    assert {"permissions": ["memory.read"]} in saved["permissions"], "as the scenario's owner approved it"
    assert first["curl"].endswith(f"--data-binary @{folder / first['file']}"), "the body is sent from its file"
    assert html.escape(first["curl"]) in page and first["curl"] not in text


def test_a_failing_exchange_replayed_fails_again_the_same_way(raw_wrap):
    out, text, doc, _ = raw_wrap
    first = failing(doc, "rows.owner-opens")["reproducers"][0]
    assert f"again: decoy-lab check --replay {out / 'card.json'} {first['key']}" in text
    done = replay(out / "card.json", first["key"])
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout
    assert f"answered {first['status']} (the check's: {first['status']})" in said
    assert "rows.owner-opens  FAILED (as the report has it)" in said
    assert "the owner wrap holds 32 raw bytes" in said
    assert "readable" not in said.replace("unreadable", ""), "no row of this agent opens: each owner_wrap is wrong"


def test_the_correct_rows_beside_a_failing_one_open_when_replayed(two_about):
    out, _, doc, _ = two_about
    rule = failing(doc, "rows.about-once")
    assert rule["status"] == "failed"
    key = rule["reproducers"][0]["key"]
    done = replay(out / "card.json", key.split("#")[1])  # the number alone names it: one scenario has it
    assert done.returncode == 1, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if re.match(r"  (\w+ )?row ", line)]
    opened = [r for r in rows if r.endswith(": readable")]
    assert len(rows) == 3 and len(opened) == 2, done.stdout  # the topic and its relation open; the memory not
    assert "rows.about-once  FAILED (as the report has it)" in done.stdout


def test_replay_mistakes_are_one_line(raw_wrap, tmp_path):
    out, *_ = raw_wrap
    for args, says in (
        ((out / "card.json", "clean#999"), "no exchange 'clean#999'"),
        ((tmp_path / "nothing.json", "clean#1"), "No such file"),
    ):
        done = replay(*args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not on this machine")
def test_the_curl_line_against_a_sandbox_with_the_reports_owner_key_stores_rows_the_owner_opens(two_about):
    out, _, doc, _ = two_about
    repro = failing(doc, "rows.about-once")["reproducers"][0]
    pem = (out / "card.json.d" / "owner-key.pem").read_bytes()
    with Sandbox.start(owner_key=pem, seed="demo") as sandbox:  # decoy-lab sandbox --owner-key REPORT.d/owner-key.pem
        perms = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]
        token = pair_agent(sandbox.url, AgentKey.generate(), perms, "curl reproducer")["access_token"]
        assert token not in repro["curl"]
        env = {**os.environ, "DECOY_BASE_URL": sandbox.url, "DECOY_TOKEN": token}
        done = subprocess.run(["bash", "-c", repro["curl"]], capture_output=True, text=True, env=env, timeout=30)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0].split()[1] == str(repro["status"]), done.stdout[:500]
        sent = {r["id"] for r in json.loads((out / "card.json.d" / repro["file"]).read_bytes())["rows"]}
        seen = {r["id"]: r for r in sandbox.owner.app_view() if r["id"] in sent}
        assert len(seen) == 3
        assert sum(r.get("kind") in ("topic", "link") for r in seen.values()) == 2, seen  # opened by the owner's key
