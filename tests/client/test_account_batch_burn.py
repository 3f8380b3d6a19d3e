"""`Connection.burn_decoys`: addresses burned in one batch (`POST /api/agent/decoys/batch/burn`),
against the sandbox over real HTTP, lost answers staged by a Meddler between client and server.

001, `decoy_burn_batch`: "Permanently delete up to 20 decoys in one call. Irreversible. Burning a
Personal Alias address needs `alias.burn`. An account's own Decoy email is never burned on its own:
it goes with its account (`account.delete`) and is listed as "Not permitted". Ids you may not touch
are listed in `failed` as "Not permitted" and left alone." Each id comes back "burned" or with the
answer's reason. More than 20 is refused before anything is sent (burning is irreversible: each
call's outcome is seen before the next). A lost answer is journaled; `resend()` reads each
address first — one no longer served was burned — and sends the batch again only for the rest.
"""

from __future__ import annotations

import json
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, MemoryModelError, NotFound, OutcomeUnknown
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.accounts_kit import personal_alias
from support.meddler import Meddler, committed_then_lost, lost, scripted_pair, scripted_resume

BURN = f"{routes.DECOYS}/batch/burn"


def pair(
    sb, store: ProfileStore, meddler: Meddler, *, retries: int = 0, permissions: tuple[str, ...] = ("everything",)
) -> Connection:
    """A connection saved as profile "work" (`everything` unless told), every request through `meddler`."""
    conn, _ = scripted_pair(
        sb, "Batch burns", meddler=meddler, profile="work", store=store, retries=retries, permissions=list(permissions)
    )
    return conn


def later(store: ProfileStore, meddler: Meddler) -> Connection:
    """The same profile opened anew, as a new process would, over `meddler` (the network is back)."""
    return scripted_resume("work", meddler, store=store)


def served(conn: Connection, decoy_id: str) -> bool:
    try:
        conn.session.get(f"{routes.DECOYS}/{decoy_id}")
    except NotFound:
        return False
    return True


def sent_ids(meddler: Meddler) -> list[list[str]]:
    return [json.loads(body)["decoy_ids"] for body in meddler.bodies("POST", BURN)]


def test_each_id_is_burned_or_told_why_not_and_an_accounts_own_email_is_left_alone(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    forums, lists = personal_alias(sb, "Forums")["id"], personal_alias(sb, "Lists")["id"]
    own = conn.create_account("Own Address").decoy_id
    nowhere = str(uuid.uuid4())
    done = conn.burn_decoys([forums, lists, own, nowhere, forums])
    assert done == {forums: "burned", lists: "burned", own: "Not permitted", nowhere: "Not found"}
    assert sent_ids(meddler) == [[forums, lists, own, nowhere]], "one call, each id once"
    assert not served(conn, forums) and not served(conn, lists)
    assert conn.session.get(f"{routes.DECOYS}/{own}")["status"] == "active", "it goes only with its account"
    assert conn.pending == []
    conn.close()


def test_without_alias_burn_a_personal_alias_is_not_permitted_and_left_alone(sb, store):
    """ "Burning a Personal Alias address needs `alias.burn`": `alias.edit` pauses, never burns."""
    conn = pair(sb, store, Meddler(), permissions=("alias.edit",))
    kept = personal_alias(sb, "Kept")["id"]
    assert conn.burn_decoys([kept]) == {kept: "Not permitted"}
    assert served(conn, kept) and conn.pending == []
    conn.close()


def test_more_than_twenty_or_none_is_refused_before_anything_is_sent(sb, store):
    """The sandbox refuses a 21st id ("up to 20 decoys in one call"); the client never sends one:
    it refuses a call of 21 whole, as nothing of an irreversible call should be left half-done."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    many = [personal_alias(sb, f"Alias {n}")["id"] for n in range(21)]
    with pytest.raises(MemoryModelError) as refused:
        conn.burn_decoys(many)
    assert "at most 20" in str(refused.value) and "nothing was sent" in str(refused.value)
    for nothing in ([], many[0]):
        with pytest.raises(MemoryModelError):
            conn.burn_decoys(nothing)  # type: ignore[arg-type]
    assert meddler.bodies("POST", BURN) == [] and conn.pending == []
    assert all(served(conn, i) for i in many)
    with pytest.raises(APIError) as too_many:
        conn.session.api.request("POST", BURN, json={"decoy_ids": many})
    assert too_many.value.status == 400 and all(served(conn, i) for i in many)
    assert conn.burn_decoys(many[:20]) == dict.fromkeys(many[:20], "burned") and served(conn, many[20])
    conn.close()


def test_a_lost_answer_is_never_repeated_within_the_call_and_the_resend_reads_each_address_first(sb, store):
    """The lost send burned the two aliases; the account's own address is still served. The resend
    burns nothing blindly: it reads each, counts the two gone as burned, and sends the batch again
    for the one still served only."""
    meddler = Meddler()
    conn = pair(sb, store, meddler, retries=1)
    first, second = personal_alias(sb, "First")["id"], personal_alias(sb, "Second")["id"]
    own = conn.create_account("Still Here").decoy_id
    meddler.plan("POST", BURN, committed_then_lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.burn_decoys([first, second, own])
    said = str(caught.value)
    assert "Read the addresses: one no longer served is burned." in said
    assert "reads each address first and sends the batch again only for those still served" in said
    assert sent_ids(meddler) == [[first, second, own]], "sent once, though one retry was allowed"
    (entry,) = conn.pending
    assert entry["kind"] == "batch burn" and entry["ids"] == [first, second, own]
    conn.close()

    again = later(store, meddler)
    (done,) = again.resend()
    assert done["outcome"] == "committed", done
    assert done["results"] == {first: "burned", second: "burned", own: "Not permitted"}
    assert done["said"] == (
        f"2 no longer served (burned, or never this connection's to read); sent again for the 1 still served; not burned: {own} (Not permitted)"
    )
    assert sent_ids(meddler)[1:] == [[own]], "only the address still served is named again"
    assert again.pending == [] and served(again, own)
    again.close()


def test_a_lost_batch_that_never_arrived_is_sent_again_and_one_that_landed_is_not(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    never, landed = personal_alias(sb, "Never Arrived")["id"], personal_alias(sb, "Landed")["id"]
    meddler.plan("POST", BURN, lost, committed_then_lost)
    for ids in ([never], [landed]):
        with pytest.raises(OutcomeUnknown):
            conn.burn_decoys(ids)
    assert [p["kind"] for p in conn.pending] == ["batch burn", "batch burn"]
    conn.close()

    again = later(store, meddler)
    done = again.resend()
    assert [d["results"] for d in done] == [{never: "burned"}, {landed: "burned"}]
    assert [d["said"] for d in done] == [
        "sent again for the 1 still served",
        "1 no longer served (burned, or never this connection's to read)",
    ]
    assert sent_ids(meddler) == [[never], [landed], [never]], "the landed one was read, not sent again"
    assert not served(again, never) and not served(again, landed) and again.pending == []
    again.close()
