"""The words `%decoy` shows, in a real IPython InteractiveShell against a demo sandbox over HTTP:
notes printed where an assigned value would hide them, why a new connection's views are empty and
how to wait, help with what each verb does, the grant card's selection, the pairing's status said
once. The owner's phone shares only when the test says so (`schedule.configure`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from decoy_lab.vault.counts import VaultCounts
from decoy_lab.workbench import verbs

from support.magics import decoy_shell


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    with decoy_shell(tmp_path_factory.mktemp("words-nb-config")) as shell:
        yield shell


@pytest.fixture(scope="module")
def magics(ip):
    return ip.magics_manager.registry["DecoyMagics"]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[object]:
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.sandbox.phone import schedule

    with Sandbox.start(seed="demo") as sb:
        schedule.configure(sb.state, auto_share_after=None)
        yield sb


@pytest.fixture(scope="module")
def connected(ip, magics, sandbox):
    before = magics.connection, magics.pairing
    conn = decoy(ip, f"connect {sandbox.url} --name 'Words in a notebook' --force")
    conn = conn if hasattr(conn, "load") else conn.wait(30)
    yield conn
    magics._forget(conn)
    conn.close()
    magics.connection, magics.pairing = before


def decoy(ip, line):
    return ip.run_line_magic("decoy", line)


def test_help_lists_each_verb_with_what_it_does(ip, capsys):
    decoy(ip, "help")
    lines = capsys.readouterr().out.splitlines()
    for verb in verbs.verbs_for(verbs.NOTEBOOK):
        at = next(i for i, line in enumerate(lines) if line.split()[:1] == [verb.name])
        assert lines[at].split(None, 1)[1] == verb.summary_for(verbs.NOTEBOOK)
        assert lines[at + 1].strip() == verb.usage(verbs.NOTEBOOK)
    assert "`" not in "\n".join(lines)  # plain output: no Markdown backticks


def test_mistakes_and_advice_are_plain_words(ip):
    for line in ("", "frobnicate"):
        with pytest.raises(UsageError) as err:
            decoy(ip, line)
        assert "%decoy help lists them" in str(err.value) and "`" not in str(err.value)


def test_an_assigned_read_right_after_pairing_still_says_why_it_is_empty(ip, connected):
    """Spec 000: rows the phone has not shared yet are "reported as `preparing`" with
    `retry_after_seconds`; `df = %decoy memories` displays nothing, so the note is printed."""
    with capture_output() as cap:
        ip.run_cell("df_words = %decoy memories")
    assert len(ip.user_ns["df_words"]) == 0
    said = cap.stdout.strip()
    assert said.startswith("No memories yet: ") and "rows are (memories, topics, links) on their way" in said
    assert "read again in 5 s (%decoy memories --wait waits for them)" in said
    assert cap.outputs == []  # nothing displayed: the print is all the user sees, and it is there


def test_a_topic_on_its_way_is_said_so_and_browse_says_why_it_is_empty(ip, connected):
    with pytest.raises(UsageError) as err:
        decoy(ip, "memories --topic 'Lisbon trip'")
    text = str(err.value)
    assert "no topic named 'Lisbon trip' yet, and it may be among the rows still on their way" in text
    assert "%decoy memories --wait waits for them" in text
    view = decoy(ip, "browse")
    head = view.children[0].value
    assert "on their way from the owner" in head and "%decoy browse --wait waits for them" in head


def test_browse_wait_brings_the_rows_and_counts_them_in_the_one_vocabulary(ip, sandbox, connected, monkeypatch):
    from decoy_lab.vault import waiting

    # The owner's phone shares a second after the wait has begun (not after the magic began: on
    # busy cores the read before the wait can take longer than that, and would find the rows).
    phone = threading.Timer(1.0, sandbox.owner.share)
    plain_wait = waiting.wait_for_rows

    def wait_then_share(*args, **kwargs):
        phone.start()
        return plain_wait(*args, **kwargs)

    monkeypatch.setattr(waiting, "wait_for_rows", wait_then_share)
    # This test reads the terminal's bar (stderr). tqdm.auto picks its kind once per process, and
    # in a full run an earlier module may have made it the notebook's widget (tested below).
    import tqdm.auto
    import tqdm.std

    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.std.tqdm)
    try:
        with capture_output() as cap:
            view = decoy(ip, "browse --wait")
    finally:
        if phone.is_alive() or phone.finished.is_set():
            phone.join()
    assert len(view.browser.frame) > 0 and "the rows arrived after" in cap.stderr
    assert "s/s" not in cap.stderr and "it/s" not in cap.stderr  # seconds waited, never a rate
    line = VaultCounts.of(view.vault).line()
    assert line.startswith(f"{len(view.vault.memories)} memories (2 from legacy space rows), ")
    assert f"<b class='decoy-view-counts'>{line}</b>" in view.children[0].value


def test_sync_and_delete_read_as_sentences_in_the_same_words(ip, connected):
    """The shell here shows text only, so the HTML each result has in a notebook is asked of the
    formatter the extension registered for its type."""
    from decoy_lab.protocol.writes.delete import DeleteResult

    html = ip.display_formatter.formatters["text/html"]
    res = decoy(ip, "sync")
    assert f"The vault now: {VaultCounts.of(res.vault).line()}" in html.lookup_by_type(type(res))(res)
    mid = decoy(ip, "save 'A note to delete.' --categories travel")
    gone = decoy(ip, f"delete {mid}")
    assert isinstance(gone, DeleteResult)
    assert "<p>Deleted 1 row.</p>" in html.lookup_by_type(DeleteResult)(gone)


def test_one_row_is_one_row_and_status_is_the_card_alone(ip, connected, sandbox):
    from decoy_lab.workbench.display import MemoryFrame

    sandbox.owner.share()  # the phone shares on request only here: this test needs rows that read
    vault = connected.load()
    one = MemoryFrame.of(vault.memories.head(1), vault=vault, columns=["text"])
    assert "1 row; " in one._repr_html_() and "1 rows" not in one._repr_html_()
    with capture_output() as cap:
        ip.run_cell("%decoy status")
    assert len(cap.outputs) == 1 and "Asked" in cap.outputs[0].data["text/html"]
    assert "<Connection" not in cap.stdout  # no repr after the card


def test_the_grant_card_shows_the_selection_asked(ip, connected):
    """001 Access: "The owner sees" is the line "for the whole-vault form of the row (for one
    account it reads, for example, "Read details from this account")"; asked for travel only,
    the card does not say "all memories"."""
    with capture_output() as cap:
        decoy(ip, "request memory.edit --datatypes travel --reason 'fix the trip notes'")
    card = next(o for o in cap.outputs if "decoy-request-card" in o.data.get("text/html", "")).data["text/html"]
    assert "Edit memories in travel" in card and "Read memories in travel" in card
    assert "all memories" not in card


def test_a_waiting_pairing_says_its_status_once_and_where_its_widget_is(ip, magics, connected):
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.widgets.pairing_view import status_words

    before = magics.connection, magics.pairing
    with Sandbox.start(approve="manual", seed="none") as sb:
        try:
            magics.connection = None
            w = decoy(ip, f"connect {sb.url} --name 'Still waiting' --force")
            deadline = time.monotonic() + 20
            while w.handle.status != "waiting" and time.monotonic() < deadline:
                time.sleep(0.02)
            w.refresh()
            assert "<b>waiting</b> for the owner to approve (code " in w._status.value
            assert "waiting: waiting" not in w._status.value
            with pytest.raises(UsageError) as err:
                decoy(ip, "memories")
            assert "its widget is in the cell that ran connect" in str(err.value) and "above" not in str(err.value)
            w.cancel()
        finally:
            magics.connection, magics.pairing = before
    said = status_words("approved", "approved: reading what the owner granted")
    assert said == "<b>approved</b>: reading what the owner granted"


def test_the_wait_bar_in_a_notebook_ends_full_and_says_how_it_ended(sandbox, monkeypatch):
    """The bar a notebook shows (tqdm's ipywidgets bar) counts seconds waited, no rate, and ends
    full in the success style with the sentence, not red short of its 90 s."""
    import tqdm.auto
    import tqdm.notebook

    from decoy_lab.client.connection import Connection
    from decoy_lab.vault.waiting import wait_for_rows

    bars = []

    class Shown(tqdm.notebook.tqdm):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            bars.append(self)

    monkeypatch.setattr(tqdm.auto, "tqdm", Shown)
    conn = Connection.pair(sandbox.url, name="Waits in a notebook", profile=None, on_link=lambda *a: None)
    phone = threading.Timer(1.0, sandbox.owner.share)
    phone.start()
    try:
        vault = wait_for_rows(conn, conn.load())
    finally:
        phone.join()
        conn.close()
    assert len(vault.memories) > 0
    _, pbar, rtext = bars[0].container.children
    assert pbar.value == pbar.max and pbar.bar_style == "success"
    assert rtext.value.replace("\u2007", " ").startswith("the rows arrived after ") and "/s" not in rtext.value
