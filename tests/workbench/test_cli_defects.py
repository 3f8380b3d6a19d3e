"""An exception no command expected — a defect in decoy-lab, not the user's mistake — is said in
one `error: …` line naming it, with exit 70 (EX_SOFTWARE), never a traceback; its words are
escaped like every other line on stderr. `DECOY_LAB_TRACEBACK=1` lets it through, for whoever
fixes it."""

from __future__ import annotations

import pytest

from decoy_lab.store.profiles import ProfileStore
from decoy_lab.workbench.shell.cli import DEFECT, TRACEBACK_ENV

from support.shell_runs import run


@pytest.fixture
def broken(config, monkeypatch):
    def exists(self, name):  # stands for any defect met on the way to a connection
        raise TypeError("'float' object is not subscriptable \x1b]0;title\x07")

    monkeypatch.setattr(ProfileStore, "exists", exists)
    monkeypatch.delenv(TRACEBACK_ENV, raising=False)


def test_a_defect_is_one_error_line_and_exit_70(broken):
    code, out, err = run("accounts")
    assert code == DEFECT == 70
    assert out == ""
    assert err.startswith("error: decoy-lab accounts stopped on an unexpected TypeError: 'float' object")
    assert "Traceback" not in err and "\x1b" not in err and "\x07" not in err
    assert "not in what you typed" in err and f"{TRACEBACK_ENV}=1" in err


def test_the_traceback_is_there_when_asked_for(broken, monkeypatch):
    monkeypatch.setenv(TRACEBACK_ENV, "1")
    with pytest.raises(TypeError, match="not subscriptable"):
        run("accounts")


def test_a_mistake_is_still_exit_2(config):
    code, _, err = run("accounts", "--profile", "nobody")
    assert code == 2 and err.startswith("error: no saved profile 'nobody'")
