"""A clicked flow opened, for the flows view (widgets/flows.py): its facts, its request and
answer as JSON trees (each sealed row marked where it sits, each blob identified by layout and
drawn in hex) and its rows with their verdicts and, for a row that did not open, the recipe's
steps up to the one that fails. `detail_of(flow)` is that opening, as plain data.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any

from decoy_lab.inspector.flow_record import ANSWERED, IN_FLIGHT, READABLE, Body, Flow, Row
from decoy_lab.recipes.dump import identify
from decoy_lab.recipes.trace import Trace, headline
from decoy_lab.wire.hexdump import dump_html

BLOB_KEYS = {"ciphertext", "owner_wrap", "self_wrap", "wrapped_key", "encrypted_data", "sealed_details"}
MAX_CHILDREN = 200  # members of one JSON object or array drawn in the tree; the rest counted
MAX_HEX = 40  # blobs of one flow drawn in hex
HEX_ELIDE = 96  # a field longer than this keeps its first and last rows in the hex


def status_text(flow: Flow) -> str:
    """The status cell: the code; "…" while in flight (after the code once the answer started);
    how it ended when that was not with a whole answer ("502 upstream down")."""
    if flow.ended == IN_FLIGHT:
        return "…" if flow.status is None else f"{flow.status} …"
    if flow.status is None:
        return flow.ended
    return str(flow.status) if flow.ended == ANSWERED else f"{flow.status} {flow.ended}"


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


def _time_text(flow: Flow) -> str:
    if flow.ms is not None:
        return f"{flow.ms:.1f} ms"
    if flow.ended == IN_FLIGHT and flow.started:
        return f"{max(0.0, time.time() - flow.started) * 1000:,.0f} ms so far (in flight)"
    return "—"


def _verdict_text(flow: Flow) -> str:
    """Its rows' verdict; "no sealed rows" only once its bodies have been looked through."""
    if flow.verdict:
        return flow.verdict
    if flow.ended == IN_FLIGHT:
        return "— (in flight: its rows are opened once it has ended)"
    if flow.pending:
        return "— (its rows are being opened)"
    return "no sealed rows"


def detail_of(flow: Flow) -> dict[str, Any]:
    """Everything the page shows for one clicked flow (plain data)."""
    o = _Opening(flow)
    return {
        "id": flow.id,
        "title": f"#{flow.id} {flow.method} {flow.url}",
        "facts": [
            ["status", status_text(flow)],
            ["agent", flow.agent or "—"],
            ["verdict", _verdict_text(flow)],
            ["time", _time_text(flow)],
            ["ended", flow.ended + (f": {flow.reason}" if flow.reason else "")],
            ["started", flow.started_iso() if flow.started else "—"],  # 0: a recording that did not say
        ],
        "request": o.side("request", flow.request_body, flow.request_headers),
        "response": o.side("response", flow.response_body, flow.response_headers),
        "rows": [_row_words(i, r) for i, r in enumerate(flow.rows)],
        "blobs": o.blobs,
        "notes": list(flow.notes),
    }
