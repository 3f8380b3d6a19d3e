"""The recipe view of a Trace: every step in one column, each step's bytes as a hex view linked
both ways with a nested field tree, and in-place edits that run the recipe again.

`Stepper` is an anywidget: its front end (assets/recipe.js, assets/recipe.css) draws what
`decoy_lab.recipes.trace.view` describes, so stepping (Prev / Next, a click, ←/→), lighting a field's
bytes and finding a byte's field happen in the browser with no round trip to the kernel. An edit
comes back as a message; the kernel re-runs the recipe (`Trace.rerun`) and sends the new view.
The public surface for composites: the `trace` trait, `index`, `go(step)` and `edit(...)`.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets as T

from decoy_lab.errors import DecoyError
from decoy_lab.recipes.trace import Trace, view
from decoy_lab.widgets.html import ASSETS, widget_script


class Stepper(anywidget.AnyWidget):
    """One Trace as a recipe; `index` is the open step (the failing one, else the layout)."""

    _esm = widget_script("recipe.js")
    _css = ASSETS / "recipe.css"

    trace = T.Instance(Trace)
    reveal = T.Bool(False)
    index = T.Int(0).tag(sync=True)
    recipe = T.Dict().tag(sync=True)  # what the front end draws: trace.view(trace, reveal)
    error = T.Unicode("").tag(sync=True)  # why the last edit or export did not happen

    def __init__(self, trace: Trace, *, reveal: bool = False, start: int | None = None, **kw: Any):
        super().__init__(trace=trace, reveal=reveal, **kw)
        self.on_msg(self._on_msg)
        if start is not None:
            self.go(start)

    @T.observe("trace", "reveal")
    def _redraw(self, change: dict) -> None:
        self.recipe = view(self.trace, reveal=self.reveal)
        if change["name"] == "trace":
            self.index = self.trace.start if self.trace.steps else 0

    def __repr__(self) -> str:
        return f"<Stepper {self.trace.title!r} step {self.index + 1} of {len(self.trace.steps)}>"

    @property
    def step(self) -> Any:
        return self.trace.steps[self.index]

    def go(self, index: int) -> None:
        """Open step `index` (clamped to the trace)."""
        n = len(self.trace.steps)
        if n:
            self.index = max(0, min(n - 1, int(index)))

    def edit(self, step: int, start: int, end: int, value: bytes) -> Trace:
        """Put `value` in place of bytes [start, end) of step `step` and run the recipe again from
        the step that reads them; the new trace replaces `trace` and `step` stays open."""
        s = self.trace.steps[step]
        name = self.trace.editable(s)
        if name is None:
            raise DecoyError(
                "these bytes come from an earlier step; edit them in the step that reads the blob"
                if self.trace.source is not None
                else "this trace records no recipe to run again"
            )
        raw: bytes | str | None = s.data
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw or b"")
        if not 0 <= start <= end <= len(data):
            raise DecoyError(f"bytes [{start}:{end}] are outside the step's {len(data)} bytes")
        fresh = self.trace.rerun({name: data[:start] + bytes(value) + data[end:]})
        self.trace = fresh
        self.go(step)
        self.error = ""
        return fresh

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        try:
            if content.get("kind") == "edit":
                try:
                    value = bytes.fromhex(str(content.get("hex", "")))
                except ValueError:
                    raise DecoyError("type the new bytes as hex, two digits a byte (e.g. 0a ff)") from None
                self.edit(int(content["step"]), int(content["start"]), int(content["end"]), value)
            elif content.get("kind") == "export":
                self._export(str(content.get("as")))
        except DecoyError as exc:
            self.error = str(exc)

    def _export(self, kind: str) -> None:
        stem = "".join(c if c.isalnum() else "-" for c in (self.trace.title or "trace")).strip("-") or "trace"
        if kind == "python":
            text, name, mime = self.trace.to_python(reveal=self.reveal), f"{stem}.py", "text/x-python"
        else:
            text, name, mime = self.trace.to_json(reveal=self.reveal), f"{stem}.json", "application/json"
        self.send({"kind": "export", "as": kind, "name": name, "type": mime, "text": text})
        self.error = ""

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        """The widget view, with the whole trace as static HTML for viewers without widgets."""
        bundle = super()._repr_mimebundle_(**kw)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = {**data, "text/html": self.trace.to_html(reveal=self.reveal)}
        return (data, meta) if meta else data


class SteppedTrace(Trace):
    """A Trace that displays itself as a Stepper (the same steps, shared, not copied)."""

    reveal: bool = False
    row: Any = None  # for `seal` previews: the row that would be sent

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return Stepper(self, reveal=self.reveal)._repr_mimebundle_()


def shown(trace: Trace, *, reveal: bool = False) -> SteppedTrace:
    """`trace` as a SteppedTrace, so a notebook shows it as the stepper."""
    out = SteppedTrace(trace.title)
    out.steps = trace.steps
    out.source, out.served, out.verdict, out.stopped = trace.source, trace.served, trace.verdict, trace.stopped
    out.reveal = reveal
    return out
