"""The account family's remaining writes as `%decoy` magics (notebook/account_handlers.py), against
the sandbox over real HTTP: an account changed in place, an address burned only when the line
says `--yes` (a notebook has no prompt to confirm at), the alias linked to an account burned,
addresses paused and an export imported, each giving back what was done, refused rows too.

001, `decoy_burn`: "Permanently delete a decoy and all its data. **Irreversible.** Use `PATCH`
with `status: inactive` for a reversible pause"; `account_burn_decoy`: "it goes only with its
account (`403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`…)"; `decoy_pause_batch`: "Ids you may not touch are
listed in `failed` … and left alone"; `account_create_batch`: "one malformed row fails alone, the
rest are created".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import NotFound
from decoy_lab.sandbox import Sandbox
from decoy_lab.secret import Secret
from decoy_lab.transport import routes

from support.accounts_kit import personal_alias
from support.magics import decoy_refused as refused
from support.magics import paired_shell
from support.magics import quiet_decoy as decoy
from support.shell_runs import prompt_sandbox

PASSWORD = "pw-import-9"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with prompt_sandbox() as sb:
        yield sb


@pytest.fixture(scope="module")
def shell(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with paired_shell(
        tmp_path_factory.mktemp("config"), sandbox.url, "--name magic-more --profile magic-more --permission everything"
    ) as ip:
        yield ip


def conn_of(ip: Any) -> Connection:
    return ip.magics_manager.registry["DecoyMagics"].conn()


def served(ip: Any, path: str) -> dict | None:
    try:
        return conn_of(ip).session.get(path)
    except NotFound:
        return None


def test_an_account_changed_in_place_gives_back_the_account_as_answered(shell, sandbox):
    made = decoy(shell, "account-new Gym")
    done = decoy(shell, f"account-update {made.account_id[:8]} --label fitness --two-factor on")
    assert done.agent_label == "fitness" and done.two_factor_enabled is True
    assert f"account_id      {made.account_id}" in repr(done) and "at the rev read now" in repr(done)
    resealed = decoy(shell, f"account-update {made.account_id} --service 'Gym Pro' --url https://gym.example")
    assert "re-sealed to the owner (name Gym Pro, url https://gym.example)" in repr(resealed)
    said = refused(shell, f"account-update {made.account_id}")
    assert said.startswith("%decoy account-update: say what changes")
    assert "usage: %decoy account-update ACCOUNT" in said


def test_a_burn_needs_yes_on_the_line_and_names_the_reversible_pause(shell, sandbox):
    forums = personal_alias(sandbox, "Forums")
    said = refused(shell, f"decoy-burn {forums['id'][:8]}")
    assert said.startswith(
        "%decoy decoy-burn: decoy-burn is irreversible and a notebook has no prompt to confirm it at: give --yes"
    )
    assert f"%decoy decoy-update {forums['id'][:8]} --status inactive pauses an address instead" in said
    assert served(shell, f"{routes.DECOYS}/{forums['id']}") is not None, "nothing was sent"
    done = decoy(shell, f"decoy-burn {forums['id'][:8]} --yes")
    assert done.deleted is True and done.burned_at and f"Burned address {forums['email']} for good" in repr(done)
    assert served(shell, f"{routes.DECOYS}/{forums['id']}") is None

    made = decoy(shell, "account-new 'Own Mail'")
    said = refused(shell, f"decoy-burn {made.decoy_id} --yes")
    assert "HTTP 403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT" in said
    assert "→ an account's own Decoy email goes only with its account: %decoy account-delete ACCOUNT" in said


def test_the_alias_linked_to_an_account_is_burned_with_yes(shell, sandbox):
    account = decoy(shell, "account-save 'Linked Shop'").value
    linked = personal_alias(sandbox, "Linked")
    decoy(shell, f"protect {account} --decoy {linked['id']}")
    said = refused(shell, f"account-burn-decoy {account}")
    assert "account-burn-decoy is irreversible" in said and "give --yes" in said
    done = decoy(shell, f"account-burn-decoy {account[:8]} --no-replace --yes")
    assert done.burned_decoy_id == linked["id"] and done.new_decoy_id is None
    assert "It has no address now." in repr(done)
    assert served(shell, routes.account(account))["decoy_id"] is None


def test_a_pause_gives_back_each_addresss_outcome(shell, sandbox):
    ids = [personal_alias(sandbox, f"Pause {n}")["id"] for n in (1, 2)]
    unknown = "00000000-0000-4000-8000-00000000beef"
    outcome = decoy(shell, f"decoy-pause {ids[0][:8]} {ids[1]} {unknown}")
    assert outcome.value == {ids[0]: "paused", ids[1]: "paused", unknown: "Not found"}, "the server's words"
    assert repr(outcome).endswith("2 of 3 addresses paused; 1 not (each says why, and was left alone): "
                                  "%decoy decoy-update DECOY --status active resumes one.")  # fmt: skip
    assert [served(shell, f"{routes.DECOYS}/{i}")["status"] for i in ids] == ["inactive", "inactive"]


def test_an_import_gives_back_each_rows_outcome_and_shows_no_password(shell, sandbox, tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(f"title,login_username,login_password\nMail,me,{PASSWORD}\nHuge,me,{'x' * 70_000}\n")
    run = decoy(shell, f"account-import {export}")
    assert list(run.created) == [0] and list(run.failed) == [1], "the oversized row fails alone"
    shown = repr(run) + run._repr_html_()
    assert PASSWORD not in shown and "1 of 2 rows created, 1 failed" in shown
    assert "(Mail)" in repr(run) and "(Huge)" in repr(run)
    said = refused(shell, f"account-import {tmp_path / 'missing.csv'}")
    assert said.startswith("%decoy account-import: ") and "missing.csv: cannot be read as text" in said


def test_the_new_verbs_complete_ids_and_values(shell, sandbox):
    magics = shell.magics_manager.registry["DecoyMagics"]
    made = decoy(shell, "account-new Completed")
    decoy(shell, "accounts")  # Tab offers the ids the latest account list held
    assert magics.complete(f"%decoy account-update {made.account_id[:6]}") == [made.account_id]
    assert made.decoy_id in magics.complete("%decoy decoy-pause ")
    assert made.decoy_id in magics.complete(f"%decoy decoy-pause {made.decoy_id} "), "each DECOY completes"
    assert made.decoy_id in magics.complete("%decoy decoy-burn ")
    assert magics.complete(f"%decoy account-burn-decoy {made.account_id[:6]}") == [made.account_id]
    assert magics.complete("%decoy account-update x --status ") == ["active", "inactive"]
    assert magics.complete("%decoy decoy-burn x --y") == ["--yes"]


def test_from_takes_the_secret_from_a_notebook_variable_never_from_the_line(shell, sandbox):
    """A notebook run headless has no password box: `--from NAME` names the variable holding the
    secret (a str or a decoy_lab Secret), so the value is on no %decoy line and in no output."""
    made = decoy(shell, "account-new 'From Shop'")
    account = made.account_id
    shell.user_ns.update(pw="pw-from-var-1", key=Secret("sk-from-var-2"), nothing="", number=7)
    done = decoy(shell, f"password {account[:8]} --from pw")
    assert done.ok and done.owner_view["credential"]["length"] == len("pw-from-var-1")
    field = decoy(shell, f"field-add {account} 'API key' --from key")
    assert field.status == "created" and field.verified.ok
    shell.user_ns["key"] = "sk-from-var-3"
    changed = decoy(shell, f"field-set {account} 'API key' --from key")
    assert changed.status == "changed"
    first = decoy(shell, f"unlock {account}")
    assert first.status == "preparing", "the phone owes this connection a copy of the new secrets"
    httpx.post(f"{sandbox.url}/_sandbox/keep", json={})
    got = decoy(shell, f"unlock {account}")
    assert got.password.reveal() == "pw-from-var-1" and got.fields["API key"] == "sk-from-var-3"
    shown = repr(done) + repr(field) + repr(changed) + repr(got) + got._repr_html_()
    assert not any(s in shown for s in ("pw-from-var-1", "sk-from-var-2", "sk-from-var-3"))

    said = refused(shell, f"password {account} --from nope")
    assert said.startswith("%decoy password: --from names a variable of this notebook holding the password, and "
                           "no variable of the name given is set")  # fmt: skip
    assert "usage: %decoy password ACCOUNT [--from NAME]" in said
    for typo in ("hunter2", "hunter2!"):  # a password typed by mistake, name-shaped or not, is not echoed
        said = refused(shell, f"password {account} --from {typo}")
        assert "no variable of the name given is set" in said and "hunter2" not in said
    assert refused(shell, f"password {account} --from number").endswith(
        "--from number: it holds a int, not a str or a Secret\nusage: %decoy password ACCOUNT [--from NAME]"
    )
    assert "--from nothing: the password it holds is empty" in refused(shell, f"password {account} --from nothing")
