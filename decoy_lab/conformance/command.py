"""`decoy-lab check`: judge an agent by the spec, rule by rule, under staged faults.

    decoy-lab check [--scenario NAME …] [--json FILE] [--junit FILE] [--html FILE] [--timeout S]
                    [--agent-key PEM] [--env NAME …] [--jobs N] -- COMMAND [ARG…]
    decoy-lab check --replay REPORT EXCHANGE     # e.g. --replay score.json clean#7
    python -m decoy_lab.conformance -- COMMAND [ARG…]
    python -m decoy_lab.conformance --rules-md > docs/rules.md

Each scenario runs COMMAND once against a fresh sandbox behind the inspector (`--jobs`, default
3, of them side by side: runner.py), with
`DECOY_BASE_URL` set to the inspector's URL (and `{url}` in its arguments replaced by it), in a
clean room: a fresh HOME and config directory, PATH, the locale and TZ, and only the user's
variables that `--env NAME` names (scenarios.agent_env). The scorecard lists each rule, its
verdict, the spec sentence it enforces and the exchanges that prove it; what the agent sent is
shown escaped, never acting on the terminal. What failed comes first, each with what to do
instead; no body is printed: the JSON report (`--json FILE`, else one in a fresh temporary
folder, named at the end) keeps the exchanges a failure names in `FILE.d/`, with the check's
throwaway owner key, so `--replay FILE clean#7` sends one again to a sandbox staged the same way
(reproduce.py). Exit 0 when no rule failed, 1 when one did, 2 for a usage mistake (`error: …`,
one line), 3 when no rule was exercised.
`add_arguments(parser)` and `run(args)` are what the `decoy-lab` command wires in.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from decoy_lab.argtypes import seconds
from decoy_lab.conformance import docs, report, reproduce, runner
from decoy_lab.conformance.rulebook import Run
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.scenarios import DEFAULT, RESERVED, SCENARIOS
from decoy_lab.text import escaped
from decoy_lab.wire.crypto import AgentKey

DESCRIPTION = (
    "Run an agent under staged faults against a fresh sandbox behind the inspector, and judge "
    "what it did by the spec, rule by rule (PASSED / WARNING / FAILED / NOT EXERCISED)."
)


EXIT_STATUSES = (
    "exit status: 0 no rule failed, 1 a rule failed, 2 a usage mistake, "
    "3 no rule was exercised (the agent sent nothing the rules judge)"
)


class UsageError(Exception):
    """A mistake in the arguments: printed as `error: …`, exit 2."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The `check` options, shared by `decoy-lab check` and `python -m decoy_lab.conformance`."""
    p.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help=f"a scenario to run (repeatable; default: all of {', '.join(DEFAULT)})",
    )
    p.add_argument("--json", metavar="FILE", help="write the scorecard as JSON")
    p.add_argument("--junit", metavar="FILE", help="write the scorecard as JUnit XML (one test case per rule)")
    p.add_argument("--html", metavar="FILE", help="write an offline page: each failed rule with its exchanges")
    p.add_argument("--timeout", type=seconds, default=120.0, metavar="S", help="time limit per scenario (default 120)")
    p.add_argument(
        "--agent-key",
        dest="agent_key",
        metavar="PEM",
        help="the agent's private key: each row's self_wrap must open to the key its owner_wrap holds",
    )
    p.add_argument(
        "--env",
        action="append",
        metavar="NAME",
        help="give the agent this variable of yours (repeatable); it gets none of your environment but "
        "PATH, the locale and TZ, in a fresh HOME and config directory",
    )
    p.add_argument(
        "--jobs",
        type=_jobs,
        default=runner.WORKERS,
        metavar="N",
        help=f"scenarios run side by side, each in its own sandbox (default {runner.WORKERS})",
    )
    p.add_argument(
        "--replay",
        nargs=2,
        metavar=("REPORT", "EXCHANGE"),
        help="send a saved exchange (clean#7) of a --json REPORT again, to a sandbox staged as the check's, "
        "and judge it again",
    )
    p.add_argument("--rules-md", dest="rules_md", action="store_true", help="print docs/rules.md and exit")
    p.add_argument("--list", action="store_true", help="list the scenarios and rules and exit")
    # `agent`, not `command`: the `decoy-lab` parser keeps its sub-command in `command`
    p.add_argument("agent", nargs=argparse.REMAINDER, metavar="command", help="-- COMMAND [ARG…]: the agent to check")


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= n <= 16:
        raise argparse.ArgumentTypeError(f"{n}: give 1 to 16 scenarios at once")
    return n


SCRIPTS = (".py", ".mjs", ".cjs", ".js", ".ts", ".sh", ".rb", ".pl")  # an argument that names the agent's file


def agent_command(words: list[str] | None, roots: Sequence[Path] = ()) -> list[str]:
    """The agent's command from what follows `--`: its program checked to exist, and its script
    (the first argument naming a .py, .mjs, … file) too. A script not found here is looked for
    under each of `roots` (the notebook gives the checkout) and, found there, given by its path."""
    command = list(words or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError("give the agent's command after --, e.g. decoy-lab check -- python my_agent.py")
    if shutil.which(command[0]) is None and not Path(command[0]).exists():
        raise UsageError(f"{command[0]}: no such command")
    i = script_index(command)
    if i is not None and not Path(command[i]).exists():
        found = next((root / command[i] for root in roots if (root / command[i]).is_file()), None)
        if found is None:
            where = " or ".join([f"in {Path.cwd()}", *(f"under {r}" for r in roots)])
            raise UsageError(f"{command[i]}: no such file ({where})")
        command[i] = str(found)
    return command


def script_index(command: Sequence[str]) -> int | None:
    """Where the agent's script is in its command: the first argument (not an option, no spaces)
    that names a .py, .mjs, … file; None when there is none (a program of its own, `-c …`)."""
    for i, word in enumerate(command[1:], start=1):
        if command[i - 1] in ("-c", "-e", "-m", "--eval"):
            return None  # code or a module follows, not a file
        if not word.startswith("-") and " " not in word and word.endswith(SCRIPTS):
            return i
    return None


def scenario_names(names: list[str] | None) -> list[str]:
    """The scenarios asked for (default: all), each checked to exist."""
    for name in names or []:
        if name not in SCENARIOS:
            raise UsageError(f"no scenario {name!r}; the scenarios are {', '.join(SCENARIOS)}")
    return list(dict.fromkeys(names or DEFAULT))


def env_names(names: list[str] | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables `--env` hands the agent: each set here, and none the clean room sets itself."""
    environ = os.environ if environ is None else environ
    for name in names or []:
        if name in RESERVED:
            raise UsageError(f"--env {name}: the check sets {name} itself (the agent's own, never yours)")
        if not name or "=" in name or name not in environ:
            raise UsageError(f"--env {name}: no such variable is set (give its NAME; set it first)")
    return list(dict.fromkeys(names or []))


def agent_key(path: str | None) -> bytes | None:
    """The agent's private key (PEM) from --agent-key, read once."""
    try:
        return AgentKey.pem_file("--agent-key", path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _usage(args: argparse.Namespace) -> list[str]:
    command = agent_command(args.agent)
    scenario_names(args.scenario)
    env_names(args.env)
    for flag in ("json", "junit", "html"):
        value = getattr(args, flag)
        if value and not Path(value).resolve().parent.is_dir():
            raise UsageError(f"--{flag} {value}: its folder does not exist")
    return command


def _listing() -> str:
    lines = ["scenarios:"]
    lines += [f"  {s.name:<20} {s.title}" for s in SCENARIOS.values()]
    lines.append("rules:")
    lines += [f"  {r.id:<34} {r.title}  [{', '.join(r.scenarios)}]" for r in RULES]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    """Run the scenarios and print the scorecard; 0 (no rule failed), 1 (one did), 2 (usage),
    3 (no rule was exercised: the agent sent nothing they judge). With `--replay` send one saved
    exchange again instead (reproduce.replay: 1 when a rule fails again)."""
    out = out or sys.stdout
    if args.rules_md:
        out.write(docs.rules_md())
        return 0
    if args.list:
        out.write(_listing())
        return 0
    if args.replay:
        return _replay(args, out)
    try:
        command = _usage(args)
        key = agent_key(args.agent_key)
    except UsageError as exc:
        return _said(exc)
    names = scenario_names(args.scenario)
    began = time.monotonic()
    print(f"running {len(names)} scenario(s), {min(args.jobs, len(names))} at a time …", file=sys.stderr, flush=True)
    try:
        runs, staging = runner.run_scenarios(
            names,
            command,
            timeout=args.timeout,
            agent_key=key,
            pass_env=env_names(args.env),
            workers=args.jobs,
            on_done=_heard_done,
        )
    except runner.ScenarioError as exc:
        print(f"error: {escaped(str(exc))}", file=sys.stderr)
        return 2
    card = report.score(RULES, runs, shlex.join(command), staging=staging)
    card.seconds = time.monotonic() - began
    report.save(card, _report_path(args.json))
    out.write(report.text(card))
    if args.junit:
        Path(args.junit).write_text(report.junit(card), encoding="utf-8")
    if args.html:
        Path(args.html).write_text(report.page(card, args.html), encoding="utf-8")
    return card.exit_code()


def _said(exc: Exception) -> int:
    print(f"error: {escaped(str(exc))}", file=sys.stderr)
    return 2


def _heard_done(name: str, run: Run) -> None:
    ended = "timed out" if run.timed_out else f"exit {run.exit_code}"
    print(f"  {name}: {ended}, {len(run.exchanges)} exchanges", file=sys.stderr, flush=True)


def _report_path(json_file: str | None) -> Path:
    """Where the JSON report goes: `--json FILE`, else a fresh private temporary folder."""
    if json_file:
        return Path(json_file)
    return Path(tempfile.mkdtemp(prefix="decoy-report-")) / "report.json"


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    if args.agent and args.agent != ["--"]:
        return _said(UsageError("--replay sends a saved exchange again: give no agent command"))
    try:
        key = agent_key(args.agent_key)
        return reproduce.replay(args.replay[0], args.replay[1], out=out, agent_key=key)
    except (UsageError, reproduce.ReplayError) as exc:
        return _said(exc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="decoy-lab check", description=DESCRIPTION, epilog=EXIT_STATUSES)
    add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:  # everything after `--` is the agent's command, whatever it looks like
        i = argv.index("--")
        args = parser.parse_args(argv[:i])
        args.agent = argv[i + 1 :]
    else:
        args = parser.parse_args(argv)
    return run(args)
