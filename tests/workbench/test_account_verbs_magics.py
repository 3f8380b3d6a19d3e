"""The account family's writes as `%decoy` magics (notebook/account_handlers.py), against the
sandbox over real HTTP: each verb gives back the library's answer, shown as what happened; a
secret is asked for at a hidden prompt (`getpass`, a kernel's password box), never a magic's
argument, and shows masked unless `--reveal`.

001, `unlock_request`: "`pending` (the owner was asked) … `preparing` (… send the same request
again after `retry_after_seconds`)"; `decoy_create`: "Repeating the same key (same token) returns
the ORIGINAL decoy with `idempotent_replay: true`".
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from IPython.core.error import StdinNotImplementedError, UsageError

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox

from support.magics import paired_shell
from support.shell_runs import prompt_sandbox

PASSWORD = "tr0ub4dor&3"
API_KEY = "sk-test-9zQ"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with prompt_sandbox() as sb:
        yield sb


@pytest.fixture(scope="module")
def shell(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with paired_shell(
        tmp_path_factory.mktemp("config"),
        sandbox.url,
        "--name magic-accounts --profile magic-accounts --permission account.create",
    ) as ip:
        yield ip


def decoy(ip: Any, line: str) -> tuple[Any, str]:
    """`%decoy <line>`: what it gave back and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = ip.run_line_magic("decoy", line)
    return value, out.getvalue()


class Prompts(list):
    """Each hidden prompt asked, in order; each is answered with the next of `answers`."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str] = []

    def __call__(self, prompt: str = "") -> str:
        self.append(prompt)
        return self.answers.pop(0)


@pytest.fixture
def prompts(monkeypatch: pytest.MonkeyPatch) -> Prompts:
    asked = Prompts()
    monkeypatch.setattr("getpass.getpass", asked)
    return asked


def keep(sb: Sandbox) -> None:
    assert httpx.post(f"{sb.url}/_sandbox/keep", json={}).status_code == 200


def test_an_account_its_password_and_a_field_asked_for_at_a_hidden_prompt_then_unlocked(shell, sandbox, prompts):
    made, printed = decoy(shell, "account-new Bank --username me@bank.test --label bank")
    assert made.email.endswith("@decoys.me") and made.idempotency_key.startswith("decoy-lab-")
    assert f"account_id      {made.account_id}" in repr(made) and "Created account 'Bank'" in repr(made)
    assert "<table>" in made._repr_html_() and printed == ""
    again, _ = decoy(shell, f"account-new Bank --idempotency-key {made.idempotency_key}")
    assert again.account_id == made.account_id and again.replayed, "the same key: the same address"

    prompts.answers[:] = [PASSWORD, API_KEY]
    short = made.account_id[:8]
    done, printed = decoy(shell, f"password {short}")
    assert done.ok and "Password set for account" in repr(done)
    field, _ = decoy(shell, f"field-add {short} 'API key'")
    assert field.status == "created" and repr(field).startswith(f"field_id        {field.id}")
    assert prompts == ["password (not shown): ", "value of 'API key' (not shown): "]

    first, _ = decoy(shell, f"unlock {short}")
    assert first.status == "preparing" and first.password is None
    assert repr(first).startswith("preparing: the owner's phone is making a copy")
    keep(sandbox)
    got, printed = decoy(shell, f"unlock {short}")
    assert got.status == "ready" and got.password.reveal() == PASSWORD and got.fields["API key"] == API_KEY
    shown = repr(got) + got._repr_html_() + printed
    assert PASSWORD not in shown and API_KEY not in shown and f"({len(PASSWORD)} characters)" in shown
    assert "<th style='text-align:left'>API key</th>" in got._repr_html_()
    magics = shell.magics_manager.registry["DecoyMagics"]
    magics.reveal = True  # raw keys in traces: never a password without the unlock's own --reveal
    try:
        keys_shown, _ = decoy(shell, f"unlock {short}")
    finally:
        magics.reveal = False
    assert keys_shown.status == "ready" and PASSWORD not in repr(keys_shown) + keys_shown._repr_html_()
    revealed, _ = decoy(shell, f"unlock {short} --reveal")
    assert f"password        {PASSWORD}" in repr(revealed)
    history = "\n".join(shell.history_manager.input_hist_raw)
    assert PASSWORD not in history and API_KEY not in history


def test_a_field_changed_and_deleted_an_account_saved_protected_and_its_address_renamed(shell, sandbox, prompts):
    account, _ = decoy(shell, "account-save Cloud --url https://cloud.example")
    assert len(account.value) == 36 and "without an address" in repr(account)
    prompts.answers[:] = ["t-1", "t-2"]
    field, _ = decoy(shell, f"field-add {account.value} Token --type string")
    changed, _ = decoy(shell, f"field-set {account.value[:8]} Token")
    assert changed.status == "changed" and changed.id == field.id and "t-2" not in repr(changed)
    gone, _ = decoy(shell, f"field-delete {account.value[:8]} {field.id[:8]}")
    assert gone.deleted and f"Deleted field {field.id}" in repr(gone)

    given, _ = decoy(shell, f"protect {account.value[:8]}")
    assert given.email.endswith("@decoys.me") and "It has a Decoy address now." in repr(given)
    kept, _ = decoy(shell, f"protect {account.value[:8]}")
    assert kept.already_protected and kept.decoy_id == given.decoy_id
    edit, _ = decoy(shell, f"decoy-rename {given.decoy_id[:8]} Cloud mail")
    assert edit.status == "pending" and f"%decoy decoy-edit {given.decoy_id[:8]} {edit.edit_id}" in repr(edit)
    keep(sandbox)
    applied, _ = decoy(shell, f"decoy-edit {given.decoy_id} {edit.edit_id}")
    assert applied.status == "applied" and "applied by the owner's devices" in repr(applied)
    updated, _ = decoy(shell, f"decoy-update {given.decoy_id[:8]} --label cloud --status inactive")
    assert updated.updated and repr(updated).startswith(f"Updated address {given.decoy_id}")
    with pytest.raises(UsageError) as refused:  # its creator still needs account.delete to delete it
        decoy(shell, f"account-delete {account.value[:8]}")
    assert "HTTP 403" in str(refused.value) and "%decoy request account.delete" in str(refused.value)


def test_a_refusal_and_an_unknown_outcome_say_what_to_run(shell, sandbox, monkeypatch):
    magics = shell.magics_manager.registry["DecoyMagics"]
    maker = magics.connection
    reader = Connection.pair(sandbox.url, name="Reads only", permissions=["memory.read"], profile=None,
                             on_link=lambda *_: None, backoff=0)  # fmt: skip
    magics.connection = reader
    try:
        with pytest.raises(UsageError) as refused:
            decoy(shell, "account-new Acme")
    finally:
        magics.connection = maker
        reader.close()
    said = str(refused.value)
    assert said.startswith("%decoy account-new: HTTP 403 SCOPE_MISSING")
    assert '→ ask the owner for it: %decoy request account.create --reason "…"' in said

    monkeypatch.setattr(maker, "retries", 0)  # one send: its answer is lost
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        with pytest.raises(UsageError) as lost:
            decoy(shell, "account-new Shop")
    finally:
        sandbox.state.faults.configure({})
    said = str(lost.value)
    assert said.startswith("%decoy account-new: unknown outcome: POST /api/agent/decoys")
    key = said.split("--idempotency-key ", 1)[1].split()[0]
    assert "%decoy resend finishes it" in said and "create_account" not in said
    again, _ = decoy(shell, f"account-new Shop --idempotency-key {key}")
    assert again.replayed, "the first try had made it"


def test_mistakes_are_one_line_and_the_verbs_complete_and_suggest(shell, prompts, monkeypatch):
    magics = shell.magics_manager.registry["DecoyMagics"]
    made, _ = decoy(shell, "account-new Mistakes")
    prompts.answers[:] = [""]
    with pytest.raises(UsageError) as empty:
        decoy(shell, f"password {made.account_id}")
    assert str(empty.value) == ("%decoy password: the password is empty\nusage: %decoy password ACCOUNT [--from NAME]")

    def no_front_end(prompt: str = "") -> str:
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests")

    monkeypatch.setattr("getpass.getpass", no_front_end)  # a kernel run headless (nbconvert)
    with pytest.raises(UsageError) as headless:
        decoy(shell, f"password {made.account_id}")
    assert "this kernel has no front end to ask for the password" in str(headless.value)
    with pytest.raises(UsageError) as typed:
        decoy(shell, f"password {made.account_id} {PASSWORD}")  # a secret is never an argument
    assert "unrecognized arguments" in str(typed.value)
    with pytest.raises(UsageError) as kind:
        decoy(shell, f"field-add {made.account_id} PIN --type secrett")
    assert "--type is one of concealed-string, string" in str(kind.value)
    with pytest.raises(UsageError) as unknown:
        decoy(shell, "unlock ffffffff")
    assert "no account this connection may see has an id starting 'ffffffff' (%decoy accounts lists them)" in str(
        unknown.value
    )
    with pytest.raises(UsageError) as typo:
        decoy(shell, "unlok x")
    assert "did you mean 'unlock'?" in str(typo.value)
    assert magics.complete("%decoy field-") == ["field-add", "field-delete", "field-set"]
    assert magics.complete("%decoy decoy-") == [
        "decoy-burn",
        "decoy-edit",
        "decoy-pause",
        "decoy-rename",
        "decoy-update",
    ]
    assert magics.complete("%decoy decoy-update x --status ") == ["active", "inactive"]
    assert magics.complete("%decoy field-add x y --type ") == ["concealed-string", "string"]
    assert "--idempotency-key" in magics.complete("%decoy account-new Acme --i")
    listed, _ = decoy(shell, "accounts")  # Tab offers the ids the latest account list held
    assert made.account_id in set(listed["id"])
    assert magics.complete(f"%decoy unlock {made.account_id[:6]}") == [made.account_id]
    assert made.decoy_id in magics.complete("%decoy decoy-rename ")


def test_the_help_says_a_secret_is_asked_for_never_typed(shell):
    _, printed = decoy(shell, "help")
    for verb in ("password", "field-add", "field-set"):
        line = next(x for x in printed.splitlines() if x.startswith(f"{verb} "))
        assert "asked for at a hidden prompt, never typed on the %decoy line" in line, verb
