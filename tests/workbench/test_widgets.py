"""Widgets without a browser: buttons clicked, front-end state set, HTML inspected."""

from __future__ import annotations

import datetime as dt
import io
import json
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W
import pandas as pd
import pytest

from decoy_lab.errors import CryptoError, DecoyError, MemoryModelError, PairingError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.views import topicmap
from decoy_lab.widgets import (
    ConsentCard,
    MemoryBrowser,
    MemoryGrid,
    PairingWidget,
    Stepper,
    TopicMapWidget,
    VaultView,
    shown,
)
from decoy_lab.widgets.grid import count_text
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

from support.frames import make_frames
from support.widgetpage import PageVault


@pytest.fixture(scope="module")
def agent_key() -> AgentKey:
    return AgentKey.generate()


def failing_open_trace() -> tuple[Trace, bytes]:
    key = random_key()
    blob = sealing.seal_vault(key, b'{"v":2}')
    trace = Trace("open with the wrong key")
    with pytest.raises(CryptoError):
        sealing.open_vault(random_key(), wire.b64encode(blob), trace=trace)
    return trace, key


def unwrap_trace(agent_key: AgentKey) -> tuple[Trace, bytes]:
    key = random_key()
    env = sealing.wrap_to_agent(key, agent_key.public_key_b64)
    trace = Trace("unwrap")
    assert sealing.unwrap_as_agent(wire.b64encode(env), agent_key, trace=trace) == key
    return trace, key


# -- stepper (the recipe view) --------------------------------------------------------------------
def test_stepper_opens_on_the_failing_step_and_shows_why():
    """A failing step keeps the steps before it; the recipe view opens where the trace failed."""
    trace, _ = failing_open_trace()
    st = Stepper(trace)
    assert st.step is trace.failed and st.index == len(trace.steps) - 1
    failed = st.recipe["steps"][st.index]
    assert failed["mark"] == "✗" and failed["lines"][0] == ["reason", trace.failed.reason]
    assert [s["mark"] for s in st.recipe["steps"]] == ["✓", "✓", "✗"]
    st.go(0)
    assert st.index == 0 and st.step.name == "base64 decode"
    st.go(99)
    assert st.index == len(trace.steps) - 1


def test_stepper_traits_are_the_public_surface():
    """Composites use `trace`, `index` and `go`; only `index`, `recipe` and `error` travel to the browser."""
    trace, _ = failing_open_trace()
    st = Stepper(trace)
    assert {"index", "recipe", "error"} <= set(st.keys) and "trace" not in st.keys
    seen = []
    st.observe(lambda ch: seen.append(ch["new"]), names="index")
    st.go(1)
    assert seen == [1]
    other, _ = failing_open_trace()
    st.trace = other
    assert st.recipe["title"] == other.title and st.index == other.start


def test_stepper_shows_fingerprints_not_keys_unless_revealed(agent_key):
    """Secrets "never appear in a repr/str/log/notebook output unless the user asks (reveal=True)"."""
    trace, key = unwrap_trace(agent_key)
    hidden = json.dumps(Stepper(trace).recipe)
    assert key.hex() not in hidden and key.hex()[:32] not in hidden
    assert wire.kid(key) in hidden  # the fingerprint names it instead
    assert key.hex()[:32] in json.dumps(Stepper(trace, reveal=True).recipe)
    bundle = Stepper(trace)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and key.hex()[:32] not in bundle["text/html"]


def test_shown_trace_is_the_same_trace_and_displays_as_a_stepper():
    trace, _ = failing_open_trace()
    st = shown(trace, reveal=False)
    assert isinstance(st, Trace) and st.steps is trace.steps and st.failed is trace.failed
    assert st.source is trace.source
    bundle = st._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "decoy-trace" in bundle["text/html"]


def test_empty_trace_stepper_says_so():
    st = Stepper(Trace("nothing"))
    assert st.recipe["steps"] == [] and "no steps" in st.recipe["headline"]
    st.go(3)
    assert st.index == 0


def flipped_trace() -> tuple[Trace, bytes, int]:
    key = random_key()
    served = sealing.seal_vault(key, b"Prefers short answers.")
    raw = bytearray(served)
    raw[17] ^= 0x01
    trace = Trace("open with byte 17 flipped", served=served)
    with pytest.raises(CryptoError):
        sealing.open_vault(key, bytes(raw), trace=trace)
    return trace, served, 17


def test_an_edit_message_reruns_the_recipe_and_the_put_back_byte_passes():
    """Issue 13: "edit a byte or a field in place and re-run from that step"."""
    trace, served, at = flipped_trace()
    st = Stepper(trace)
    assert st.recipe["steps"][st.index]["changed"] == [[at, at + 1]]
    st._on_msg(st, {"kind": "edit", "step": st.index, "start": at, "end": at + 1, "hex": served[at : at + 1].hex()}, [])
    assert st.error == "" and st.trace.ok and st.index == 1 and st.trace is not trace
    assert all(s["changed"] == [] and s["mark"] == "✓" for s in st.recipe["steps"])
    field = st.trace.steps[0].fields[0]  # the version byte, edited as a field
    st._on_msg(st, {"kind": "edit", "step": 0, "start": field.offset, "end": field.end, "hex": "07"}, [])
    assert st.trace.failed.name == "parse vault" and st.recipe["steps"][0]["changed"] == [[0, 1]]


def test_a_bad_edit_says_why_and_changes_nothing(agent_key):
    trace, _served, at = flipped_trace()
    st = Stepper(trace)
    st._on_msg(st, {"kind": "edit", "step": 1, "start": at, "end": at + 1, "hex": "zz"}, [])
    assert "hex" in st.error and st.trace is trace
    hand = Trace("by hand")
    hand.add("bytes", data=b"abc")
    st = Stepper(hand)
    st._on_msg(st, {"kind": "edit", "step": 0, "start": 0, "end": 1, "hex": "00"}, [])
    assert "no recipe" in st.error and st.trace is hand
    unwrap, _ = unwrap_trace(agent_key)
    st = Stepper(unwrap)
    last = len(unwrap.steps) - 1  # the memory key check: no bytes of the blob
    with pytest.raises(DecoyError):
        st.edit(last, 0, 1, b"\x00")


def test_export_messages_send_the_json_and_the_script(monkeypatch):
    trace, _served, _ = flipped_trace()
    st = Stepper(trace)
    sent: list[dict] = []
    monkeypatch.setattr(st, "send", lambda content, buffers=None: sent.append(content))
    st._on_msg(st, {"kind": "export", "as": "json"}, [])
    st._on_msg(st, {"kind": "export", "as": "python"}, [])
    assert [m["name"] for m in sent] == ["open-with-byte-17-flipped.json", "open-with-byte-17-flipped.py"]
    assert json.loads(sent[0]["text"])["recipe"] == "open_vault"
    assert "AESGCM" in sent[1]["text"] and "DECOY_KEY" in sent[1]["text"]


# -- pairing and consent -------------------------------------------------------------------------
NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


@dataclass
class FakeAccess:
    summary: str = "Can save memories; reads what it saved."
    frame: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame([{"permission": "memory.save", "selection": "", "expires": None}])
    )


class FakeConnection:
    name = "tour"
    granted = [{"permissions": ["memory.save"]}]

    def access(self) -> FakeAccess:
        return FakeAccess()


class FakeHandle:
    """Just what the widget reads from a pairing.PairingHandle."""

    def __init__(self):
        self.status, self.message = "starting", "asking the server for a pairing link"
        self.link = self.user_code = None
        self.expires_at = None
        self.rows = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]
        self.cancelled = False
        self.outcome: Any = None
        self.on_status = None

    def cancel(self):
        self.cancelled = True
        self.status, self.message = "cancelled", "pairing cancelled before the owner approved"
        self.outcome = PairingError("pairing cancelled", code="cancelled")

    def done(self):
        return self.status in ("done", "denied", "expired", "cancelled", "failed")

    def result(self, timeout=None):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def waiting(self):
        self.status, self.message = "waiting", "waiting for the owner to approve (code ABCD-EFGH)"
        self.link, self.user_code = "http://127.0.0.1:1/device?user_code=ABCD-EFGH", "ABCD-EFGH"
        self.expires_at = NOW + dt.timedelta(minutes=10)


def test_pairing_widget_shows_link_code_and_countdown_then_the_consent_card():
    h = FakeHandle()
    clock = [NOW]
    done: list = []
    w = PairingWidget(h, now=lambda: clock[0], ticker=False, on_done=done.append)
    assert "asking the server" in w._link.value and not w._cancel.disabled
    h.waiting()
    clock[0] = NOW + dt.timedelta(seconds=15)
    h.on_status(h)  # the handle's thread reports a change
    assert 'href="http://127.0.0.1:1/device?user_code=ABCD-EFGH"' in w._link.value
    assert "ABCD-EFGH" in w._code.value and "clipboard" in w._code.value
    assert "9:45" in w._status.value and "waiting" in w._status.value
    clock[0] = NOW + dt.timedelta(seconds=70)
    w.refresh()
    assert "8:50" in w._status.value
    h.status, h.message, h.outcome = "done", "paired", FakeConnection()
    w.refresh()
    assert w.connection is h.outcome and done == [h.outcome] and w._cancel.disabled
    card = w._card.children[0]
    assert isinstance(card, ConsentCard)
    for text in ("Asked", "Granted by the owner", "Held now", "memory.read", "Can save memories"):
        assert text in card.value


def test_pairing_cancel_button_stops_the_handle_and_says_so():
    h = FakeHandle()
    h.waiting()
    w = PairingWidget(h, now=lambda: NOW, ticker=False)
    w._cancel.click()
    assert h.cancelled and w._cancel.disabled
    assert isinstance(w.error, PairingError) and "cancelled" in w._status.value
    assert w._card.children == () and w.connection is None  # one line in the widget, no traceback


def test_pairing_ticker_thread_updates_without_anyone_waiting():
    """The widget never blocks the kernel: a background ticker notices the end by itself."""
    import threading

    h = FakeHandle()
    h.waiting()
    finished = threading.Event()
    w = PairingWidget(h, ticker=True, tick=0.01, on_done=lambda c: finished.set())
    h.status, h.outcome = "done", FakeConnection()
    assert finished.wait(5) and w.connection is h.outcome


def test_consent_card_lists_selections():
    html = ConsentCard.render(
        asked=[{"permissions": ["memory.read"], "datatypes": ["travel", "food"]}],
        granted=[{"permissions": ["memory.read"], "datatypes": ["travel"]}],
        held=None,
    )
    assert "datatypes: travel, food" in html and "datatypes: travel<" in html and "unknown" in html


# -- the map, the table and the view over both ---------------------------------------------------
class Unsealer:
    def __init__(self):
        self.asked: list[str] = []

    def unseal(self, row_id: str) -> Trace:
        self.asked.append(row_id)
        return failing_open_trace()[0]


def vault_of(n_topics: int = 4, **kw: Any) -> PageVault:
    return PageVault(make_frames(n_topics, **kw))


def test_the_table_shows_what_select_memories_selects_and_says_how_many():
    """One rule for both views: the grid's filters pick the rows topicmap.select_memories picks,
    and its count line is the number of rows it shows ("1 memory", never "1 memories")."""
    vault = vault_of(4)
    grid = MemoryGrid(vault)
    assert grid.count == f"{len(vault.memories)} memories" and len(grid.frame) == len(vault.memories)
    tid = vault.topics["id"].iloc[1]
    grid.topic = tid
    assert list(grid.frame["id"]) == list(topicmap.select_memories(vault, topic=tid)["id"])
    assert grid.count == f"2 of {len(vault.memories)} memories shown"
    grid.topic, grid.search = "", "PREFERS"
    assert list(grid.frame["text"]) == ["Prefers short answers."] and grid.count.startswith("1 of ")
    grid.search, grid.category = "", "travel"
    assert list(grid.frame["id"]) == list(topicmap.select_memories(vault, category="travel")["id"])
    grid.category, grid.mine = "", True
    assert grid.frame["mine"].all() and len(grid.frame) == int(vault.memories["mine"].sum())
    assert (
        count_text(1, 1) == "1 memory" and count_text(3, 59, 4) == "3 of 59 memories shown (4 from legacy space rows)"
    )


def test_the_table_sorts_by_a_column_both_ways():
    grid = MemoryGrid(vault_of(5))
    topics = grid.rows["topic"]
    grid.sort = "topic:asc"
    names = [topics[p] for p in grid.shown_positions()]
    assert names == sorted(names, key=str.lower)
    grid.sort = "topic:desc"
    assert [topics[p] for p in grid.shown_positions()] == sorted(names, key=str.lower, reverse=True)


def test_a_large_table_is_paged_and_picks_the_rows_pandas_picks():
    """Past 8 MB of rows the table sends one page and the kernel applies the rule: a search
    typed key by key (each narrowing the last), a topic, a category, a sort, each as pandas
    selects over the frame; `count` is the line the page shows."""
    from support.widgetpage import varied_frames

    frames = varied_frames(40, 30_000, seed=8)  # ~8.6 MB of rows
    mem = frames["memories"]
    grid = MemoryGrid(PageVault(frames))
    assert grid.paged and len(grid.rows["id"]) == 200 and grid.paging["total"] == 30_000
    text = mem["text"].str.lower()
    for typed in ("g", "ga", "garden", "garden notes"):
        grid.search = typed
    hits = mem[text.str.contains("garden notes", regex=False)]
    assert grid.frame["id"].tolist() == hits["id"].tolist()
    space = int((hits["source"] == "space").sum())
    assert grid.count == f"{len(hits):,} of 30,000 memories shown ({space} from legacy space rows)"
    tid = hits["topic_id"].value_counts().index[0]
    grid.topic = tid
    assert grid.frame["id"].tolist() == hits[hits["topic_id"] == tid]["id"].tolist()
    grid.topic, grid.category = "", "food"
    food = hits[hits["categories"].map(lambda c: "food" in c)]
    assert grid.frame["id"].tolist() == food["id"].tolist()
    grid.sort = "text:desc"  # equal texts keep the order as loaded
    keyed = food.assign(k=text[food.index])
    assert grid.frame["id"].tolist() == keyed.sort_values("k", ascending=False, kind="stable")["id"].tolist()
    grid.picked = food["id"].iloc[0]
    assert grid.picked_row["text"] == food["text"].iloc[0] and grid.picked_topic == food["topic_id"].iloc[0]


def test_a_paged_table_builds_every_row_once_the_page_has_painted_its_first(monkeypatch):
    """What a search or a sort over every row needs (tenths of a second at 100,000 memories) is
    not built while the view opens, where it would hold back the first paint: the page says when
    it has painted the first page, and then it is built, on a thread of its own."""
    import time

    from decoy_lab.widgets import grid as grid_module

    monkeypatch.setattr(grid_module, "WHOLE_BYTES", 5_000)  # a small vault, paged
    vault = PageVault(make_frames(40))
    grid = MemoryGrid(vault)
    assert grid.paged
    time.sleep(0.2)
    assert not grid.table.built
    grid._handle_custom_msg({"kind": "shown"}, [])  # what the page sends once it has painted
    deadline = time.monotonic() + 10
    while not grid.table.built and time.monotonic() < deadline:
        time.sleep(0.01)
    assert grid.table.built
    grid.search = "memory 1 of"  # and a search uses them
    want = vault.memories[vault.memories["text"].str.contains("memory 1 of", regex=False)]
    assert grid.frame["id"].tolist() == want["id"].tolist() and len(want) > 10


def test_the_table_sends_whole_texts_and_shows_you_never_na():
    """Typed frames hold pd.NA for "no topic" (about You): the table shows "You", not <NA>; a long
    text travels whole (the page clamps its cell and shows it all in the details)."""
    frames = make_frames(2)
    mem = frames["memories"].astype({"topic": "string", "topic_id": "string"})
    mem["kid"] = pd.array([None] * len(mem), dtype="string")
    mem.loc[0, "text"] = "x" * 70_000
    rows = MemoryGrid(PageVault({**frames, "memories": mem})).rows
    you = rows["text"].index("Prefers short answers.")
    assert rows["topic"][you] == "You" and rows["node"][you] == topicmap.USER
    cells = [str(v) for col in rows.values() for v in col]
    assert not any(c in ("<NA>", "nan", "None", "NaT") for c in cells)
    assert len(rows["text"][0]) == 70_000


def test_an_empty_vault_says_why():
    """An empty view says why it is empty: rows still on their way from the owner's phone come
    first (display.empty_sentence, the sentence every view of a vault uses)."""
    vault = PageVault(make_frames(0, memories_per_topic=0))
    vault.memories = vault.memories.iloc[0:0]
    vault.answer = {"preparing": ["a", "b", "c"], "retry_after_seconds": 5}
    view = VaultView(vault)
    grid = view.browser.grid
    assert grid.count == "0 memories" and "on their way from the owner" in grid.empty_reason
    assert "on their way" in view.children[0].value  # the header says so too
    vault.answer = {}
    assert "grant reaches" in MemoryBrowser(vault).grid.empty_reason


def test_the_map_sends_positions_and_hover_details_and_filters_rebuild_it():
    vault = vault_of(5, nested=2)
    w = TopicMapWidget(vault)
    nodes = {n["id"]: n for n in w.nodes}
    first, nested = vault.topics["id"].iloc[0], vault.topics["id"].iloc[-1]
    assert set(nodes) == set(w.graph) and nodes[topicmap.USER]["kind"] == "user"
    assert nodes[nested]["parent"] == first and nodes[nested]["relation"] == "includes"
    assert nodes[first]["memories"] == 2 and nodes[first]["type"] == "trip"
    assert "saved it" in nodes[first]["reason"]  # via "self", in words
    assert all(isinstance(n["x"], float) and isinstance(n["y"], float) for n in w.nodes)
    assert {(e["source"], e["target"]) for e in w.edges} == set(w.graph.edges)
    w.pick("Topic 0")
    assert w.selected == first
    w.depth = 1  # one hop from You: the nested topics drop out
    assert nested not in {n["id"] for n in w.nodes} and nested not in w.graph
    w.depth, w.category = -1, "food"
    assert {n["id"] for n in w.nodes} == set(topicmap.build_graph(vault, category="food"))
    with pytest.raises(MemoryModelError):
        w.pick("nope")
    png = io.BytesIO()
    w.figure().savefig(png, format="png")
    assert png.getvalue()[:4] == b"\x89PNG"


def test_map_and_table_are_siblings_linked_by_public_traits():
    """A click on the map (its `selected` trait) filters the table and sets the picker; a row
    picked in the table rings its topic; the links exist in the page too (jslink)."""
    vault = vault_of(3)
    view = VaultView(vault)
    tid = vault.topics["id"].iloc[2]
    view.map.selected = tid  # what a click on the node sends
    assert view.browser.grid.topic == tid and view.filters.topic == tid
    assert set(view.browser.frame["topic_id"]) == {tid}
    row = vault.memories[vault.memories["topic_id"] == vault.topics["id"].iloc[0]]["id"].iloc[0]
    view.browser.select(row)  # what a click on the row sends
    assert view.browser.grid.picked_topic == vault.topics["id"].iloc[0] == view.map.ringed
    view.filters.topic = topicmap.USER
    assert view.map.selected == topicmap.USER and list(view.browser.frame["text"]) == ["Prefers short answers."]
    view.filters.category = "travel"
    assert view.browser.grid.category == "travel" and view.map.category == "travel"
    page_links = {
        (ln.source[0].model_id, ln.source[1], ln.target[0].model_id, ln.target[1])
        for ln in view.links
        if isinstance(ln, W.widget_link.DirectionalLink)
    }
    grid = view.browser.grid.model_id
    assert (view.map.model_id, "selected", grid, "topic") in page_links
    assert (grid, "picked_topic", view.map.model_id, "ringed") in page_links


def test_the_stepper_stays_open_through_filters_and_follows_the_picked_row():
    vault = vault_of(4)
    conn = Unsealer()
    b = MemoryBrowser(vault, connection=conn)
    assert b._unseal.disabled and b.open_stepper() is None  # nothing picked yet
    first, second = vault.memories["id"].iloc[0], vault.memories["id"].iloc[1]
    b.select(first)
    assert not b._unseal.disabled
    b._unseal.click()
    assert conn.asked == [first] and isinstance(b.stepper, Stepper)
    b.set_filters(search="memory", category="travel")
    assert isinstance(b.stepper, Stepper) and conn.asked == [first]
    b.select(second)
    assert conn.asked == [first, second] and isinstance(b.stepper, Stepper)
    b.select("")
    assert b.stepper is None and b._unseal.disabled
    with pytest.raises(MemoryModelError):
        b.set_filters(topic="Atlantis")


def test_a_browser_without_connection_cannot_unseal():
    b = MemoryBrowser(vault_of(2))
    b.select(b.frame["id"].iloc[0])
    assert b._unseal.disabled and b.open_stepper() is None


def test_the_widget_modules_import_no_cycle():
    """The map and the table are siblings: neither imports the other, both import the pickers."""
    import ast
    from pathlib import Path

    import decoy_lab.widgets as pkg

    here = Path(pkg.__file__).parent
    graph = {}
    for f in here.glob("*.py"):
        tree = ast.parse(f.read_text())
        graph[f.stem] = {
            a.name if node.module == "decoy_lab.widgets" else (node.module or "").rsplit(".", 1)[-1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("decoy_lab.widgets")
            for a in node.names
        } & {p.stem for p in here.glob("*.py")}
    assert "browser" not in graph["topicmap_view"] and "topicmap_view" not in graph["browser"]
    assert "pickers" in graph["topicmap_view"] and "pickers" in graph["grid"]

    def reaches(a: str, b: str, seen: frozenset = frozenset()) -> bool:
        return any(n == b or (n not in seen and reaches(n, b, seen | {n})) for n in graph.get(a, ()))

    assert not [m for m in graph if m != "__init__" and reaches(m, m)]


# -- progress --------------------------------------------------------------------------------
def test_progress_bar_only_for_slow_calls(monkeypatch):
    """tqdm.auto appears when a call outlives `after`; a quick call shows nothing."""
    import threading

    import tqdm.auto

    from decoy_lab.workbench.display import with_progress

    made: list = []
    release = threading.Event()

    class Bar:
        def __init__(self, **kw):
            made.append(kw)
            release.set()  # the slow call may finish once the bar is up
            self.n = 0

        def refresh(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    assert with_progress(lambda p: 7, "quick", after=30) == 7 and made == []
    assert with_progress(lambda p: release.wait(30) and "slow", "loading memories", after=0, poll=0.01) == "slow"
    assert made and made[0]["desc"] == "loading memories"
    with pytest.raises(ZeroDivisionError):
        with_progress(lambda p: 1 / 0, "broken", after=30)


def test_progress_bar_counts_rows_when_the_call_reports_them(monkeypatch):
    """A load that reports `progress(1, total)` per row drives a bar of rows done of the total."""
    import threading

    import tqdm.auto

    from decoy_lab.workbench.display import with_progress

    bars: list = []
    finish = threading.Event()

    class Bar:
        def __init__(self, **kw):
            self.n, self.total, self.bar_format, self.seen = 0, None, kw.get("bar_format"), []
            bars.append(self)

        def refresh(self):
            self.seen.append((self.n, self.total))
            if self.n == 2:
                finish.set()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def load(progress):
        progress(1, 4)
        progress(1, 4)
        finish.wait(30)
        progress(2, 4)
        return "loaded"

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    assert with_progress(load, "loading memories", after=0, poll=0.01) == "loaded"
    assert (2, 4) in bars[0].seen and "of {total:,} rows" in bars[0].bar_format
    assert "rate" not in bars[0].bar_format  # no rows/s: they arrive in bursts


def test_a_failing_check_without_bytes_names_what_it_checked(agent_key):
    """A failing step shows the inputs of the failing check (the step before's output, as a fingerprint)."""
    key = random_key()
    bad = sealing.seal_envelope(key, agent_key.public_key_b64, owner=True)  # raw key bytes, not base64 text
    trace = Trace("owner check")
    with pytest.raises(CryptoError):
        sealing.unwrap_as_owner(bad, agent_key, trace=trace)
    lines = dict(map(tuple, Stepper(trace).recipe["steps"][-1]["lines"]))
    assert trace.steps[-2].name in lines["checked"] and wire.kid(key) in lines["checked"]
    assert key.hex()[:32] not in json.dumps(lines)


def test_consent_card_says_never_for_a_permission_with_no_end_date():
    """Spec: `policies[].expires_at` null means the access has no end date; the card says so in words."""
    held = pd.DataFrame(
        {
            "permission": ["memory.read", "memory.edit"],
            "selection": ["all", "datatypes=travel"],
            "expires_at": pd.to_datetime([None, "2027-01-01T00:00:00Z"], utc=True),
        }
    )
    html = ConsentCard.render(asked=None, granted=None, held=held)
    row = html.split("memory.read")[1].split("</tr>")[0]
    assert "never" in row and "NaT" not in html and "2027-01-01" in html
