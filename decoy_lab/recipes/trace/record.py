"""Traces: a record of each step a seal or unseal recipe took.

A Trace is an ordered list of Steps (step.py). A failing step keeps every step before it, like a
partial parse tree, so a user sees exactly which check stopped the row.

A Trace may also carry its `source` (what the outermost recipe ran on, and how to run it again
on edited bytes: `rerun`) and the blobs as they were `served`, so a view marks the bytes an
edit or an alteration changed. Its views are text.py, html.py and data.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from decoy_lab.errors import DecoyError
from decoy_lab.recipes.trace.as_html import trace_html
from decoy_lab.recipes.trace.data import step_dict
from decoy_lab.recipes.trace.step import Step, as_bytes
from decoy_lab.recipes.trace.wording import headline, trace_text
from decoy_lab.wire.hexdump import changed_runs


@dataclass
class Source:
    """What a trace's outermost recipe read, so it can be run again on edited bytes.

    `inputs` are the blobs it read (raw bytes, by name); `run(inputs)` runs the recipe again into
    a fresh Trace; `params` are its other, non-secret arguments and `secrets` its key material
    (only an export asked to reveal writes them out); `start` is the step the recipe began at.
    """

    recipe: str
    run: Callable[[dict[str, bytes]], Trace] = field(repr=False)
    inputs: dict[str, bytes] = field(default_factory=dict, repr=False)
    params: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, Any] = field(default_factory=dict, repr=False)
    start: int = 0


class Trace:
    """An ordered list of Steps; truthy `ok` only when every step passed."""

    def __init__(self, title: str = "", *, served: bytes | Mapping[str, bytes] | None = None):
        self.title = title
        self.steps: list[Step] = []
        self.source: Source | None = None
        self.verdict = ""  # a sentence over the whole trace, e.g. how sure a layout guess is
        # Every step passed, but the recipe stopped short of what its title names, and why (a dump
        # with no key: "not opened: …"); the headline says so instead of "all passed".
        self.stopped = ""
        self.served: dict[str, bytes] = (
            {"blob": bytes(served)} if isinstance(served, (bytes, bytearray)) else dict(served or {})
        )

    # -- recording ---------------------------------------------------------------------------
    def add(
        self,
        name: str,
        *,
        ok: bool | None = True,
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

    def claim(self, source: Source) -> bool:
        """Record `source` unless an outer recipe already did (the outermost one is re-run)."""
        if self.source is not None:
            return False
        source.start = len(self.steps)
        self.source = source
        return True

    # -- reading -----------------------------------------------------------------------------
    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.ok is False), None)

    @property
    def start(self) -> int:
        """The step a view opens on: the failing one; else the first that lays out a blob's
        fields (the layout, not "base64 decode"); else the last with bytes; else the first."""
        steps = self.steps
        for pick in (
            lambda s: s.ok is False,
            lambda s: s.data is not None and bool(s.fields),
        ):
            i = next((i for i, s in enumerate(steps) if pick(s)), None)
            if i is not None:
                return i
        return next((i for i in range(len(steps) - 1, -1, -1) if steps[i].data is not None), 0)

    def changed(self, step: Step) -> tuple[tuple[int, int], ...]:
        """The runs of `step.data` that differ from the blob as served (empty when unaltered)."""
        if step.data is None or not self.served:
            return ()
        data = as_bytes(step.data)
        ref = None
        if self.source is not None:
            ref = next((self.served[n] for n, b in self.source.inputs.items() if b == data and n in self.served), None)
        if ref is None:  # no named input: the served blob this one is an altered copy of
            ref = next((r for r in self.served.values() if _alike(r, data)), None)
        return changed_runs(data, ref) if ref is not None else ()

    def editable(self, step: Step) -> str | None:
        """The name of the recipe input `step` shows (so editing its bytes re-runs), or None."""
        if self.source is None or step.data is None:
            return None
        data = as_bytes(step.data)
        return next((n for n, b in self.source.inputs.items() if b == data), None)

    def rerun(self, changes: Mapping[str, bytes]) -> Trace:
        """Run the recipe again with some inputs replaced: the steps before it are kept, the
        served blobs too (so the view marks what the edit changed)."""
        if self.source is None:
            raise DecoyError("this trace records no recipe to run again")
        src = self.source
        unknown = set(changes) - set(src.inputs)
        if unknown:
            raise DecoyError(f"the recipe read no input named {', '.join(sorted(unknown))}")
        fresh = src.run({**src.inputs, **{k: bytes(v) for k, v in changes.items()}})
        out = Trace(self.title, served=self.served or src.inputs)
        out.steps = self.steps[: src.start] + fresh.steps
        out.verdict = fresh.verdict or self.verdict
        out.stopped = fresh.stopped
        if fresh.source is not None:
            fresh.source.start = src.start
        out.source = fresh.source
        return out

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, i: int) -> Step:
        return self.steps[i]

    def __repr__(self) -> str:
        marks = " ".join(f"{s.status}{s.name}" for s in self.steps)
        return f"<Trace {self.title!r} {len(self.steps)} steps: {marks}>"

    # -- views -------------------------------------------------------------------------------
    def to_text(self, reveal: bool = False) -> str:
        return trace_text(self, reveal=reveal)

    def to_html(self, reveal: bool = False) -> str:
        return trace_html(self, reveal=reveal)

    def to_dict(self, reveal: bool = False) -> dict:
        """The trace as JSON-ready data: each step's status, words and bytes (hex, secrets
        masked unless `reveal`), fields and changed runs."""
        return {
            "title": self.title,
            "headline": headline(self),
            "verdict": self.verdict,
            "stopped": self.stopped,
            "ok": self.ok,
            "recipe": self.source.recipe if self.source else None,
            "params": dict(self.source.params) if self.source else {},
            "steps": [step_dict(self, i, reveal) for i in range(len(self.steps))],
        }

    def to_json(self, reveal: bool = False) -> str:
        return json.dumps(self.to_dict(reveal), indent=2, ensure_ascii=False)

    def to_python(self, reveal: bool = False) -> str:
        from decoy_lab.recipes.export import python_script

        return python_script(self, reveal=reveal)

    def _repr_html_(self) -> str:
        return self.to_html(reveal=False)

    def __str__(self) -> str:
        return self.to_text(reveal=False)


def run_recipe(title: str, recipe: Callable[[Trace], Any], *, served: Mapping[str, bytes] | None = None) -> Trace:
    """A fresh Trace of `recipe(trace)`; a DecoyError it raises is already its failing step."""
    t = Trace(title, served=served)
    try:
        recipe(t)
    except DecoyError as exc:
        if t.failed is None:  # failed between steps: say so as a step, never lose the reason
            t.add("read", ok=False, reason=reason_of(exc))
    return t


def reason_of(exc: BaseException) -> str:
    """The words a user reads for a failed step."""
    text = str(exc) or type(exc).__name__
    step = getattr(exc, "step", None)
    if step and text.startswith(f"{step}: "):
        text = text[len(step) + 2 :]
    return text


def _alike(ref: bytes, data: bytes) -> bool:
    """An altered copy: the same length with most bytes equal, or a long common start."""
    if len(ref) == len(data):
        return sum(a == b for a, b in zip(ref, data)) * 2 >= len(data)
    n = min(len(ref), len(data), 16)
    return n == 16 and ref[:n] == data[:n]


# -- untraced calls -----------------------------------------------------------------------------
class _Sink:
    """A step that forgets whatever is written to it (so no key outlives an untraced call)."""

    __slots__ = ()
    inputs: ClassVar[dict[str, Any]]
    secret_fields: ClassVar[frozenset[str]]
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
    source = None

    def step(self, name: str, **kw: Any) -> _NullStep:
        return self._null

    def add(self, name: str, **kw: Any) -> Any:
        return _NullStep.sink

    def claim(self, source: Source) -> bool:
        return False


NO_TRACE = _NoTrace()


Tracer = Trace | _NoTrace  # what a recipe records into: a Trace, or the no-op stand-in


def tracer(trace: Trace | None) -> Tracer:
    return trace if trace is not None else NO_TRACE
