"""`make mutate`: mutation testing (mutmut) over the modules that guard keys, secrets and writes.

Each set of mutate/sets.toml (modules + the test files that cover them) runs in a work folder of
its own, build/mutate/<set>/, holding a pyproject.toml with that set's [tool.mutmut] and symlinks
to decoy_lab/ and tests/: mutmut writes its mutants under build/mutate/<set>/mutants/, never into
the sources, and a rerun reuses what did not change. mutmut copies decoy_lab/ and tests/ into
mutants/ as it starts (an edit half made then is what every mutant runs on): on a shared tree, run
it from a `git worktree` of a commit instead.
One worker (the machine is shared). Every set but `judges` (which repeats the judges_* sets in one
piece) runs by default, about three hours on two busy cores; pass set names to run only those:

    .venv/bin/python scripts/mutate.py masking read      # or: make mutate SETS="masking read"

Mutants listed in mutate/equivalent.txt (one `name  # why` a line) count as neither killed nor
survived. Prints, per set and in all, killed / total (the score is killed ÷ (total − equivalent)),
the survivors by name, and writes the same to build/mutate/report.txt. Each run starts afresh
(mutmut would keep a survivor's verdict after a test that kills it is added); `--keep` reuses the
last verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "mutate" / "sets.toml"
EQUIVALENT = ROOT / "mutate" / "equivalent.txt"
WORK = ROOT / "build" / "mutate"
MUTMUT = Path(sys.executable).parent / "mutmut"
ON_REQUEST = {"judges"}  # the rules package at once: the same mutants as the judges_* sets, in one sitting
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def _prepare(name: str, spec: dict) -> Path:
    """The set's work folder: pyproject.toml (the project's, with this set's [tool.mutmut])
    and links to the sources and tests."""
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    for link in ("decoy_lab", "tests"):
        path = work / link
        if not path.is_symlink():
            path.symlink_to(ROOT / link, target_is_directory=True)
    project = (ROOT / "pyproject.toml").read_text()
    project += (
        "\n[tool.mutmut]\n"
        'source_paths = ["decoy_lab"]\n'
        f"only_mutate = {_toml_list(spec['modules'])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(spec['tests'])}\n"
        # no xdist, no pytest-timeout thread: mutmut times each mutant itself
        'pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "--timeout=0"]\n'
        "use_git_change_detection = false\n"
        "timeout_multiplier = 5.0\n"
        "timeout_constant = 20.0\n"
    )
    target = work / "pyproject.toml"
    if not target.exists() or target.read_text() != project:
        target.write_text(project)
    return work


def _equivalents() -> dict[str, str]:
    out = {}
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                mutant, _, why = line.partition("#")
                out[mutant.strip()] = why.strip()
    return out


def _results(work: Path) -> dict[str, str]:
    """mutant name → status, from `mutmut results --all true`."""
    out = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if m:
            res[m.group(1)] = m.group(2).strip()
    return res


def run_set(
    name: str, spec: dict, equivalents: dict[str, str], log, *, keep: bool
) -> tuple[int, int, int, list[str], float]:
    work = _prepare(name, spec)
    if not keep:  # mutmut keeps a verdict until the mutated function changes, not when a test does
        shutil.rmtree(work / "mutants", ignore_errors=True)
    # Made before mutmut starts: a PYTHONPATH folder missing at start-up is never looked in again.
    (work / "mutants").mkdir(exist_ok=True)
    start = time.monotonic()
    # Processes the tests start (the inspector's pump, a sandbox in a process of its own) import
    # the mutants too, and the mutant under test reaches them through MUTANT_UNDER_TEST.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(work / "mutants"))
    with open(WORK / f"{name}.log", "w") as out:
        proc = subprocess.run(
            [str(MUTMUT), "run", "--max-children", "1"], cwd=work, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    took = time.monotonic() - start
    if proc.returncode != 0:
        log(f"{name}: mutmut failed ({proc.returncode}); see {WORK / f'{name}.log'}")
    res = _results(work)
    equivalent = [m for m in res if m in equivalents]
    survived = sorted(m for m, s in res.items() if s not in KILLED and m not in equivalents)
    killed = sum(1 for m, s in res.items() if s in KILLED and m not in equivalents)
    return killed, len(res), len(equivalent), survived, took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "sets", nargs="*", help=f"set names of mutate/sets.toml (default: all but {', '.join(sorted(ON_REQUEST))})"
    )
    parser.add_argument(
        "--keep", action="store_true", help="reuse the last run's verdicts (fast, but blind to tests added since)"
    )
    args = parser.parse_args(argv)
    sets = tomllib.loads(SETS.read_text())["sets"]
    names = args.sets or [n for n in sets if n not in ON_REQUEST]
    unknown = [n for n in names if n not in sets]
    if unknown:
        parser.error(f"no such set: {', '.join(unknown)} (sets: {', '.join(sets)})")
    WORK.mkdir(parents=True, exist_ok=True)
    equivalents = _equivalents()
    lines: list[str] = []

    def log(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    all_killed = all_scored = 0
    survivors: list[str] = []
    began = time.monotonic()
    for name in names:
        killed, total, equivalent, survived, took = run_set(name, sets[name], equivalents, log, keep=args.keep)
        scored = total - equivalent
        score = 100.0 * killed / scored if scored else 0.0
        log(
            f"{name:10} {killed:4d} / {scored:4d} killed ({score:5.1f} %), "
            f"{equivalent} equivalent, {len(survived)} survived, {took:5.0f} s"
        )
        all_killed += killed
        all_scored += scored
        survivors += survived
    total_score = 100.0 * all_killed / all_scored if all_scored else 0.0
    log(
        f"{'all':10} {all_killed:4d} / {all_scored:4d} killed ({total_score:5.1f} %), {time.monotonic() - began:5.0f} s"
    )
    if survivors:
        log(f"{len(survivors)} survivors (`mutmut show NAME` in build/mutate/<set>/ shows one):")
        lines.extend(f"  {s}" for s in survivors)
        print("\n".join(f"  {s}" for s in survivors[:40]) + ("\n  …" if len(survivors) > 40 else ""))
    (WORK / "report.txt").write_text("\n".join(lines) + "\n")
    print(f"report: {WORK / 'report.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
