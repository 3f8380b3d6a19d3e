"""A notebook's verb typed in a shell (`decoy-lab inspect`, as the README's "`inspect`, `check`" row
reads) is said to be one, with the shell's counterpart, which exists: not "unknown sub-command" and
nothing more. No server is involved: the parser answers before any connection."""

from __future__ import annotations

import re

import pytest

from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.cli import SHELL_NAMES

from support.shell_runs import run

#: the notebook's verbs the shell has no sub-command of the same name for (`check` it has, apart)
NOTEBOOK_ONLY = sorted(n for n, v in verbs.BY_NAME.items() if verbs.SHELL not in v.fronts and n != "check")


@pytest.mark.parametrize("word", NOTEBOOK_ONLY)
def test_a_notebook_verb_names_its_shell_counterpart(word):
    code, out, err = run(word)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {word!r} is a notebook verb (%decoy {word}); in a shell, ")
    for command in re.findall(r"decoy-lab ([a-z][a-z-]*)", err):
        with pytest.raises(SystemExit) as shown:  # argparse's --help exits 0 once it has printed
            run(command, "--help")
        assert shown.value.code == 0, command


def test_inspect_points_at_the_proxy():
    assert SHELL_NAMES["inspect"].startswith("decoy-lab proxy ")
    code, _, err = run("inspect")
    assert code == 2 and "decoy-lab proxy records an agent's traffic" in err
