"""What a memory write tells its user before and after it is sent: a topic name that is not text
is refused in words before anything is sealed; an unknown outcome says where its sealed rows are
kept; an edit whose new topic's rows were lost stays pending and is finished by `resend()`.

Against the sandbox over real HTTP; the network in between is scripted (support/meddler.py)."""

from __future__ import annotations

import pytest

from decoy_lab.errors import MemoryModelError, OutcomeUnknown
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import lost, scripted_pair

BYTES = "the topic name is bytes: pass it as text (str); nothing was sent"


@pytest.fixture(scope="module")
def cast(sb):
    conn, meddler = scripted_pair(sb, "Write words")
    yield conn, meddler
    conn.close()


def test_a_topic_name_that_is_not_text_is_refused_in_words_and_nothing_is_sent(cast):
    conn, meddler = cast
    mid = conn.save("Walks on Sundays.")
    before = len(meddler.seen)
    with pytest.raises(MemoryModelError) as refused:
        conn.save("Packs a flask.", topic=b"Hiking")
    assert str(refused.value) == BYTES
    with pytest.raises(MemoryModelError) as refused:
        conn.edit(mid, topic=b"Hiking")
    assert str(refused.value) == BYTES
    with pytest.raises(MemoryModelError) as refused:
        conn.save("Packs a flask.", topic="Hik\udcffing")
    assert str(refused.value).startswith("the topic name holds a lone surrogate at character 3 (U+DCFF)")
    assert len(meddler.seen) == before, "refused before anything was sealed or sent"


def test_an_unknown_outcome_says_which_journal_file_keeps_the_rows(sb, tmp_path):
    store = ProfileStore(tmp_path / "config")
    conn, meddler = scripted_pair(sb, "Journal words", profile="work", store=store)
    try:
        meddler.plan("POST", routes.MEMORIES, lost, lost)
        with pytest.raises(OutcomeUnknown) as unknown:
            conn.save("Reads before bed.")
        assert f"The sealed rows are kept in the pending-writes journal in {store.journal_path('work')}: " in str(
            unknown.value
        )
        assert [d["outcome"] for d in conn.resend()] == ["committed"]
    finally:
        conn.close()


def test_without_a_profile_the_journal_is_said_to_be_in_memory(cast):
    conn, meddler = cast
    meddler.plan("POST", routes.MEMORIES, lost, lost)
    with pytest.raises(OutcomeUnknown) as unknown:
        conn.save("Naps after lunch.")
    assert "kept in the pending-writes journal (in memory, for this kernel): " in str(unknown.value)
    assert [d["outcome"] for d in conn.resend()] == ["committed"]


def test_an_edit_whose_new_topic_rows_were_lost_stays_pending_and_resend_finishes_it(cast):
    """The topic rows' POST has no answer: nothing of the edit is settled, its topic rows are not
    removed, and `resend()` sends the same rows and the edit."""
    conn, meddler = cast
    mid = conn.save("Bakes sourdough.")
    meddler.plan("POST", routes.MEMORIES, lost, lost)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, topic="Baking projects")
    assert [p["kind"] for p in conn.pending] == ["edit"]
    assert [d["outcome"] for d in conn.resend()] == ["committed"] and conn.pending == []
    assert conn.load().memory(mid).topic["name"] == "Baking projects"


def test_a_memory_saved_about_an_account_with_notes_reads_back_so(sb, cast):
    """ "about a granted account: `{…"about":["account:<account uuid>"]}` (never the account's
    name)", and `metadata` "an object of free notes" kept as given."""
    conn, _meddler = cast
    gym = sb.owner.add_account("Gym")["id"]
    mid = conn.save("Renews the membership in March.", account=gym, metadata={"source": "chat"})
    saved = conn.load().memory(mid)
    assert (saved.about, saved.account, saved.metadata) == (f"account:{gym}", gym, {"source": "chat"})
