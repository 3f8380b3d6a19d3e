"""Editing a legacy space row end to end, over real HTTP against the sandbox: `PUT
/api/agent/context/rows` re-sealed with the space key, the same sealed body after a lost answer,
REV_CONFLICT re-read and re-applied, and `409 MEMORY_MOVING` waited out until the owner's phone has
moved the row to its own key, where the per-memory rule decides the edit."""

from __future__ import annotations

import json

import pytest

from decoy_lab.errors import MemoryModelError, MemoryMoving, NotFound
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.phone import schedule
from decoy_lab.wire import layouts as wire

from support.legacy import ROWS, Recorder, connect, obs, served_legacy, write_legacy

EVERY = ["memory.read", "memory.edit"]
FOOD_ONLY = [{"permissions": ["memory.read", "memory.edit"], "datatypes": ["food"]}]


def test_edit_reseals_with_the_space_key_keeping_id_first_added_time_and_other_keys(sb, clock):
    """PUT rows: "Rewrites a row you wrote, keeping its id and when it was first added … The ciphertext is a
    VAULT SealedBlob sealed with the space key, bound to the same `space_id` and `row_id`"; POST rows: "Keep any
    keys you don't use when you re-seal a row"."""
    rec = Recorder()
    conn = connect(sb, clock, EVERY, recorder=rec)
    space_id, key, [rid] = write_legacy(conn, [obs("Likes espresso.", metadata={"source": "chat"})])
    before = served_legacy(conn, space_id, rid)
    clock.advance(3600)
    conn.load()
    ans = conn.edit(rid, text="Likes ristretto.", categories=["food", "user_preferences"])
    assert ans["id"] == rid and ans["rev"] == 2
    [body] = [json.loads(b) for b in rec.bodies]
    assert set(body) == {"id", "expected_rev", "ciphertext"} and body["expected_rev"] == 1
    after = served_legacy(conn, space_id, rid)
    assert after["created_at"] == before["created_at"] and after["updated_at"] != before["updated_at"]
    plain = sealing.open_space_row(after["ciphertext"], key, space_id=space_id, row_id=rid)
    assert plain == {
        "space_id": space_id,
        "row_id": rid,
        "observation": {"entityName": "default_user", "content": "Likes ristretto."},
        "categories": ["food", "user_preferences"],
        "metadata": {"source": "chat"},
    }
    row = conn.load().memories.set_index("id").loc[rid]
    assert row["source"] == "space" and row["text"] == "Likes ristretto."
    view = next(e for e in sb.owner.app_view() if e["id"] == rid)
    assert view["readable"] and view["summary"] == "[default_user] Likes ristretto."
    conn.close()


def test_a_lost_answer_resends_the_same_sealed_body(sb, clock):
    """ "If the outcome is unknown (a timeout, a dropped connection, a 5xx), POST the same sealed rows again …
    Never build new rows for a retry": the PUT that committed and lost its answer is resent byte for byte, and
    the REV_CONFLICT it then meets is read back as already applied."""
    rec = Recorder()
    conn = connect(sb, clock, EVERY, recorder=rec)
    space_id, key, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    conn.session.sleep = lambda s: sb.state.faults.configure({})  # the backoff before the resend: the network heals
    sb.state.faults.configure({"drop_after_commit": 1.0, "seed": 1})
    ans = conn.edit(rid, text="Likes ristretto.")
    assert conn.resends == 1
    assert len(rec.bodies) == 2 and rec.bodies[0] == rec.bodies[1], "the same sealed body, not a new one"
    assert ans["outcome"] == "already applied" and ans["rev"] == 2
    row = served_legacy(conn, space_id, rid)
    assert row["rev"] == 2, "it landed once"
    assert (
        sealing.open_space_row(row["ciphertext"], key, space_id=space_id, row_id=rid)["observation"]["content"]
        == "Likes ristretto."
    )
    conn.close()


def test_rev_conflict_rereads_and_reapplies(sb, clock):
    """PUT rows: "if the row changed since, the call is refused with `409 REV_CONFLICT` and the `current_rev`,
    never overwritten"; the contract: "On `409 REV_CONFLICT`, read current content and reconcile rather than
    overwrite"."""
    rec = Recorder()
    conn = connect(sb, clock, EVERY, recorder=rec)
    space_id, key, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()

    def meanwhile(n: int) -> None:  # another writer changes the categories just before the first PUT
        if n == 1:
            ct = sealing.seal_space_row(key, obs("Likes espresso.", ("food", "misc")), space_id=space_id, row_id=rid)
            conn.session.api.request("PUT", ROWS, json={"id": rid, "expected_rev": 1, "ciphertext": wire.b64encode(ct)})

    rec.before_put = meanwhile
    ans = conn.edit(rid, text="Likes ristretto.")
    assert ans["rev"] == 3 and len(rec.bodies) == 3  # ours, theirs, ours re-applied
    assert [json.loads(b)["expected_rev"] for b in (rec.bodies[0], rec.bodies[2])] == [1, 2]
    plain = sealing.open_space_row(served_legacy(conn, space_id, rid)["ciphertext"], key, space_id=space_id, row_id=rid)
    assert plain["observation"]["content"] == "Likes ristretto." and plain["categories"] == ["food", "misc"]
    conn.close()


def test_memory_moving_waits_then_edits_the_moved_memory(sb, clock):
    """PUT rows: "A connection whose permission is on some categories or topics gets `409 MEMORY_MOVING` with
    `retry_after_seconds` and `current_rev`: the owner's phone is asked to move the row to its own key, and the
    retry is decided by the per-memory rule. Nothing is changed meanwhile.\""""
    sleeps: list[float] = []
    rec = Recorder()
    conn = connect(sb, clock, FOOD_ONLY, sleeps=sleeps, recorder=rec)
    space_id, _, [rid] = write_legacy(conn, [obs("Likes espresso.", metadata={"source": "chat"})])
    first_added = served_legacy(conn, space_id, rid)["created_at"]
    conn.load()
    ans = conn.edit(rid, text="Likes ristretto.")
    assert len(rec.bodies) == 1 and sleeps == [5], "one PUT rows, then the wait it was told"
    assert ans["id"] == rid and ans["rev"] == 2
    v = conn.load()
    assert not [r for r in v.space_rows if r.id == rid], "the row left its space"
    m = v.memory(rid)
    assert (m.text, m.categories, m.metadata) == ("Likes ristretto.", ["food"], {"source": "chat"})
    served = v.served_row(rid)
    assert served["created_at"] == first_added and served["mine"] is True
    view = next(e for e in sb.owner.app_view() if e["id"] == rid)
    assert view["kind"] == "memory" and view["text"] == "Likes ristretto." and not view["problems"]
    conn.close()


def test_after_the_move_the_per_memory_rule_decides(sb, clock):
    """After the move "the retry is decided by the per-memory rule": the edit goes to `PUT
    /api/agent/context/memories` with the moved memory's `expected_rev`, where "The author changes text,
    categories or topic"."""
    rec = Recorder()
    conn = connect(sb, clock, FOOD_ONLY, recorder=rec)
    _space_id, _key, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    ans = conn.edit(rid, categories=["food", "user_preferences"])
    assert rec.paths == [ROWS, "/api/agent/context/memories"] and ans["rev"] == 2
    m = conn.load().memory(rid)
    assert m.text == "Likes espresso." and m.categories == ["food", "user_preferences"]
    view = next(e for e in sb.owner.app_view() if e["id"] == rid)
    assert view["categories"] == ["food", "user_preferences"] and not view["problems"]
    conn.close()


def test_memory_moving_is_bounded_when_the_phone_never_answers(sb, clock):
    """ "Nothing is changed meanwhile": with the owner's phone off, the edit gives up after `retries` waits
    with the typed error, and the row is as it was."""
    schedule.configure(sb.state, auto_share_after=None)
    sleeps: list[float] = []
    conn = connect(sb, clock, FOOD_ONLY, sleeps=sleeps, retries=2)
    space_id, key, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    conn.load()
    with pytest.raises(MemoryMoving) as err:
        conn.edit(rid, text="Likes ristretto.")
    assert err.value.current_rev == 1 and err.value.retry_after == 5 and sleeps == [5, 5]
    row = served_legacy(conn, space_id, rid)
    assert (
        row["rev"] == 1
        and sealing.open_space_row(row["ciphertext"], key, space_id=space_id, row_id=rid)["observation"]["content"]
        == "Likes espresso."
    )
    conn.close()


def test_someone_elses_legacy_row_is_refused_with_why(sb, clock):
    """PUT rows x-permissions: "only rows this agent wrote (and the owner hasn't since edited)"."""
    writer = connect(sb, clock, EVERY)
    _, _, [rid] = write_legacy(writer, [obs("Likes espresso.")])
    other = connect(sb, clock, EVERY)
    sb.owner.share()  # the phone shares the space key with the second connection
    other.load()
    with pytest.raises(NotFound, match="legacy space row this connection cannot edit"):
        other.edit(rid, text="Likes ristretto.")
    with pytest.raises(MemoryModelError, match="topic cannot be changed"):
        writer.edit(rid, topic="Coffee")
    writer.close()
    other.close()


def test_the_decoy_lab_edit_command_edits_a_legacy_row(sb, clock, tmp_path, monkeypatch, capsys):
    """`decoy-lab edit` goes through the same edit: a legacy row is rewritten in its space."""
    from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING
    from decoy_lab.workbench.shell.cli import main

    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    monkeypatch.setenv(ENV_KEYRING, "0")
    conn = connect(sb, clock, EVERY, profile="default")
    space_id, key, [rid] = write_legacy(conn, [obs("Likes espresso.")])
    capsys.readouterr()
    assert main(["edit", rid, "--text", "Likes cortado."]) == 0
    assert capsys.readouterr().out.strip() == f"edited {rid} (rev 2)"
    plain = sealing.open_space_row(served_legacy(conn, space_id, rid)["ciphertext"], key, space_id=space_id, row_id=rid)
    assert plain["observation"]["content"] == "Likes cortado."
    conn.close()
