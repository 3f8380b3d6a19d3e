"""Writes that run out of retries: the unknown outcome says what may have committed, keeps the sealed
rows in the pending-writes journal, and `conn.resend()` (or the same save run again, also in a new
process) sends the SAME rows — against the sandbox over real HTTP."""

from __future__ import annotations

import collections
import json
import os
import stat
import subprocess
import sys
import textwrap
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown, TransportError
from decoy_lab.transport.api import Tokens

from support.answers import AGENT, OWNER

PERMS = ["memory.read", "memory.save", "memory.edit", "memory.delete"]


def pair(sb, store, profile="work", **kw) -> Connection:
    return Connection.pair(
        sb.url,
        name="Resend test",
        profile=profile,
        store=store,
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"resend-{uuid.uuid4().hex[:8]}",
        retries=1,
        backoff=0,
        sleep=lambda s: None,
        **kw,
    )


def owner_rows(sb) -> list[dict]:
    return sb.owner.app_view()


def topics_named(sb, name: str) -> int:
    return sum(1 for r in owner_rows(sb) if r["kind"] == "topic" and r.get("name") == name)


def test_an_exhausted_save_journals_its_rows_and_resend_sends_the_same_ones(sb, store):
    """ "If the answer is lost (a network error or a 5xx), resend the same sealed rows with the same
    ids: an id the server already holds comes back in `existing` and nothing of it is written again.
    Never re-create with new ids." — also when every resend of one call was lost."""
    conn = pair(sb, store)
    sb.state.faults.configure({"drop_after_commit": 1.0})
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Prefers the early train.", topic="Commute", categories=["travel"])
    sb.state.faults.configure({})
    err = caught.value
    assert "may have committed" in str(err) and "Nothing was sent" not in str(err)
    assert "conn.resend()" in str(err) and len(err.ids) == 3  # entity, relation, memory
    pending = conn.pending
    assert [p["kind"] for p in pending] == ["save"] and pending[0]["ids"] == err.ids
    path = store.journal_path("work")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "early train" not in path.read_text() and "Commute" not in path.read_text(), "only ciphertext"
    done = conn.resend()
    assert [d["outcome"] for d in done] == ["committed"] and conn.pending == [] and not path.exists()
    mems = [r for r in owner_rows(sb) if r["kind"] == "memory" and r["text"] == "Prefers the early train."]
    assert len(mems) == 1 and mems[0]["id"] == err.ids[-1]
    assert topics_named(sb, "Commute") == 1
    again = conn.save("Leaves at 7.", topic="Commute")  # a later save reuses the committed entity
    assert topics_named(sb, "Commute") == 1 and conn.load().memory(again).topic["name"] == "Commute"
    conn.close()


def test_running_the_same_save_again_sends_the_same_rows(sb, store):
    """Re-running the cell after an unknown outcome is the resend: no second memory, no second topic."""
    conn = pair(sb, store)
    sb.state.faults.configure({"drop_after_commit": 1.0})
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Likes window seats.", topic="Seats")
    sb.state.faults.configure({})
    mid = conn.save("Likes window seats.", topic="Seats")
    assert mid == caught.value.ids[-1] and conn.pending == []
    texts = collections.Counter(r["text"] for r in owner_rows(sb) if r["kind"] == "memory")
    assert texts["Likes window seats."] == 1 and topics_named(sb, "Seats") == 1
    conn.close()


RESTARTED = """
import sys
from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
conn = Connection.resume("work", retries=1, backoff=0)
if sys.argv[1] == "save":
    try:
        conn.save("Keeps a spare key.", topic="Home")
    except OutcomeUnknown as exc:
        print("UNKNOWN", exc.ids[-1])
else:
    print("PENDING", len(conn.pending))
    print("DONE", [d["outcome"] for d in conn.resend()], len(conn.pending))
"""


def test_a_pending_write_survives_a_restart_of_the_process(sb, store, tmp_path):
    """The journal lives next to the profile, so a new process (a restarted kernel, the CLI) finishes
    the write with the same rows."""
    pair(sb, store).close()
    env = {**os.environ, "DECOY_LAB_CONFIG_DIR": str(store.directory), "PYTHONPATH": os.pathsep.join(sys.path)}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-c", textwrap.dedent(RESTARTED), *args], env=env, capture_output=True, text=True, timeout=120
    )
    sb.state.faults.configure({"drop_after_commit": 1.0})
    first = run("save")
    sb.state.faults.configure({})
    assert first.stdout.startswith("UNKNOWN"), first.stderr
    mid = first.stdout.split()[1]
    second = run("resend")
    assert "PENDING 1" in second.stdout and "DONE ['committed'] 0" in second.stdout, second.stderr
    mems = [r for r in owner_rows(sb) if r["kind"] == "memory" and r["text"] == "Keeps a spare key."]
    assert [m["id"] for m in mems] == [mid] and topics_named(sb, "Home") == 1


def test_an_edit_to_a_new_topic_cut_short_is_finished_by_resend(sb, store):
    """The edit's topic rows and its PUT are journaled together before either is sent, so a resend
    finishes both: the memory is filed under the one new topic."""
    conn = pair(sb, store)
    mid = conn.save("Plays on Sundays.")
    sb.state.faults.configure({"drop_after_commit": 1.0})
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, topic="Tennis")
    sb.state.faults.configure({})
    assert [p["kind"] for p in conn.pending] == ["edit"]
    assert [d["outcome"] for d in conn.resend()] == ["committed"] and conn.pending == []
    view = {r["id"]: r for r in owner_rows(sb)}
    assert view[mid]["topic"]["name"] == "Tennis" and topics_named(sb, "Tennis") == 1
    conn.close()


def test_an_edit_refused_on_resend_leaves_no_orphan_topic(sb, store):
    """ "Topic rows written for a change that is then definitely refused are deleted": once the
    journal is settled no topic stays behind without a memory."""
    conn = pair(sb, store)
    mid = conn.save("Swims on Mondays.")
    sb.state.faults.configure({"drop_after_commit": 1.0})
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, topic="Swimming")  # the topic rows committed, the edit was never sent
    sb.state.faults.configure({})
    assert topics_named(sb, "Swimming") == 1
    conn.delete([mid])  # meanwhile the memory is gone: the edit will be refused
    (done,) = conn.resend()
    assert done["outcome"].startswith("refused") and conn.pending == []
    assert topics_named(sb, "Swimming") == 0, "no orphan topic"
    conn.close()


# -- what the error says, from a server that fails two ways in a row ------------------------------------
def test_an_unknown_outcome_never_says_nothing_was_sent_after_an_attempt_that_reached_the_server():
    """The first send's answer was lost (it may have committed); the second could not connect. The
    error must not claim "Nothing was sent"."""
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memory-grantees"):
            return httpx.Response(200, json={"owner_public_key": OWNER.public_key_b64, "grantees": []})
        calls.append(request.url.path)
        if len(calls) == 1:
            raise httpx.ReadError("connection reset")
        raise httpx.ConnectError("connection refused")

    conn = Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id="t"),
        transport=httpx.MockTransport(handler),
        retries=1,
        backoff=0,
        sleep=lambda s: None,
    )
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("a memory")
    assert caught.value.sent and "may have committed" in str(caught.value)
    assert "Nothing was sent" not in str(caught.value).split("(last:")[0]
    assert isinstance(caught.value, TransportError) and len(conn.pending) == 1


def test_the_journal_file_holds_only_what_goes_over_the_wire(store):
    """Rows only hold ciphertext and wraps: nothing in the journal is a plaintext or a key."""
    from decoy_lab.store.journal import Journal, new_entry

    j = Journal(store.journal_path("p"))
    e = j.put(new_entry("save", [("POST", "/x", {"rows": [{"id": "r1", "ciphertext": "AAAA"}]})], ids=["r1"]))
    assert json.loads(store.journal_path("p").read_text())["pending"][0]["id"] == e["id"]
    j.settle(e["id"])
    assert not store.journal_path("p").exists() and j.entries() == []


def test_decoy_lab_resend_finishes_what_a_notebook_left_pending(sb, store, monkeypatch, capsys):
    """`decoy-lab resend` reads the same journal: the shell finishes a write the notebook left unknown."""
    from decoy_lab.workbench.shell.cli import main

    conn = pair(sb, store)
    sb.state.faults.configure({"drop_after_commit": 1.0})
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Waters the plants on Fridays.")
    sb.state.faults.configure({})
    monkeypatch.setenv("DECOY_LAB_CONFIG_DIR", str(store.directory))
    capsys.readouterr()
    assert main(["resend", "--list", "--profile", "work"]) == 1
    assert caught.value.ids[-1] in capsys.readouterr().out
    assert main(["resend", "--json", "--profile", "work"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["outcome"] for r in out["results"]] == ["committed"] and out["still_pending"] == []
    assert conn.pending == [] and main(["resend", "--profile", "work"]) == 0
    assert "nothing pending" in capsys.readouterr().out
    conn.close()


def test_the_unknown_outcome_says_what_each_attempt_did_without_contradicting_itself():
    """A real socket: the first POST is sent and never answered (it may have committed), then the
    server is gone and the second is refused at connect. Each attempt is said as what it did, the
    message never says "Nothing was sent" beside "may have committed", and it says how to finish."""
    import contextlib

    from support.sockets import serving, silent, whole

    def answer(method: str, path: str, body: bytes):
        if path.endswith("/memory-grantees"):
            return whole(200, {"owner_public_key": OWNER.public_key_b64, "grantees": []})
        return silent if method == "POST" else whole(200, {"memories": [], "spaces": []})

    with contextlib.ExitStack() as server:
        url = server.enter_context(serving(answer))
        port = url.rsplit(":", 1)[1]

        def gone(_: float) -> None:  # between the attempts the server stops listening
            import socket
            import time

            server.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # until a connect is refused, not a fixed guess
                try:
                    socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
                except ConnectionRefusedError:
                    return
                time.sleep(0.01)
            raise AssertionError("the server still listens 10 s after it was closed")

        conn = Connection(
            url,
            agent_key=AGENT,
            tokens=Tokens(access_token="AT", refresh_token="RT", token_id="t"),
            timeout=1.0,
            retries=1,
            backoff=0,
            sleep=gone,
        )
        conn.keys()
        with pytest.raises(OutcomeUnknown) as caught:
            conn.save("a memory")
    said = str(caught.value)
    assert said.startswith("save: the outcome of POST /api/agent/context/memories is unknown — attempt 1: sent, ")
    assert "attempt 1: sent, the server did not answer within 1 s (the call's deadline) — may have committed" in said
    assert f"; attempt 2: not sent (cannot reach http://127.0.0.1:{port} (ConnectError:" in said
    assert "Some, all or none of the 1 row (" in said and "may have committed" in said
    assert "nothing was sent" not in said.lower(), said
    assert said.endswith("conn.resend() — or running the same save again — sends the SAME rows, never new ones")
    assert caught.value.sent and len(conn.pending) == 1


def test_when_no_attempt_left_the_client_the_message_says_nothing_was_sent_and_how_to_finish():
    """Every POST refused at connect: "nothing … was sent", each attempt said, and the way on."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memory-grantees"):
            return httpx.Response(200, json={"owner_public_key": OWNER.public_key_b64, "grantees": []})
        raise httpx.ConnectError("[Errno 111] Connection refused")

    conn = Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id="t"),
        transport=httpx.MockTransport(handler),
        retries=1,
        backoff=0,
        sleep=lambda s: None,
    )
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("a memory")
    said = str(caught.value)
    refused = "not sent (cannot reach http://decoy.invalid (ConnectError: [Errno 111] Connection refused))"
    assert "save: nothing of the 1 row (" in said
    assert f"was sent (POST /api/agent/context/memories) — attempt 1: {refused}; attempt 2: {refused}." in said
    assert "may have committed" not in said
    assert said.endswith("conn.resend() — or running the same save again — sends them once the server can be reached")
    assert not caught.value.sent and len(conn.pending) == 1
