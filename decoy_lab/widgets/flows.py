"""The flows view: every exchange the inspector saw as one live table (assets/flows.js, an
anywidget), and a clicked flow opened as its request and answer with each sealed row opened.

`FlowsView(source)` takes an `Inspector` (it follows the flows as they arrive, from the
inspector's thread, sent to the page at most every 100 ms) or any list of `Flow`s.

Public traits: `search` (filter as you type over path, status, agent and verdict: every word
must match), `sort` (`column:asc|desc`, "" = as they came), `picked` (the clicked flow's id, -1
none), `recipe` (`"<flow id>:<row index>"`, set by a row's "recipe view" button, which rows have
when `recipe_view` is set: FlowsPanel sets it and shows that recipe). `shown_ids()` picks
the rows by the rule flows.js uses, so `count` is the count line on screen.

The page holds the table's cells (a few short strings per flow, ~100 bytes: 10,000 flows are
~1 MB, sent once); new flows arrive as messages with a sequence number, and a page that missed
one asks for the whole table again. The picked flow's opening (`detail`) comes from the kernel;
flows whose rows did not open are opened ahead (`details`), so an exported page shows them too.

`FlowsPanel` joins a FlowsView and the recipe view (widgets.stepper.Stepper) of the row whose
"recipe" button was pressed.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as W
import traitlets as T

from decoy_lab.inspector.inspector import Inspector
from decoy_lab.inspector.model import ERROR, LAYOUT, READABLE, UNREADABLE, Body, Flow, Row
from decoy_lab.recipes.dump import identify
from decoy_lab.recipes.trace import Trace, headline
from decoy_lab.wire.hexdump import dump_html

ASSETS = Path(__file__).with_name("assets")
COLUMNS = ("id", "method", "path", "status", "agent", "verdict", "ms")
NUMERIC = ("id", "status", "ms")
FLUSH_EVERY = 0.1  # seconds: new flows reach the page at most this often
BLOB_KEYS = {"ciphertext", "owner_wrap", "self_wrap", "wrapped_key", "encrypted_data", "sealed_details"}
MAX_CHILDREN = 200  # members of one JSON object or array drawn in the tree; the rest counted
MAX_HEX = 40  # blobs of one flow drawn in hex
HEX_ELIDE = 96  # a field longer than this keeps its first and last rows in the hex
AHEAD_BUDGET = 2_000_000  # characters of openings sent ahead for flows whose rows did not open


def tone(flow: Flow) -> str:
    """The colour class of a flow's verdict: bad, error, layout, ok or "" (no rows)."""
    v = flow.verdict
    if UNREADABLE in v:
        return "bad"
    if ERROR in v or flow.ended not in ("answered", "in flight"):
        return "error"
    return {LAYOUT: "layout", READABLE: "ok"}.get(v, "")


def status_text(flow: Flow) -> str:
    return str(flow.status) if flow.status is not None else flow.ended


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
    }


CELL_KEYS = ("id", "method", "path", "status", "code", "agent", "verdict", "ms", "tone")


def count_text(shown: int, total: int) -> str:
    """The count line, in the words the page writes: "12 of 40 exchanges"."""
    noun = "exchange" if total == 1 else "exchanges"
    return f"{total:,} {noun}" if shown == total else f"{shown:,} of {total:,} {noun}"


# -- a flow opened: its bodies as JSON trees, each sealed row opened, each blob in hex ----------
def _b64(text: str) -> bytes | None:
    if len(text) < 24 or len(text) % 4:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _path(field: str) -> tuple[str | None, list[str | int]]:
    """`request.rows[0]` / `response.memories[3]` / `body.memories[3]` → (side or None, steps)."""
    side: str | None = None
    steps: list[str | int] = []
    for part in field.replace("]", "").split("."):
        name, *idx = part.split("[")
        if not steps and name in ("request", "response") and side is None:
            side = name
        elif not (not steps and name == "body") and name:
            steps.append(name)
        steps += [int(i) for i in idx if i.isdigit()]
    return side, steps


class _Opening:
    """Builds one flow's detail: trees of both bodies with rows and blobs marked."""

    def __init__(self, flow: Flow):
        self.flow = flow
        self.blobs: list[dict[str, Any]] = []
        self.where: dict[tuple[str, tuple[str | int, ...]], int] = {}
        for i, row in enumerate(flow.rows):
            self.where[self._locate(row)] = i

    def _locate(self, row: Row) -> tuple[str, tuple[str | int, ...]]:
        side, steps = _path(row.field)
        if side is None:
            side = "response" if self.flow.method == "GET" else "request"
            if self._resolve(side, steps) is None:
                side = "request" if side == "response" else "response"
        return side, tuple(steps)

    def _resolve(self, side: str, steps: list[str | int]) -> Any:
        node: Any = self._json(self.flow.request_body if side == "request" else self.flow.response_body)
        for s in steps:
            try:
                node = node[s]
            except (KeyError, IndexError, TypeError):
                return None
        return node

    @staticmethod
    def _json(body: Body) -> Any:
        text = body.text
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def side(self, side: str, body: Body, headers: list[tuple[str, str]]) -> dict[str, Any]:
        data = self._json(body)
        out: dict[str, Any] = {"headers": [list(h) for h in headers], "size": body.size}
        out["truncated"], out["complete"] = body.truncated, body.complete
        if data is not None:
            out["tree"] = self._node(side, "body", data, ())
        elif body.data:
            text = body.text
            out["text"] = text[:4000] if text is not None else f"{body.size:,} bytes, not text"
        return out

    def _node(self, side: str, key: str | int, value: Any, at: tuple[str | int, ...]) -> dict[str, Any]:
        node: dict[str, Any] = {"k": key}
        row = self.where.get((side, at))
        if row is not None:
            node["row"] = row
        if isinstance(value, dict | list):
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            node["t"] = "object" if isinstance(value, dict) else "array"
            node["n"] = len(items)
            node["c"] = [self._node(side, k, v, (*at, k)) for k, v in items[:MAX_CHILDREN]]
            return node
        node["t"] = "null" if value is None else type(value).__name__
        node["v"] = value if not isinstance(value, str) or len(value) <= 160 else value[:160] + "…"
        if isinstance(value, str) and (key in BLOB_KEYS or len(value) >= 64):
            self._blob(node, f"{side}.{'.'.join(map(str, at))}", value)
        return node

    def _blob(self, node: dict[str, Any], where: str, text: str) -> None:
        raw = _b64(text)
        if raw is None or len(self.blobs) >= MAX_HEX:
            return
        kind, certainty, layout = identify(raw)
        if kind is None and node["k"] not in BLOB_KEYS:
            return
        node["blob"] = len(self.blobs)
        self.blobs.append(
            {
                "where": where,
                "kind": (kind or "unknown").replace("_", " "),
                "certainty": certainty,
                "size": len(raw),
                "html": dump_html(raw, layout.fields if layout else (), elide=HEX_ELIDE),
            }
        )


def _row_words(i: int, row: Row) -> dict[str, Any]:
    out = {"index": i, **row.to_dict()}
    if row.plaintext is not None:
        out["plaintext"] = json.dumps(row.plaintext, ensure_ascii=False, indent=1, default=str)[:4000]
    made = row.recipe_trace() if row.verdict != READABLE else row.trace  # a bad row's recipe always
    trace = made if isinstance(made, Trace) else None
    if trace is not None:
        failed = trace.failed
        out["recipe"] = {
            "headline": headline(trace),
            "steps": [{"name": s.name, "ok": s.ok, "reason": s.reason or ""} for s in trace.steps],
            "failed": trace.steps.index(failed) if failed is not None else -1,
        }
    return out


def detail_of(flow: Flow) -> dict[str, Any]:
    """Everything the page shows for one clicked flow (plain data)."""
    o = _Opening(flow)
    return {
        "id": flow.id,
        "title": f"#{flow.id} {flow.method} {flow.url}",
        "facts": [
            ["status", status_text(flow)],
            ["agent", flow.agent or "—"],
            ["verdict", flow.verdict or "no sealed rows"],
            ["time", f"{flow.ms:.1f} ms" if flow.ms is not None else "—"],
            ["ended", flow.ended + (f": {flow.reason}" if flow.reason else "")],
            ["started", flow.started_iso()],
        ],
        "request": o.side("request", flow.request_body, flow.request_headers),
        "response": o.side("response", flow.response_body, flow.response_headers),
        "rows": [_row_words(i, r) for i, r in enumerate(flow.rows)],
        "blobs": o.blobs,
        "notes": list(flow.notes),
    }


class FlowsView(anywidget.AnyWidget):
    """The flows of an inspector as a live, sortable, filterable, virtually scrolled table."""

    _esm = ASSETS / "flows.js"
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
            self.source.on_flow(self.add)
        flows = self.source.all_flows() if self.source is not None else list(source)
        cols: dict[str, Any] = {k: [] for k in CELL_KEYS}
        cols["seq"] = 0
        ahead: dict[str, Any] = {}
        for f in flows:
            self._put(cols, f, ahead)
        super().__init__(rows=cols, details=ahead, **kw)
        self.on_msg(self._on_msg)

    def __repr__(self) -> str:
        return f"<FlowsView {self.count}>"

    # -- the rows ------------------------------------------------------------------------------
    def _put(self, cols: dict[str, Any], flow: Flow, ahead: dict[str, Any]) -> None:
        c = cells(flow)
        at = self._pos.get(flow.id)
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
            for f in batch:
                self._put(self.rows, f, ahead)
            seq = self.rows["seq"] + 1
            self.rows["seq"] = seq
            sent = {k: [cells(f)[k] for f in batch] for k in CELL_KEYS}
            self.send({"kind": "more", "seq": seq, "rows": sent})
            self.seq = seq
            if len(ahead) != before or any(str(f.id) in ahead for f in batch):
                self.details = ahead
            if self.picked in {f.id for f in batch}:
                self.detail = detail_of(self._flows[self.picked])

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict:
        with self._lock:  # the rows and their seq as one, never between a batch's two halves
            return super().get_state(key=key, drop_defaults=drop_defaults)

    def close(self) -> None:
        """Stop following the inspector, and close the widget."""
        if self.source is not None and self.add in self.source.recorder.listeners:
            self.source.recorder.listeners.remove(self.add)
        super().close()

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        if content.get("kind") == "resync":
            with self._lock:
                self.send({"kind": "all", "seq": self.rows["seq"], "rows": self.rows})

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
        return count_text(len(self.shown_ids()), len(self.rows["id"]))

    @T.observe("picked")
    def _open_picked(self, change: dict) -> None:
        flow = self._flows.get(change["new"])
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
