"""An account deleted, an address's label or status changed in place, an address burned — the
client calls, journaled like the other account writes, and finished by `resend()` from a new
connection to the same profile; against the sandbox over real HTTP, lost answers staged by a
Meddler between the client and the server.

001, `credential_delete`: "Soft-delete an account (status becomes `deleted` and it disappears from
reads; reversible server-side). Needs `account.delete` on the account … The account's own Decoy
email goes with it." — no `expected_rev`, so the client reads the account first and a resend
deletes it only if it is still that version (the trust boundary: agents "obtain fresh
confirmation for destructive, financial, or materially different actions"). `decoy_update`:
"`label`/`status` changes don't bump `rev`, but are refused the same way when `expected_rev` is
stale." `decoy_burn`: "Permanently delete a decoy and all its data. **Irreversible.**" and, for an
account's own address, "it goes only with its account (`403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`)".
"""

from __future__ import annotations

import json
import stat

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, InsufficientGrant, MemoryModelError, NotFound, OutcomeUnknown
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.accounts_kit import personal_alias
from support.meddler import Meddler, committed_then_lost, lost, scripted_pair, scripted_resume


def pair(
    sb, store: ProfileStore, meddler: Meddler, *, retries: int = 0, permissions: tuple[str, ...] = ("everything",)
) -> Connection:
    """A connection saved as profile "work" (`everything` unless told), every request through `meddler`."""
    conn, _ = scripted_pair(
        sb, "Removals", meddler=meddler, profile="work", store=store, retries=retries, permissions=list(permissions)
    )
    return conn


def later(store: ProfileStore, meddler: Meddler) -> Connection:
    """The same profile opened anew, as a new process would, over `meddler` with nothing planned
    (the network is back; it still counts what is sent)."""
    return scripted_resume("work", meddler, store=store)


def journal(store: ProfileStore) -> str:
    path = store.journal_path("work")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path.read_text()


# -- deleting an account --------------------------------------------------------------------------
def test_an_account_deleted_takes_its_address_and_leaves_nothing_pending(sb, store):
    conn = pair(sb, store, Meddler())
    made = conn.create_account("Gone Shop")
    done = conn.delete_account(made.account_id)
    assert done == {"account_id": made.account_id, "deleted": True, "burned_decoys": 1, "unlinked_decoys": 0}
    with pytest.raises(NotFound):
        conn.session.get(routes.account(made.account_id))
    assert made.decoy_id not in set(conn.decoys("all")["id"]), "its own Decoy email went with it"
    assert made.account_id not in set(conn.accounts()["id"]) and conn.pending == []
    conn.close()


def test_its_creator_is_refused_without_account_delete_and_told_what_to_ask(sb, store):
    """ "Needs `account.delete` on the account — its own permission: reading or editing never
    authorizes a delete." A definite refusal: nothing is left pending, and the ask is named."""
    conn = pair(sb, store, Meddler(), permissions=("account.create",))
    made = conn.create_account("Mine To Keep")
    with pytest.raises(InsufficientGrant) as refused:
        conn.delete_account(made.account_id)
    assert refused.value.permission_request == {"permissions": ["account.delete"], "account_id": made.account_id}
    assert conn.pending == [] and conn.session.get(routes.account(made.account_id))["id"] == made.account_id
    conn.close()


def test_a_lost_delete_that_landed_is_done_once_the_account_is_no_longer_served(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Deleted Quietly", username="me@quiet.test")
    path = routes.account(made.account_id)
    meddler.plan("DELETE", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.delete_account(made.account_id)
    said = str(caught.value)
    assert "may have committed" in said and "pending-writes journal" in said and "decoy-lab resend" in said
    (entry,) = json.loads(journal(store))["pending"]
    assert entry["kind"] == "account delete" and entry["sends"][0] == {"method": "DELETE", "path": path, "body": None}
    assert "Deleted Quietly" not in journal(store) and "me@quiet.test" not in journal(store)
    conn.close()
    again = later(store, meddler)
    (done,) = again.resend()
    assert done["outcome"] == "committed" and done["said"] == "it had landed: the account is no longer served", done
    assert again.pending == [] and len(meddler.bodies("DELETE", path)) == 1, "read, not sent again"
    again.close()


def test_a_lost_delete_that_never_arrived_is_sent_by_the_resend(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Sent Later")
    meddler.plan("DELETE", routes.account(made.account_id), lost)
    with pytest.raises(OutcomeUnknown):
        conn.delete_account(made.account_id)
    assert conn.session.get(routes.account(made.account_id))["id"] == made.account_id, "still there"
    (done,) = later(store, meddler).resend()
    assert done["outcome"] == "committed", done
    assert done["said"] == f"account {made.account_id} deleted: 1 address(es) burned with it, 0 unlinked"
    with pytest.raises(NotFound):
        conn.session.get(routes.account(made.account_id))
    conn.close()


def test_a_lost_delete_is_not_sent_again_once_the_account_changed(sb, store):
    """The account's rev moved after the delete was asked (someone changed it, or the owner
    restored it): a destructive write is not repeated on a version no one confirmed."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Changed Since")
    path = routes.account(made.account_id)
    meddler.plan("DELETE", path, lost)
    with pytest.raises(OutcomeUnknown):
        conn.delete_account(made.account_id)
    conn.update_account(made.account_id, label="still wanted")
    (done,) = later(store, meddler).resend()
    assert done["outcome"].startswith("not applied: the account changed since its delete was asked"), done
    assert "delete it again if it is still to go" in done["outcome"]
    assert conn.session.get(path)["agent_label"] == "still wanted" and conn.pending == []
    assert len(meddler.bodies("DELETE", path)) == 1
    conn.close()


def test_within_one_call_a_repeated_delete_meeting_404_is_the_first_send_landing(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler, retries=1)
    made = conn.create_account("Twice Asked")
    meddler.plan("DELETE", routes.account(made.account_id), committed_then_lost)
    done = conn.delete_account(made.account_id)
    assert done["outcome"] == "already applied" and done["said"] == "it had landed: the account is no longer served"
    assert conn.pending == []
    with pytest.raises(NotFound):  # an account that is not served is refused, and never journaled
        conn.delete_account(made.account_id)
    assert conn.pending == []
    conn.close()


# -- an address's label and status ----------------------------------------------------------------
def test_an_address_label_and_status_change_in_place_and_again_is_nothing_to_send(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Labelled")
    path = f"{routes.DECOYS}/{made.decoy_id}"
    rev = conn.session.get(path)["rev"]
    done = conn.update_decoy(made.decoy_id, label="shopping", status="inactive")
    assert done == {"decoy_id": made.decoy_id, "updated": True, "rev": rev}, "label/status do not bump rev"
    (sent,) = meddler.bodies("PATCH", path)
    assert json.loads(sent) == {"label": "shopping", "status": "inactive", "expected_rev": rev}
    served = conn.session.get(path)
    assert (served["label"], served["status"]) == ("shopping", "inactive")
    assert conn.update_decoy(made.decoy_id, label="shopping")["updated"] is False
    assert len(meddler.bodies("PATCH", path)) == 1, "it held that already: nothing sent"
    conn.update_decoy(made.decoy_id, label=None, status="active")
    served = conn.session.get(path)
    assert (served["label"], served["status"]) == (None, "active")
    for bad in ({"status": "burned"}, {"label": 7}, {}):
        with pytest.raises(MemoryModelError):
            conn.update_decoy(made.decoy_id, **bad)
    assert len(meddler.bodies("PATCH", path)) == 2 and conn.pending == []
    conn.close()


def test_a_lost_address_update_is_proved_by_the_served_address_or_sent_again(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Paused Later")
    path = f"{routes.DECOYS}/{made.decoy_id}"
    meddler.plan("PATCH", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.update_decoy(made.decoy_id, status="inactive")
    (done,) = later(store, meddler).resend()
    assert done["outcome"] == "committed" and "the address holds every member this update set" in done["said"]
    assert len(meddler.bodies("PATCH", path)) == 1, "what is served proved it: not sent again"
    meddler.plan("PATCH", path, lost)
    with pytest.raises(OutcomeUnknown):
        conn.update_decoy(made.decoy_id, label="later")
    assert conn.session.get(path)["label"] != "later"
    (done,) = later(store, meddler).resend()
    assert done["outcome"] == "committed" and conn.session.get(path)["label"] == "later"
    assert len(meddler.bodies("PATCH", path)) == 3 and conn.pending == []
    conn.close()


# -- burning an address ---------------------------------------------------------------------------
def test_an_accounts_own_address_is_not_burned_and_nothing_is_left_pending(sb, store):
    conn = pair(sb, store, Meddler())
    made = conn.create_account("Own Address")
    with pytest.raises(APIError) as refused:
        conn.burn_decoy(made.decoy_id)
    assert refused.value.status == 403 and refused.value.code == "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT"
    assert conn.pending == [] and conn.session.get(f"{routes.DECOYS}/{made.decoy_id}")["status"] == "active"
    conn.close()


def test_a_personal_alias_burned_and_a_lost_burn_finished_by_the_resend(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    first = personal_alias(sb, "Forums")["id"]
    done = conn.burn_decoy(first)
    assert done["decoy_id"] == first and done["deleted"] is True and done["burned_at"]
    with pytest.raises(NotFound):
        conn.session.get(f"{routes.DECOYS}/{first}")
    second = personal_alias(sb, "Newsletters")["id"]
    path = f"{routes.DECOYS}/{second}"
    meddler.plan("DELETE", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.burn_decoy(second)
    assert "Read the address: one no longer served is burned." in str(caught.value)
    assert [p["kind"] for p in conn.pending] == ["address burn"]
    (done,) = later(store, meddler).resend()
    assert done["outcome"] == "committed" and done["said"] == "it had landed: the address is no longer served"
    assert len(meddler.bodies("DELETE", path)) == 1 and conn.pending == []
    conn.close()


# -- burning the address linked to an account -----------------------------------------------------
def test_a_linked_alias_is_burned_and_replaced_and_a_lost_burn_is_read_before_it_is_resent(sb, store):
    """001, `account_burn_decoy`: "Permanently deletes (burns) the linked decoy. Optionally creates a
    fresh replacement." A repeat is sent only while that address is still the one linked."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    saved = conn.save_account("Linked Shop")
    first = personal_alias(sb, "Linked One")["id"]
    conn.protect(saved, first)
    done = conn.burn_account_decoy(saved, replace=False)
    assert done == {"account_id": saved, "burned_decoy_id": first, "new_decoy_id": None, "new_decoy_email": None}
    assert conn.session.get(routes.account(saved))["decoy_id"] is None
    with pytest.raises(MemoryModelError):
        conn.burn_account_decoy(saved)  # nothing linked: nothing to send
    second = personal_alias(sb, "Linked Two")["id"]
    conn.protect(saved, second)
    path = routes.account(saved, "burn-decoy")
    meddler.plan("POST", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.burn_account_decoy(saved)
    (done,) = later(store, meddler).resend()
    fresh = conn.session.get(routes.account(saved))["decoy_id"]
    assert fresh not in (None, second), "the replacement the first send minted"
    assert done["outcome"] == "committed", done
    assert done["said"] == f"it had landed: address {second} is no longer served; the account's address is now {fresh}"
    assert len(meddler.bodies("POST", path)) == 2, "read, not sent again"
    conn.close()


def test_a_lost_linked_burn_is_sent_again_while_that_address_is_still_linked(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    saved = conn.save_account("Relinked Shop")
    linked = personal_alias(sb, "Relinked")["id"]
    conn.protect(saved, linked)
    path = routes.account(saved, "burn-decoy")
    meddler.plan("POST", path, lost)
    with pytest.raises(OutcomeUnknown):
        conn.burn_account_decoy(saved, replace=False)
    (done,) = later(store, meddler).resend()
    assert done["outcome"] == "committed" and done["said"] == f"address {linked} burned", done
    assert len(meddler.bodies("POST", path)) == 2 and conn.pending == []
    conn.close()


@pytest.mark.parametrize("replace", [True, False])
def test_within_one_call_a_repeated_linked_burn_refused_is_the_first_send_landing(sb, store, replace):
    """The repeat meets the replacement (the account's own email: 403) or no linked address (400);
    the account no longer links that address, and it is not served: the first send landed."""
    meddler = Meddler()
    conn = pair(sb, store, meddler, retries=1)
    saved = conn.save_account("Retried Burn")
    linked = personal_alias(sb, "Retried")["id"]
    conn.protect(saved, linked)
    meddler.plan("POST", routes.account(saved, "burn-decoy"), committed_then_lost)
    done = conn.burn_account_decoy(saved, replace=replace)
    assert done["outcome"] == "already applied" and done["said"].startswith(f"it had landed: address {linked}")
    assert conn.pending == []
    conn.close()
