"""The Node example agent (examples/agents/check/node/agent.mjs) through `decoy-lab check`.

The correct agent breaks no rule in any default scenario, and passes the rules each scenario is
there to exercise; each `--bug` variant fails exactly the rule of its class, and no other. Each
agent run is bounded by the scenario's time limit (the command is killed past it), and each
command-line run by `subprocess.run(timeout=…)`.

The scenario runs are made WORKERS side by side (as the Python agent's mutation suite runs them:
a scenario mostly waits): the first test of a kind to ask makes those of every selected case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from decoy_lab.conformance import PASSED, RULES, SCENARIOS, Run, Scorecard, run_scenario, score
from decoy_lab.conformance.runner import WORKERS
from decoy_lab.conformance.scenarios import DEFAULT

from support.check_agents import ALSO_FAILS

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "agents" / "check" / "node" / "agent.mjs"
NODE = shutil.which("node")
TIMEOUT = 120.0  # seconds per agent run (slow-pairing alone waits ~20 s for the owner)

pytestmark = pytest.mark.skipif(NODE is None, reason="node (18 or newer) is not installed")


def command(bug: str | None = None, task: str | None = None) -> list[str]:
    return [str(NODE), str(AGENT), *(["--task", task] if task else []), *(["--bug", bug] if bug else [])]


def _wanted(item: pytest.Item) -> list[tuple]:
    """The (scenario, bug, task) runs a collected test of this module asks `checked` for."""
    params = getattr(item, "callspec", None)
    name = getattr(item, "originalname", item.name)
    if name == "test_the_correct_agent_fails_no_rule" and params:
        scenario = params.params["scenario"]
        return [(scenario, None, CORRECT[scenario][0])]
    if name == "test_each_bug_fails_its_rule_and_no_other" and params:
        scenario, task, _ = BUGGY[params.params["bug"]]
        return [(scenario, params.params["bug"], task)]
    return list(USES.get(name, ()))


@pytest.fixture(scope="module")
def made() -> dict[tuple, tuple[Run, Scorecard]]:
    return {}


@pytest.fixture
def checked(request, made) -> Callable[..., tuple[Run, Scorecard]]:
    """`checked(scenario, bug=None, task=None)`: the agent's run and its scorecard, made once. A
    test's first call makes the runs of every selected test of its kind (each parametrized case)
    at once, WORKERS side by side: one test waits about a minute, never the whole module's runs."""

    def make(key: tuple) -> tuple[Run, Scorecard]:
        scenario, bug, task = key
        run = run_scenario(SCENARIOS[scenario], command(bug, task), timeout=TIMEOUT)
        return run, score(RULES, [run], " ".join(command(bug, task)))

    def get(scenario: str, bug: str | None = None, task: str | None = None) -> tuple[Run, Scorecard]:
        key = (scenario, bug, task)
        if key not in made:
            kind = getattr(request.node, "originalname", request.node.name)
            here = [i for i in request.session.items if getattr(i, "module", None) is request.module]
            alike = [i for i in here if getattr(i, "originalname", i.name) == kind]
            keys = [k for k in dict.fromkeys([key, *(k for i in alike for k in _wanted(i))]) if k not in made]
            with ThreadPoolExecutor(WORKERS) as pool:
                made.update(zip(keys, pool.map(make, keys), strict=True))
        return made[key]

    return get


def failed(card: Scorecard) -> dict[str, list[str]]:
    return {v.rule.id: v.evidence for v in card.failed}


def explain(run: Run, card: Scorecard) -> str:
    return (
        f"exit {run.exit_code}, failed {failed(card)}\n--- agent stderr ---\n{run.stderr[-3000:]}\nnotes: {run.notes}"
    )


# -- the correct agent ---------------------------------------------------------------------------
# scenario → (task, the rules that scenario is there to exercise: each must be judged `passed`)
CORRECT = {
    "clean": (None, ["rows.self-wrap", "rows.owner-opens", "rows.kid-fingerprint", "rows.about-once",
                     "topics.reuse-before-create", "writes.read-back", "pairing.no-token-in-url",
                     "pairing.ask-by-name", "contents.no-secrets", "contents.outside-ciphertext",
                     "contents.fresh-keys", "outcome.finished"]),
    "lost-answers": (None, ["writes.same-rows-on-retry"]),
    "preparing": (None, ["reading.preparing-wait", "reading.retry-after"]),
    "owner-edits": ("edit", ["writes.rev-conflict-reread"]),
    "missing-permission": (None, ["access.grant-request-not-repair", "topics.one-post", "topics.not-the-user",
                                  "rows.size-caps"]),
    "slow-pairing": (None, ["pairing.poll-interval", "pairing.slow-down"]),
    "token-rotation": (None, ["pairing.refresh-once"]),
    # a save, then a reminder (travel, misc) whose `misc` it removes: a key rotation with its wraps
    "other-connections": ("relabel", ["wraps.not-too-far", "wraps.every-reader", "wraps.share-on-add", "writes.rotate-on-label-removal",
                                      "writes.rotation-wraps", "contents.fresh-keys"]),
    "rate-limit": (None, ["limits.retry-after", "writes.read-back"]),
    "owner-unlabels": ("edit", ["writes.keep-other-fields", "contents.correct-by-id"]),
}  # fmt: skip
# which test (not parametrized by scenario or bug) reads which runs, so they are made with the rest
USES = {
    "test_the_correct_agent_edits_by_id_and_keeps_the_owners_change": [("owner-edits", None, "edit")],
    "test_the_correct_agent_reuses_the_topic_and_resends_the_same_rows": [("lost-answers", None, None)],
    "test_the_correct_agent_rotates_the_key_when_it_removes_a_label": [("other-connections", None, "relabel")],
    "test_the_correct_agent_keeps_the_owners_relabel": [("owner-unlabels", None, "edit")],
    "test_the_correct_agent_lets_a_denial_stand": [("owner-denies", None, None)],
    "test_the_correct_agent_corrects_anothers_memory_in_its_text_only": [("read-write", None, None)],
    "test_the_correct_agent_signs_up_for_an_account": [("accounts", None, None)],
    "test_the_correct_agent_waits_for_the_owner_on_unlocks_and_edits": [
        ("slow-unlock", None, None),
        ("late-edit", None, None),
    ],
}


def test_the_correct_agent_runs_in_every_default_scenario() -> None:
    assert set(CORRECT) == set(DEFAULT)


@pytest.mark.parametrize("scenario", list(CORRECT))
def test_the_correct_agent_fails_no_rule(checked, scenario: str) -> None:
    task, exercised = CORRECT[scenario]
    run, card = checked(scenario, task=task)
    assert not run.timed_out and run.exit_code == 0, explain(run, card)
    assert failed(card) == {}, explain(run, card)
    for rule_id in exercised:
        assert card.status_of(rule_id) == PASSED, f"{rule_id} is {card.status_of(rule_id)}\n{explain(run, card)}"
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["memory_id"] in {r["id"] for r in run.app_view}  # the owner's app lists the saved memory


def test_the_correct_agent_edits_by_id_and_keeps_the_owners_change(checked) -> None:
    from decoy_lab.conformance.scenarios import OWNER_NOTE

    run, card = checked("owner-edits", task="edit")
    out = json.loads(run.stdout.strip().splitlines()[-1])
    entry = next(r for r in run.app_view if r.get("id") == out["memory_id"])
    assert "chose the Friday 08:10 direct flight" in entry["text"] and OWNER_NOTE in entry["text"], explain(run, card)


def test_the_correct_agent_reuses_the_topic_and_resends_the_same_rows(checked) -> None:
    run, card = checked("lost-answers")
    posts = [x for x in run.exchanges if x.method == "POST" and x.path == "/api/agent/context/memories"]
    assert len(posts) == 3, explain(run, card)  # lost answer, 503, then stored: `existing`
    assert all(p.request == posts[0].request for p in posts)  # byte-for-byte the same rows
    assert posts[-1].response.get("existing") == [r["id"] for r in posts[0].request["rows"]]
    named = [r for r in run.app_view if r.get("kind") == "topic" and r.get("name") == "Lisbon trip"]
    assert len(named) == 1  # the demo vault's topic, reused: no second copy


def test_the_correct_agent_rotates_the_key_when_it_removes_a_label(checked) -> None:
    run, card = checked("other-connections", task="relabel")
    out = json.loads(run.stdout.strip().splitlines()[-1])
    writes = [x for x in run.exchanges if x.path == "/api/agent/context/memories" and x.method in ("POST", "PUT")]
    (put,) = [x for x in writes if x.method == "PUT" and "kid" in x.request]  # then a PUT adding a label, same key
    (before,) = [r for x in writes if x.method == "POST" for r in x.request["rows"] if r["id"] == out["reminder_id"]]
    assert put.request["kid"] == out["kid"] != before["kid"], explain(run, card)  # a new key
    assert put.request["removed_reasons"] == ["category:misc"]
    assert {"owner_wrap", "self_wrap", "grantee_wraps"} <= set(put.request)
    # the Misc reader had the reminder only through `misc`: the new key goes to the others, not to it
    assert len(put.request["grantee_wraps"]) == len(before["grantee_wraps"]) - 1
    assert all("category:misc" not in w["via"] for w in put.request["grantee_wraps"])
    entry = next(r for r in run.app_view if r.get("id") == out["reminder_id"])
    assert "misc" not in (entry.get("categories") or []), entry
    # food then added with the same key, and that key shared with the Food reader it newly reaches
    (share,) = [x for x in run.exchanges if x.path == "/api/agent/context/memory-wraps"]
    assert share.status == 200 and share.request["kid"] == out["kid"], explain(run, card)
    assert [w["via"] for w in share.request["wraps"]] == [["category:food"]]
    assert "food" in (entry.get("categories") or [])


def test_the_correct_agent_keeps_the_owners_relabel(checked) -> None:
    run, card = checked("owner-unlabels", task="edit")
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert [x.status for x in run.exchanges if x.method == "PUT"] == [409, 200], explain(run, card)
    entry = next(r for r in run.app_view if r.get("id") == out["memory_id"])
    assert "travel" not in (entry.get("categories") or []) and "chose the Friday" in entry["text"], entry


def test_the_correct_agent_lets_a_denial_stand(checked) -> None:
    """001 "A denial stands: do not ask again unless the person agrees." (owner-denies: not a default scenario)"""
    run, card = checked("owner-denies")
    assert run.exit_code == 0 and failed(card) == {}, explain(run, card)
    assert card.status_of("access.denial-stands") == PASSED, explain(run, card)
    assert json.loads(run.stdout.strip().splitlines()[-1])["denied"] is True
    assert len([x for x in run.exchanges if x.method == "POST" and x.path == "/api/agent/grant-request"]) == 1


def test_the_correct_agent_corrects_anothers_memory_in_its_text_only(checked) -> None:
    """read-write (not a default scenario): with Read & write on every memory it corrects one another wrote."""
    run, card = checked("read-write")
    assert run.exit_code == 0 and failed(card) == {}, explain(run, card)
    assert card.status_of("writes.others-text-only") == PASSED, explain(run, card)
    other = json.loads(run.stdout.strip().splitlines()[-1])["corrected_other"]
    entry = next(r for r in run.app_view if r.get("id") == other)
    was = next(r for r in run.app_view_before if r.get("id") == other)
    assert entry["text"].endswith("(Checked with the person.)") and entry["labels"] == was["labels"], entry


def test_the_correct_agent_signs_up_for_an_account(checked) -> None:
    """accounts (not a default scenario): granted Create accounts, it signs up for a service (the
    account with its Decoy address, its password, an API key as a secret field), saves a memory
    about the account filed by its id, and reads the password back through unlock."""
    run, card = checked("accounts")
    assert not run.timed_out and run.exit_code == 0 and failed(card) == {}, explain(run, card)
    for rule_id in ("accounts.no-credentials-in-memory", "accounts.api-key-field", "accounts.idempotency-key",
                    "accounts.one-address", "accounts.owner-opens", "contents.account-by-id"):  # fmt: skip
        assert card.status_of(rule_id) == PASSED, f"{rule_id} is {card.status_of(rule_id)}\n{explain(run, card)}"
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["password_read_back"] == "verified", explain(run, card)
    (made,) = run.where("POST", "/api/agent/decoys")  # one address, made once
    assert made.response["account_id"] == out["account_id"]
    (field,) = run.where("POST", f"/api/agent/accounts/{out['account_id']}/fields")
    assert field.status in (200, 201), explain(run, card)
    assert out["account_memory_id"] in {r["id"] for r in run.app_view}  # the owner's app lists it


def test_the_correct_agent_waits_for_the_owner_on_unlocks_and_edits(checked) -> None:
    """slow-unlock: its read of a filed account is asked of the owner and polled by its id ("Poll
    `GET /api/agent/unlock/{requestId}` for the sealed envelope"); late-edit: its queued rename is
    polled until `applied`, never queued again ("Queued edits are never dropped")."""
    run, card = checked("slow-unlock")
    assert not run.timed_out and run.exit_code == 0 and failed(card) == {}, explain(run, card)
    assert card.status_of("accounts.unlock-pending") == PASSED, explain(run, card)
    assert len(run.where("POST", "/api/agent/unlock")) == 1, explain(run, card)  # asked once
    assert json.loads(run.stdout.strip().splitlines()[-1])["filed_account_read"] is True, explain(run, card)
    run, card = checked("late-edit")
    assert not run.timed_out and run.exit_code == 0 and failed(card) == {}, explain(run, card)
    for rule_id in ("accounts.edit-polled", "accounts.edit-once", "accounts.unlock-retry-after"):
        assert card.status_of(rule_id) == PASSED, f"{rule_id} is {card.status_of(rule_id)}\n{explain(run, card)}"
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["rename"] == "applied" and out["password_read_back"] == "verified", explain(run, card)


def test_the_correct_agent_waits_out_a_429(checked) -> None:
    run, card = checked("rate-limit")
    limited = [i for i, x in enumerate(run.exchanges) if x.status == 429]
    assert len(limited) == 2, explain(run, card)  # a read and a save, each sent again after 3 s
    for i in limited:
        x = run.exchanges[i]
        again = next(y for y in run.exchanges[i + 1 :] if (y.method, y.path) == (x.method, x.path))
        assert again.start - (x.done or x.start) >= 2.9 and again.request == x.request


# -- one bug each --------------------------------------------------------------------------------
# bug → (scenario, task, the rules it breaks: exactly these fail)
BUGGY = {
    # the sandbox refuses a row without self_wrap, and the agent then stops: outcome.finished too
    "no-self-wrap": ("clean", None, {"rows.self-wrap", "outcome.finished"}),
    "wrong-owner-wrap": ("clean", None, {"rows.owner-opens"}),
    "kid-mismatch": ("clean", None, {"rows.kid-fingerprint", "outcome.finished"}),  # its row does not read back
    "new-topic": ("clean", None, {"topics.reuse-before-create"}),
    "new-rows-on-retry": ("lost-answers", None, {"writes.same-rows-on-retry"}),
    "ignore-retry-after": ("preparing", None, {"reading.retry-after"}),
    "fast-poll": ("slow-pairing", None, {"pairing.poll-interval", "pairing.slow-down"}),  # ignores both
    "token-in-url": ("clean", None, {"pairing.no-token-in-url"}),
    # its save is refused (400 INVALID_BASE64) and it stops: the rule of this bug is outcome.finished
    "unpadded-base64": ("clean", None, {"outcome.finished"}),
    "password-in-text": ("clean", None, {"contents.no-secrets"}),
    "text-in-body": ("clean", None, {"contents.outside-ciphertext"}),
    "correct-as-new": ("clean", "edit", {"contents.correct-by-id"}),
    "one-key": ("clean", "relabel", {"contents.fresh-keys"}),  # the memory and the reminder: one key
    "wrap-too-far": ("other-connections", None, {"wraps.not-too-far"}),
    "wrap-one-reader": ("other-connections", None, {"wraps.every-reader"}),
    "ignore-rate-limit": ("rate-limit", None, {"limits.retry-after"}),
    "stale-labels": ("owner-unlabels", "edit", {"writes.keep-other-fields"}),
    "bare-pairing": ("clean", None, {"pairing.ask-by-name"}),
    "write-first": ("clean", None, {"reading.read-first"}),
    "topic-in-metadata": ("clean", None, {"contents.metadata-files-nothing"}),
    "local-client-uri": ("clean", None, {"pairing.client-uri-public"}),
    "poll-grant-fast": ("missing-permission", None, {"access.poll-grant-request"}),
    "no-policies-read": ("missing-permission", None, {"access.read-policies"}),
    "ask-again-after-denial": ("owner-denies", None, {"access.denial-stands"}),
    "no-share-on-add": ("other-connections", "relabel", {"wraps.share-on-add"}),
    "relabel-others": ("read-write", None, {"writes.others-text-only"}),
    "copy-to-relabel": ("clean", "relabel", {"contents.no-copy-to-relabel"}),
    "fixture-wraps": ("other-connections", None, {"contents.no-fixture-wraps"}),
    "ask-held": ("missing-permission", None, {"access.ask-held-never"}),
    "ask-without-reason": ("missing-permission", None, {"access.ask-with-reason"}),
    "ask-with-level": ("clean", None, {"access.ask-known-keys"}),
    # its first connection, which holds the same key, is one its rotation's wraps leave out
    "new-client-on-continue": ("session-ended", "relabel", {"pairing.continue-session", "wraps.every-reader"}),
    # the account flow, run when the grant names account.create (the accounts scenario)
    "credentials-in-memory": ("accounts", None, {"accounts.no-credentials-in-memory"}),
    "api-key-as-password": ("accounts", None, {"accounts.api-key-field"}),
    "no-idempotency-key": ("accounts", None, {"accounts.idempotency-key"}),
    "second-address": ("accounts", None, {"accounts.one-address"}),
    "headered-password": ("accounts", None, {"accounts.owner-opens"}),
    "account-name-in-memory": ("accounts", None, {"contents.account-by-id"}),
    "unlock-retry-fast": ("accounts", None, {"accounts.unlock-retry-after"}),
    "unlock-ask-again": ("slow-unlock", None, {"accounts.unlock-pending"}),
    "edit-assumed": ("late-edit", None, {"accounts.edit-polled"}),
    "edit-twice": ("late-edit", None, {"accounts.edit-once"}),
}
# the Node bugs whose name is not that of the Python agent's mutant (docs/rules.md) for the same rule
PYTHON_NAME = {"wrong-owner-wrap": "raw-owner-wrap", "kid-mismatch": "bad-kid", "fast-poll": "poll-fast"}


def test_each_bug_breaks_what_the_python_mutant_of_its_rule_breaks() -> None:
    """Each Node bug is a mutant of the inventory (a rule's `bug`), run in that rule's scenario, and
    fails what the Python mutation suite allows that mutant to fail (its rule, and ALSO_FAILS)."""
    by_bug = {r.bug: r for r in RULES}
    for bug, (scenario, _task, rules) in BUGGY.items():
        name = PYTHON_NAME.get(bug, bug)
        assert name in by_bug, bug
        assert scenario in by_bug[name].scenarios, bug
        assert rules == {by_bug[name].id} | ALSO_FAILS.get(name, set()), bug


@pytest.mark.parametrize("bug", list(BUGGY))
def test_each_bug_fails_its_rule_and_no_other(checked, bug: str) -> None:
    scenario, task, rules = BUGGY[bug]
    run, card = checked(scenario, bug=bug, task=task)
    assert not run.timed_out, explain(run, card)
    assert set(failed(card)) == rules, explain(run, card)
    assert f"--bug {bug}" in run.stderr  # the agent says which bug it plants


def test_every_bug_is_a_rule_class_the_check_knows() -> None:
    known = {r.id for r in RULES}
    assert set().union(*(rules for _, _, rules in BUGGY.values())) <= known
    listed = subprocess.run(
        [str(NODE), str(AGENT), "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "DECOY_BASE_URL": ""},
    )
    assert listed.returncode == 0
    assert all(bug in listed.stderr for bug in BUGGY)


# -- the command line ----------------------------------------------------------------------------
def test_usage_mistakes_exit_2_without_a_request() -> None:
    for argv in (["--bug", "no-such-bug"], ["--task", "dance"], ["--bug"]):
        p = subprocess.run([str(NODE), str(AGENT), *argv], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "DECOY_BASE_URL": "http://127.0.0.1:9"})  # fmt: skip
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("agent: ")
    p = subprocess.run([str(NODE), str(AGENT)], capture_output=True, text=True, timeout=30,
                       env={k: v for k, v in os.environ.items() if k != "DECOY_BASE_URL"})  # fmt: skip
    assert p.returncode == 2 and "DECOY_BASE_URL" in p.stderr


def test_decoy_lab_check_command_line(tmp_path: Path) -> None:
    """The README's command: `python -m decoy_lab.conformance --json FILE -- node agent.mjs`."""
    out = tmp_path / "card.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    good = subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--scenario", "clean", "--json", str(out), "--", str(NODE), str(AGENT)],
        capture_output=True, text=True, timeout=TIMEOUT + 60, cwd=ROOT, env=env,
    )  # fmt: skip
    assert good.returncode == 0, good.stdout + good.stderr
    card = json.loads(out.read_text())
    assert card["counts"]["failed"] == 0 and card["scenarios"][0]["exit_code"] == 0
    bad = subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--scenario", "clean", "--", str(NODE), str(AGENT), "--bug", "token-in-url"],
        capture_output=True, text=True, timeout=TIMEOUT + 60, cwd=ROOT, env=env,
    )  # fmt: skip
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAILED  pairing.no-token-in-url" in bad.stdout


# -- straight against a sandbox (no staged faults): the read task and the pytest plugin ---------
def test_the_read_task_against_a_sandbox() -> None:
    from decoy_lab.conformance.pytest_plugin import violations
    from decoy_lab.conformance.recording import start_inspector
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(approve="auto", seed="demo") as sandbox:
        inspector = start_inspector(sandbox.url, sandbox)
        try:
            p = subprocess.run([str(NODE), str(AGENT), "--task", "read"], capture_output=True, text=True, timeout=TIMEOUT,
                               env={**os.environ, "DECOY_BASE_URL": str(inspector.url)})  # fmt: skip
            assert p.returncode == 0, p.stderr
            out = json.loads(p.stdout.strip().splitlines()[-1])
            assert out["task"] == "read" and out["unreadable"] == []
            assert not [x for x in inspector.all_flows() if x.method in ("POST", "PUT") and "memories" in x.path]
            assert violations(inspector) == []
        finally:
            inspector.close()


def _memory_writes(inspector) -> list:
    return [f for f in inspector.all_flows() if f.method in ("POST", "PUT") and f.path == "/api/agent/context/memories"]


def test_new_rows_are_wrapped_to_the_other_connections_that_read_them() -> None:
    from decoy_lab.conformance.pytest_plugin import violations
    from decoy_lab.conformance.recording import start_inspector
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(approve="auto", seed="none") as sandbox:
        inspector = start_inspector(sandbox.url, sandbox)
        try:
            env = {**os.environ, "DECOY_BASE_URL": str(inspector.url)}
            other = subprocess.run([str(NODE), str(AGENT), "--task", "read"], capture_output=True, text=True,
                                   timeout=TIMEOUT, env={**env, "DECOY_CLIENT_ID": "another-agent"})  # fmt: skip
            assert other.returncode == 0, other.stderr  # a second connection that reads every memory
            p = subprocess.run([str(NODE), str(AGENT), "--topic", "Golf club headcovers"], capture_output=True,
                               text=True, timeout=TIMEOUT, env=env)  # fmt: skip
            assert p.returncode == 0, p.stderr
            (post,) = _memory_writes(inspector)
            rows = json.loads(post.request_body.data)["rows"]
            assert len(rows) == 3  # the topic, its relation and its first memory, in one POST
            assert all(len(r["grantee_wraps"]) == 1 and r["grantee_wraps"][0]["via"] == ["all"] for r in rows)
            admitted = json.loads(post.response_body.data)["grantee_wraps"]
            assert admitted == {r["id"]: 1 for r in rows}
            assert violations(inspector) == []
        finally:
            inspector.close()


def test_seeded_5xx_and_dropped_answers_leave_one_memory_corrected() -> None:
    """The sandbox's own faults (503 with Retry-After, a write committed and its answer lost)."""
    from decoy_lab.conformance.pytest_plugin import violations
    from decoy_lab.conformance.recording import start_inspector
    from decoy_lab.sandbox import Sandbox

    faults = {"error_5xx": 0.15, "drop_after_commit": 0.15, "seed": 7}
    with Sandbox.start(approve="auto", seed="demo", faults=faults) as sandbox:
        inspector = start_inspector(sandbox.url, sandbox)
        try:
            p = subprocess.run([str(NODE), str(AGENT), "--task", "edit"], capture_output=True, text=True, timeout=TIMEOUT,
                               env={**os.environ, "DECOY_BASE_URL": str(inspector.url)})  # fmt: skip
            assert p.returncode == 0, p.stderr
            out = json.loads(p.stdout.strip().splitlines()[-1])
            posts = [f for f in _memory_writes(inspector) if f.method == "POST"]
            assert {f.request_body.data for f in posts} == {posts[0].request_body.data}  # only ever the same rows
            mine = [r for r in sandbox.owner.app_view() if r.get("id") in out["rows"]]
            assert len(mine) == 1 and "chose the Friday 08:10 direct flight" in mine[0]["text"]
            assert violations(inspector) == []
        finally:
            inspector.close()
