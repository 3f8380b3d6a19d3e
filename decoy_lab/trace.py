"""Traces: a record of each step a seal or unseal recipe took, for the step-through views.

A Step keeps what it took in (bytes with named fields, other inputs), what it gave out, and
whether it passed or why not. A failing step keeps every step before it, like a partial parse
tree, so a user sees exactly which check stopped the row. Text and HTML views render through
hexdump.py; the stepper widget renders the same Trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .wire import Field


@dataclass
class Step:
    name: str
    ok: bool | None = None
    data: bytes | None = field(default=None, repr=False)
    fields: tuple[Field, ...] = field(default=(), repr=False)
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)
    output: Any = field(default=None, repr=False)
    reason: str | None = None
    secret_output: bool = False  # the output is a raw key or plaintext key text
    secret_fields: frozenset[str] = frozenset()  # fields of `data` that are secret
    note: str = ""

    @property
    def status(self) -> str:
        return "✓" if self.ok else ("✗" if self.ok is False else "…")


class Trace:
    """An ordered list of Steps; truthy `ok` only when every step passed."""

    def __init__(self, title: str = ""):
        self.title = title
        self.steps: list[Step] = []

    # -- recording ---------------------------------------------------------------------------
    def add(
        self,
        name: str,
        *,
        ok: bool = True,
        data: bytes | None = None,
        fields=(),
        inputs=None,
        output: Any = None,
        reason: str | None = None,
        secret_output: bool = False,
        secret_fields=frozenset(),
        note: str = "",
    ) -> Step:
        if callable(inputs):  # recipes pass a lambda so an untraced call never builds it
            inputs = inputs()
        s = Step(
            name,
            ok,
            data,
            tuple(fields),
            dict(inputs or {}),
            output,
            reason,
            secret_output,
            frozenset(secret_fields),
            note,
        )
        self.steps.append(s)
        return s

    @contextmanager
    def step(
        self,
        name: str,
        *,
        data: bytes | None = None,
        fields=(),
        inputs=None,
        secret_output: bool = False,
        secret_fields=frozenset(),
        note: str = "",
    ) -> Iterator[Step]:
        """Record one step; an exception inside marks it failed with the reason and re-raises."""
        s = self.add(
            name,
            ok=None,
            data=data,
            fields=fields,
            inputs=inputs,
            secret_output=secret_output,
            secret_fields=secret_fields,
            note=note,
        )
        try:
            yield s
        except Exception as exc:
            s.ok = False
            s.reason = reason_of(exc)
            raise
        if s.ok is None:
            s.ok = True

    def extend(self, other: Trace) -> None:
        self.steps.extend(other.steps)

    # -- reading -----------------------------------------------------------------------------
    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.ok is False), None)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, i: int) -> Step:
        return self.steps[i]

    def __repr__(self) -> str:
        marks = " ".join(f"{s.status}{s.name}" for s in self.steps)
        return f"<Trace {self.title!r} {len(self.steps)} steps: {marks}>"

    def to_text(self, reveal: bool = False) -> str:
        from .hexdump import trace_text

        return trace_text(self, reveal=reveal)

    def to_html(self, reveal: bool = False) -> str:
        from .hexdump import trace_html

        return trace_html(self, reveal=reveal)

    def _repr_html_(self) -> str:
        return self.to_html(reveal=False)

    def __str__(self) -> str:
        return self.to_text(reveal=False)


def reason_of(exc: BaseException) -> str:
    """The words a user reads for a failed step."""
    text = str(exc) or type(exc).__name__
    step = getattr(exc, "step", None)
    if step and text.startswith(f"{step}: "):
        text = text[len(step) + 2 :]
    return text


class _Sink:
    """A step that forgets whatever is written to it (so no key outlives an untraced call)."""

    __slots__ = ()
    name, ok, data, fields, inputs, output, reason, note = "", None, None, (), {}, None, None, ""
    secret_output, secret_fields = False, frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        pass


class _NullStep:
    """The context manager an untraced recipe enters for each step: no recording, no allocation."""

    __slots__ = ()
    sink = _Sink()

    def __enter__(self) -> Any:
        return self.sink

    def __exit__(self, *exc: Any) -> None:
        return None


class _NoTrace:
    """Stands in when the caller passed no trace: records nothing, costs almost nothing."""

    _null = _NullStep()

    def step(self, name: str, **kw: Any) -> _NullStep:
        return self._null

    def add(self, name: str, **kw: Any) -> Any:
        return _NullStep.sink


NO_TRACE = _NoTrace()


def tracer(trace: Trace | None) -> Trace | _NoTrace:
    return trace if trace is not None else NO_TRACE
