"""No two connections send the same pending account write at once: each entry has its own lock
beside the journal (a file `flock`ed through filelock), held by the first send until the entry is
settled or left pending, and by a resend from reading what landed until it settles it.

Two threads stand for two processes: each resumes the same profile anew, so each has its own
Journal and its own file descriptor on the lock. The race is staged, not timed: each one's read
of the account list waits until the other has either reached that read too (no lock: both
would go on to send) or said in the log that it waits for the lock.

001, `account_create`, has no idempotency key, so "a timeout + retry" could create the account
twice: a save without an address is sent once, and finishing it reads the account list first —
which only helps if nobody else sends it between that read and this send.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.protocol import accounts_list, accounts_pending
from decoy_lab.store.journal import Journal, new_entry
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.transport import routes

from support.meddler import Meddler, committed_then_lost, lost, scripted_pair, scripted_resume

SAFETY = 60.0  # seconds before a staged wait gives up (only a broken lock or a hang gets there)


class Waits(logging.Handler):
    """Sets `event` (and `met`) when the entry's lock says a send is waiting for another holder."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.event = threading.Event()
        self.met = threading.Event()  # the staged race may go on: both at the read, or one waiting

    def emit(self, record: logging.LogRecord) -> None:
        if "another process is finishing it; waiting" in record.getMessage():
            self.event.set()
            self.met.set()


@pytest.fixture
def waits():
    handler = Waits()
    logger = logging.getLogger(accounts_pending.__name__)
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def pair(sb, store: ProfileStore, meddler: Meddler) -> Connection:
    return scripted_pair(
        sb, "Racing resends", meddler=meddler, profile="work", store=store, permissions=["everything"], retries=0
    )[0]


def later(store: ProfileStore, meddler: Meddler) -> Connection:
    """The profile opened anew, as another process would: its own Journal, its own lock fd."""
    return scripted_resume("work", meddler, store=store)


def account_count(conn: Connection) -> int:
    return sum(1 for _ in accounts_list.pages(conn.session))


def meeting(mine: threading.Event, other: threading.Event, waits: Waits, failures: list[str]) -> Callable:
    """A Meddler step: say this one reached the read, wait for the other to reach it or to wait
    for the lock, then let the read through."""

    def step(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        mine.set()
        if other.is_set():
            waits.met.set()
        if not waits.met.wait(SAFETY):
            failures.append("the other neither reached the list nor waited for the lock")
        return inner.handle_request(request)

    return step


def test_two_processes_resending_one_save_without_an_address_send_it_once(sb, store, waits):
    first = Meddler()
    conn = pair(sb, store, first)
    count = account_count(conn)
    first.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Raced")
    (entry,) = conn.pending
    conn.close()
    reached = {"a": threading.Event(), "b": threading.Event()}
    failures: list[str] = []
    meddlers = {"a": Meddler(), "b": Meddler()}
    meddlers["a"].plan("GET", routes.ACCOUNTS, meeting(reached["a"], reached["b"], waits, failures))
    meddlers["b"].plan("GET", routes.ACCOUNTS, meeting(reached["b"], reached["a"], waits, failures))

    def resend(name: str) -> list[dict]:
        again = later(store, meddlers[name])
        try:
            return again.resend()
        finally:
            again.close()

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(resend, ["a", "b"]))
    assert failures == []
    sent = [len(m.bodies("POST", routes.ACCOUNTS)) for m in meddlers.values()]
    assert sorted(sent) == [0, 1], f"exactly one sent it: {sent}"
    assert sorted(len(r) for r in results) == [0, 1], "the other found it settled and reports nothing"
    (done,) = next(r for r in results if r)
    assert done["entry"] == entry["entry"] and done["said"].startswith("it had not landed; sent now"), done
    assert waits.event.is_set(), "the second waited for the lock"
    check = later(store, Meddler())
    assert account_count(check) == count + 1 and check.pending == []
    assert sorted(p.name for p in store.journal_path("work").parent.glob("*.lock") if entry["entry"] in p.name) == []
    check.close()


def test_a_resend_waits_for_the_first_send_still_in_flight_and_then_reads_that_it_landed(sb, store, waits):
    """The first send holds the entry from before it is journaled: a resend started while it is in
    flight waits, then reads the account list and finds the record landed — it sends nothing."""
    first = Meddler()
    conn = pair(sb, store, first)
    count = account_count(conn)
    in_flight = threading.Event()
    failures: list[str] = []

    def slow_then_lost(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        in_flight.set()
        if not waits.event.wait(SAFETY):
            failures.append("the resend never waited for the lock")
        return committed_then_lost(request, inner)

    first.plan("POST", routes.ACCOUNTS, slow_then_lost)
    other = Meddler()

    def resend_once_in_flight() -> list[dict]:
        assert in_flight.wait(SAFETY)
        again = later(store, other)
        try:
            return again.resend()
        finally:
            again.close()

    with ThreadPoolExecutor(1) as pool:
        racing = pool.submit(resend_once_in_flight)
        with pytest.raises(OutcomeUnknown):
            conn.save_account("In Flight")
        (done,) = racing.result()
    assert failures == []
    assert done["outcome"] == "committed" and done["said"].startswith("it had landed: account"), done
    assert other.bodies("POST", routes.ACCOUNTS) == [], "the resend sent nothing: it had landed"
    assert account_count(conn) == count + 1 and conn.pending == []
    conn.close()


@pytest.mark.parametrize("where", ["file", "memory"])
def test_an_entry_held_elsewhere_is_not_sent_and_stays_pending(tmp_path, where):
    """Past its wait, a send gives up on an entry another holder keeps: OutcomeUnknown that says
    nothing was sent. Without a profile the journal is the process's, and its threads take turns."""
    path = tmp_path / "p.pending.json" if where == "file" else None
    holder, other = Journal(path), Journal(path)  # two openers of one journal (two processes, for a file)
    entry = new_entry("account", [("POST", routes.ACCOUNTS, {})], ids=[], family="account", mode="check")
    holder.put(entry)
    if path is None:
        other = holder  # an in-memory journal is not shared between processes
    with accounts_pending.entry_lock(holder, entry["id"]):
        with pytest.raises(OutcomeUnknown) as caught:
            with ThreadPoolExecutor(1) as pool:  # another thread: a lock is never re-entered by its holder
                pool.submit(lambda: accounts_pending.entry_lock(other, entry["id"], wait=0).__enter__()).result()
    assert "another process has been finishing it" in str(caught.value) and caught.value.sent is False
    assert other.get(entry["id"]) is not None, "it stays pending"
    with accounts_pending.entry_lock(other, entry["id"], wait=0):  # free again once the holder let go
        other.settle(entry["id"])
    if path is not None:
        assert list(tmp_path.glob("*.lock")) == [tmp_path / "p.pending.json.lock"], "the entry's lock went with it"


RESENDER = """
import logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
logging.getLogger("decoy_lab.protocol.accounts_pending").setLevel(logging.INFO)
from decoy_lab.client.connection import Connection
conn = Connection.resume("work", retries=0, backoff=0)
done = conn.resend()
print("DONE", [d["outcome"] for d in done], len(conn.pending), flush=True)
"""


def test_two_real_processes_let_go_at_once_send_the_entry_once(sb, store):
    """Two `decoy-lab resend`s as separate processes: this test holds the entry's lock until both
    say they wait for it, then lets go; one of them sends the save, the other finds it settled."""
    first = Meddler()
    conn = pair(sb, store, first)
    count = account_count(conn)
    first.plan("POST", routes.ACCOUNTS, lost)
    with pytest.raises(OutcomeUnknown):
        conn.save_account("Two Processes")
    (entry,) = conn.pending
    env = {**os.environ, "DECOY_LAB_CONFIG_DIR": str(store.directory), "PYTHONPATH": os.pathsep.join(sys.path)}
    here = Journal(store.journal_path("work"))  # this process's own opener of the journal
    procs: list[subprocess.Popen] = []
    try:
        with accounts_pending.entry_lock(here, entry["entry"]):
            for _ in range(2):
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", textwrap.dedent(RESENDER)],
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
            for proc in procs:
                assert proc.stderr is not None
                said = ""
                while "another process is finishing it; waiting" not in said:
                    line = proc.stderr.readline()
                    assert line, f"the process ended without waiting for the lock: {said}"
                    said += line
        outs = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert [proc.returncode for proc in procs] == [0, 0], outs
    assert sorted(out.strip() for out, _ in outs) == ["DONE ['committed'] 0", "DONE [] 0"], outs
    assert account_count(conn) == count + 1 and conn.pending == []
    conn.close()
