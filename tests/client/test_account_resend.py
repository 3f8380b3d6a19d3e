"""The account family's writes whose answer was lost: journaled with their sealed body, said to be
unknown with what to do, and finished by `resend()` from a new connection to the same profile (a
new process reads the same journal file) — against the sandbox over real HTTP, the lost answers
staged by a Meddler between the client and the server.

001: "Repeating the same key (same token) returns the ORIGINAL decoy with `idempotent_replay:
true` instead of creating another" (`decoy_create`); "Sending the same id again answers `existing`
with its current `rev` … it never creates a second field. Reuse the id until you get an answer"
(`account_field_create`); "If the field changed since, the PUT fails 409 `REV_CONFLICT` with
`current_rev` and nothing is overwritten" (`account_field_update`); `account_create` and
`account_create_batch` carry no idempotency key, so a repeat after a lost answer could create an
account twice: what landed is read first, and only the rest is sent.
"""

from __future__ import annotations

import json
import stat
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import NotFound, OutcomeUnknown
from decoy_lab.protocol import accounts_decoys, accounts_list, accounts_write
from decoy_lab.recipes import account_records as records
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import Meddler, committed_then_lost, lost

PERMS = ["everything"]


def pair(sb, store: ProfileStore, meddler: Meddler) -> Connection:
    """A connection saved as profile "work", every request through `meddler`, no resend in-process."""
    return Connection.pair(
        sb.url,
        name="Account resend",
        profile="work",
        store=store,
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"acct-resend-{uuid.uuid4().hex[:8]}",
        retries=0,
        backoff=0,
        sleep=lambda s: None,
        transport=meddler,
    )


def later(store: ProfileStore) -> Connection:
    """The same profile opened anew, as a new process would (no Meddler: the network is back)."""
    return Connection.resume("work", store=store, retries=0, backoff=0, sleep=lambda s: None)


def account_count(conn: Connection) -> int:
    return sum(1 for _ in accounts_list.pages(conn.session))


def journal_text(store: ProfileStore) -> str:
    path = store.journal_path("work")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path.read_text()


def test_a_lost_address_create_is_finished_by_a_resend_from_a_new_process(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    meddler.plan("POST", routes.DECOYS, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.create_account("Lostbank", username="me@lostbank.test")
    said = str(caught.value)
    assert "may have committed" in said and "idempotency_key='" in said
    assert "pending-writes journal" in said and "decoy-lab resend" in said
    (pending,) = conn.pending
    assert pending["kind"] == "address" and pending["why"] == said
    kept = journal_text(store)
    assert "Lostbank" not in kept and "me@lostbank.test" not in kept, "only sealed bytes are kept"
    count = account_count(conn)
    conn.close()
    again = later(store)
    (done,) = again.resend()
    assert done["outcome"] == "committed" and "the original, replayed" in done["said"], done
    assert again.pending == [] and not store.journal_path("work").exists()
    assert account_count(again) == count, "the same key answered the address it made: no second account"
    again.close()


def test_the_journaled_body_is_the_bytes_sent(sb, store):
    """The entry holds exactly what went over the wire the first time."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Bytes")
    meddler.plan("POST", routes.account(made.account_id, "credential"), lost)
    with pytest.raises(OutcomeUnknown):
        conn.set_password(made.account_id, "correct horse")
    (sent,) = meddler.bodies("POST", routes.account(made.account_id, "credential"))
    entry = json.loads(journal_text(store))["pending"][0]
    assert entry["sends"][0]["body"] == json.loads(sent) and "correct horse" not in journal_text(store)
    conn.close()
    again = later(store)
    (done,) = again.resend()
    assert done["outcome"] == "committed" and done["target"] == made.account_id
    view = httpx.get(f"{sb.url}/_sandbox/app-view", params={"account": made.account_id}).json()["accounts"][0]
    assert view["credential"]["readable"] and view["credential"]["length"] == len("correct horse")
    again.close()


def test_a_lost_field_is_stored_once_by_the_resend(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Fieldy")
    meddler.plan("POST", routes.account(made.account_id, "fields"), committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.add_field(made.account_id, "API key", "sk-lost-1")
    assert "field_id='" in str(caught.value) and "sk-lost-1" not in journal_text(store)
    conn.close()
    again = later(store)
    (done,) = again.resend()
    assert done["outcome"] == "committed" and "existing" in done["said"], done
    listed = again.session.get(routes.account(made.account_id, "fields"))["fields"]
    assert [records.open_field(f, again.session.agent_key)["value"] for f in listed] == ["sk-lost-1"]
    again.close()


def test_a_resent_field_change_that_had_landed_is_committed_and_one_overtaken_is_not(sb, store):
    """REV_CONFLICT to the resent PUT: "committed" only when the field serves this very ciphertext."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Revs")
    fid = conn.add_field(made.account_id, "Token", "t-1").id
    path = routes.account(made.account_id, f"fields/{fid}")
    meddler.plan("PUT", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.set_field(made.account_id, fid, "t-2")
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and "serves this change" in done["said"], done
    meddler.plan("PUT", path, lost)  # never reached the server; then another change wins
    with pytest.raises(OutcomeUnknown):
        conn.set_field(made.account_id, fid, "t-3")
    conn.set_field(made.account_id, fid, "t-4")
    again = later(store)
    (done,) = again.resend()
    assert done["outcome"].startswith("not applied") and "REV_CONFLICT" in done["outcome"], done
    listed = again.session.get(routes.account(made.account_id, "fields"))["fields"]
    assert records.open_field(listed[0], again.session.agent_key)["value"] == "t-4"
    assert again.pending == []
    conn.close()
    again.close()


def test_a_lost_field_delete_is_done_once_the_field_is_gone(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Deletes")
    fid = conn.add_field(made.account_id, "Old key", "k-1").id
    meddler.plan("DELETE", routes.account(made.account_id, f"fields/{fid}"), committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.delete_field(made.account_id, fid)
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and "no longer served" in done["said"], done
    conn.close()


def test_a_lost_account_update_is_proved_by_the_served_account(sb, store):
    """The PATCH landed and its answer was lost; the resend meets REV_CONFLICT, and the account
    holds every member the update set: committed. A lost one another update overtook: not applied."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Updates")
    path = routes.account(made.account_id)
    meddler.plan("PATCH", path, committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.update_account(made.account_id, label="work", two_factor=True)
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and "every member this update set" in done["said"], done
    meddler.plan("PATCH", path, lost)
    with pytest.raises(OutcomeUnknown):
        conn.update_account(made.account_id, label="home")
    conn.update_account(made.account_id, label="travel")
    again = later(store)
    (done,) = again.resend()
    assert done["outcome"].startswith("not applied"), done
    assert again.session.get(path)["agent_label"] == "travel"
    conn.close()
    again.close()


def test_an_account_saved_without_a_key_is_read_back_before_it_is_sent_again(sb, store):
    """No idempotency key: after a lost answer the resend lists the accounts first; one that landed
    is never sent again, one that did not is sent once."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    count = account_count(conn)
    meddler.plan("POST", routes.ACCOUNTS, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save_account("Landed", username="me")
    assert "List the accounts" in str(caught.value) and "reads the account list first" in str(caught.value)
    assert len(meddler.bodies("POST", routes.ACCOUNTS)) == 1, "never resent in-process"
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and done["said"].startswith("it had landed"), done
    assert account_count(conn) == count + 1
    meddler.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Never reached")
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and done["said"].startswith("it had not landed; sent now"), done
    assert account_count(conn) == count + 2
    conn.close()


def test_a_batch_partly_landed_sends_only_the_rows_that_did_not(sb, store):
    """The batch reached the server with its first row only (the rest cut off), and no answer
    came. The resend reads the list: row 0 had landed, rows 1 and 2 are sent, each once."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    count = account_count(conn)
    batch = accounts_decoys.BATCH

    def first_row_then_lost(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        body = json.loads(request.content)
        cut = httpx.Request(
            request.method, request.url, headers={"authorization": request.headers["authorization"]},
            json={"accounts": body["accounts"][:1]},
        )  # fmt: skip
        committed_then_lost(cut, inner)
        raise AssertionError("unreachable")

    meddler.plan("POST", batch, first_row_then_lost)
    rows = [{"name": "One", "password": "pw-one"}, {"name": "Two"}, {"name": "Three"}]
    with pytest.raises(OutcomeUnknown) as caught:
        conn.import_accounts(rows)
    assert "List the accounts" in str(caught.value) and "pw-one" not in journal_text(store)
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and done["said"] == "rows 0 had landed; rows 1, 2 sent now", done
    assert account_count(conn) == count + 3
    resent = json.loads(meddler.bodies("POST", batch)[0])["accounts"]
    assert len(resent) == 3 and len(meddler.bodies("POST", batch)) == 1
    conn.close()


def test_a_lost_queued_address_edit_is_resent_with_the_same_patch(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Renames")
    path = f"{routes.DECOYS}/{made.decoy_id}/edits"
    meddler.plan("POST", path, lost)
    with pytest.raises(OutcomeUnknown):
        conn.rename_decoy(made.decoy_id, name="Renamed")
    (sent,) = meddler.bodies("POST", path)
    entry = json.loads(journal_text(store))["pending"][0]
    assert entry["sends"][0]["body"] == json.loads(sent) and "Renamed" not in journal_text(store)
    conn.close()
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and done["said"].startswith("edit "), done


def test_within_one_call_a_resend_the_served_row_proves_is_done_and_nothing_stays_pending(sb, store):
    """The first send landed and its answer was lost; the same body sent again meets 404 (the field
    is gone) or REV_CONFLICT (the rev moved on, by this very update). What the server serves shows
    it landed, so the call succeeds and the journal holds nothing."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    conn.retries = 1
    made = conn.create_account("Within")
    fid = conn.add_field(made.account_id, "Spare", "s-1").id
    meddler.plan("DELETE", routes.account(made.account_id, f"fields/{fid}"), committed_then_lost)
    gone = conn.delete_field(made.account_id, fid)
    assert gone["deleted"] and gone["outcome"] == "already applied" and "no longer served" in gone["said"]
    meddler.plan("PATCH", routes.account(made.account_id), committed_then_lost)
    done = conn.update_account(made.account_id, label="both", status="active")
    assert done["outcome"] == "already applied" and done["agent_label"] == "both" and conn.pending == []
    conn.close()


def test_a_first_send_refused_is_refused_even_when_its_target_is_not_served(sb, store):
    """A 404 proves a delete only after a send of it may have landed: a field that never existed is
    not reported deleted, and nothing is left pending."""
    conn = pair(sb, store, Meddler())
    made = conn.create_account("Never")
    with pytest.raises(NotFound):
        accounts_write.delete_field(conn.session, made.account_id, str(uuid.uuid4()), expected_rev=1)
    assert conn.pending == []
    conn.close()


def test_a_new_topic_finishes_pending_memory_writes_but_leaves_an_account_write_to_resend(sb, store):
    """Before a topic is created the pending memory writes are finished (one may hold its rows); an
    account write holds none, so it waits for `resend()` and never blocks the save."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Topical")
    meddler.plan("POST", routes.account(made.account_id, "fields"), lost)
    with pytest.raises(OutcomeUnknown):
        conn.add_field(made.account_id, "Code", "c-1")
    conn.save("Keeps the recovery codes offline.", topic="Recovery")
    assert [p["kind"] for p in conn.pending] == ["field"]
    assert len(meddler.bodies("POST", routes.account(made.account_id, "fields"))) == 1
    (done,) = conn.resend()
    assert done["outcome"] == "committed" and conn.pending == []
    conn.close()


def test_a_resend_refused_is_settled_with_what_it_does_not_show_and_protect_is_resent(sb, store):
    """A definite refusal to the resend is said as one and settled (resending cannot change it),
    never called a success; protect ("Idempotent when already protected") is resent as it was."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    made = conn.create_account("Refused")
    meddler.plan("POST", routes.account(made.account_id, "fields"), lost)
    with pytest.raises(OutcomeUnknown):
        conn.add_field(made.account_id, "Key", "k-9")
    conn.session.api.request("DELETE", routes.account(made.account_id))  # meanwhile the account is gone
    (done,) = later(store).resend()
    assert done["outcome"].startswith("refused: HTTP 404 ACCOUNT_DELETED"), done
    assert "read the account back" in done["said"] and conn.pending == []
    saved = conn.save_account("Unprotected")
    meddler.plan("POST", routes.account(saved, "protect"), committed_then_lost)
    with pytest.raises(OutcomeUnknown):
        conn.protect(saved)
    (done,) = later(store).resend()
    assert done["outcome"] == "committed" and done["kind"] == "protect", done
    assert conn.session.get(routes.account(saved))["decoy_id"], "the address the first send minted"
    conn.close()


def test_running_the_create_again_with_the_key_it_names_settles_the_pending_entry(sb, store):
    """The error's advice — run it again with the same `idempotency_key` (a field: the same id) —
    is the resend too: the answer for that key settles the entry, so nothing stays pending."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    meddler.plan("POST", routes.DECOYS, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.create_account("Twice")
    key = str(caught.value).split("idempotency_key='", 1)[1].split("'", 1)[0]
    again = conn.create_account("Twice", idempotency_key=key)
    assert again.replayed and conn.pending == []
    meddler.plan("POST", routes.account(again.account_id, "fields"), committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.add_field(again.account_id, "PIN", "2468")
    fid = str(caught.value).split("field_id='", 1)[1].split("'", 1)[0]
    written = conn.add_field(again.account_id, "PIN", "2468", field_id=fid)
    assert written.status == "existing" and conn.pending == []
    conn.close()


def test_an_import_cut_short_says_which_rows_were_never_sent(sb, store):
    """A chunk whose answer was lost stops the import: the error says what is known of the rows
    before it and which rows after it were never sent (not journaled: nothing of them left)."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    count = account_count(conn)
    meddler.plan("POST", accounts_decoys.BATCH, lost)
    rows = [{"name": f"Row {n}"} for n in range(accounts_decoys.CHUNK + 2)]
    with pytest.raises(OutcomeUnknown) as caught:
        conn.import_accounts(rows)
    said = str(caught.value)
    assert "Rows before it: 0 created, 0 failed." in said and "Rows 25–26 were not sent: import them again." in said
    assert [p["kind"] for p in conn.pending] == ["import"] and conn.pending[0]["target"] == "rows 0–24"
    (done,) = conn.resend()
    assert done["outcome"] == "committed" and done["said"].startswith("rows none had landed; rows 0, 1, 2"), done
    assert account_count(conn) == count + accounts_decoys.CHUNK
    conn.close()
