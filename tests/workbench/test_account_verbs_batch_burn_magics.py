"""`%decoy decoy-burn DECOY… --yes` (several addresses burned in one call), `%decoy account-update
--clear-label`, and what Tab offers for them and for `--two-factor`, against the sandbox over real
HTTP.

001, `decoy_burn_batch`: "Permanently delete up to 20 decoys in one call. Irreversible. … An
account's own Decoy email is never burned on its own: it goes with its account (`account.delete`)
and is listed as "Not permitted". Ids you may not touch are listed in `failed` as "Not permitted"
and left alone." A notebook has no prompt to confirm at: the line says `--yes`, and more than 20
is a mistake (one confirmation covers one call). `account_update`: "Provide only the fields you
want to change."
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from decoy_lab.errors import NotFound
from decoy_lab.sandbox import Sandbox
from decoy_lab.transport import routes

from support.accounts_kit import personal_alias
from support.magics import decoy_refused as refused
from support.magics import paired_shell
from support.magics import quiet_decoy as decoy
from support.shell_runs import prompt_sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with prompt_sandbox() as sb:
        yield sb


@pytest.fixture(scope="module")
def shell(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with paired_shell(
        tmp_path_factory.mktemp("config"),
        sandbox.url,
        "--name magic-burns --profile magic-burns --permission everything",
    ) as ip:
        yield ip


def live(ip: Any, decoy_id: str) -> bool:
    try:
        ip.magics_manager.registry["DecoyMagics"].conn().session.get(f"{routes.DECOYS}/{decoy_id}")
    except NotFound:
        return False
    return True


def test_several_are_burned_in_one_call_with_yes_each_outcome_given_back(shell, sandbox):
    a, b = personal_alias(sandbox, "Nb Batch A"), personal_alias(sandbox, "Nb Batch B")
    said = refused(shell, f"decoy-burn {a['id'][:8]} {b['id'][:8]}")
    assert said.startswith(
        "%decoy decoy-burn: decoy-burn is irreversible and a notebook has no prompt to confirm it at: give --yes to "
        "burn them"
    )
    assert f"%decoy decoy-pause {a['id'][:8]} {b['id'][:8]} pauses them instead, reversibly" in said
    assert live(shell, a["id"]) and live(shell, b["id"]), "nothing was sent"

    own = decoy(shell, "account-new 'Nb Own'").decoy_id
    outcome = decoy(shell, f"decoy-burn {a['id'][:8]} {b['id']} {own} --yes")
    assert outcome.value == {a["id"]: "burned", b["id"]: "burned", own: "Not permitted"}, "the server's words"
    assert repr(outcome).startswith(f"{a['id']} burned")
    assert "2 of 3 addresses burned for good; 1 not (each says why, and was left alone)" in repr(outcome)
    assert "%decoy account-delete ACCOUNT" in repr(outcome)
    assert not live(shell, a["id"]) and not live(shell, b["id"]) and live(shell, own)


def test_one_address_is_burned_as_before_and_more_than_twenty_is_a_mistake(shell, sandbox):
    one = personal_alias(sandbox, "Nb One")
    done = decoy(shell, f"decoy-burn {one['id'][:8]} {one['id']} --yes")  # the same address twice: one burn
    assert done.deleted is True and f"Burned address {one['email']} for good" in repr(done)
    ids = [personal_alias(sandbox, f"Nb Many {n}")["id"] for n in range(21)]
    said = refused(shell, "decoy-burn " + " ".join(ids) + " --yes")
    assert "decoy-burn burns at most 20 addresses at a time, not 21" in said and "nothing was sent" in said
    assert all(live(shell, i) for i in ids)


def test_clear_label_removes_an_accounts_label(shell, sandbox):
    made = decoy(shell, "account-new 'Nb Clear'")
    decoy(shell, f"account-update {made.account_id} --label temporary")
    kept = decoy(shell, f"account-update {made.account_id[:8]} --status inactive")
    assert kept.agent_label == "temporary", "no label flag: kept"
    done = decoy(shell, f"account-update {made.account_id[:8]} --clear-label")
    assert done.agent_label is None and "agent_label     (none)" in repr(done)
    conn = shell.magics_manager.registry["DecoyMagics"].conn()
    assert conn.session.get(routes.account(made.account_id))["agent_label"] is None
    said = refused(shell, f"account-update {made.account_id} --label x --clear-label")
    assert said.startswith("%decoy account-update: give --label TEXT or --clear-label, not both")


def test_tab_completes_each_decoy_to_burn_and_two_factor_on_off(shell, sandbox):
    magics = shell.magics_manager.registry["DecoyMagics"]
    made = decoy(shell, "account-new 'Nb Completed'")
    decoy(shell, "accounts")  # Tab offers the ids the latest account list held
    assert made.decoy_id in magics.complete("%decoy decoy-burn ")
    assert made.decoy_id in magics.complete(f"%decoy decoy-burn {made.decoy_id} "), "each DECOY completes"
    assert magics.complete(f"%decoy decoy-burn x {made.decoy_id[:6]}") == [made.decoy_id]
    assert magics.complete("%decoy account-update x --two-factor ") == ["on", "off"]
    assert magics.complete("%decoy account-update x --two-factor o") == ["on", "off"]
    assert magics.complete("%decoy account-update x --two-factor of") == ["off"]
    assert magics.complete("%decoy account-update x --cl") == ["--clear-label"]


def test_tab_offers_a_personal_alias_the_latest_address_list_held(shell, sandbox):
    """A Personal Alias belongs to no account, so the account list never names it: Tab offers the
    ids `%decoy decoys` listed last (the addresses decoy-burn and decoy-pause act on)."""
    magics = shell.magics_manager.registry["DecoyMagics"]
    spare = personal_alias(sandbox, "Nb Tab Spare")
    assert spare["id"] not in magics.complete("%decoy decoy-burn ")
    listed = decoy(shell, "decoys")
    assert spare["id"] in set(listed["id"])
    assert spare["id"] in magics.complete("%decoy decoy-burn ")
    assert magics.complete(f"%decoy decoy-pause {spare['id'][:8]}") == [spare["id"]]
