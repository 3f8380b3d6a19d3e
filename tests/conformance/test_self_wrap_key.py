"""`rows.self-wrap-opens`: with the agent's key (`--agent-key`, `violations(agent_key=…)`) each
row's self_wrap must open to the key its owner_wrap holds; without it, self_wrap must be an
RSA-OAEP wrap whose block fits the agent key registered at pairing, and the scorecard says the
stronger check needs --agent-key. Real runs of the example agent, and a row posted by hand over
real HTTP through the plugin's inspector."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx

from decoy_lab import AgentKey, memory
from decoy_lab.conformance.pytest_plugin import violations
from decoy_lab.conformance.rulebook import FAILED, PASSED
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.testing import bearer, pair_agent
from decoy_lab.wire import layouts as wire

from support.check_agents import AGENT, ROOT, SEEDED_TOPIC, check

RULE = BY_ID["rows.self-wrap-opens"]


def test_with_the_agents_key_a_self_wrap_of_another_key_fails_and_a_right_one_passes(runs):
    bad = RULE.evaluate(runs("clean", bug="self-wrap-other-key", with_key=True))
    assert bad.status == FAILED
    assert all("self_wrap holds another key" in e and "not the one owner_wrap holds" in e for e in bad.evidence)
    good = RULE.evaluate(runs("clean", with_key=True))
    assert good.status == PASSED and "opens with the agent's key" in good.evidence[0]


def test_without_the_key_the_layout_is_checked_and_the_stronger_check_is_named(runs):
    result = RULE.evaluate(runs("clean", bug="self-wrap-other-key"))
    assert result.status == PASSED  # a wrap of the wrong key fits the layout: only the key can tell
    assert "--agent-key PEM" in result.evidence[0] and "fits the paired key" in result.evidence[0]


def test_a_self_wrap_to_a_key_of_another_size_fails_without_the_key(decoy_sandbox, decoy_inspector):
    mine = AgentKey.generate()
    tok = pair_agent(decoy_inspector.url, mine, [{"permissions": ["memory.save"]}], "Wrong-size agent")
    keys = memory.RecipientKeys(decoy_sandbox.owner.public_key_b64, mine.public_key_b64)
    row = memory.new_memory_row(keys, "Aisle seat, please.")
    raw = sealing.unwrap_as_agent(row["self_wrap"], mine)
    row["self_wrap"] = wire.b64encode(sealing.wrap_to_agent(raw, AgentKey.generate(3072).public_key_b64))
    r = httpx.post(f"{decoy_inspector.url}/api/agent/context/memories", json={"rows": [row]}, headers=bearer(tok))
    assert r.status_code == 201, r.text
    found = [v for v in violations(decoy_inspector) if v.startswith("rows.self-wrap-opens: ")]
    assert len(found) == 1 and "RSA-OAEP block is 384 bytes" in found[0] and "gives 256" in found[0]


def test_decoy_lab_check_takes_agent_key(tmp_path, agent_pem):
    assert check("--agent-key", str(tmp_path / "none.pem"), "--", sys.executable).returncode == 2
    not_a_key = check("--agent-key", __file__, "--", sys.executable)  # a file, but no key in it: said, no traceback
    assert not_a_key.returncode == 2
    assert f"error: --agent-key {__file__}: not an unencrypted RSA private key" in not_a_key.stderr
    assert "Traceback" not in not_a_key.stderr
    out = tmp_path / "card.json"
    done = check(
        "--scenario", "clean", "--agent-key", str(agent_pem), "--json", str(out), "--timeout", "90",
        "--", sys.executable, str(AGENT), "--topic", SEEDED_TOPIC, "--bug", "self-wrap-other-key", "--key", str(agent_pem),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    rules = {r["id"]: r for r in json.loads(out.read_text())["rules"]}
    assert rules["rows.self-wrap-opens"]["status"] == "failed"
    assert "BEGIN" not in done.stdout + out.read_text()  # the key is never printed


AGENT_TEST = """
import httpx
from decoy_lab import AgentKey, memory
from decoy_lab.conformance.pytest_plugin import violations
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.testing import bearer, pair_agent
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

def test_my_agent(decoy_sandbox, decoy_inspector, pytestconfig):
    mine = AgentKey.from_pem(open(pytestconfig.getoption("--decoy-agent-key")).read())
    tok = pair_agent(decoy_inspector.url, mine, [{"permissions": ["memory.save"]}], "Plugin agent")
    keys = memory.RecipientKeys(decoy_sandbox.owner.public_key_b64, mine.public_key_b64)
    row = memory.new_memory_row(keys, "Aisle seat, please.")
    row["self_wrap"] = wire.b64encode(sealing.wrap_to_agent(random_key(), mine.public_key_b64))
    r = httpx.post(decoy_inspector.url + "/api/agent/context/memories", json={"rows": [row]}, headers=bearer(tok))
    assert r.status_code == 201, r.text
    assert violations(decoy_inspector) == []
"""


def test_the_plugin_takes_the_agents_key_from_the_command_line(tmp_path, agent_pem):
    (tmp_path / "test_agent.py").write_text(AGENT_TEST)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_agent.py"]
    done = subprocess.run(
        [*args, "--decoy-agent-key", str(agent_pem)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "rows.self-wrap-opens: " in done.stdout and "self_wrap holds another key" in done.stdout
