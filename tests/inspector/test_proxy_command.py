"""`python -m decoy_lab.inspector` (what `decoy-lab proxy` runs): the URL first, a line per
exchange, a clean stop on Ctrl-C with the recording written; usage mistakes exit 2."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from support.terminal import as_at_a_terminal

pytestmark = pytest.mark.timeout(90)
ROOT = Path(__file__).resolve().parents[2]


def _proxy(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = as_at_a_terminal([sys.executable, "-m", "decoy_lab.inspector", *args])  # Ctrl-C is pressed
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _lines(proc: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_the_command_serves_prints_each_exchange_and_stops_on_ctrl_c(tmp_path):
    """Ctrl-C reaches the whole process group; the proxy's own process leaves the stopping to
    the command, so the exchange is still recorded and written."""
    record = tmp_path / "cli.har"
    proc = _proxy("--sandbox", "--port", "0", "--record", str(record))
    try:
        lines = _lines(proc)
        first = lines.get(timeout=30)
        url = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert url, first
        assert "Pair the agent" in lines.get(timeout=5)
        got = httpx.get(f"{url.group(0)}/.well-known/oauth-authorization-server", timeout=10, trust_env=False)
        assert got.status_code == 200
        assert lines.get(timeout=10) == "#1 GET /.well-known/oauth-authorization-server 200 -"
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the proxy's process too
        assert proc.wait(timeout=20) == 0
        assert lines.get(timeout=5).startswith("stopped after 1 exchanges, recorded to")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    doc = json.loads(record.read_text())
    assert [e["request"]["url"].split("/", 3)[-1] for e in doc["log"]["entries"]] == [
        ".well-known/oauth-authorization-server"
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "--sandbox, --upstream URL or --replay"),
        (("--upstream", "ftp://example.org"), "not an http:// or https:// URL"),
        (("--upstream", "http://[::1"), "not a URL (Invalid IPv6 URL)"),
        (("--upstream", "http://127.0.0.1:99999"), "not a URL (Port out of range"),
        (("--upstream", "http://me:pw@127.0.0.1:1"), "carries no user name or password"),
        (("--replay", "/no/such.har"), "no such file"),
        (("--sandbox", "--upstream", "http://127.0.0.1:1"), "not allowed with argument"),
        (("--sandbox", "--keep", "0"), "keep at least 1"),
        (("--sandbox", "--keep", "many"), "'many' is not a number"),
        (("--sandbox", "--agent-key", __file__), f"--agent-key {__file__}: not an unencrypted RSA private key"),
        (("--upstream", "http://127.0.0.1:1", "--owner-key", __file__), f"--owner-key {__file__}: not an unencrypted"),
    ],
)
def test_usage_mistakes_exit_2_with_an_error_line(args, said):
    proc = _proxy(*args)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "error:" in err and said in err


def test_output_nobody_reads_any_more_stops_nothing():
    """`decoy-lab proxy | head -1`: once the pipe is closed, lines are dropped, exchanges still
    pass and are recorded, and the stop is clean (no traceback)."""
    proc = _proxy("--sandbox")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert url, first
        proc.stdout.close()
        for _ in range(3):
            got = httpx.get(f"{url.group(0)}/.well-known/oauth-authorization-server", timeout=10, trust_env=False)
            assert got.status_code == 200
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_a_line_of_the_proxy_never_acts_on_the_terminal():
    """What an agent or a recording chose (a path, a row id, a reason) is printed with its control
    characters escaped: `\x1b]0;PWNED\x07` once retitled the terminal."""
    import io

    from decoy_lab.inspector.command import _Say

    out = io.StringIO()
    _Say(out)("#1 GET /a\x1b]0;PWNED\x07 200 row \x9b2J")
    assert out.getvalue() == "#1 GET /a\\x1b]0;PWNED\\x07 200 row \\x9b2J\n"
