"""Journal entries are bound to the connection that wrote them (issue 24, finding 8): each carries
the server's base URL, the profile name and the agent key's fingerprint, checked before a resend.
`unpair` and a new pairing of the profile name remove its journal, after saying what was pending;
a journal copied from another profile, or an older one that binds nothing, is never sent."""

from __future__ import annotations

import json
import logging
import shutil
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.sandbox import Sandbox

PERMS = ["memory.read", "memory.save", "memory.edit", "memory.delete"]


@pytest.fixture(scope="module")
def other():
    """A second server: what server A's rows must never reach."""
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def pair(sb, store, profile="work", **kw) -> Connection:
    return Connection.pair(
        sb.url,
        name="Binding test",
        profile=profile,
        store=store,
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"bind-{uuid.uuid4().hex[:8]}",
        retries=1,
        backoff=0,
        sleep=lambda s: None,
        **kw,
    )


def pending_save(sb, conn: Connection, text: str) -> OutcomeUnknown:
    """A save whose answer was lost (it committed on `sb`): kept in the journal."""
    sb.state.faults.configure({"drop_after_commit": 1.0})
    try:
        with pytest.raises(OutcomeUnknown) as caught:
            conn.save(text)
    finally:
        sb.state.faults.configure({})
    return caught.value


def ids_on(sb) -> set[str]:
    return {r["id"] for r in sb.owner.app_view()}


def test_an_entry_carries_its_server_profile_and_key(sb, store):
    conn = pair(sb, store)
    err = pending_save(sb, conn, "Bound to its connection.")
    (entry,) = json.loads(store.journal_path("work").read_text())["pending"]
    assert entry["bound"] == {
        "base_url": sb.url.rstrip("/"),
        "profile": "work",
        "agent_fingerprint": conn.agent_key.fingerprint,
    }
    assert [d["outcome"] for d in conn.resend()] == ["committed"] and err.ids[-1] in ids_on(sb)
    conn.close()


def test_unpair_removes_the_journal_after_saying_what_was_pending(sb, store, caplog):
    conn = pair(sb, store)
    err = pending_save(sb, conn, "Pending when unpaired.")
    assert store.journal_path("work").exists()
    with caplog.at_level(logging.WARNING, logger="decoy_lab"):
        dropped = conn.unpair()
    assert [d["target"] for d in dropped] == [err.ids[-1]] and dropped[0]["ids"] == err.ids
    assert not store.journal_path("work").exists()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "unpairing profile 'work'" in said and err.ids[-1] in said and "outcome stays unknown" in said
    conn.close()


def test_pairing_the_name_anew_with_another_server_never_sends_server_a_rows_there(sb, other, store, caplog):
    """`unpair` left out, the name paired again with server B: A's pending row is dropped (and said
    so), never "committed" on B."""
    conn_a = pair(sb, store)
    err = pending_save(sb, conn_a, "Written for server A.")
    conn_a.close()
    with caplog.at_level(logging.WARNING, logger="decoy_lab"):
        conn_b = pair(other, store, force=True)
    assert [d["target"] for d in conn_b.dropped_pending] == [err.ids[-1]]
    assert conn_b.dropped_pending[0]["server"] == sb.url.rstrip("/")
    assert err.ids[-1] in " ".join(r.getMessage() for r in caplog.records)
    assert conn_b.pending == [] and conn_b.resend() == []
    assert not ids_on(other) & set(err.ids), "no row of server A reached server B"
    conn_b.close()


def test_a_journal_copied_from_another_profile_is_reported_not_sent(sb, other, store):
    conn_a = pair(sb, store, profile="one")
    err = pending_save(sb, conn_a, "Written under profile one.")
    conn_b = pair(other, store, profile="two")
    shutil.copy(store.journal_path("one"), store.journal_path("two"))
    (listed,) = conn_b.pending
    assert listed["target"] == err.ids[-1] and listed["why"].startswith("not sent")
    (done,) = conn_b.resend()
    assert done["outcome"].startswith("not sent") and done["ids"] == err.ids
    assert "profile 'one', not 'two'" in done["outcome"] and sb.url.rstrip("/") in done["outcome"]
    assert "agent key" in done["outcome"] and str(store.journal_path("two")) in done["outcome"]
    assert not ids_on(other) & set(err.ids), "the copied rows were not sent"
    assert [d["outcome"] for d in conn_a.resend()] == ["committed"], "profile one still finishes its own write"
    conn_a.close()
    conn_b.close()


def test_an_old_journal_entry_without_a_binding_is_refused_with_the_reason(sb, store):
    conn = pair(sb, store)
    err = pending_save(sb, conn, "Written by an older decoy-lab.")
    path = store.journal_path("work")
    data = json.loads(path.read_text())
    for e in data["pending"]:
        e.pop("bound", None)  # what a journal written before entries were bound looks like
    path.write_text(json.dumps(data))
    (done,) = conn.resend()
    assert done["outcome"].startswith("not sent") and "older decoy-lab" in done["outcome"]
    assert done["ids"] == err.ids and path.exists(), "kept, never sent"
    # the same save run again does not pick the unbound entry up either: it writes new rows
    again = conn.save("Written by an older decoy-lab.")
    assert again != err.ids[-1]
    conn.close()
