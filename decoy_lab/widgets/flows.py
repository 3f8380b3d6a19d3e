"""The flows view: every exchange the inspector saw as one live table (assets/flows.js, an
anywidget), and a clicked flow opened as its request and answer with each sealed row opened.

`FlowsView(source)` takes an `Inspector` (it follows the flows as they arrive, from the
inspector's thread, sent to the page at most every 100 ms) or any list of `Flow`s. An exchange
shows as soon as its request head arrives (status "…", its time counting up on the page) and
again when it ends; one that did not end with an answer says how it ended in its status. The
view keeps the inspector's newest `keep` flows, and its count line says how many older ones
were dropped.

Public traits: `search` (filter as you type over path, status, agent and verdict: every word
must match), `sort` (`column:asc|desc`, "" = as they came), `picked` (the clicked flow's id, -1
none), `recipe` (`"<flow id>:<row index>"`, set by a row's "recipe view" button, which rows have
when `recipe_view` is set: FlowsPanel sets it and shows that recipe). `shown_ids()` picks
the rows by the rule flows.js uses, so `count` is the count line on screen.

The page holds the table's cells (a few short strings per flow, ~100 bytes: 10,000 flows are
~1 MB, sent once); new flows arrive as messages with a sequence number (with how many of the
oldest to drop), and a page that missed one asks for the whole table again. The picked flow's
opening (`detail`) comes from the kernel; so that a click need not wait for it, the page asks
for the openings of the rows in view (`want`) and keeps them; flows whose rows did not open are
opened ahead (`details`), so an exported page shows them too.

`FlowsPanel` joins a FlowsView and the recipe view (widgets.stepper.Stepper) of the row whose
"recipe" button was pressed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

import anywidget
import ipywidgets as W
import traitlets as T

from decoy_lab.inspector.flow_record import ERROR, IN_FLIGHT, KEEP, LAYOUT, READABLE, UNREADABLE, Flow, Row
from decoy_lab.inspector.inspector import Inspector
from decoy_lab.recipes.trace import Trace
from decoy_lab.text import plural
from decoy_lab.widgets.flowdetail import detail_of, status_text
from decoy_lab.widgets.html import ASSETS, widget_script

COLUMNS = ("id", "method", "path", "status", "agent", "verdict", "ms")
NUMERIC = ("id", "status", "ms")
FLUSH_EVERY = 0.1  # seconds: new flows reach the page at most this often
AHEAD_BUDGET = 2_000_000  # characters of openings sent ahead for flows whose rows did not open
WANT_MAX = 80  # openings one `want` message of the page is answered with (a screenful and more)


def tone(flow: Flow) -> str:
    """The colour class of a flow's verdict: bad, error, layout, ok or "" (no rows)."""
    v = flow.verdict
    if UNREADABLE in v:
        return "bad"
    if ERROR in v or flow.ended not in ("answered", "in flight"):
        return "error"
    return {LAYOUT: "layout", READABLE: "ok"}.get(v, "")


def cells(flow: Flow) -> dict[str, Any]:
    """One flow as the table's cells."""
    ms = flow.ms
    return {
        "id": flow.id,
        "method": flow.method,
        "path": flow.url,
        "status": status_text(flow),
        "code": flow.status if flow.status is not None else -1,
        "agent": flow.agent,
        "verdict": flow.verdict,
        "ms": round(ms, 1) if ms is not None else -1,
        "tone": tone(flow),
        "t0": round(flow.started * 1000) if flow.ended == IN_FLIGHT else 0,  # the page counts up from it
    }


CELL_KEYS = ("id", "method", "path", "status", "code", "agent", "verdict", "ms", "tone", "t0")


def count_text(shown: int, total: int, dropped: int = 0) -> str:
    """The count line, in the words the page writes: "12 of 40 exchanges · 3 older dropped"."""
    line = plural(total, "exchange") if shown == total else f"{shown:,} of {plural(total, 'exchange')}"
    return line + (f" · {dropped:,} older dropped" if dropped else "")


class FlowsView(anywidget.AnyWidget):
    """The flows of an inspector as a live, sortable, filterable, virtually scrolled table."""

    _esm = widget_script("flows.js")
    _css = ASSETS / "flows.css"

    rows = T.Dict().tag(sync=True)  # the table's cells, one list per column, plus `seq`
    seq = T.Int(0).tag(sync=True)  # the last batch sent; a page behind it asks for all rows
    search = T.Unicode("").tag(sync=True)
    sort = T.Unicode("").tag(sync=True)
    picked = T.Int(-1).tag(sync=True)
    detail = T.Dict().tag(sync=True)  # the picked flow opened (detail_of)
    details = T.Dict().tag(sync=True)  # flow id → opening, sent ahead for flows whose rows did not open
    recipe = T.Unicode("").tag(sync=True)  # "<flow id>:<row index>" whose recipe view is asked for
    recipe_view = T.Bool(False).tag(sync=True)  # a recipe view listens (FlowsPanel): rows get the button

    def __init__(self, source: Inspector | Iterable[Flow], **kw: Any):
        self._lock = threading.RLock()
        self._flows: dict[int, Flow] = {}
        self._pos: dict[int, int] = {}
        self._pending: dict[int, Flow] = {}
        self._timer: threading.Timer | None = None
        self._ahead = 0
        self.source = source if isinstance(source, Inspector) else None
        if self.source is not None:  # heard of first, then read: a flow in between comes twice, kept once
            self.source.on_flow(self.add, in_flight=True)
        flows = self.source.all_flows() if self.source is not None else list(source)
        self.keep = self.source.recorder.keep if self.source is not None else max(KEEP, len(flows))
        cols: dict[str, Any] = {k: [] for k in CELL_KEYS}
        cols["seq"] = 0
        cols["dropped"] = self.source.dropped if self.source is not None else 0
        self._floor = min((f.id for f in flows), default=0)  # flows below this id were dropped
        ahead: dict[str, Any] = {}
        for f in flows:
            self._put(cols, f, ahead)
        super().__init__(rows=cols, details=ahead, **kw)
        self.on_msg(self._on_msg)

    def __repr__(self) -> str:
        return f"<FlowsView {self.count}>"

    # -- the rows ------------------------------------------------------------------------------
    def _put(self, cols: dict[str, Any], flow: Flow, ahead: dict[str, Any]) -> bool:
        """Add or update the row of `flow`; False for a flow already dropped (not put)."""
        at = self._pos.get(flow.id)
        if at is None and cols["dropped"] and flow.id < self._floor:
            return False
        c = cells(flow)
        if at is None:
            self._pos[flow.id] = len(cols["id"])
            for k in CELL_KEYS:
                cols[k].append(c[k])
        else:
            for k in CELL_KEYS:
                cols[k][at] = c[k]
        self._flows[flow.id] = flow
        if c["tone"] in ("bad", "error") and flow.rows and self._ahead < AHEAD_BUDGET:
            d = detail_of(flow)
            self._ahead += len(json.dumps(d))
            ahead[str(flow.id)] = d
        return True

    def _trim(self, cols: dict[str, Any], ahead: dict[str, Any]) -> int:
        """Drop the oldest rows past `keep`; how many were dropped."""
        n = len(cols["id"]) - self.keep
        if n <= 0:
            return 0
        for fid in cols["id"][:n]:
            self._flows.pop(fid, None)
            ahead.pop(str(fid), None)
        for k in CELL_KEYS:
            del cols[k][:n]
        self._pos = {fid: i for i, fid in enumerate(cols["id"])}
        self._floor = cols["id"][0]
        cols["dropped"] += n
        return n

    def add(self, flow: Flow) -> None:
        """A new or changed flow (any thread): on the page within FLUSH_EVERY seconds."""
        with self._lock:
            self._pending[flow.id] = flow
            if self._timer is None:
                self._timer = threading.Timer(FLUSH_EVERY, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Send the flows waiting now, as one batch."""
        with self._lock:
            self._timer = None
            batch, self._pending = list(self._pending.values()), {}
            if not batch:
                return
            ahead = dict(self.details)
            before = len(ahead)
            batch = [f for f in batch if self._put(self.rows, f, ahead)]
            drop = self._trim(self.rows, ahead)
            seq = self.rows["seq"] + 1
            self.rows["seq"] = seq
            made = [cells(f) for f in batch]
            sent = {k: [c[k] for c in made] for k in CELL_KEYS}
            self.send({"kind": "more", "seq": seq, "rows": sent, "drop": drop, "dropped": self.rows["dropped"]})
            self.seq = seq
            if len(ahead) != before or any(str(f.id) in ahead for f in batch):
                self.details = ahead
            if self.picked in {f.id for f in batch} and self.picked in self._flows:
                self.detail = detail_of(self._flows[self.picked])

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict:
        with self._lock:  # the rows and their seq as one, never between a batch's two halves
            return super().get_state(key=key, drop_defaults=drop_defaults)

    def close(self) -> None:
        """Stop following the inspector, and close the widget."""
        if self.source is not None:
            for heard in (self.source.recorder.listeners, self.source.recorder.watchers):
                if self.add in heard:
                    heard.remove(self.add)
        super().close()

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        if content.get("kind") == "resync":
            with self._lock:
                self.send({"kind": "all", "seq": self.rows["seq"], "rows": self.rows})
        elif content.get("kind") == "want":
            self.send({"kind": "opened", "details": self.openings(content.get("ids") or [])})

    def openings(self, ids: Iterable[Any]) -> dict[str, Any]:
        """The openings of these flows (the rows in view on the page), for the page to keep: a
        click then shows one at once. A flow still in flight is left out (it will change)."""
        out: dict[str, Any] = {}
        for fid in list(ids)[:WANT_MAX]:
            flow = self._flows.get(fid) if isinstance(fid, int) else None
            if flow is None or flow.ended == IN_FLIGHT:
                continue
            if self.source is not None:
                self.source.recorder.finish_now(flow)
            if flow.pending:  # being finished by the worker this moment: asked again when it is
                continue
            out[str(fid)] = detail_of(flow)
        return out

    # -- what is on show -----------------------------------------------------------------------
    @property
    def flows(self) -> list[Flow]:
        """Every flow the view holds, as they came."""
        with self._lock:
            return [self._flows[i] for i in self.rows["id"]]

    def flow(self, flow_id: int) -> Flow:
        return self._flows[int(flow_id)]

    def shown_ids(self) -> list[int]:
        """The ids of the flows on show, in the order shown (flows.js applies the same rule)."""
        with self._lock:
            c = self.rows
            terms = self.search.lower().split()
            keep = []
            for p in range(len(c["id"])):
                hay = f"{c['path'][p]} {c['status'][p]} {c['agent'][p]} {c['verdict'][p]}".lower()
                if all(t in hay for t in terms):
                    keep.append(p)
            col, _, way = self.sort.partition(":")
            if col in COLUMNS:
                src = c["code" if col == "status" else col]
                keep.sort(key=lambda p: src[p] if col in NUMERIC else str(src[p]).lower(), reverse=way == "desc")
            return [c["id"][p] for p in keep]

    @property
    def count(self) -> str:
        return count_text(len(self.shown_ids()), len(self.rows["id"]), self.rows["dropped"])

    @T.observe("picked")
    def _open_picked(self, change: dict) -> None:
        flow = self._flows.get(change["new"])
        if flow is not None and self.source is not None:
            self.source.recorder.finish_now(flow)
        self.detail = detail_of(flow) if flow is not None else {}

    def pick(self, flow_id: int) -> dict[str, Any]:
        """Open flow `flow_id` as a click on its row does; returns its opening."""
        self.picked = int(flow_id)
        return self.detail

    def trace(self, flow_id: int, row: int = 0) -> Trace:
        """The recipe's Trace for row `row` of flow `flow_id` (what its "recipe" button shows)."""
        found = self.flow(flow_id).rows[row].recipe_trace()
        if not isinstance(found, Trace):
            raise LookupError(f"row {row} of flow #{flow_id} has no recipe trace (it was not opened)")
        return found

    def bad_rows(self) -> list[tuple[Flow, int, Row]]:
        """Every row, in every flow, that the owner's app cannot open: (flow, row index, row)."""
        return [(f, i, r) for f in self.flows for i, r in enumerate(f.rows) if r.verdict == UNREADABLE]


class FlowsPanel(W.VBox):
    """The flows view with, below it, the recipe view of the row whose "recipe" button was pressed."""

    def __init__(self, source: Inspector | Iterable[Flow], **kw: Any):
        self.flows = FlowsView(source, recipe_view=True)
        self._slot = W.VBox()
        super().__init__([self.flows, self._slot], **kw)
        self.add_class("decoy-flows-panel")
        self.flows.observe(self._show_recipe, "recipe")

    @property
    def stepper(self) -> Any:
        """The recipe view on show (a Stepper), or None."""
        return self._slot.children[0] if self._slot.children else None

    def _show_recipe(self, change: dict) -> None:
        from decoy_lab.widgets.stepper import Stepper

        flow, _, row = str(change["new"]).partition(":")
        if not flow or not row:
            self._slot.children = ()
            return
        try:
            trace = self.flows.trace(int(flow), int(row))
        except (LookupError, ValueError, IndexError):
            self._slot.children = ()
            return
        self._slot.children = (Stepper(trace),)
