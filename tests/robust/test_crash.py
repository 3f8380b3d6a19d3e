"""kill -9 of the sandbox in the middle of a save, then a restart on the same database file: the
save ends in an unknown outcome with its rows journaled, and `conn.resend()` against the restarted
server stores each row once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port: int, db: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, "-m", "decoy_lab.sandbox", "--port", str(port), "--db", db, "--seed", "none"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server", timeout=0.5)
            return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the sandbox did not start")


class PostWatched(httpx.HTTPTransport):
    """Sets `rows_sent` once the whole body of a POST of rows is written to the server's socket
    (httpcore's trace), so the kill lands while the server holds it, not after a guessed wait."""

    def __init__(self) -> None:
        super().__init__()
        self.rows_sent = threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/api/agent/context/memories":

            def trace(event: str, info: dict) -> None:
                if event == "http11.send_request_body.complete":
                    self.rows_sent.set()

            request.extensions["trace"] = trace
        return super().handle_request(request)


def test_a_save_cut_by_kill_9_is_finished_by_resend_after_a_restart(tmp_path):
    port, db = free_port(), str(tmp_path / "sandbox.sqlite3")
    url = f"http://127.0.0.1:{port}"
    proc = start(port, db)
    watched = PostWatched()
    try:
        conn = Connection.pair(
            url,
            name="Crash test",
            profile=None,
            permissions=["memory.read", "memory.save"],
            on_link=lambda *a: None,
            client_id=f"crash-{uuid.uuid4().hex[:6]}",
            retries=0,
            transport=watched,
        )
        httpx.post(f"{url}/_sandbox/faults", json={"latency_ms": 3000})  # each memory route waits 3 s
        outcome: list = []
        t = threading.Thread(target=lambda: outcome.append(_save(conn)))
        t.start()
        # the grantees read is done (3 s), the POST of the rows is in the server's hands (3 s more)
        assert watched.rows_sent.wait(30), "the rows were never sent"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t.join(30)
        (err,) = outcome
        assert isinstance(err, OutcomeUnknown) and err.sent and len(conn.pending) == 1
        proc = start(port, db)  # the same file: whatever had committed is still there
        done = conn.resend()
        assert [d["outcome"] for d in done] == ["committed"] and conn.pending == []
        served = [r["id"] for r in conn.session.served()]
        assert served.count(err.ids[-1]) == 1 and {*err.ids} <= set(served)
        conn.close()
    finally:
        proc.kill()
        proc.wait()


def _save(conn: Connection):
    try:
        return conn.save("Survives a crash.", categories=["misc"])
    except OutcomeUnknown as exc:
        return exc
