"""The `decoy-lab` command: the sandbox, the tour, and the verbs of `verbs/` (commands.py).

Each sub-command is a small function over the same modules the notebook uses. An exception no
command expected (a defect in decoy-lab, never a mistake of the user's) is one `error: …` line
naming it and exit 70 (EX_SOFTWARE), not a traceback; `DECOY_LAB_TRACEBACK=1` shows where.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from decoy_lab import __version__

if TYPE_CHECKING:  # imported lazily at run time: `decoy-lab --version` stays quick
    from decoy_lab.workbench.verbs import Verb


def _cmd_tour(args: argparse.Namespace) -> int:
    """Execute the tour notebook headless into build/tour.html."""
    import subprocess

    root = Path(args.notebooks)
    out = Path(args.output)
    if not (root / "01-tour.ipynb").is_file():  # nbconvert would print its whole help instead
        print(
            f"error: {root / '01-tour.ipynb'}: no such notebook (run it in a clone of decoy_lab, or give --notebooks DIR)",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "html",
            "--execute",
            str(root / "01-tour.ipynb"),
            "--output-dir",
            str(out),
            "--output",
            "tour",
        ]
    )


class _Usage(argparse.HelpFormatter):
    """argparse's help with the words after `--` spelled out: a positional that takes the rest of
    the line (`check`'s agent command) shows as `-- COMMAND [ARG ...]`, not a bare `...`."""

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if action.nargs == argparse.REMAINDER:
            name = action.metavar if isinstance(action.metavar, str) else default_metavar
            return f"-- {name.upper()} [ARG ...]"
        return super()._format_args(action, default_metavar)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="decoy-lab", description="Decoy memory workbench")
    p.add_argument("--version", action="version", version=f"decoy-lab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("tour", help="execute notebooks/01-tour.ipynb headless into build/tour.html")
    t.add_argument("--notebooks", default="notebooks")
    t.add_argument("--output", default="build")
    t.set_defaults(run=_cmd_tour)

    try:
        from decoy_lab.sandbox.server import add_cli
    except ImportError:  # the sandbox extra is always installed; guard only partial checkouts
        pass
    else:
        add_cli(sub)
    _add_agent_commands(sub)
    try:
        from decoy_lab.workbench.shell.commands import add_connection_commands
    except ImportError:
        pass
    else:
        add_connection_commands(sub)
    for command in sub.choices.values():  # the parsers inspector/, conformance/ and sandbox/ add too
        command.formatter_class = _Usage
    return p


def _add_agent_commands(sub: argparse._SubParsersAction) -> None:
    """`proxy` and `check`: another program's agent, seen through the inspector and judged by the
    spec (their parsers and runs live with them, in inspector/ and conformance/)."""
    from decoy_lab.conformance import command as check
    from decoy_lab.inspector import command as proxy

    p = sub.add_parser(
        "proxy", help="a recording proxy that opens every sealed row your agent sends", description=proxy.DESCRIPTION
    )
    proxy.add_arguments(p)
    p.set_defaults(run=proxy.run)
    c = sub.add_parser(
        "check",
        help="judge an agent by the spec, rule by rule, under staged faults",
        description=check.DESCRIPTION,
        epilog=check.EXIT_STATUSES,
    )
    check.add_arguments(c)
    c.set_defaults(run=check.run)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    known = _commands(parser)
    if words and not words[0].startswith("-") and words[0] not in known:
        return _unknown(words[0], known)
    args, extra = parser.parse_known_args(words)
    if extra:  # said by the verb that was given them, with its usage (not the top-level one)
        return _unrecognized(getattr(args, "command", None), extra, known)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        return int(args.run(args) or 0)
    except Exception as exc:  # a defect: said in one line, as every other failure is said
        if os.environ.get(TRACEBACK_ENV):
            raise
        from decoy_lab.workbench.shell.terminal import note

        note(
            f"error: decoy-lab {args.command} stopped on an unexpected {type(exc).__name__}: {exc} — a defect in "
            f"decoy-lab, not in what you typed; {TRACEBACK_ENV}=1 shows where (please report it)"
        )
        return DEFECT


TRACEBACK_ENV = "DECOY_LAB_TRACEBACK"
DEFECT = 70  # sysexits' EX_SOFTWARE: neither the user's mistake (2) nor a refusal (1)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each sub-command's name (aliases too) and its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _shell_verb(command: str | None) -> Verb | None:
    """The verb table's entry for a shell sub-command, or None for one that keeps its own parser
    (tour, sandbox, proxy, check: the table's `check` is the notebook's)."""
    from decoy_lab.workbench.verbs import SHELL, verbs_for

    return next((v for v in verbs_for(SHELL) if command in (v.name, *v.aliases)), None)


def usage_of(command: str, known: dict[str, argparse.ArgumentParser]) -> str:
    """The whole usage of a sub-command, as `decoy-lab COMMAND -h` begins: the verb table's line
    for a verb of the table, else the usage of the parser the sub-command keeps (every option,
    and `--` where the words after it are another program's)."""
    from decoy_lab.workbench.verbs import SHELL

    verb = _shell_verb(command)
    if verb is not None:
        return f"usage: {verb.usage(SHELL)}"
    parser = known.get(command)
    return parser.format_usage().rstrip() if parser is not None else f"usage: decoy-lab {command} -h"


def _unrecognized(command: str | None, extra: list[str], known: dict[str, argparse.ArgumentParser]) -> int:
    """Words no option of the verb takes: one line, the closest flag, the verb's one-line usage."""
    from decoy_lab.workbench.verbs import SHELL, closest

    verb = _shell_verb(command)
    where = f"decoy-lab {command}" if command else "decoy-lab"
    flag = next((w for w in extra if w.startswith("--")), None)
    near = closest(flag, verb.flags(SHELL)) if verb is not None and flag else None
    said = f" — did you mean {near!r}?" if near else ""
    print(f"error: {where}: unrecognized arguments: {' '.join(extra)}{said}", file=sys.stderr)
    print(usage_of(command, known) if command else "usage: decoy-lab -h", file=sys.stderr)
    return 2


#: A notebook verb's shell counterpart, where the shell has one under another name.
SHELL_NAMES = {
    "inspect": "decoy-lab proxy records an agent's traffic",
    "map": "decoy-lab topics and decoy-lab links list what it draws",
    "browse": "decoy-lab memories lists its table",
    "help": "decoy-lab --help lists the sub-commands",
}


def _unknown(word: str, known: dict[str, argparse.ArgumentParser]) -> int:
    """A mistyped sub-command: one line and the closest one's whole usage, exit 2. A notebook's
    verb (`%decoy inspect`, `map`) is said to be one, with the shell's counterpart where there is."""
    from decoy_lab.workbench.verbs import BY_NAME, closest

    near = closest(word, list(known))
    if word in BY_NAME:
        instead = SHELL_NAMES.get(word, "decoy-lab --help lists the sub-commands")
        print(f"error: {word!r} is a notebook verb (%decoy {word}); in a shell, {instead}", file=sys.stderr)
    elif near is None:
        print(f"error: unknown sub-command {word!r} — decoy-lab --help lists them", file=sys.stderr)
    else:
        print(f"error: unknown sub-command {word!r} — did you mean {near!r}?", file=sys.stderr)
        print(usage_of(near, known), file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
