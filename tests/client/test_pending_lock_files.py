"""The lock files of pending account writes go with their entries (issue 47), over real files in a
profile folder: each pending account write has its own lock file beside the journal
(`<profile>.pending.json.<entry id>.lock`, accounts_pending.entry_lock). Unpairing drops the
journal's entries, and now their lock files too — except one another process holds, which means
that process is sending the entry right now: it is left to it, and said. Opening a journal sweeps
the lock files whose entry is gone (settled or dropped elsewhere, or left by a process that died).

Another process holding a lock is a real process (`HOLDER`), not a thread: filelock's `flock` is
what the journal's users share between processes.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.protocol import accounts_pending
from decoy_lab.store.journal import Journal
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import Meddler, lost, scripted_pair, scripted_resume

pytestmark = pytest.mark.timeout(120)
HOLDER = """
import sys
from filelock import FileLock
lock = FileLock(sys.argv[1], mode=0o600)
lock.acquire()
print("HELD", flush=True)
sys.stdin.read()  # held until the test closes our stdin
lock.release()
"""


def pair(sb, store: ProfileStore, meddler: Meddler | None = None) -> Connection:
    return scripted_pair(
        sb, "Lock files", meddler=meddler, profile="work", store=store, permissions=["everything"], retries=0
    )[0]


def lost_save(conn: Connection, meddler: Meddler, name: str) -> str:
    """A save without an address whose answer never came: pending, its lock file left beside the
    journal (released, for a resend to take). Returns its entry id."""
    meddler.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account(name)
    return conn.pending[-1]["entry"]


def lock_of(store: ProfileStore, entry_id: str) -> Path:
    journal = store.journal_path("work")
    return journal.with_name(f"{journal.name}.{entry_id}.lock")


def entry_locks(store: ProfileStore) -> list[str]:
    """The entries' lock files in the profile folder, by entry id."""
    return sorted(accounts_pending.entry_lock_files(Journal(store.journal_path("work"))))


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen]:
    """`path` locked by another process until the block ends."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(path)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "HELD"
        yield proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def test_unpairing_removes_the_lock_files_of_the_entries_it_drops(sb, store):
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    first, second = lost_save(conn, meddler, "First"), lost_save(conn, meddler, "Second")
    assert entry_locks(store) == sorted([first, second]), "a pending entry keeps its lock file"
    dropped = conn.unpair()
    conn.close()
    assert sorted((d["entry"], d["lock"]) for d in dropped) == sorted([(first, "removed"), (second, "removed")])
    assert not store.journal_path("work").exists() and entry_locks(store) == []
    left = sorted(p.name for p in store.journal_path("work").parent.iterdir())
    assert left == [], "the journal's own lock file goes too: an unpaired profile leaves nothing"


def test_a_lock_another_process_holds_is_left_and_said_then_swept_once_let_go(sb, store, caplog):
    """A held lock means a process is sending that entry now: unpairing leaves its file (and says
    so), and the next opening of the journal — the name paired again — removes it."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    busy, idle = lost_save(conn, meddler, "Busy"), lost_save(conn, meddler, "Idle")
    with held_elsewhere(lock_of(store, busy)):
        with caplog.at_level(logging.WARNING, logger="decoy_lab"):
            dropped = conn.unpair()
        conn.close()
        assert {d["entry"]: d["lock"] for d in dropped} == {busy: "held", idle: "removed"}
        assert entry_locks(store) == [busy], "the held one stays while its holder sends"
        said = " ".join(r.getMessage() for r in caplog.records)
        assert f"the lock file of pending write {busy} is held by a process sending it now" in said
        assert "left in place" in said
    again = pair(sb, store)  # opening the profile's journal again sweeps what nobody holds now
    assert entry_locks(store) == [] and again.pending == []
    again.close()


def test_opening_the_journal_sweeps_orphan_lock_files_only(sb, store):
    """An entry settled by someone who left its lock file (a process that died between settling
    and removing it, an older decoy-lab) leaves an orphan: resuming the profile removes it. A
    pending entry's lock, a lock another process holds (a first send locks its entry before it
    journals it), the journal's own lock and a file named for no entry stay."""
    meddler = Meddler()
    conn = pair(sb, store, meddler)
    settled, pending = lost_save(conn, meddler, "Settled"), lost_save(conn, meddler, "Pending")
    conn.close()
    Journal(store.journal_path("work")).settle(settled)  # its lock file stays behind
    in_flight = str(uuid.uuid4())  # journaled by nobody yet, locked by its first send
    journal = store.journal_path("work")
    stray = journal.with_name(f"{journal.name}.notes.lock")
    stray.write_text("")
    assert entry_locks(store) == sorted([settled, pending])
    with held_elsewhere(lock_of(store, in_flight)):
        resumed = scripted_resume("work", Meddler(), store=store)
        assert entry_locks(store) == sorted([pending, in_flight])
        assert [p["entry"] for p in resumed.pending] == [pending]
        resumed.close()
    assert stray.exists() and journal.with_name(f"{journal.name}.lock").exists()
    after = scripted_resume("work", Meddler(), store=store)
    assert entry_locks(store) == [pending]
    after.close()


def test_a_sweep_never_removes_the_lock_of_an_entry_journaled_meanwhile(tmp_path):
    """The sweep holds each orphan's lock and reads the journal again before removing it: an entry
    journaled by then keeps its lock file."""
    path = tmp_path / "p.pending.json"
    journal = Journal(path)
    entry_id = str(uuid.uuid4())
    lock = path.with_name(f"{path.name}.{entry_id}.lock")
    lock.write_text("")

    class Journaling(Journal):
        """The journal as a first send changes it between the sweep's listing and its check."""

        def everything(self) -> list[dict]:
            return [{"id": entry_id}]

    assert accounts_pending.sweep_entry_locks(Journaling(path)) == ([], [])
    assert lock.exists()
    assert accounts_pending.sweep_entry_locks(journal) == ([entry_id], []) and not lock.exists()


def test_the_journals_own_lock_stays_while_another_process_holds_it(tmp_path):
    """A process reading or writing the journal holds its lock: dropping leaves that file to it."""
    journal = Journal(tmp_path / "p.pending.json")
    journal.put({"id": str(uuid.uuid4()), "kind": "pause", "sends": [], "ids": []})
    journal.drop()
    assert journal.lock_path is not None and journal.lock_path.exists()
    with held_elsewhere(journal.lock_path):
        assert journal.remove_lock() is False and journal.lock_path.exists()
    assert journal.remove_lock() is True and list(tmp_path.iterdir()) == []
