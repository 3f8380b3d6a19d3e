"""`decoy-lab check`: judge an agent by the spec, rule by rule, under staged faults.

    decoy-lab check [--scenario NAME …] [--json FILE] [--junit FILE] [--html FILE] [--timeout S]
                    [--agent-key PEM] [--env NAME …] -- COMMAND [ARG…]
    python -m decoy_lab.conformance -- COMMAND [ARG…]
    python -m decoy_lab.conformance --rules-md > docs/rules.md

Each scenario runs COMMAND once against a fresh sandbox behind the inspector, with
`DECOY_BASE_URL` set to the inspector's URL (and `{url}` in its arguments replaced by it), in a
clean room: a fresh HOME and config directory, PATH, the locale and TZ, and only the user's
variables that `--env NAME` names (scenarios.agent_env). The scorecard lists each rule, its
verdict, the spec sentence it enforces and the exchanges that prove it; what the agent sent is
shown escaped, never acting on the terminal. Exit 0 when no rule failed, 1 when one did, 2 for a
usage mistake (`error: …`).
`add_arguments(parser)` and `run(args)` are what the `decoy-lab` command wires in.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from decoy_lab.argtypes import seconds
from decoy_lab.conformance import docs, report
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.scenarios import DEFAULT, RESERVED, SCENARIOS, run_scenario
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
    p.add_argument("--rules-md", dest="rules_md", action="store_true", help="print docs/rules.md and exit")
    p.add_argument("--list", action="store_true", help="list the scenarios and rules and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG…]: the agent to check")


def agent_command(words: list[str] | None) -> list[str]:
    """The agent's command from what follows `--` (checked to exist)."""
    command = list(words or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError("give the agent's command after --, e.g. decoy-lab check -- python my_agent.py")
    if shutil.which(command[0]) is None and not Path(command[0]).exists():
        raise UsageError(f"{command[0]}: no such command")
    return command


def scenario_names(names: list[str] | None) -> list[str]:
    """The scenarios asked for (default: all), each checked to exist."""
    for name in names or []:
        if name not in SCENARIOS:
            raise UsageError(f"no scenario {name!r}; the scenarios are {', '.join(SCENARIOS)}")
    return list(names or DEFAULT)


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
    command = agent_command(args.command)
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
    3 (no rule was exercised: the agent sent nothing they judge)."""
    out = out or sys.stdout
    if args.rules_md:
        out.write(docs.rules_md())
        return 0
    if args.list:
        out.write(_listing())
        return 0
    try:
        command = _usage(args)
        key = agent_key(args.agent_key)
    except UsageError as exc:
        print(f"error: {escaped(str(exc))}", file=sys.stderr)
        return 2
    passed = env_names(args.env)
    runs = []
    for name in scenario_names(args.scenario):
        print(f"running scenario {name} …", file=sys.stderr, flush=True)
        try:
            runs.append(run_scenario(SCENARIOS[name], command, timeout=args.timeout, agent_key=key, pass_env=passed))
        except (OSError, RuntimeError) as exc:
            print(f"error: scenario {name} could not run: {escaped(str(exc))}", file=sys.stderr)
            return 2
    card = report.score(RULES, runs, shlex.join(command))
    out.write(report.text(card))
    for flag, render in (("json", report.to_json), ("junit", report.junit), ("html", report.page)):
        path = getattr(args, flag)
        if path:
            Path(path).write_text(render(card), encoding="utf-8")
    return card.exit_code()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="decoy-lab check", description=DESCRIPTION, epilog=EXIT_STATUSES)
    add_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:  # everything after `--` is the agent's command, whatever it looks like
        i = argv.index("--")
        args = parser.parse_args(argv[:i])
        args.command = argv[i + 1 :]
    else:
        args = parser.parse_args(argv)
    return run(args)
