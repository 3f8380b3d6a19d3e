import subprocess
import sys


def test_console_script_prints_version():
    out = subprocess.run(
        [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.startswith("decoy-lab ")


def _options(parser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")} | {
        a.dest for a in parser._actions if not a.option_strings
    }


def test_every_verb_of_the_table_exists_in_both_front_ends_with_the_same_options():
    """Issue 12: "One verb table … A test asserts that every verb of the table exists in both
    front ends with the same options". A verb or option only one front end has is declared so in
    the table; this test lists each such case, so a new one is a visible choice."""
    import argparse

    from decoy_lab.workbench import verbs
    from decoy_lab.workbench.notebook import magics
    from decoy_lab.workbench.shell.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    shell = dict(sub.choices)
    one_front = {(v.name, f) for v in verbs.VERBS for f in sorted(verbs.BOTH) if f not in v.fronts} | {
        (v.name, a.name) for v in verbs.VERBS for a in v.args if a.fronts != verbs.BOTH
    }
    assert one_front == {
        ("map", "shell"),
        ("browse", "shell"),
        ("help", "shell"),
        ("inspect", "shell"),  # the shell has `decoy-lab proxy` (inspector/command.py) instead
        ("check", "shell"),  # the shell's `decoy-lab check` is conformance/command.py's own parser
        ("app-view", "notebook"),
        ("connect", "--sandbox"),
        ("unpair", "which"),
        ("memories", "--all"),
        ("dump", "--owner"),
        ("request", "--wait"),
        ("request", "--timeout"),
        ("request", "--interval"),
        # a shell read waits for rows on their way by default (--no-wait reads once, --wait is
        # still taken); in a notebook a cell must return, so waiting is asked for with --wait
        ("memories", "--wait"),
        *((v, w) for v in ("memories", "topics", "accounts", "links", "rows") for w in ("--no-wait", "--wait")),
        *(
            (v, "--json")
            for v in ("status", "access", "request", "memories", "topics", "accounts", "decoys", "links", "rows")
        ),
        *((v, "--json") for v in ("edit", "delete", "sync", "resend", "app-view")),
        *((v.name, "--json") for v in verbs.ACCOUNT_VERBS),  # each account write's outcome as one object
        # a headless notebook has no password box: the secret from a variable the line names
        *((v, "--from") for v in ("password", "field-add", "field-set")),
    }
    for verb in verbs.VERBS:
        if verbs.SHELL in verb.fronts:
            got = _options(shell[verb.name]) - {"help", "--help"}
            assert got == {a.name for a in verb.args_for(verbs.SHELL)} | {"--profile"}, verb.name
        if verbs.NOTEBOOK in verb.fronts:
            assert verb.name in magics.RUN
            parsed = verbs.parse([verb.name, "-h"], verbs.NOTEBOOK)
            assert parsed is None  # -h is answered by the verb's own parser, built from the table
    assert set(magics.RUN) == {v.name for v in verbs.verbs_for(verbs.NOTEBOOK)}
    for verb in verbs.verbs_for(verbs.SHELL):
        assert verb.name in shell and all(alias in shell for alias in verb.aliases)
