"""`decoy-lab resend` and `%decoy resend` finish an account write whose answer was lost: the
pending entry listed with what to do, exit 1 while its outcome is still unknown, exit 0 once the
server's answer proves it, and `error: …` with exit 2 on a mistake — against the sandbox over real
HTTP (a Meddler loses the first answer; the sandbox's `drop_after_commit` fault a resend's).

001, `account_field_create`: "Sending the same id again answers `existing` … Reuse the id until
you get an answer."
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.sandbox import Sandbox
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.magics import connect_by_magic, decoy_shell
from support.meddler import Meddler, committed_then_lost
from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox() as sb:
        yield sb


def lose_a_field(profile: str, store: ProfileStore) -> tuple[str, str]:
    """Through a Meddler: an account made, then a field whose POST committed and whose answer was
    lost. (account id, the field's id as the error names it)."""
    meddler = Meddler()
    with Connection.resume(profile, store=store, transport=meddler, retries=0, backoff=0) as conn:
        made = conn.create_account("Verbs")
        meddler.plan("POST", routes.account(made.account_id, "fields"), committed_then_lost)
        with pytest.raises(OutcomeUnknown) as caught:
            conn.add_field(made.account_id, "API key", "sk-verbs")
    return made.account_id, str(caught.value).split("field_id='", 1)[1].split("'", 1)[0]


def test_the_shell_lists_finishes_and_says_so_in_its_exit_code(sandbox, config):
    code, _, err = run("connect", sandbox.url, "--name", "CLI resend", "--permission", "everything")
    assert code == 0, err
    account_id, field_id = lose_a_field("default", ProfileStore(config))
    code, out, err = run("resend", "--list")
    assert code == 1, err
    assert f"pending  field {account_id}" in out and "decoy-lab resend" in out and "sk-verbs" not in out
    sandbox.state.faults.configure({"drop_after_commit": 1.0})  # the resend's answer is lost too
    try:
        code, out, err = run("resend")
    finally:
        sandbox.state.faults.configure({})
    assert code == 1 and "still unknown" in out, (out, err)
    code, out, err = run("resend", "--json")
    assert code == 0, err
    (done,) = json.loads(out)["results"]
    assert done["outcome"] == "committed" and done["ids"] == [field_id] and "existing" in done["said"]
    code, out, _ = run("resend")
    assert code == 0 and "nothing pending" in out
    code, _, err = run("resend", "--profile", "nobody")
    assert code == 2 and err.startswith("error: no saved profile 'nobody'")


def test_the_magic_finishes_it_too(sandbox, config):
    with decoy_shell(config) as shell:
        conn = connect_by_magic(
            shell, f"{sandbox.url} --name magic-resend --profile magic-resend --permission everything"
        )
        try:
            account_id, field_id = lose_a_field("magic-resend", ProfileStore(config))
            listed = shell.run_line_magic("decoy", "resend --list")
            assert [(p["kind"], p["target"], p["ids"]) for p in listed] == [("field", account_id, [field_id])]
            with contextlib.redirect_stdout(io.StringIO()):
                (done,) = shell.run_line_magic("decoy", "resend")
            assert done["outcome"] == "committed" and conn.pending == []
        finally:
            conn.close()
