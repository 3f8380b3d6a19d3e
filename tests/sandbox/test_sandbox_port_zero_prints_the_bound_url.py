"""`decoy-lab sandbox --port 0` asks the system for a free port and prints the URL it bound, one that
answers — never `http://127.0.0.1:0`. Run as a user runs it: the CLI in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def _banner(proc: subprocess.Popen) -> str:
    """What the command prints up to its last line ("Ctrl-C to stop.")."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while not lines or lines[-1].strip() != "Ctrl-C to stop.":
        assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
        lines.append(proc.stdout.readline())
    return "".join(lines)


def test_port_zero_prints_the_port_it_bound_and_that_url_answers(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "sandbox", "--port", "0", "--db", ":memory:"]
    cmd += ["--seed", "none"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        out = _banner(proc)
        found = re.match(r"Decoy sandbox on (http://127\.0\.0\.1:(\d+))  ", out)
        assert found is not None, out
        url, port = found.group(1), int(found.group(2))
        assert port != 0 and ":0/" not in out and not re.search(r":0\b", out), out
        assert f"give an agent this URL   {url}\n" in out and f"your home page           {url}/\n" in out
        # Printed once the server listens: the URL answers at once, no waiting.
        home = httpx.get(f"{url}/", timeout=10)
        assert home.status_code == 200 and "Your Decoy sandbox" in home.text
    finally:
        proc.terminate()
        proc.wait(15)
