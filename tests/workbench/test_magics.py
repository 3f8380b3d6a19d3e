"""`%decoy` in a real IPython InteractiveShell against the embedded sandbox."""

from __future__ import annotations

import re
import time

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.views import topicmap
from decoy_lab.widgets import PairingWidget, SteppedTrace, Stepper, VaultView
from decoy_lab.wire import layouts as wire
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import MEMORY_COLUMNS

from support.magics import decoy_shell
from support.polling import wait_for


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    with decoy_shell(tmp_path_factory.mktemp("decoy-config")) as shell:  # profiles land in a temporary directory
        yield shell


@pytest.fixture(scope="module")
def magics(ip):
    return ip.magics_manager.registry["DecoyMagics"]


@pytest.fixture(scope="module")
def connected(ip, magics):
    """One sandbox pairing for the module (pairing polls at the server's interval)."""
    ip.run_line_magic("config", "DecoyMagics.sandbox_options = {'seed': 'none'}")
    conn = ip.run_line_magic("decoy", "connect --sandbox --name magic-tests")
    yield conn
    conn.close()
    if magics.sandbox is not None:
        magics.sandbox.stop()


def decoy(ip, line, cell=None):
    if cell is None:
        return ip.run_line_magic("decoy", line)
    return ip.run_cell_magic("decoy", line, cell)


# -- settings and mistakes (no connection needed) ---------------------------------------------
def test_config_traits_are_settable_with_percent_config(ip, magics):
    ip.run_line_magic("config", 'DecoyMagics.profile = "work"')
    ip.run_line_magic("config", "DecoyMagics.reveal = True")
    try:
        assert magics.profile == "work" and magics.reveal is True
    finally:
        ip.run_line_magic("config", 'DecoyMagics.profile = "default"')
        ip.run_line_magic("config", "DecoyMagics.reveal = False")
    assert magics.reveal is False


@pytest.mark.parametrize(
    "line, words, verb",
    [
        ("", "needs a sub-command", None),
        ("frobnicate", "unknown sub-command 'frobnicate'", None),
        ("memries", "unknown sub-command 'memries' — did you mean 'memories'?", "memories"),
        ("unseal", "the following arguments are required: ID", "unseal"),
        ("map --depth two", "invalid int value", "map"),
        ("memories --bogus", "unrecognized arguments: --bogus", "memories"),
        ("memories --serch x", "unknown option '--serch' — did you mean '--search'?", "memories"),
        ('seal "no closing quote', "No closing quotation", None),
        ("delete", "the following arguments are required: ID", "delete"),
        ("request", "the following arguments are required: PERM", "request"),
        ("topics extra", "unrecognized arguments: extra", "topics"),
    ],
)
def test_a_mistake_is_one_line_and_a_suggestion_never_the_full_usage(ip, line, words, verb):
    """Issue 12: "`%decoy memries` → unknown sub-command 'memries' — did you mean 'memories'? plus
    that sub-command's one-line usage; full usage only on `help`"."""
    with pytest.raises(UsageError) as err:
        decoy(ip, line)
    text = str(err.value)
    assert words in text and len(text.splitlines()) <= 2
    assert "%decoy decoy" not in text  # the message names the sub-command the user typed
    if verb is None:
        assert "usage:" not in text
    else:
        assert text.splitlines()[-1] == "usage: " + verbs.BY_NAME[verb].usage()
    if line.startswith("memories"):
        assert text.startswith("%decoy memories: ")


def test_commands_before_connecting_say_how_to_connect(ip, magics, monkeypatch):
    # The shell is one per process: another module may have connected it already.
    monkeypatch.setattr(magics, "connection", None)
    monkeypatch.setattr(magics, "pairing", None)
    for line in ("memories", "status", "map", "unseal abc", "sync"):
        with pytest.raises(UsageError, match="not connected"):
            decoy(ip, line)


def test_help_prints_every_sub_command(ip, capsys):
    decoy(ip, "help")
    out = capsys.readouterr().out
    for name in (
        "connect",
        "status",
        "access",
        "request",
        "memories",
        "topics",
        "links",
        "rows",
        "map",
        "unseal",
        "seal",
        "save",
        "edit",
        "delete",
        "dump",
        "sync",
        "browse",
    ):
        assert name in out


# -- against the sandbox ----------------------------------------------------------------------
def test_connect_shows_the_pairing_widget_and_consent(connected, magics):
    assert magics.connection is connected
    w = magics.pairing
    assert isinstance(w, PairingWidget) and w.handle.status == "done"
    assert "Held now" in w._card.children[0].value and "memory.save" in w._card.children[0].value


def test_save_then_memories_topics_links_rows_frames(ip, connected):
    mid = decoy(
        ip,
        "save --topic 'Lisbon trip' --type trip --relation 'is planning' --categories travel",
        "Flights booked for May; window seat.",
    )
    other = decoy(ip, "save --categories user_preferences", "Prefers short answers.")
    df = decoy(ip, "memories")
    assert isinstance(df, pd.DataFrame) and {mid, other} <= set(df["id"])
    assert list(decoy(ip, "memories --topic 'lisbon  TRIP'")["id"]) == [mid]
    assert list(decoy(ip, "memories --category user_preferences")["id"]) == [other]
    assert list(decoy(ip, "memories --search 'WINDOW seat'")["id"]) == [mid]
    assert set(decoy(ip, "memories --mine")["id"]) >= {mid, other}
    topics = decoy(ip, "topics")
    assert list(topics["name"]) == ["Lisbon trip"] and list(topics["type"]) == ["trip"]
    links = decoy(ip, "links")
    assert list(links["relation_type"]) == ["is planning"]
    rows = decoy(ip, "rows")
    assert {"memory", "topic", "link"} <= set(rows["kind"])
    with pytest.raises(UsageError, match="no topic named"):
        decoy(ip, "memories --topic Atlantis")
    for line in ("memories --category travle", "map --category travle"):
        with pytest.raises(UsageError, match="unknown category 'travle'"):
            decoy(ip, line)


def test_map_returns_the_graph_that_draws_itself(ip, connected):
    decoy(ip, "save --topic 'Porto weekend' --type trip --relation 'is planning' --categories travel", "Train at 9.")
    decoy(ip, "save --topic 'porto  weekend' --categories travel", "Hotel near Ribeira.")
    G = decoy(ip, "map")
    assert isinstance(G, topicmap.TopicGraph)
    tid = next(n for n, d in G.nodes(data=True) if d.get("name") == "Porto weekend")
    assert G.nodes[tid]["memories"] == 2 and G.edges[topicmap.USER, tid]["relation"] == "is planning"
    assert G.nodes[tid]["type"] == "trip"
    assert G._repr_png_().startswith(b"\x89PNG")
    assert set(decoy(ip, "map --depth 0")) == {topicmap.USER}
    assert set(decoy(ip, "map --category user_preferences")) == {topicmap.USER}
    with pytest.raises(UsageError, match="--depth"):
        decoy(ip, "map --depth -1")


def test_unseal_returns_the_trace_shown_as_a_stepper(ip, connected):
    mid = decoy(ip, "save", "Unseal me.")
    t = decoy(ip, f"unseal {mid}")
    assert isinstance(t, SteppedTrace) and isinstance(t, Trace) and t.ok and not t.reveal
    names = [s.name for s in t.steps]
    assert any("RSA-OAEP" in n for n in names) and any("AES-256-GCM" in n for n in names)
    bundle = t._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert decoy(ip, f"unseal {mid} --reveal").reveal is True
    missing = decoy(ip, "unseal 00000000-0000-0000-0000-000000000000")
    assert not missing.ok and missing.failed.reason


def test_seal_is_a_dry_run_showing_every_step(ip, connected):
    before = len(decoy(ip, "memories"))
    t = decoy(ip, "seal Just a preview --topic 'Lisbon trip' --categories travel")
    assert t.ok and t.row["id"] and {"ciphertext", "owner_wrap", "self_wrap"} <= set(t.row)
    assert len(decoy(ip, "memories")) == before
    assert Stepper(t).step.fields  # a passing trace opens on a layout, not on its first step


def test_edit_and_delete(ip, connected):
    mid = decoy(ip, "save --categories food", "Likes espresso.")
    decoy(ip, f"edit {mid} --text 'Likes ristretto.'")
    df = decoy(ip, "memories")
    assert df.set_index("id").loc[mid, "text"] == "Likes ristretto."
    decoy(ip, f"edit {mid}", "Likes flat whites.")
    assert decoy(ip, "memories --search 'flat whites'")["id"].tolist() == [mid]
    with pytest.raises(UsageError, match="say what changes"):
        decoy(ip, f"edit {mid}")
    res = decoy(ip, f"delete {mid}")
    assert mid in res.deleted and mid not in set(decoy(ip, "memories")["id"])
    with pytest.raises(UsageError, match="empty"):
        decoy(ip, "save", "   ")


def test_dump_dissects_and_opens_a_blob(ip, connected, tmp_path):
    mid = decoy(ip, "save", "Dump me.")
    served = connected.load().served_row(mid)
    plain = decoy(ip, f"dump {served['ciphertext']}")
    parse = next(s for s in plain.steps if s.name == "parse vault")
    assert [f.name for f in parse.fields][:2] == ["version", "mode"]
    assert plain.ok and "--key" in plain.stopped  # a VAULT blob needs its memory key: the layout is shown
    assert "steps passed, not opened" in plain.to_text().splitlines()[0]  # the stepper's headline, not "all passed"
    key = sealing.unwrap_as_agent(served["wrapped_key"], connected.agent_key)
    opened = decoy(ip, f"dump {served['ciphertext']} --key {wire.b64encode(key)}")
    assert opened.ok and "Dump me." in str(opened.steps[-1].output)
    env = decoy(ip, f"dump {served['wrapped_key']}")  # the connection's own agent key opens it
    assert env.ok and env.steps[-1].secret_output
    assert key.hex()[:32] not in env.to_html() and wire.kid(key) in env.to_html()
    bad = decoy(ip, "dump AAAA")
    assert not bad.ok
    pem = tmp_path / "agent.pem"
    pem.write_text(connected.agent_key.to_pem())
    by_file = decoy(ip, f"dump {served['wrapped_key']} --key {pem}")
    assert by_file.ok and wire.kid(by_file.steps[-1].output) == served["kid"]


def test_status_access_request_sync_browse(ip, connected):
    with capture_output() as cap:
        assert decoy(ip, "status") is None  # the card alone: no repr after it
    card = cap.outputs[0].data
    assert "Asked" in card["text/html"] and "memory.save" in card["text/html"]
    acc = decoy(ip, "access")
    assert "memory.save" in acc.names
    assert "memory.delete" not in acc.names
    req = decoy(ip, "request memory.delete --datatypes travel --reason 'tidy the trip notes'")
    assert "memory.delete" in req.permissions and req.request_id
    req.wait(timeout=30, interval=0.05)  # the sandbox's owner phone approves asks at once
    assert req.granted and "memory.delete" in decoy(ip, "access").names
    res = decoy(ip, "sync")
    assert res.vault is not None
    view = decoy(ip, "browse")
    assert isinstance(view, VaultView) and len(view.browser.frame) == len(connected.load().memories)
    with pytest.raises(UsageError, match="no topic named"):
        decoy(ip, "request memory.read --topic Atlantis --reason x")


def test_save_a_nested_topic_under_its_parent(ip, connected):
    """Spec: a relation "runs from default_user (You) by default, or from an existing topic"."""
    decoy(ip, "save --topic Golf --type hobby --relation plays --categories sports", "Plays on Saturdays.")
    decoy(
        ip,
        "save --topic 'Golf club headcovers' --type product --parent Golf --relation 'gear includes'",
        "Wants knitted headcovers.",
    )
    G = decoy(ip, "map --topic golf")
    golf, covers = (topicmap.find_node(G, n) for n in ("Golf", "Golf club headcovers"))
    assert G.edges[golf, covers]["relation"] == "gear includes" and G.nodes[covers]["depth"] == 2
    assert set(G) == {topicmap.USER, golf, covers}


def test_connect_returns_while_the_pairing_waits_and_commands_say_so(ip, magics, connected):
    """The README: "the kernel never blocks". With an owner who approves later (the sandbox's
    manual phone), `connect` returns the widget at once; later commands say it is waiting; the
    approval connects in the background."""
    from decoy_lab.sandbox import Sandbox

    before = magics.connection, magics.pairing
    with Sandbox.start(approve="manual", seed="none") as sb:
        try:
            magics.connection = None
            w = decoy(ip, f"connect {sb.url} --name waiting --force")
            # back while no one has approved (approve="manual"): the kernel is free while it waits;
            # how soon it is back is a figure of the bench (bench/responsive.py), not a threshold
            assert isinstance(w, PairingWidget) and w.waiting
            assert w.handle._done.wait(0) is False
            code = wait_for(lambda: w.handle.user_code)
            assert code and w.connection is None
            # Decoy's guide: "Never render the QR / `qr_data` yourself. Always send the link." — so by default the
            # widget offers the link alone; a QR is drawn only when asked for (%config DecoyMagics.qr = True).
            assert w._qr.value == "" and "decoy-pair-link" in w._link.value
            with pytest.raises(UsageError, match="still waiting"):
                decoy(ip, "memories")
            sb.owner.approve(code)
            conn = w.wait(60)
            wait_for(lambda: magics.connection is conn)
            assert conn.base_url == sb.url
            assert isinstance(decoy(ip, "memories"), pd.DataFrame)
            magics._forget(conn)
            conn.close()
        finally:
            magics.connection, magics.pairing = before


def test_cancel_at_any_moment_and_a_later_approval_does_not_connect(ip, magics, connected):
    """Issue 12: "an approval after a cancel or timeout does not connect"; cancel is one line in
    the widget, never a traceback."""
    from decoy_lab.sandbox import Sandbox

    before = magics.connection, magics.pairing
    with Sandbox.start(approve="manual", seed="none") as sb:
        try:
            magics.connection = None
            w = decoy(ip, f"connect {sb.url} --name cancelled --force")
            code = wait_for(lambda: w.handle.user_code)
            w._cancel.click()
            wait_for(lambda: w.handle.done())
            w.refresh()
            assert w.handle.status == "cancelled" and "cancelled" in w._status.value
            assert w._card.children == () and w._qr.value == ""
            try:
                sb.owner.approve(code)
            except Exception:
                pass  # the server may refuse: the device code is no longer polled
            assert magics.connection is None and w.connection is None
            with pytest.raises(UsageError, match="not connected"):
                decoy(ip, "memories")
        finally:
            magics.connection, magics.pairing = before


def test_a_second_connect_reuses_the_live_connection_and_new_pairs_another(ip, magics, connected):
    """Issue 12: "A second `connect` reuses the live connection of that profile and says so;
    `--new` pairs another, and the previous one stays listed"."""
    before = magics.connection, list(magics.connections)
    try:
        with capture_output() as out:
            again = decoy(ip, "connect --sandbox")
        assert again is connected and "Already connected" in out.stdout and "--new" in out.stdout
        other = decoy(ip, "connect --sandbox --new --name second")
        assert other is not connected and magics.connection is other
        listing = decoy(ip, "connections")
        assert list(listing["token_id"])[-2:] == [connected.token_id, other.token_id]
        assert list(listing["current"])[-1] == "→" and listing.index.is_monotonic_increasing
        token_id = other.token_id
        with capture_output() as out:
            decoy(ip, f"unpair {listing.index[-1]}")
        assert f"Ended connection {token_id}" in out.stdout
        assert other not in magics.connections and connected in magics.connections
        with pytest.raises(UsageError, match="no connection 'nope'"):
            decoy(ip, "unpair nope")
    finally:
        magics.connection = before[0]
        magics.connections[:] = before[1]


def test_a_connections_number_stays_its_own_after_others_end(ip, magics, connected):
    """`unpair N` names one connection for the kernel's life: after the second of three ends,
    the third is still 3, and 2 names no connection (never the third by a shifted count)."""
    before = magics.connection, list(magics.connections)
    try:
        made = [decoy(ip, f"connect --sandbox --new --name n{i}") for i in range(3)]
        numbers = [magics.number(c) for c in made]
        with capture_output():
            decoy(ip, f"unpair {numbers[1]}")
        listing = decoy(ip, "connections")
        assert numbers[1] not in listing.index and listing.loc[numbers[2], "token_id"] == made[2].token_id
        with pytest.raises(UsageError, match=f"no connection '{numbers[1]}'"):
            decoy(ip, f"unpair {numbers[1]}")
        assert made[2] in magics.connections, "the third was not ended in the second's place"
        third = made[2].token_id
        with capture_output() as out:
            decoy(ip, f"unpair {numbers[2]}")
        assert f"Ended connection {third}" in out.stdout
    finally:
        magics.connection = before[0]
        magics.connections[:] = before[1]


def test_connect_url_saves_a_profile_and_connect_profile_resumes_it(ip, magics, connected):
    """Reconnecting keeps the same key: `connect --profile P` resumes what pairing stored."""
    before = magics.connection, magics.pairing, list(magics.connections)
    try:
        first = decoy(ip, f"connect --url {magics.sandbox.url} --profile work --name keeper")
        assert decoy(ip, "connect --profile work") is first  # live in this kernel: reused
        magics._forget(first)
        again = decoy(ip, "connect --profile work")
        assert again is not first and again.agent_key.fingerprint == first.agent_key.fingerprint
        assert again.token_id == first.token_id and magics.connection is again
        first.close()
        again.close()
    finally:
        magics.connection, magics.pairing = before[:2]
        magics.connections[:] = before[2]


def test_unpair_ends_the_connection_and_deletes_its_profile(ip, magics, connected):
    """RFC 7009 §2.1 revocation; the spec: "`recovery: re_pair` (`TOKEN_REVOKED`) → only a new
    owner-approved pairing, which inherits nothing"."""
    import httpx

    from decoy_lab.store.profiles import ProfileStore

    def answer(conn, token):
        auth = {"Authorization": f"Bearer {token}"}
        return httpx.get(f"{conn.base_url}/api/agent/policies", headers=auth).json()

    before = magics.connection, magics.pairing
    try:
        conn = decoy(ip, f"connect --url {magics.sandbox.url} --profile leaving --name leaver")
        token, token_id = conn.tokens.access_token.reveal(), conn.token_id
        with capture_output() as out:
            assert decoy(ip, "unpair") is None
        assert f"Ended connection {token_id}" in out.stdout and "deleted profile 'leaving'" in out.stdout
        assert token not in out.stdout and magics.connection is None
        assert not ProfileStore().exists("leaving") and answer(conn, token)["code"] == "TOKEN_REVOKED"
        with pytest.raises(UsageError, match="not connected"):
            decoy(ip, "unpair")
        other = decoy(ip, f"connect --url {magics.sandbox.url} --profile saved --name saved")
        magics.connection = before[0]  # a saved profile is ended without being the current connection
        other_token = other.tokens.access_token.reveal()
        with capture_output() as out:
            decoy(ip, "unpair --profile saved")
        assert "deleted profile 'saved'" in out.stdout and magics.connection is before[0]
        assert answer(other, other_token)["code"] == "TOKEN_REVOKED"
        other.close()
    finally:
        magics.connection, magics.pairing = before


def test_dash_h_prints_the_sub_command_help_not_a_traceback(ip, capsys):
    assert decoy(ip, "memories -h") is None
    out = capsys.readouterr().out
    assert "--category" in out and "%decoy memories" in out


def test_edit_moves_a_memory_between_topics_and_back_to_you(ip, connected):
    """Spec: `editMemoryRow(served, {topic})`; `topic: null` returns it to You."""
    mid = decoy(ip, "save --topic 'Lisbon trip' --categories travel", "Museum pass for two days.")
    decoy(ip, f"edit {mid} --topic You")
    assert mid in set(decoy(ip, "memories --topic you")["id"])
    decoy(ip, f"edit {mid} --topic 'lisbon trip' --categories travel food")
    row = decoy(ip, "memories --topic 'Lisbon trip'").set_index("id").loc[mid]
    assert sorted(row["categories"]) == ["food", "travel"]


def test_connect_to_a_url_that_is_not_http_says_so(ip):
    with capture_output() as out:
        with pytest.raises(UsageError, match=r"'notaurl' is not a server URL: give it as http://host:port"):
            decoy(ip, "connect --url notaurl")
    assert "PairingWidget" not in out.stdout  # refused before any widget or thread


def test_a_revoked_connection_or_a_missing_grant_says_which_magic_to_run(ip, magics):
    """A notebook user is told the `%decoy` command to run, not a Python call."""
    from decoy_lab.errors import InsufficientGrant, TokenError

    class Refused:
        def __init__(self, exc):
            self.exc = exc

        def load(self, **_):
            raise self.exc

    before = magics.connection
    try:
        magics.connection = Refused(TokenError(401, "TOKEN_REVOKED", "revoked", recovery="re_pair"))
        with pytest.raises(UsageError, match=r"TOKEN_REVOKED.*\n→ this connection needs a new pairing: %decoy connect"):
            decoy(ip, "memories")
        magics.connection = Refused(
            InsufficientGrant(403, "INSUFFICIENT_GRANT", "needs memory.edit", required_permission="memory.edit")
        )
        with pytest.raises(UsageError, match=r"%decoy request memory.edit --reason"):
            decoy(ip, "topics")
    finally:
        magics.connection = before


def test_cache_shows_the_profiles_cache_and_clear_and_unpair_leave_no_file(ip, magics, connected):
    """Issue 15: "size and location shown by `%decoy cache`, removed by `cache --clear`, by `unpair`"."""
    from decoy_lab.store.cache import CacheInfo
    from decoy_lab.store.profiles import ProfileStore

    before = magics.connection, magics.pairing
    try:
        conn = decoy(ip, f"connect --url {magics.sandbox.url} --profile cached --name cached")
        conn.load()
        path = ProfileStore().cache_path("cached")
        info = decoy(ip, "cache")
        assert isinstance(info, CacheInfo) and info.path == path and info.size == path.stat().st_size
        assert str(path) in repr(info)
        with capture_output() as out:
            assert decoy(ip, "cache --clear") is None
        assert out.stdout.startswith("Removed") and not path.exists()
        assert decoy(ip, "cache").size is None
        conn.load()
        assert decoy(ip, "cache").size, "written again (after load() returned: `cache` waits for it)"
        with capture_output():
            decoy(ip, "unpair")
        assert not path.exists()
        with pytest.raises(UsageError, match="no saved profile 'cached'"):
            decoy(ip, "cache --profile cached")  # unpaired: a mistake to ask for, not "no cache yet"
    finally:
        magics.connection, magics.pairing = before


# -- completion, suggestions and readable results ---------------------------------------------------
def _tab(ip, line):
    """What Tab offers at the end of `line`, through IPython's completer as a kernel asks it."""
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return [line[: c.start] + c.text for c in ip.Completer.completions(line, len(line))]


def test_tab_completes_verbs_flags_topics_categories_and_ids(ip, magics, connected):
    """Issue 12: "Tab completion (IPython's completer hooks) for sub-commands, flags, topic names,
    categories and memory ids"."""
    mid = decoy(ip, "save --topic 'Tab trip' --type trip --relation 'is planning' --categories travel", "Tab me.")
    decoy(ip, "memories")  # completion offers what the latest load holds
    assert _tab(ip, "%decoy mem") == ["%decoy memories"]
    assert _tab(ip, "%decoy memories --ca") == ["%decoy memories --category"]  # no Python names
    assert "%decoy memories --topic 'Tab trip'" in _tab(ip, "%decoy memories --topic 'Ta")
    assert "%decoy memories --topic 'Tab trip'" in _tab(ip, "%decoy memories --topic Ta")
    assert "%decoy memories --topic You" in _tab(ip, "%decoy memories --topic ")
    assert _tab(ip, "%decoy memories --category tra") == ["%decoy memories --category travel"]
    assert f"%decoy unseal {mid}" in _tab(ip, f"%decoy unseal {mid[:6]}")
    assert f"%decoy delete {mid} {mid}" in _tab(ip, f"%decoy delete {mid} {mid[:6]}")
    assert "%decoy request memory.edit" in _tab(ip, "%decoy request memory.e")
    assert _tab(ip, "x = 1; se")[:1] != []  # other lines still complete as Python


def test_unknown_topic_names_and_ids_suggest_the_closest(ip, connected):
    """Issue 12: "unknown topic names and ids suggest the closest"."""
    decoy(ip, "save --topic 'Lisbon trip' --type trip --relation 'is planning'", "Closest topic.")
    decoy(ip, "memories")
    with pytest.raises(UsageError, match=r"no topic named 'Lisbn trip'.*\n→ did you mean 'Lisbon trip'\?"):
        decoy(ip, "memories --topic 'Lisbn trip'")
    mid = decoy(ip, "save", "Closest id.")
    decoy(ip, "memories")
    typo = mid[:-1] + ("0" if mid[-1] != "0" else "1")
    with pytest.raises(UsageError, match=rf"nothing was deleted \({typo}: .*\n→ did you mean '{mid}'\?"):
        decoy(ip, f"delete {typo}")
    with pytest.raises(UsageError, match=rf"no memory {typo}.*\n→ did you mean '{mid}'\?"):
        decoy(ip, f"edit {typo} --text x")


def test_the_memories_frame_shows_readable_columns_and_keeps_them_all(ip, magics, connected):
    """Issue 12: "text whole and wrapped, topic with 'You', categories, when … with a fresh index,
    while the returned DataFrame keeps every column"."""
    long = "A memory long enough to be cut by pandas at fifty characters, which the frame must show whole."
    decoy(ip, "save --categories user_preferences", long)
    df = decoy(ip, "memories --search 'long enough'")
    assert isinstance(df, pd.DataFrame) and {"id", "via", "kid", "topic_id"} <= set(df.columns)
    assert list(df.index) == list(range(len(df)))
    html = df._repr_html_()
    assert long in html and "You" in html and "user_preferences" in html and "<th>when</th>" in html
    assert "<th>via</th>" not in html and "more columns" in html
    assert "via" in decoy(ip, "memories --search 'long enough' --all")._repr_html_()
    ip.run_line_magic("config", "DecoyMagics.columns = ['text', 'id']")
    try:
        assert "<th>id</th>" in decoy(ip, "memories --search 'long enough'")._repr_html_()
    finally:
        magics.columns = list(MEMORY_COLUMNS)
    with capture_output() as cap:
        empty = decoy(ip, "memories --search 'nothing has this text'")
    assert cap.stdout == "No memories match these filters.\n"  # printed: it shows when assigned too
    assert "No memories match these filters." not in empty._repr_html_()  # not twice in its own cell
    ip.execution_count += 1  # a later cell that shows the frame shows the note with it
    assert "No memories match these filters." in empty._repr_html_()
    assert type(df.head()) is pd.DataFrame  # derived frames are plain DataFrames


def test_results_read_as_sentences_with_their_values_still_there(ip, connected):
    """Issue 12: "delete, request, sync, edit and save results display as short sentences and small
    tables, with the values still attributes"; request "shows exactly what it asks for and why each
    extra permission is needed (the spec's Needs column)"."""
    from decoy_lab.widgets.consent import RequestCard

    mid = decoy(ip, "save --topic 'Lisbon trip' --categories travel", "Sentence me.")
    assert isinstance(mid, str) and "Saved memory" in mid._repr_markdown_() and "Lisbon trip" in mid._repr_markdown_()
    ed = decoy(ip, f"edit {mid} --topic You --categories")
    assert ed["id"] == mid and ed.id == mid and "topic → You" in ed._repr_markdown_()
    html = ip.display_formatter.formatters["text/html"]  # a terminal shell leaves it off: look it up

    def fmt(value):
        return html.lookup(value)(value)

    res = decoy(ip, f"delete {mid}")
    assert res.deleted == [mid] and "Deleted 1 row" in fmt(res)
    sync = decoy(ip, "sync")
    assert "Sync:" in fmt(sync)
    with capture_output() as cap:
        req = decoy(ip, "request memory.delete --topic 'Lisbon trip' --reason 'tidy the trip'")
    card = next(o for o in cap.outputs if "decoy-request-card" in o.data.get("text/html", "")).data["text/html"]
    assert req.request_id and set(req.permissions) >= {"memory.delete", "memory.edit", "memory.read"}
    assert "memory.delete needs it" in card and "memory.edit needs it (for memory.delete)" in card
    assert "Delete memories about Lisbon trip" in card and req.status in card and "tidy the trip" in card
    shown = RequestCard(req)
    shown._check.click()  # asks the server again; the card shows the answer
    assert req.status in shown.value and (shown._check.layout.display == "none") == req.done


def test_the_first_read_after_pairing_says_why_it_is_empty_and_wait_brings_the_rows(ip, magics, connected):
    """Spec 000: "reports them as `preparing` … and `retry_after_seconds` … read again after that
    many seconds"; issue 12: "when rows are `preparing`, every view says how many and when to read
    again"; `--wait` waits the server's retry_after_seconds."""
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.sandbox.phone import schedule

    before = magics.connection, magics.pairing
    with Sandbox.start(seed="demo") as sb:
        try:
            schedule.configure(sb.state, auto_share_after=None)  # the phone has not shared yet, however slow
            conn = decoy(ip, f"connect {sb.url} --name first-minute --force")
            if not hasattr(conn, "load"):  # an owner who approves at once still connects within moments
                conn = conn.wait(30)
            with capture_output() as cap:
                first = decoy(ip, "memories")
            said = cap.stdout  # printed in the output area, so `df = %decoy memories` says it too
            assert len(first) == 0, "the phone was told not to share before the first read"
            assert re.search(
                r"No memories yet: \d+ rows are \(memories, topics, links\) on their way from the owner", said
            )
            assert "read again in 5 s" in said and "%decoy memories --wait" in said
            schedule.configure(sb.state)  # the phone is on again: it answers what is owed, as a real one does
            with capture_output():
                waited = decoy(ip, "memories --wait")
            assert len(waited) > 0 and "on their way" not in waited._repr_html_()
            magics._forget(conn)
            conn.close()
        finally:
            magics.connection, magics.pairing = before


def test_wait_for_rows_follows_retry_after_and_stops_at_90_s_with_one_ask_of_the_owner():
    """Spec 000: "If the task needs them now and they are still `preparing` after 60 to 90 seconds
    of reading, you may ask the owner once to open Decoy, never in advance"."""
    from decoy_lab.vault.waiting import wait_for_rows

    class Waiting:
        answer = {"preparing_others": 3, "retry_after_seconds": 5}

    class Conn:
        loads = 0

        def load(self):
            self.loads += 1
            return Waiting()

    now = [0.0]
    said = []
    conn = Conn()
    out = wait_for_rows(
        conn,
        Waiting(),
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        clock=lambda: now[0],
        say=said.append,
        bar=False,
    )
    assert isinstance(out, Waiting) and now[0] == 90.0 and conn.loads == 18  # every 5 s, for 90 s
    assert len(said) == 1 and "ask the owner once to open Decoy" in said[0] and "3 rows" in said[0]


def test_a_pairing_that_times_out_is_one_line_and_a_later_approval_does_not_connect(ip, magics, connected):
    """RFC 8628: stop polling at `expires_in` (here the shorter --timeout); issue 12: "an approval
    after a cancel or timeout does not connect"."""
    from decoy_lab.sandbox import Sandbox

    before = magics.connection, magics.pairing
    with Sandbox.start(approve="manual", seed="none") as sb:
        try:
            magics.connection = None
            w = decoy(ip, f"connect {sb.url} --name timing-out --timeout 0.5 --force")
            code = wait_for(lambda: w.handle.user_code)
            wait_for(lambda: w.handle.done())
            w.refresh()
            assert w.handle.status == "expired" and "expired" in w._status.value
            assert "\n" not in w._status.value and w._card.children == ()
            sb.owner.approve(code)  # the owner answers after the link stopped pairing
            time.sleep(0.5)
            assert magics.connection is None and w.connection is None
        finally:
            magics.connection, magics.pairing = before


def test_an_approval_that_arrives_after_cancel_is_revoked_never_used():
    """Issue 12: "an approval after a cancel … does not connect": tokens that come after Cancel are
    revoked at the server (RFC 7009), and a connection built meanwhile is ended."""
    import httpx

    from decoy_lab.errors import PairingCancelled
    from decoy_lab.protocol.pairing import PairingHandle, authorization_details
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.transport.api import Api
    from decoy_lab.wire.crypto import AgentKey

    with Sandbox.start(seed="none") as sb:  # its phone approves at once: the first poll has a token
        key = AgentKey.generate()
        seen = {}

        def cancel_once_waiting(h):
            if h.status == "waiting":
                h.cancel()  # Cancel pressed just before the owner's approval comes back

        def finish(tokens):
            raise AssertionError("a cancelled pairing must not build a connection")

        api = Api(sb.url, client_id="late-client")
        h = PairingHandle(
            api,
            name="late",
            client_id="late-client",
            rows=authorization_details(),
            agent_public_key=key.public_key_b64,
            finish=finish,
            on_status=cancel_once_waiting,
        )
        real = api.token_endpoint

        def keep(form):
            status, body = real(form)
            seen.update(body if status == 200 else {})
            return status, body

        api.token_endpoint = keep
        h.start()
        with pytest.raises(PairingCancelled, match="was not used"):
            h.result(30)
        assert h.status == "cancelled" and seen.get("access_token")
        r = httpx.get(
            f"{sb.url}/api/agent/policies", headers={"Authorization": f"Bearer {seen['access_token'].reveal()}"}
        )
        assert r.status_code == 401 and r.json()["code"] == "TOKEN_REVOKED"
