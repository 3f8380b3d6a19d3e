"""The pending-writes journal as a file a user (or another process on the same profile) meets: its
entries oldest first, each bound to its server, profile and key and said so in words when not this
connection's, written atomically next to the profile (nothing left anywhere else, even when a write
fails), and a broken or foreign file refused with its path — never read as "nothing pending"."""

from __future__ import annotations

import json
import os
import stat
import tempfile

import pytest

from decoy_lab.errors import ProfileError
from decoy_lab.store.journal import Journal, binding, new_entry

HERE = binding("https://decoy.example", "work", "fp-agent")


def _entry(at: float | None = None, *, ids=("r1",)) -> dict:
    e = new_entry("save", [("POST", "/api/agent/context/memories", {"rows": [{"id": i} for i in ids]})], ids=list(ids))
    if at is None:
        del e["at"]
    else:
        e["at"] = at
    return e


@pytest.fixture
def path(tmp_path):
    return tmp_path / "profiles" / "work.pending.json"


def test_an_entry_holds_the_requests_in_order_and_a_fresh_id(path):
    a = new_entry(
        "edit",
        [("POST", "/a", {"rows": []}), ("PUT", "/b", {"id": "m1"})],
        ids=["m1"],
        topic_ids=["t1"],
        intent="hmac",
        target="m1",
    )
    b = new_entry("edit", [], ids=[])
    assert a["id"] != b["id"] and len(a["id"]) == 36
    assert a["sends"] == [
        {"method": "POST", "path": "/a", "body": {"rows": []}},
        {"method": "PUT", "path": "/b", "body": {"id": "m1"}},
    ]
    assert (a["kind"], a["ids"], a["topic_ids"], a["intent"], a["target"], a["why"]) == (
        "edit",
        ["m1"],
        ["t1"],
        "hmac",
        "m1",
        "",
    )
    j = Journal(path, binding=HERE)
    j.put(a)
    j.put(b)
    assert {e["id"] for e in Journal(path, binding=HERE).entries()} == {a["id"], b["id"]}


def test_entries_come_oldest_first_and_one_without_a_time_first_of_all(path):
    j = Journal(path, binding=HERE)
    late, early, undated, tiny = _entry(300.0), _entry(100.0), _entry(None), _entry(0.5)
    for e in (late, early, undated, tiny):
        j.put(e)
    order = [undated["id"], tiny["id"], early["id"], late["id"]]
    assert [e["id"] for e in j.entries()] == order
    assert [e["id"] for e in j.everything()] == order
    assert [e["id"] for e in j.drop()] == order
    assert j.entries() == [] and not path.exists()


def test_a_server_url_with_a_trailing_slash_is_the_same_server(path):
    j = Journal(path, binding=binding("https://decoy.example/", "work", "fp-agent"))
    e = j.put(_entry(1.0))
    assert e["bound"]["base_url"] == "https://decoy.example"
    assert binding("http://127.0.0.1:8000/decoyX/", None, "fp")["base_url"] == "http://127.0.0.1:8000/decoyX"
    assert Journal(path, binding=HERE).get(e["id"]) == e


def test_get_hands_out_only_this_connections_entries(path):
    mine = Journal(path, binding=HERE)
    e = mine.put(_entry(1.0))
    assert mine.get(e["id"]) == e and mine.get("no-such-entry") is None
    theirs = Journal(path, binding=binding("https://decoy.example", "home", "fp-agent"))
    assert theirs.get(e["id"]) is None and theirs.entries() == [] and len(theirs) == 0


def test_a_foreign_entry_says_what_differs_in_words(path):
    Journal(path, binding=binding("https://other.example", "work", "fp-else")).put(_entry(1.0))
    (entry, why), *_ = Journal(path, binding=HERE).foreign()
    assert why == (
        "not sent: the entry was written for another connection (server 'https://other.example', not "
        "'https://decoy.example'; agent key 'fp-else', not 'fp-agent') "
        f"(remove {path} to drop it)"
    )
    in_memory = Journal(binding=HERE)
    assert in_memory.mismatch(entry) == (
        "not sent: the entry was written for another connection (server 'https://other.example', not "
        "'https://decoy.example'; agent key 'fp-else', not 'fp-agent')"
    )


def test_an_entry_bound_elsewhere_is_refused_never_rebound(path):
    j = Journal(path, binding=HERE)
    foreign = dict(_entry(1.0), bound=dict(HERE, profile="home"))
    with pytest.raises(ProfileError) as err:
        j.put(foreign)
    assert str(err.value).startswith(f"pending write {foreign['id']}: not sent: the entry was written for another")
    assert foreign["bound"]["profile"] == "home" and j.everything() == []


def test_note_records_why_only_for_an_entry_still_pending_and_settle_forgets_quietly(path):
    j = Journal(path, binding=HERE)
    e = j.put(_entry(1.0))
    j.note(e["id"], "the answer was lost")
    j.note("settled-meanwhile", "too late")
    assert [x["why"] for x in j.entries()] == ["the answer was lost"]
    assert [x["id"] for x in j.everything()] == [e["id"]]
    j.settle("settled-meanwhile")
    j.settle(e["id"])
    assert j.entries() == [] and not path.exists()


def test_the_repr_says_where_and_how_many(path):
    assert repr(Journal()) == "<Journal (in memory): 0 pending>"
    j = Journal(path, binding=HERE)
    j.put(_entry(1.0))
    assert repr(j) == f"<Journal {path}: 1 pending>"


# -- the file ------------------------------------------------------------------------------------------
def test_the_file_is_private_written_in_its_own_folder_and_nothing_is_left_beside_it(path, tmp_path, monkeypatch):
    """Written atomically in its own folder, never through the system's temp folder (which may be
    missing, full, or on another file system a rename cannot cross)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp-folder"))
    j = Journal(path, binding=HERE)
    e = j.put(_entry(1.0))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, path.name + ".lock"])
    assert json.loads(path.read_text())["pending"][0]["id"] == e["id"]


@pytest.mark.parametrize("how", ["not JSON", "the rename refused"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(path, monkeypatch, how):
    j = Journal(path, binding=HERE)
    kept = j.put(_entry(1.0))
    bad = _entry(2.0)
    if how == "not JSON":
        bad["sends"][0]["body"] = {"rows": [b"bytes are not JSON"]}
        failure: type[Exception] = TypeError
    else:  # e.g. the folder turned read-only: the temporary file is written, the rename fails

        def refused(src, dst):
            raise PermissionError(13, "Permission denied", str(dst))

        monkeypatch.setattr(os, "replace", refused)
        failure = PermissionError
    with pytest.raises(failure):
        j.put(bad)
    monkeypatch.undo()
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, path.name + ".lock"])
    assert [e["id"] for e in j.entries()] == [kept["id"]]


@pytest.mark.parametrize(
    "text,reason",
    [
        ("{not json", "cannot be read"),
        ('["a list"]', "is not a journal (no pending list)"),
        ('{"pending": {"id": "x"}}', "is not a journal (no pending list)"),
    ],
)
def test_a_broken_file_is_refused_with_its_path_never_read_as_nothing_pending(path, text, reason):
    path.parent.mkdir(parents=True)
    path.write_text(text)
    os.chmod(path, 0o600)
    with pytest.raises(ProfileError) as err:
        Journal(path, binding=HERE).entries()
    assert f"the pending-writes journal {path} " in str(err.value) and reason in str(err.value)


def test_entries_that_are_no_entries_are_skipped(path):
    path.parent.mkdir(parents=True)
    good = dict(_entry(1.0), bound=dict(HERE))
    path.write_text(json.dumps({"pending": ["junk", {"no": "id"}, {"id": 5}, good]}))
    os.chmod(path, 0o600)
    assert [e["id"] for e in Journal(path, binding=HERE).entries()] == [good["id"]]


def test_a_file_others_may_write_is_refused_as_the_pending_writes_journal(path):
    j = Journal(path, binding=HERE)
    j.put(_entry(1.0))
    os.chmod(path, 0o666)
    with pytest.raises(ProfileError) as err:
        j.entries()
    assert f"the pending-writes journal {path} " in str(err.value)
