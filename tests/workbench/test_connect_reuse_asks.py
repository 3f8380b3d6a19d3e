"""`decoy-lab connect` over a live saved connection: it reuses it (issue 12), and when the reused
connection does not hold a permission the line asked for, it says so with the `request` line that
asks for it and exits 1; the way it gives to pair another works as typed — against the sandbox
over real HTTP.

001: "More access is a `grant-request` on the same connection. Never re-pair, never open a second
connection for more access." A reuse that passed over `--permission account.create` in silence
left the next `account-new` to meet `403 SCOPE_MISSING`."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore

from support.shell_runs import prompt_sandbox, run, shell_env


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with shell_env(tmp_path), prompt_sandbox() as sb:
        yield sb


def test_a_reused_connection_says_what_it_does_not_hold_and_how_to_ask(sandbox, tmp_path):
    code, _, err = run("connect", sandbox.url, "--name", "Plain")
    assert code == 0, err
    token_id = ProfileStore(tmp_path).load("default").token_id

    code, out, err = run("connect", sandbox.url, "--permission", "account.create", "memory.save")
    assert code == 1 and "Already connected" in out
    assert "it does not hold account.create, asked for here" in err and "memory.save" not in err
    asked = re.search(r"decoy-lab (request account\.create)\b", err)
    assert asked, err
    assert ProfileStore(tmp_path).load("default").token_id == token_id  # nothing was paired again

    code, _, err = run(*shlex.split(asked[1]))  # the sandbox's phone approves at once
    assert code == 0, err
    code, out, err = run("connect", sandbox.url, "--permission", "account.create", "memory.save")
    assert code == 0 and "Already connected" in out and err == ""
    code, out, err = run("account-new", "Acme")
    assert code == 0 and "account_id" in out, err

    code, out, _ = run("connect", sandbox.url)
    another = re.search(r"decoy-lab (connect \S+ --new --profile NAME) pairs another", out)
    assert code == 0 and another, out
    code, out, err = run(*shlex.split(another[1].replace("NAME", "second")))
    assert code == 0 and "Paired" in out, err
    assert ProfileStore(tmp_path).load("second").token_id != token_id
