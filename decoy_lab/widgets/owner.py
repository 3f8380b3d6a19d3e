"""The owner's phone in a notebook: the other side of an end-to-end-encrypted share.

`OwnerPanel(sb.owner)` shows what the Decoy app shows its owner and does what it does, through
the sandbox's `Owner` (sandbox/phone/owner.py, sandbox/phone/ownerapp.py): pending pairings and grant requests
(Approve, Deny, or approve narrowed to the rows typed in), the memories as the app shows them
(Edit the text, Re-file under a topic or back to You, Delete), topics (Rename), each connection's
grants (Narrow / Widen to the rows typed in, Revoke) and a key-setup switch. Every action redraws
the panel and says what it did, or the refusal, on its status line.

`ReachMatrixView(matrix)` shows a reach_matrix.Matrix: who reads which memory and why, cells that
differ from what the server serves marked.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from decoy_lab.widgets.html import esc

USER = "(You)"


def _rows_text(rows: Any) -> str:
    return json.dumps(rows, ensure_ascii=False)


SHOWN = ("status", "rev", "rotated", "deleted", "missing", "name", "changed", "key_setup", "access_version")


def _summary(result: Any) -> str:
    """What an action answered, in a line: the members a reader looks for."""
    if isinstance(result, dict):
        parts = [f"{k} {json.dumps(result[k], default=str)}" for k in SHOWN if k in result]
        return ", ".join(parts) or "done"
    return "done"


class OwnerPanel(W.VBox):
    """The owner's phone for one sandbox owner (`sb.owner`)."""

    def __init__(self, owner: Any):
        self.owner = owner
        self.status = W.HTML()
        self.key_switch = W.ToggleButton(description="Key setup finished", icon="key")
        self.key_switch.observe(self._on_key, names="value")
        self.buttons: dict[str, W.Button] = {}  # "<action>:<id>" → its button (tests click them)
        self.fields: dict[str, W.Widget] = {}  # "<field>:<id>" → its input
        super().__init__()
        self.refresh()

    # ── drawing ──────────────────────────────────────────────────────────────────────────
    def refresh(self) -> None:
        self.buttons.clear()
        self.fields.clear()
        self.key_switch.unobserve(self._on_key, names="value")
        self.key_switch.value = bool(self.owner.key_ready)
        self.key_switch.observe(self._on_key, names="value")
        view = self.owner.app_view()
        topics = [e for e in view if e.get("kind") == "topic" and e.get("readable")]
        memories = [e for e in view if e.get("kind") in ("memory", "unknown")]
        self.children = [
            W.HTML("<b>Owner's phone</b>"),
            self.key_switch,
            self._section("Waiting for you", [self._pending(p) for p in self.owner.pending()]),
            self._section("Memories", [self._memory(m, topics) for m in memories]),
            self._section("Topics", [self._topic(t) for t in topics]),
            self._section("Connections and their grants", [self._connection(c) for c in self.owner.connections()]),
            self.status,
        ]

    def _section(self, title: str, items: list[W.Widget]) -> W.Widget:
        body = items or [W.HTML("<i>nothing here</i>")]
        return W.VBox([W.HTML(f"<b>{esc(title)}</b> ({len(items)})"), *body])

    def _button(self, key: str, label: str, action: Callable[[], Any], style: str = "") -> W.Button:
        b = W.Button(description=label, button_style=style, layout=W.Layout(width="auto"))
        b.on_click(lambda _b: self._do(label, action))
        self.buttons[key] = b
        return b

    def _field(self, key: str, widget: W.Widget) -> W.Widget:
        self.fields[key] = widget
        return widget

    def _pending(self, p: dict) -> W.Widget:
        ref = p["request_id"]
        what = "pairing" if p["kind"] == "pairing" else "more access"
        narrow = self._field(f"narrow:{ref}", W.Text(placeholder="narrow to rows (JSON), empty: as asked"))
        return W.VBox(
            [
                W.HTML(f"{esc(p['name'])} asks for {what}: {esc('; '.join(p.get('headlines') or []))}"),
                W.HBox(
                    [
                        self._button(f"approve:{ref}", "Approve", lambda: self._approve(ref, narrow.value), "success"),
                        self._button(f"deny:{ref}", "Deny", lambda: self.owner.deny(ref), "danger"),
                        narrow,
                    ]
                ),
            ]
        )

    def _approve(self, ref: str, narrow: str) -> Any:
        return self.owner.approve(ref, json.loads(narrow) if narrow.strip() else None)

    def _memory(self, m: dict, topics: list[dict]) -> W.Widget:
        mid = m["id"]
        if not m.get("readable"):
            head = W.HTML(f"<code>{esc(mid[:8])}</code> ✗ the app cannot open it: {esc(m.get('reason'))}")
            return W.HBox([head, self._button(f"delete:{mid}", "Delete", lambda: self.owner.delete([mid]), "danger")])
        where = (m.get("topic") or {}).get("id") or USER
        text = self._field(f"text:{mid}", W.Text(value=m.get("text") or "", layout=W.Layout(width="40%")))
        options = [(USER, None)] + [(t["name"], t["topic_id"]) for t in topics]
        topic = self._field(f"topic:{mid}", W.Dropdown(options=options, value=where if where != USER else None))
        cats = ", ".join(m.get("categories") or []) or "no category"
        problems = "".join(f"<br>⚠ {esc(p)}" for p in m.get("problems") or [])
        return W.VBox(
            [
                W.HTML(
                    f"<code>{esc(mid[:8])}</code> rev {m.get('rev')} · {esc(cats)} · by {esc(m.get('author'))}{problems}"
                ),
                W.HBox(
                    [
                        text,
                        self._button(f"edit:{mid}", "Edit", lambda: self.owner.edit(mid, text=text.value)),
                        topic,
                        self._button(f"refile:{mid}", "Re-file", lambda: self.owner.refile(mid, topic.value)),
                        self._button(f"delete:{mid}", "Delete", lambda: self.owner.delete([mid]), "danger"),
                    ]
                ),
            ]
        )

    def _topic(self, t: dict) -> W.Widget:
        tid = t["topic_id"]
        name = self._field(f"name:{tid}", W.Text(value=t.get("name") or ""))
        return W.HBox([name, self._button(f"rename:{tid}", "Rename", lambda: self.owner.rename_topic(tid, name.value))])

    def _connection(self, c: dict) -> W.Widget:
        tid = c["token_id"]
        if c.get("revoked"):
            return W.HTML(f"{esc(c['name'])}: revoked")
        lines: list[W.Widget] = [W.HTML(f"{esc(c['name'])} · reads {esc(c.get('memories'))}")]
        for g in self.owner.grants_of(tid):
            pid = g["policy_id"]
            rows = self._field(f"rows:{pid}", W.Text(value=_rows_text(g["rows"]), layout=W.Layout(width="50%")))
            lines.append(
                W.HBox(
                    [
                        rows,
                        self._button(
                            f"narrow:{pid}",
                            "Narrow / widen",
                            functools.partial(self._set_grant, tid, pid, rows),
                        ),
                        self._button(
                            f"revoke:{pid}", "Revoke grant", functools.partial(self.owner.revoke, tid, pid), "warning"
                        ),
                    ]
                )
            )
        extra = self._field(f"widen:{tid}", W.Text(placeholder='more rows, e.g. [{"permissions": ["memory.read"]}]'))
        lines.append(
            W.HBox(
                [
                    extra,
                    self._button(f"widen:{tid}", "Give more", lambda: self.owner.widen(tid, json.loads(extra.value))),
                    self._button(f"revoke:{tid}", "Revoke connection", lambda: self.owner.revoke(tid), "danger"),
                ]
            )
        )
        return W.VBox(lines)

    def _set_grant(self, token_id: str, policy_id: str, rows: W.Text) -> Any:
        return self.owner.set_grant(token_id, policy_id, json.loads(rows.value))

    # ── acting ───────────────────────────────────────────────────────────────────────────
    def _do(self, label: str, action: Callable[[], Any]) -> None:
        try:
            result = action()
        except ValueError as exc:  # a field that is not JSON
            self.status.value = f"✗ {esc(label)}: {esc(exc)}"
            return
        except Exception as exc:
            self.status.value = f"✗ {esc(label)}: {esc(getattr(exc, 'message', None) or exc)}"
            return
        self.refresh()
        self.status.value = f"✓ {esc(label)}: {esc(_summary(result))}"

    def _on_key(self, change: dict) -> None:
        self._do("Key setup", lambda: self.owner.set_key_setup(bool(change["new"])))


class ReachMatrixView(W.VBox):
    """Who can read which memory, and why (a reach_matrix.Matrix); differences marked ≠."""

    def __init__(self, matrix: Any):
        frame = matrix.frame
        if frame.empty:
            body = "<i>no memory any of these connections or the owner can open, so no reasons to show</i>"
        else:
            head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
            rows = []
            for rid, rec in frame.iterrows():
                cells = "".join(
                    f"<td style='{'background:#fdd' if '≠' in str(v) else ''}'>{esc(v)}</td>" for v in rec.values
                )
                rows.append(f"<tr><td><code>{esc(str(rid)[:8])}</code></td>{cells}</tr>")
            body = f"<table class='decoy-reach'><tr><th>id</th>{head}</tr>{''.join(rows)}</table>"
        verdict = (
            "✓ every reason matches what the server serves"
            if matrix.agrees
            else f"≠ {len(matrix.differences)} cell(s) differ from what the server serves"
        )
        super().__init__([W.HTML(body), W.HTML(verdict)])
