"""Traces: a record of each step a seal or unseal recipe took, and every view of one.

A Step keeps what it took in (bytes with named fields, other inputs), what it gave out, and
whether it passed or why not. A failing step keeps every step before it, like a partial parse
tree, so a user sees exactly which check stopped the row.

A Trace may also carry its `source` (what the outermost recipe ran on, and how to run it again
on edited bytes: `rerun`) and the blobs as they were `served`, so a view marks the bytes an
edit or an alteration changed. This module is the one place a Trace is rendered: as text, as
HTML, and as the plain data the recipe widget draws (`view`); byte dumps come from hexdump.py,
which knows only bytes and fields.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from decoy_lab.errors import DecoyError
from decoy_lab.wire.hexdump import PALETTE, bytes_word, changed_runs, dump_html, dump_text, fingerprint, secret_label
from decoy_lab.wire.layouts import Field, guess_kind

MARKS = {True: "✓", False: "✗", None: "…"}
COLOURS = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}


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
        return MARKS[self.ok]


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
        data = _as_bytes(step.data)
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
        data = _as_bytes(step.data)
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
            "ok": self.ok,
            "recipe": self.source.recipe if self.source else None,
            "params": dict(self.source.params) if self.source else {},
            "steps": [_step_dict(self, i, reveal) for i in range(len(self.steps))],
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


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


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


# -- words: one status, value and headline wording for every view -------------------------------
def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _text_of(b: bytes) -> str | None:
    """`b` as text when it is printable UTF-8 (a decrypted memory), else None."""
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text and all(ch.isprintable() or ch in "\n\t" for ch in text) else None


def describe(v: Any, *, secret: bool, reveal: bool, limit: int = 160) -> str:
    """One input or output value, in words; secrets as fingerprints unless `reveal`."""
    if v is None:
        return "—"
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if secret and not reveal:
            return f"{secret_label(b).replace('secret,', f'secret {bytes_word(len(b))},')}"
        text = _text_of(b)
        if text is not None:  # decrypted text reads as text
            return _short(text, limit)
        head = b[:32].hex()
        return head if len(b) <= 32 else f"{head}… ({bytes_word(len(b))})"
    if isinstance(v, str):
        if secret and not reveal:
            return f"secret text of {len(v):,} characters, sha256 {fingerprint(v)}"
        return _short(v, limit)
    if secret and not reveal:
        return f"secret {type(v).__name__}"
    if isinstance(v, (dict, list, tuple)):
        try:
            return _short(json.dumps(v, ensure_ascii=False, default=str), limit)
        except (TypeError, ValueError):
            pass
    return _short(repr(v) if not isinstance(v, (int, float, bool)) else str(v), limit)


def headline(trace: Trace) -> str:
    """ "<title> — ✓ all N steps passed" / "— ✗ failed at step k of N: <name>" (+ the verdict)."""
    steps = trace.steps
    failed = trace.failed
    if not steps:
        status = "no steps"
    elif failed is not None:
        status = f"{MARKS[False]} failed at step {steps.index(failed) + 1} of {len(steps)}: {failed.name}"
    elif trace.ok:
        status = f"{MARKS[True]} all {len(steps)} steps passed"
    else:
        status = f"{MARKS[None]} not finished"
    return f"{trace.title or 'trace'} — {status}"


def step_lines(trace: Trace, i: int, reveal: bool) -> list[tuple[str, str]]:
    """(label, text) rows shown under step `i`'s name: why it failed, inputs, output, note,
    and for a failing check with no bytes of its own, what it checked (the step before)."""
    step = trace.steps[i]
    rows: list[tuple[str, str]] = []
    if step.ok is False and step.reason:
        rows.append(("reason", str(step.reason)))
    secret_names = set(step.secret_fields)
    if step.inputs:
        rows.append(
            (
                "inputs",
                " · ".join(
                    f"{k}: {describe(v, secret=k in secret_names, reveal=reveal, limit=80)}"
                    for k, v in step.inputs.items()
                ),
            )
        )
    if step.output is not None:
        rows.append(("output", describe(step.output, secret=step.secret_output, reveal=reveal)))
    if step.note:
        rows.append(("note", str(step.note)))
    before = trace.steps[i - 1] if i > 0 else None
    if step.ok is False and step.data is None and before is not None and before.output is not None:
        given = describe(before.output, secret=before.secret_output, reveal=reveal)
        rows.append(("checked", f"the output of “{before.name}”: {given}"))
    return rows


def dump_args(step: Step) -> tuple[bytes, list[Field], set[str]] | None:
    """The bytes, fields and masked names a step's dump shows (None when it has no bytes)."""
    if step.data is None:
        return None
    data = _as_bytes(step.data)
    fields = list(step.fields or ())
    secret = set(step.secret_fields)
    names = {f.name for f in fields}
    if secret and (not fields or secret - names):
        # A secret named by no field covers the whole input (e.g. the key text an owner wrap seals).
        label = next(iter(sorted(secret - names)), "secret")
        return data, [Field(label, 0, len(data), data)], {label}
    return data, fields, secret & names


def _dumps(steps: Sequence[Step]) -> list[tuple[tuple | None, int]]:
    """Per step: its dump arguments (or None) and the index of the step whose dump shows them —
    itself, or an earlier step with the very same bytes, fields and masking."""
    out: list[tuple[tuple | None, int]] = []
    last_key, last_at = None, -1
    for i, step in enumerate(steps):
        args = dump_args(step)
        if args is None:
            out.append((None, -1))
            continue
        key = (args[0], tuple((f.name, f.offset, f.length) for f in args[1]), frozenset(args[2]))
        if key != last_key:
            last_key, last_at = key, i
        out.append((args, last_at))
    return out


# -- text and HTML ------------------------------------------------------------------------------
def trace_text(trace: Trace, reveal: bool = False, *, width: int = 16, elide: int | None = None) -> str:
    """Every step of a trace: number, ✓/✗ and name, the reason it failed, its inputs and output,
    and an annotated dump of its bytes (a dump equal to an earlier one is referred to by step)."""
    out = [headline(trace)] + ([f"  {trace.verdict}"] if trace.verdict else [])
    for n, (step, (args, shown_at)) in enumerate(zip(trace.steps, _dumps(trace.steps)), 1):
        out.append(f"{n:>2}. {step.status} {step.name}")
        for label, text in step_lines(trace, n - 1, reveal):
            out.append(f"      {label:<8}{text}")
        if args is None:
            continue
        if shown_at != n - 1:
            out.append(f"      bytes   the same {bytes_word(len(args[0]))} as step {shown_at + 1}")
        else:
            dump = dump_text(
                *args[:2], width=width, elide=elide, reveal=reveal, secret=args[2], changed=trace.changed(step)
            )
            out.extend("      " + line for line in dump.splitlines())
    return "\n".join(out)


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def status_html(ok: bool | None) -> str:
    """The one ✓/✗/… mark every HTML view shows."""
    return f'<span style="color:{COLOURS[ok]};font-weight:700">{MARKS[ok]}</span>'


def trace_html(trace: Trace, reveal: bool = False, *, width: int = 16, elide: int | None = None) -> str:
    """The trace as HTML: one block per step with its ✓/✗, the reason, inputs, output, and its
    coloured dump in a <details> (the step a view opens on is open). Inline styles only."""
    steps = trace.steps
    failed = trace.failed
    parts = [
        '<div class="decoy-trace" style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;'
        'font-size:13px;margin:4px 0">',
        f'<div style="font-weight:600;color:{COLOURS[failed is None]};margin-bottom:4px">{_esc(headline(trace))}</div>',
    ]
    if trace.verdict:
        parts.append(f'<div class="decoy-verdict" style="margin-bottom:4px">{_esc(trace.verdict)}</div>')
    parts.append('<ol style="margin:0;padding-left:1.6em">')
    dumps = _dumps(steps)
    start = trace.start if steps else -1
    open_at = next((dumps[i][1] for i in range(start, -1, -1) if dumps[i][0] is not None), -1)
    for i, (step, (args, shown_at)) in enumerate(zip(steps, dumps)):
        parts.append(
            f'<li style="margin:3px 0;padding-left:6px;border-left:3px solid {COLOURS[step.ok]}">'
            f"{status_html(step.ok)} <b>{_esc(step.name)}</b>"
        )
        for label, text in step_lines(trace, i, reveal):
            style = f"color:{COLOURS[False]}" if label == "reason" else ""
            parts.append(
                f'<div style="{style}"><span style="color:#666;display:inline-block;width:4.5em">'
                f'{_esc(label)}</span><span style="font-family:monospace;font-size:12px;word-break:break-all">'
                f"{_esc(text)}</span></div>"
            )
        if args is not None and shown_at != i:
            parts.append(
                f'<div style="color:#666">bytes: the same {_esc(bytes_word(len(args[0])))} as step {shown_at + 1}</div>'
            )
        elif args is not None:
            summary = bytes_word(len(args[0])) + (f", {len(args[1])} fields" if args[1] else "")
            dump = dump_html(
                *args[:2], width=width, elide=elide, reveal=reveal, secret=args[2], changed=trace.changed(step)
            )
            parts.append(
                f'<details{" open" if i == open_at else ""}><summary style="cursor:pointer;color:#555">'
                f"{_esc(summary)}</summary>{dump}</details>"
            )
        parts.append("</li>")
    parts.append("</ol></div>")
    return "".join(parts)


# -- plain data, for JSON export and the recipe widget -------------------------------------------
def _masked_runs(step: Step, reveal: bool) -> list[dict]:
    args = dump_args(step)
    if args is None or reveal:
        return []
    data, fields, secret = args
    return [
        {"start": f.offset, "end": f.end, "label": secret_label(data[f.offset : f.end])}
        for f in fields
        if f.name in secret
    ]


def masked_bytes(step: Step, reveal: bool) -> bytes | None:
    """The step's bytes with every secret run zeroed (unless `reveal`): what leaves the kernel."""
    if step.data is None:
        return None
    out = bytearray(_as_bytes(step.data))
    for run in _masked_runs(step, reveal):
        out[run["start"] : run["end"]] = bytes(run["end"] - run["start"])
    return bytes(out)


def _step_words(trace: Trace, i: int, reveal: bool) -> dict:
    """What every plain-data view of step `i` holds: status, words, masked and changed runs."""
    step = trace.steps[i]
    return {
        "name": step.name,
        "ok": step.ok,
        "mark": step.status,
        "lines": [list(row) for row in step_lines(trace, i, reveal)],
        "masked": _masked_runs(step, reveal),
        "changed": [list(r) for r in trace.changed(step)],
    }


def _step_dict(trace: Trace, i: int, reveal: bool) -> dict:
    step = trace.steps[i]
    data = masked_bytes(step, reveal)
    return {
        **_step_words(trace, i, reveal),
        "hex": data.hex() if data is not None else None,
        "fields": [{"name": f.name, "offset": f.offset, "length": f.length, "note": f.note} for f in step.fields],
    }


# Fields that belong together in the tree: (group name, its members, what it is).
GROUPS = (
    ("header", ("version", "mode"), "SealedBlob version and mode"),
    ("wrapped content key", ("key_length", "wrapped_key"), "the RSA-OAEP-SHA256 part"),
    ("sealed payload", ("nonce", "iv", "ciphertext", "tag"), "the AES-256-GCM part"),
)


def field_tree(step: Step, reveal: bool) -> dict:
    """The nested tree a view links with the hex: the blob → groups of fields → fields (and the
    members of a JSON plaintext), each node with its byte range [start, end)."""
    args = dump_args(step)
    data = args[0] if args else b""
    n = len(data)
    fields, secret = (args[1], args[2]) if args else ([], set())
    leaves = [
        {
            "name": f.name,
            "start": max(0, f.offset),
            "end": min(n, f.end),
            "note": secret_label(data[f.offset : f.end]) if f.name in secret and not reveal else f.note,
            "children": [],
        }
        for f in fields
    ]
    children: list[dict] = []
    for leaf in leaves:
        group = next((g for g in GROUPS if leaf["name"] in g[1]), None)
        members = [x for x in leaves if group and x["name"] in group[1]]
        if group is None or len(members) < 2:
            children.append(leaf)
        elif members[0] is leaf:
            children.append(
                {
                    "name": group[0],
                    "start": members[0]["start"],
                    "end": members[-1]["end"],
                    "note": group[2],
                    "children": members,
                }
            )
    if args and not fields and not secret:
        children = _json_members(data, 0)
    names = {f.name for f in fields}
    kind = guess_kind(data).replace("_", " ") if "tag" in names else ("JSON" if children and not fields else "bytes")
    return {"name": kind, "start": 0, "end": n, "note": bytes_word(n), "children": children}


def _json_members(data: bytes, base: int) -> list[dict]:
    """The members of a UTF-8 JSON object or array with their byte ranges (nothing otherwise)."""
    from decoy_lab.wire.jsonspans import spans

    try:
        return spans(data, base)
    except (ValueError, IndexError):
        return []


def _blob_index(data: bytes | None, blobs: list[str], index: dict[bytes, int]) -> int | None:
    """The index of `data` in the view's list of distinct blobs (added when new)."""
    if data is None:
        return None
    at = index.setdefault(data, len(blobs))
    if at == len(blobs):
        blobs.append(data.hex())
    return at


def _shown_output(step: Step, reveal: bool) -> bytes | None:
    """A step's output when it is bytes a view may show in full (a decrypted plaintext, a built
    blob); a secret output stays a fingerprint unless `reveal`."""
    out = step.output
    if isinstance(out, (bytes, bytearray, memoryview)) and len(out) and (reveal or not step.secret_output):
        return bytes(out)
    return None


def _bytes_tree(data: bytes) -> dict:
    members = _json_members(data, 0)
    return {
        "name": "JSON" if members else "bytes",
        "start": 0,
        "end": len(data),
        "note": bytes_word(len(data)),
        "children": members,
    }


def view(trace: Trace, reveal: bool = False) -> dict:
    """Everything the recipe widget draws, as plain data: each step's words, its bytes (once per
    distinct blob, secrets zeroed), field tree, masked and changed runs, and whether editing its
    bytes re-runs the recipe."""
    blobs: list[str] = []
    index: dict[bytes, int] = {}
    steps = []
    for i, step in enumerate(trace.steps):
        data = masked_bytes(step, reveal)
        out = _shown_output(step, reveal)
        steps.append(
            {
                **_step_words(trace, i, reveal),
                "colour": COLOURS[step.ok],
                "blob": _blob_index(data, blobs, index),
                "tree": field_tree(step, reveal) if data is not None else None,
                "out": _blob_index(out, blobs, index),
                "out_tree": _bytes_tree(out) if out is not None else None,
                "input": trace.editable(step),
            }
        )
    failed = trace.failed
    return {
        "title": trace.title or "trace",
        "headline": headline(trace),
        "verdict": trace.verdict,
        "colour": COLOURS[failed is None if trace.steps else None],
        "start": trace.start if trace.steps else 0,
        "blobs": blobs,
        "steps": steps,
        "editable": trace.source is not None,
        "palette": list(PALETTE),
    }
