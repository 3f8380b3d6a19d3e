"""`decoy-lab decoy-burn DECOY…` (several addresses burned in one call) and `account-update
--clear-label`, against the sandbox over real HTTP.

001, `decoy_burn_batch`: "Permanently delete up to 20 decoys in one call. Irreversible. Burning a
Personal Alias address needs `alias.burn`. An account's own Decoy email is never burned on its own:
it goes with its account (`account.delete`) and is listed as "Not permitted". Ids you may not touch
are listed in `failed` as "Not permitted" and left alone." One confirmation covers one call: more
than 20 is a mistake, and nothing is sent. On a terminal each address is listed and their number
typed back; without one, `--yes`. `account_update`: "Provide only the fields you want to change …
Metadata-only updates (status/two_factor_enabled/agent_label/has_password) need no blob."
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import NotFound
from decoy_lab.sandbox import Sandbox
from decoy_lab.transport import routes

from support.accounts_kit import personal_alias
from support.meddler import Meddler, committed_then_lost
from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")  # a connection holding everything: alias.burn
BURN = f"{routes.DECOYS}/batch/burn"


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(
        ("--name", "CLI burns", "--permission", "account.create"),
        ("--name", "CLI burns owner", "--permission", "everything", *OWNER),
    ) as sb:
        yield sb


class Terminal(io.StringIO):
    """What is typed at a terminal."""

    def isatty(self) -> bool:
        return True


def served(profile: str, path: str) -> dict | None:
    with Connection.resume(profile) as conn:
        try:
            return conn.session.get(path)
        except NotFound:
            return None


def live(decoy: str) -> bool:
    return served("owner", f"{routes.DECOYS}/{decoy}") is not None


def lines(out: str) -> dict[str, str]:
    return dict(line.split(None, 1) for line in out.splitlines() if line.strip())


# -- decoy-burn DECOY… ------------------------------------------------------------------------------
def test_several_without_a_terminal_need_yes_then_go_in_one_call(sandbox, monkeypatch):
    a, b = personal_alias(sandbox, "Batch A"), personal_alias(sandbox, "Batch B")
    monkeypatch.setattr("sys.stdin", io.StringIO())
    code, out, err = run("decoy-burn", a["id"][:8], b["id"][:8], *OWNER)
    assert code == 2 and out == ""
    assert err.startswith("error: decoy-burn is irreversible and stdin is not a terminal to confirm it at: give "
                          "--yes to burn them")  # fmt: skip
    assert f"decoy-lab decoy-pause {a['id'][:8]} {b['id'][:8]} pauses them instead, reversibly" in err
    assert live(a["id"]) and live(b["id"]), "nothing was sent"
    code, out, err = run("decoy-burn", a["id"][:8], b["id"], a["id"], "--yes", *OWNER)
    assert code == 0, err
    assert out.splitlines() == [f"{a['id']}  burned", f"{b['id']}  burned"], "each once, in the order given"
    assert err.startswith("2 of 2 addresses burned for good")
    assert not live(a["id"]) and not live(b["id"])


def test_on_a_terminal_each_is_listed_and_their_number_typed_back(sandbox, monkeypatch):
    a, b, c = (personal_alias(sandbox, f"Listed {n}") for n in "ABC")
    monkeypatch.setattr("sys.stdin", Terminal("2\n"))
    code, out, err = run("decoy-burn", a["id"], b["id"], c["id"][:8], *OWNER)
    assert code == 1 and out == ""
    assert "burning these 3 addresses deletes each one and all its mail for good: it is irreversible." in err
    for d in (a, b, c):
        assert f"  {d['email']} ({d['id']})\n" in err, "each address is named before it is burned"
    assert "decoy-lab decoy-pause DECOY… pauses them instead, reversibly" in err
    assert "type 3 (how many addresses) to burn them all: " in err
    assert err.rstrip().endswith("not burned: what was typed is not 3; nothing was sent")
    assert all(live(d["id"]) for d in (a, b, c))
    monkeypatch.setattr("sys.stdin", Terminal(" 3 \n"))
    code, out, err = run("decoy-burn", a["id"], b["id"], c["id"][:8], "--json", *OWNER)
    assert code == 0, err
    said = json.loads(out)
    assert said["outcome"] == "done"
    assert said["addresses"] == [{"decoy_id": d["id"], "email": d["email"], "burned": True} for d in (a, b, c)]
    assert not any(live(d["id"]) for d in (a, b, c))


def test_one_not_permitted_is_said_the_rest_burned_and_exit_1(sandbox):
    kept = personal_alias(sandbox, "Beside Own")
    code, out, _ = run("account-new", "Own Address", *OWNER)
    own = lines(out)["decoy_id"]
    code, out, err = run("decoy-burn", kept["id"], own, "--yes", *OWNER)
    assert code == 1
    assert lines(out) == {kept["id"]: "burned", own: "Not permitted"}, "the server's words"
    assert err.startswith("1 of 2 addresses burned for good; 1 not (each says why, and was left alone)")
    assert "an account's own Decoy email goes only with its account (decoy-lab account-delete ACCOUNT)" in err
    assert not live(kept["id"]) and live(own)
    other = personal_alias(sandbox, "Beside Own Again")
    code, out, _ = run("decoy-burn", other["id"], own, "--yes", "--json", *OWNER)
    assert code == 1
    said = json.loads(out)
    assert said["outcome"] == "partial"
    assert said["addresses"][0] == {"decoy_id": other["id"], "email": other["email"], "burned": True}
    assert {k: said["addresses"][1][k] for k in ("decoy_id", "burned", "error")} == {
        "decoy_id": own,
        "burned": False,
        "error": "Not permitted",
    }


def test_more_than_twenty_is_a_mistake_and_nothing_is_sent(sandbox):
    ids = [personal_alias(sandbox, f"Too Many {n}")["id"] for n in range(21)]
    code, out, err = run("decoy-burn", *ids, "--yes", *OWNER)
    assert code == 2 and out == ""
    assert err.startswith("error: decoy-burn burns at most 20 addresses at a time, not 21: burning is irreversible, "
                          "so one confirmation covers one call of 20")  # fmt: skip
    assert err.rstrip().endswith("burn them in batches, seeing each one's outcome; nothing was sent")
    assert all(live(i) for i in ids)
    code, out, err = run("decoy-burn", *ids[:20], "--yes", *OWNER)
    assert code == 0, err
    assert len(out.splitlines()) == 20 and live(ids[20])


def test_a_lost_answer_is_unknown_and_resend_reads_each_address_first(sandbox, monkeypatch):
    """The batch committed and its answer was lost: never sent again blindly — `resend` reads each
    address, and one no longer served was burned."""
    meddler = Meddler()
    resume = Connection.resume.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        Connection,
        "resume",
        classmethod(lambda cls, profile="default", **kw: resume(cls, profile, retries=0, transport=meddler, **kw)),
    )
    a, b = personal_alias(sandbox, "Lost A"), personal_alias(sandbox, "Lost B")
    meddler.plan("POST", BURN, committed_then_lost)
    code, out, err = run("decoy-burn", a["id"], b["id"], "--yes", "--json", *OWNER)
    assert code == 1
    said = json.loads(out)
    assert said["outcome"] == "unknown" and said["entry"]
    assert "unknown outcome: POST /api/agent/decoys/batch/burn" in err
    assert "Do not burn them again by hand: decoy-lab resend reads each address first" in err
    assert not live(a["id"]) and not live(b["id"]), "it landed"
    code, out, err = run("resend", "--json", *OWNER)
    assert code == 0, err
    (finished,) = json.loads(out)["results"]
    assert (finished["kind"], finished["outcome"]) == ("batch burn", "committed")
    assert finished["results"] == {a["id"]: "burned", b["id"]: "burned"}
    assert len(meddler.bodies("POST", BURN)) == 1, "read first, not sent again"
    code, out, _ = run("resend", "--list", "--json", *OWNER)
    assert code == 0 and json.loads(out)["pending"] == [], "finished"


# -- account-update --clear-label -------------------------------------------------------------------
def test_clear_label_removes_an_accounts_label_and_other_updates_keep_it(sandbox):
    code, out, _ = run("account-new", "Clear Me")
    account = lines(out)["account_id"]
    code, _, err = run("account-update", account, "--label", "temporary")
    assert code == 0, err
    code, _, err = run("account-update", account[:8], "--two-factor", "on")
    assert code == 0, err
    assert served("default", routes.account(account))["agent_label"] == "temporary", "no label flag: kept"
    code, out, err = run("account-update", account[:8], "--clear-label")
    assert code == 0, err
    assert lines(out)["agent_label"] == "(none)"
    assert served("default", routes.account(account))["agent_label"] is None, "read back: gone"
    code, out, err = run("account-update", account, "--label", "back", "--json")
    assert code == 0 and json.loads(out)["agent_label"] == "back"
    code, out, err = run("account-update", account, "--clear-label", "--json")
    assert code == 0 and json.loads(out)["outcome"] == "done" and json.loads(out)["agent_label"] is None


def test_clear_label_mistakes_are_an_error_line_and_exit_2(sandbox):
    code, out, _ = run("account-new", "Clear Mistakes")
    account = lines(out)["account_id"]
    code, _, err = run("account-update", account, "--label", "x", "--clear-label")
    assert code == 2 and err.startswith("error: give --label TEXT or --clear-label, not both")
    code, _, err = run("account-update", account)
    assert code == 2 and err.startswith(
        "error: say what changes: --service (with --url, --username), --label, --clear-label, --status or --two-factor"
    )
    assert served("default", routes.account(account))["rev"] == 1, "nothing was sent"
