"""Each failed rule's evidence comes with a `curl` line that re-sends its exchange: printed in the
text scorecard, in `--json` and in `--html`; run as printed against a fresh sandbox (its token
read from $DECOY_TOKEN, never written out) it gets the status the agent got."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys

import pytest
from check_agents import AGENT, NEW_TOPIC
from test_check_command import check

from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.wire.crypto import AgentKey

CURL = "/usr/bin/curl"
pytestmark = pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not on this machine")


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    out = tmp_path_factory.mktemp("card")
    done = check(
        "--scenario", "clean", "--json", str(out / "card.json"), "--html", str(out / "card.html"), "--timeout", "90",
        "--", sys.executable, str(AGENT), "--bug", "no-self-wrap", "--topic", NEW_TOPIC,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    return done.stdout, json.loads((out / "card.json").read_text()), (out / "card.html").read_text()


def resend(command: str, base_url: str, token: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DECOY_BASE_URL": base_url, "DECOY_TOKEN": token}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=30)


def test_every_report_gives_the_curl_of_each_exchange_a_failure_names(card):
    text, doc, page = card
    rule = next(r for r in doc["rules"] if r["id"] == "rows.self-wrap")
    (repro,) = rule["reproducers"]  # the one POST that carried the rows
    assert repro["scenario"] == "clean" and repro["exchange"].startswith("POST /api/agent/context/memories #")
    assert isinstance(repro["status"], int)
    assert repro["curl"].startswith('curl -sS -i -X POST "$DECOY_BASE_URL"/api/agent/context/memories')
    assert '-H "Authorization: Bearer $DECOY_TOKEN"' in repro["curl"]
    assert repro["curl"] in text  # printed as it is, to paste into a shell
    assert html.escape(repro["curl"]) in page
    for passed in (r for r in doc["rules"] if r["status"] in ("passed", "not-exercised")):
        assert passed["reproducers"] == []


def test_the_printed_curl_resends_the_exchange_and_gets_the_same_status(card):
    _, doc, _ = card
    repro = next(r for r in doc["rules"] if r["id"] == "rows.self-wrap")["reproducers"][0]
    with Sandbox.start(seed="none") as sandbox:
        perms = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]
        token = pair_agent(sandbox.url, AgentKey.generate(), perms, "curl reproducer")["access_token"]
        assert token not in repro["curl"]
        done = resend(repro["curl"], sandbox.url, token)
        assert done.returncode == 0, done.stderr
        status_line = done.stdout.splitlines()[0]
        assert status_line.split()[1] == str(repro["status"]), done.stdout[:500]
        # what it sent is what the agent sent: the same rows (refused as the agent's were, or stored)
        posted = {r["id"] for r in json.loads(repro["curl"].split("\n", 1)[1].rsplit("\n", 1)[0])["rows"]}
        stored = {r["id"] for r in sandbox.owner.app_view()}
        assert posted <= stored if repro["status"] < 300 else not posted & stored
        # without the token the same line is refused, as the spec's auth says
        assert resend(repro["curl"], sandbox.url, "").stdout.split()[1] == "401"
