"""The checked agent runs in a clean room: none of the user's world, only what it needs and what
the user hands it with `--env NAME`.

The attack (Low): `check` passed the agent the whole environment. It got `DECOY_TOKEN`, and
through the inherited `DECOY_LAB_CONFIG_DIR` it read the user's real profile, tokens and private
key included. Now the agent's environment is an allow-list (PATH, the locale, TZ), a fresh HOME
and config directory, `DECOY_BASE_URL`, and each variable `--env` names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from decoy_lab.conformance.command import main
from decoy_lab.conformance.scenarios import agent_env

from support.check_agents import ROOT

# writes its environment and what its HOME and config directory hold, then stops (it sends nothing)
DUMPER = textwrap.dedent(
    """
    import json, os, sys
    home, config = os.environ.get("HOME", ""), os.environ.get("DECOY_LAB_CONFIG_DIR", "")
    seen = {"env": dict(os.environ), "home": sorted(os.listdir(home)) if os.path.isdir(home) else None,
            "config": sorted(os.listdir(config)) if os.path.isdir(config) else None}
    with open(sys.argv[1], "w") as f:
        json.dump(seen, f)
    """
)


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict[str, str]:
    """The user's world: a HOME and a config directory holding a profile, a token, a variable."""
    root = tmp_path_factory.mktemp("user")
    (root / "home").mkdir()
    (root / "home" / "diary.txt").write_text("the user's own")
    (root / "config").mkdir(mode=0o700)
    (root / "config" / "default.json").write_text('{"access_token": "secret", "private_key": "-----BEGIN"}')
    return {
        "HOME": str(root / "home"),
        "DECOY_TOKEN": "secret-token",
        "DECOY_LAB_CONFIG_DIR": str(root / "config"),
        "DECOY_CLIENT_ID": "users-client",
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
        "FOO": "foo-value",
        "LANG": "C.UTF-8",
        "TZ": "Europe/Lisbon",
    }


def checked(user: dict[str, str], tmp_path: Path, *flags: str) -> dict:
    """`decoy-lab check` (one scenario) of DUMPER run as `user`: what the agent saw."""
    agent, seen = tmp_path / "dumper.py", tmp_path / "seen.json"
    agent.write_text(DUMPER)
    done = subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--scenario", "clean", "--timeout", "60", *flags,
         "--", sys.executable, str(agent), str(seen)],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **user},
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr  # it sent nothing: no rule was exercised
    return json.loads(seen.read_text())


def test_the_agent_gets_no_token_no_profile_no_home_and_foo_only_with_env_foo(user, tmp_path):
    seen = checked(user, tmp_path, "--env", "FOO")
    env = seen["env"]
    assert env["FOO"] == "foo-value", "--env FOO hands it over"
    for leaked in ("DECOY_TOKEN", "DECOY_CLIENT_ID", "AWS_SECRET_ACCESS_KEY"):
        assert leaked not in env
    assert not [k for k in env if k.startswith("DECOY_") and k not in ("DECOY_BASE_URL", "DECOY_LAB_CONFIG_DIR")]
    assert "secret" not in json.dumps(env)
    assert env["HOME"] != user["HOME"] and env["DECOY_LAB_CONFIG_DIR"] != user["DECOY_LAB_CONFIG_DIR"]
    assert seen["home"] is not None and "diary.txt" not in seen["home"]
    assert seen["config"] == [], "a fresh, empty config directory: no profile to read"
    assert Path(env["DECOY_LAB_CONFIG_DIR"]).parent == Path(env["HOME"]).parent, "both in one clean room"
    for xdg in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        assert Path(env[xdg]).is_relative_to(env["HOME"])
    assert env["DECOY_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["PATH"] == os.environ["PATH"] and env["LANG"] == "C.UTF-8" and env["TZ"] == "Europe/Lisbon"
    allowed = {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "DECOY_LAB_CONFIG_DIR", "DECOY_BASE_URL", "FOO",
               "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PYTHONUNBUFFERED"}  # fmt: skip
    assert set(env) <= allowed, set(env) - allowed
    assert not Path(env["HOME"]).exists(), "the clean room is removed after the run"


def test_without_env_the_users_variable_does_not_reach_the_agent(user, tmp_path):
    env = agent_env(tmp_path, "http://127.0.0.1:1", (), environ=user)  # what the run above gives, without --env
    assert "FOO" not in env and "DECOY_TOKEN" not in env and env["HOME"] == str(tmp_path / "home")
    assert agent_env(tmp_path, "http://127.0.0.1:1", ("FOO",), environ=user)["FOO"] == "foo-value"


@pytest.mark.parametrize(
    ("name", "says"),
    [("HOME", "the check sets HOME itself"), ("DECOY_LAB_CONFIG_DIR", "sets DECOY_LAB_CONFIG_DIR itself"),
     ("NO_SUCH_VARIABLE_HERE", "no such variable is set")],
)  # fmt: skip
def test_env_cannot_hand_over_the_users_home_or_config_nor_an_unset_name(capsys, name, says):
    assert main(["--env", name, "--", sys.executable]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --env {name}: ") and says in err


def test_the_notebook_check_takes_env_names_as_the_shell_does():
    from decoy_lab.workbench import verbs

    parsed = verbs.parse(["check", "--env", "FOO", "BAR", "--", sys.executable, "agent.py"])
    assert parsed is not None and parsed[1].env == ["FOO", "BAR"]
