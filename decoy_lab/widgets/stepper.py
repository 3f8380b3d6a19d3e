"""Stepper: Prev / Next through a Trace, one step at a time.

Each step shows ✓ / ✗ with the reason, its inputs, its output (keys as fingerprints unless
`reveal`) and its bytes as an annotated hex dump. The trace opens on its first failing step,
since that is the step a user came to see.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..display import BAD_COLOUR, OK_COLOUR, esc, step_html
from ..trace import Trace


class Stepper(W.VBox):
    """A composite widget over one Trace; `index` is the step on show."""

    def __init__(self, trace: Any, *, reveal: bool = False, start: int | None = None):
        self.trace = trace
        self.reveal = reveal
        steps = list(trace.steps)
        failed = next((i for i, s in enumerate(steps) if s.ok is False), None)
        self._title = W.HTML(self._title_html(trace))
        self._prev = W.Button(description="◀ Prev", layout=W.Layout(width="90px"))
        self._next = W.Button(description="Next ▶", layout=W.Layout(width="90px"))
        self._pick = W.Dropdown(
            options=[(f"{s.status} {i + 1}. {s.name}", i) for i, s in enumerate(steps)], layout=W.Layout(width="420px")
        )
        self._where = W.Label()
        self._body = W.HTML()
        self._prev.on_click(lambda _: self.go(self.index - 1))
        self._next.on_click(lambda _: self.go(self.index + 1))
        self._pick.observe(lambda ch: self.go(ch["new"]), names="value")
        super().__init__([self._title, W.HBox([self._prev, self._next, self._pick, self._where]), self._body])
        self.add_class("decoy-stepper")
        self.index = -1
        if steps:
            self.go(start if start is not None else (failed if failed is not None else 0))
        else:
            self._body.value = "<i>This trace has no steps.</i>"
            self._prev.disabled = self._next.disabled = True

    @staticmethod
    def _title_html(trace: Any) -> str:
        ok = trace.ok
        colour = OK_COLOUR if ok else BAD_COLOUR
        verdict = (
            "every step passed"
            if ok
            else (f"stopped at “{esc(trace.failed.name)}”" if trace.failed is not None else "incomplete")
        )
        return (
            f'<div style="font-family:sans-serif"><b>{esc(trace.title or "trace")}</b> — '
            f'<span style="color:{colour}">{verdict}</span> ({len(trace.steps)} steps)</div>'
        )

    def __repr__(self) -> str:
        return f"<Stepper {self.trace.title!r} step {self.index + 1} of {len(self.trace.steps)}>"

    @property
    def step(self) -> Any:
        return self.trace.steps[self.index]

    def go(self, index: int) -> None:
        """Show step `index` (clamped to the trace)."""
        n = len(self.trace.steps)
        if not n:
            return
        index = max(0, min(n - 1, int(index)))
        if index == self.index:
            return
        self.index = index
        self._pick.value = index
        self._prev.disabled = index == 0
        self._next.disabled = index == n - 1
        self._where.value = f"step {index + 1} of {n}"
        before = self.trace.steps[index - 1] if index > 0 else None
        self._body.value = step_html(self.step, index, reveal=self.reveal, before=before)

    def _repr_mimebundle_(self, **kw: Any) -> dict:
        """The widget view, with the whole trace as static HTML for viewers without widgets."""
        bundle = super()._repr_mimebundle_(**kw) or {}
        bundle = dict(bundle)
        bundle["text/html"] = self.trace.to_html(reveal=self.reveal)
        return bundle


class SteppedTrace(Trace):
    """A Trace that displays itself as a Stepper (the same steps, shared, not copied)."""

    reveal: bool = False
    row: Any = None  # for `seal` previews: the row that would be sent

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return Stepper(self, reveal=self.reveal)._repr_mimebundle_()


def shown(trace: Trace, *, reveal: bool = False) -> SteppedTrace:
    """`trace` as a SteppedTrace, so a notebook shows it as the stepper."""
    out = SteppedTrace(trace.title)
    out.steps = trace.steps
    out.reveal = reveal
    return out
