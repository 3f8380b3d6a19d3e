"""`decoy-lab accounts` says why a row's service is blank, on stderr beside the table — against the
sandbox over real HTTP.

001, `account_create`: the record is "sealed to the owner's public key", so the server holds no name
for it and this connection none either unless a copy is sealed to it (`decoy_create`'s
`metadata_seals`). An account saved with `account-save` then listed with a blank service and no
word of why; `--json` alone said it, in `service_from`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.sandbox import Sandbox

from support.shell_runs import prompt_sandbox, run, shell_env


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with shell_env(tmp_path), prompt_sandbox() as sb:
        yield sb


def test_a_blank_service_is_said_with_its_reason(sandbox):
    code, _, err = run("connect", sandbox.url, "--name", "Saver", "--permission", "account.create")
    assert code == 0, err
    code, saved, err = run("account-save", "Widgets", "--username", "bob")
    assert code == 0, err
    code, _, err = run("account-new", "Acme")
    assert code == 0, err

    code, out, err = run("accounts", "--json")
    assert code == 0, err
    why = {r["id"]: r["service_from"] for r in json.loads(out) if r["service"] is None}
    assert list(why) == [saved.strip()]

    code, out, err = run("accounts")
    assert code == 0, err
    assert "Acme" in out and saved.strip()[:8] in out
    said = f"1 account with no service shown ({saved.strip()[:8]}): {why[saved.strip()].removeprefix('no name: ')}"
    assert err.strip() == said
