"""A trace as text, and the words every view shares: one status, value and headline wording, the
rows under each step, and the bytes its dump shows (byte dumps come from wire/hexdump.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from decoy_lab.recipes.trace.step import MARKS, Step, TraceLike, as_bytes
from decoy_lab.text import plural
from decoy_lab.wire.hexdump import bytes_word, dump_text, fingerprint, secret_label
from decoy_lab.wire.layouts import Field


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


def tone(trace: TraceLike) -> bool | None:
    """The trace's one mark and colour: ✗ a step failed, ✓ every step passed and the recipe
    reached its end, … otherwise (no steps, a step unfinished, or stopped short: `stopped`)."""
    if trace.failed is not None:
        return False
    return True if trace.ok and not trace.stopped else None


def headline(trace: TraceLike) -> str:
    """ "<title> — ✓ all N steps passed" / "— ✗ failed at step k of N: <name>" / "— … N steps
    passed, <why it stopped>" (a dump with no key: not opened). Never "all passed" over a trace
    whose body says it did not get where its title says."""
    steps = trace.steps
    failed = trace.failed
    if not steps:
        status = "no steps"
    elif failed is not None:
        status = f"{MARKS[False]} failed at step {steps.index(failed) + 1} of {len(steps)}: {failed.name}"
    elif trace.ok and trace.stopped:
        status = f"{MARKS[None]} {plural(len(steps), 'step')} passed, {trace.stopped}"
    elif trace.ok:
        status = f"{MARKS[True]} all {len(steps)} steps passed"
    else:
        status = f"{MARKS[None]} not finished"
    return f"{trace.title or 'trace'} — {status}"


def step_lines(trace: TraceLike, i: int, reveal: bool) -> list[tuple[str, str]]:
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
    data = as_bytes(step.data)
    fields = list(step.fields or ())
    secret = set(step.secret_fields)
    names = {f.name for f in fields}
    if secret and (not fields or secret - names):
        # A secret named by no field covers the whole input (e.g. the key text an owner wrap seals).
        label = next(iter(sorted(secret - names)), "secret")
        return data, [Field(label, 0, len(data), data)], {label}
    return data, fields, secret & names


def dump_spans(steps: Sequence[Step]) -> list[tuple[tuple | None, int]]:
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


# -- text --------------------------------------------------------------------------------------
def trace_text(trace: TraceLike, reveal: bool = False, *, width: int = 16, elide: int | None = None) -> str:
    """Every step of a trace: number, ✓/✗ and name, the reason it failed, its inputs and output,
    and an annotated dump of its bytes (a dump equal to an earlier one is referred to by step)."""
    out = [headline(trace)] + ([f"  {trace.verdict}"] if trace.verdict else [])
    for n, (step, (args, shown_at)) in enumerate(zip(trace.steps, dump_spans(trace.steps)), 1):
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
