"""Smoke test for bench/: `python -m bench --quick --no-targets` runs every benchmark and prints
a figure for each. No timing is asserted here: performance is judged by `make bench`, never by
a timed unit test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = [
    "(a) machine limit, 1 thread",
    "read_memory_rows",
    "(c) Node WebCrypto peer",
    "load() first",
    "load() reload",
    "load() cold, new process",
    "reopen, nothing changed",
    "reopen after 1 % changed",
    "stream reader, one 16 MiB element",
    "large vault: load() cold (",
    "large vault: resident memory added ÷ served bytes",
    "large vault: peak during the load ÷ served bytes",
    "large vault: reopen (",
    "DataFrames (1,000 memories)",
    "topic map (50 topics / 1,000 memories)",
    "sandbox GET /memories",
    "8 concurrent writers, 5 s",
    "check: correct Node agent, 1 scenario",
    "check: time outside the agent",
    "sandbox GET beside 5 slowloris heads",
    "%decoy connect hands the cell back",
]

pytestmark = pytest.mark.timeout(400)


@pytest.fixture(scope="module")
def quick_run() -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--no-targets"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=360,
    )


def test_quick_bench_runs_every_benchmark(quick_run):
    assert quick_run.returncode == 0, quick_run.stderr[-2000:]
    out = quick_run.stdout
    assert "NOT MEASURED" not in out, out
    assert "crashed" not in out, out
    assert "rows served by the sandbox" in out


def test_quick_bench_prints_a_figure_for_each(quick_run):
    lines = quick_run.stdout.splitlines()
    for name in FIGURES:
        line = next((ln for ln in lines if ln.startswith(name)), None)
        assert line is not None, f"no figure line for {name!r}"
        assert re.search(r"\d[\d,.]* (rows/s|s|×|× faster|writes/s|%)", line), line


def test_quick_bench_names_the_machine(quick_run):
    out = quick_run.stdout
    assert re.search(r"^nproc \d+; CPU .+", out, re.M)
    assert re.search(r"Python 3\.\d+\.\d+; cryptography \S+ .*; Node ", out)


def test_no_targets_means_no_verdicts(quick_run):
    assert " PASS" not in quick_run.stdout and " MISS" not in quick_run.stdout


def test_the_cold_loads_say_where_their_time_went(quick_run):
    """The steady cold loads and the large one print the client's CPU with its kernel share and
    page faults (on a machine that backs memory only once touched, fresh pages cost the kernel)."""
    lines = quick_run.stdout.splitlines()
    steady = next(ln for ln in lines if ln.startswith("  · steady: load() cold: "))
    assert re.search(r"client CPU min [\d.]+ s .*\(system min [\d.]+ s .*page faults min [\d,]+", steady), steady
    large = next(ln for ln in lines if ln.startswith("  · large vault: load() cold vs the RSA limit: "))
    assert re.search(r"the load's CPU [\d.]+ s \([\d,]+ µs a row; system [\d.]+ s, [\d,]+ page faults\)", large)
    assert re.search(r"the sandbox's while serving it [\d.]+ s", large), large
