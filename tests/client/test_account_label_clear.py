"""`Connection.update_account`'s label: left as it is by default (`KEEP`), cleared with
`label=None` (sent as `agent_label: null`), as `update_decoy` clears an address's; against the
sandbox over real HTTP, a lost answer staged by a Meddler between the client and the server.

001, `account_update`: "Update an account. Provide only the fields you want to change. …
Metadata-only updates (status/two_factor_enabled/agent_label/has_password) need no blob." 001
shows no schema for the update's body, so `agent_label: null` is read as the clear an address's
`label: { type: string, nullable: true }` spells out; the sandbox takes null and clears it.
"""

from __future__ import annotations

import json

import pytest

from decoy_lab.errors import MemoryModelError, OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import Meddler, committed_then_lost, scripted_pair, scripted_resume


def test_label_none_clears_it_and_a_call_without_a_label_keeps_it(sb, store):
    meddler = Meddler()
    conn, _ = scripted_pair(sb, "Labels", meddler=meddler, profile="work", store=store, permissions=["everything"])
    made = conn.create_account("Labelled")
    path = routes.account(made.account_id)
    conn.update_account(made.account_id, label="work")
    assert conn.session.get(path)["agent_label"] == "work"

    conn.update_account(made.account_id, status="inactive", two_factor=True)  # no label named: kept
    kept = conn.session.get(path)
    assert (kept["agent_label"], kept["status"], kept["two_factor_enabled"]) == ("work", "inactive", True)
    conn.update_account(made.account_id, record={"name": "Relabelled", "agentCreated": True})
    assert conn.session.get(path)["agent_label"] == "work", "a re-sealed record keeps the label too"

    done = conn.update_account(made.account_id, label=None)
    assert done["agent_label"] is None, "the answer proves the clear"
    assert conn.session.get(path)["agent_label"] is None, "read back: the label is gone"
    sent = [json.loads(b) for b in meddler.bodies("PATCH", path)]
    assert len(sent) == 4 and "agent_label" in sent[3] and sent[3]["agent_label"] is None, "null, not left out"
    assert all("agent_label" not in b for b in sent[1:3]), "a call that names no label sends none"

    again = conn.update_account(made.account_id, label=None)
    assert again["agent_label"] is None and len(meddler.bodies("PATCH", path)) == 4, "nothing to change: not sent"
    conn.update_account(made.account_id, label="home")
    assert conn.session.get(path)["agent_label"] == "home"
    with pytest.raises(MemoryModelError, match="text, or None to clear it; nothing was sent"):
        conn.update_account(made.account_id, label=7)  # type: ignore[arg-type]
    conn.close()


def test_a_lost_clear_is_finished_by_resend_from_a_new_process(sb, store):
    meddler = Meddler()
    conn, _ = scripted_pair(
        sb, "Lost clear", meddler=meddler, profile="work", store=store, permissions=["everything"], retries=0
    )
    made = conn.create_account("Lost Label")
    conn.update_account(made.account_id, label="temporary")
    path = routes.account(made.account_id)
    meddler.plan("PATCH", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.update_account(made.account_id, label=None)
    (done,) = scripted_resume("work", meddler, store=store).resend()
    assert done["outcome"] == "committed" and "every member this update set" in done["said"], done
    assert conn.session.get(path)["agent_label"] is None
    resent = json.loads(meddler.bodies("PATCH", path)[-1])
    assert resent == {"agent_label": None, "expected_rev": 2}, "the same null again, met by REV_CONFLICT, then read"
    conn.close()
