"""A verb run as `decoy-lab <verb> …` in this process, as the verb tests drive the shell: the
environment it runs in (a temporary config dir, keyring off, a wide terminal), a sandbox whose
phone answers at once, and one run's exit code and printed text."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING
from decoy_lab.workbench.shell.cli import main


@contextlib.contextmanager
def shell_env(config_dir: Path) -> Iterator[Path]:
    """Profiles in `config_dir` (secrets in files there, not the keyring), tables 160 columns wide."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_DIR, str(config_dir))
        mp.setenv(ENV_KEYRING, "0")
        mp.setenv("COLUMNS", "160")
        yield config_dir


@contextlib.contextmanager
def prompt_sandbox() -> Iterator[Sandbox]:
    """An empty sandbox whose device flow answers without a polling interval to wait out."""
    with Sandbox.start(seed="none") as sb:
        sb.state.device_interval = 0
        yield sb


@contextlib.contextmanager
def shell_sandbox(*pairings: tuple[str, ...]) -> Iterator[Sandbox]:
    """A `prompt_sandbox` with each of `pairings` (what follows the URL on a `decoy-lab connect`
    line) connected in turn, as a user would before the verbs under test."""
    with prompt_sandbox() as sb:
        for args in pairings:
            code, _, err = run("connect", sb.url, *args)
            assert code == 0, err
        yield sb


def run(*argv: str) -> tuple[int, str, str]:
    """`decoy-lab *argv`: its exit code, what it printed to stdout and to stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
