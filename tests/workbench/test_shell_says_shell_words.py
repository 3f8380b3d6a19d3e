"""What the library says in Python's words reaches a shell user in the shell's: a pending address
create is finished with `decoy-lab account-new … --idempotency-key`, not `create_account(...)`;
an import the connection may not send names `decoy-lab account-new`. Against the sandbox over real
HTTP (a Meddler loses the create's answer)."""

from __future__ import annotations

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import Meddler, committed_then_lost
from support.shell_runs import run, shell_sandbox

PYTHON = ("create_account", "idempotency_key=", "conn.resend()", "Connection.")


@pytest.fixture(scope="module")
def sandbox(config):
    with shell_sandbox(("--name", "Shell words", "--permission", "account.create")) as sb:
        yield sb


def test_a_pending_address_create_is_listed_in_the_shells_words(sandbox, config):
    meddler = Meddler()
    meddler.plan("POST", routes.DECOYS, committed_then_lost)
    with Connection.resume("default", store=ProfileStore(config), transport=meddler, retries=0, backoff=0) as conn:
        with pytest.raises(OutcomeUnknown):
            conn.create_account("Words Co")
    code, out, err = run("resend", "--list")
    assert code == 1, err
    assert "decoy-lab account-new again with --idempotency-key" in out, out
    assert not any(word in out for word in PYTHON), out
    code, out, err = run("resend")
    assert code == 0 and "committed" in out, (out, err)
    assert not any(word in out for word in PYTHON), out


def test_an_import_without_the_vault_key_names_the_verb_that_saves_one(sandbox, tmp_path):
    export = tmp_path / "export.json"
    export.write_text('[{"name": "Words Co 2", "username": "me@words.test", "password": "pw-words-3"}]')
    code, out, err = run("account-import", str(export))
    assert code != 0 and "decoy-lab account-new instead" in err, err
    assert not any(word in err for word in PYTHON) and "pw-words-3" not in out + err
