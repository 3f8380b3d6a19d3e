"""Annotated hex dumps of a blob and its wire.Field list, as text and as HTML, and the two
views of a Trace built from them. Pure functions that return strings; nothing prints.

    dump_text(data, fields)   offset | hex | ASCII, a field boundary drawn as "|" between bytes,
                              a margin naming each field where it starts, a legend on top, long
                              fields elided with a byte count ("… 2,048 bytes of ciphertext …")
    dump_html(data, fields)   the same with one colour per field and a legend; inline styles only,
                              so it reads the same in JupyterLab and in a static HTML export
    trace_text / trace_html   each step of a Trace: ✓/✗ and the reason, inputs, output, dump

Secret bytes (raw keys, the key text inside an owner wrap) are replaced by "••" and named by a
fingerprint (the first 8 bytes of their SHA-256, which for a memory key is its kid) unless the
caller passes `reveal=True`.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .wire import Field

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace

__all__ = ["dump_html", "dump_text", "fingerprint", "trace_html", "trace_text"]

MASK_HEX = "••"
MASK_CHAR = "•"
PALETTE = ("#fde2e4", "#d8f0c8", "#cde4f5", "#fff0b8", "#e6daf7", "#cff3e4", "#fbd9c4", "#dbe2f7", "#f7d6ea", "#ebeccb")
MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"


def fingerprint(value: bytes | str) -> str:
    """What a secret is shown as: hex of the first 8 bytes of its SHA-256 (a key's kid)."""
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return hashlib.sha256(raw).digest()[:8].hex()


# -- planning: which field owns each byte, which rows are shown ------------------------------
@dataclass(frozen=True)
class _Span:
    """A field clipped to the data, with its colour index and whether it is masked."""

    index: int
    name: str
    start: int
    end: int
    note: str
    masked: bool
    value: bytes

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class _Plan:
    data: bytes
    spans: tuple[_Span, ...]
    owner: tuple[int, ...]  # span index per byte, -1 when no field covers it
    rows: tuple[tuple[str, int, int, str | None], ...]  # ("bytes", start, end, None) / ("elided", start, end, field)
    gaps: tuple[tuple[int, int], ...]


def _plan(
    data: bytes, fields: Sequence[Field], width: int, elide: int | None, secret: Iterable[str], reveal: bool
) -> _Plan:
    if width < 1:
        raise ValueError("width must be at least 1")
    data = bytes(data or b"")
    secret = set(secret or ())
    n = len(data)
    spans: list[_Span] = []
    for f in fields or ():
        start, end = max(0, f.offset), min(n, f.offset + f.length)
        if end < start:
            end = start
        spans.append(
            _Span(len(spans), f.name, start, end, f.note or "", f.name in secret and not reveal, data[start:end])
        )
    owner = [-1] * n
    for s in spans:
        for i in range(s.start, s.end):
            if owner[i] == -1:
                owner[i] = s.index
    gaps: list[tuple[int, int]] = []
    if spans:
        i = 0
        while i < n:
            if owner[i] == -1:
                j = i
                while j < n and owner[j] == -1:
                    j += 1
                gaps.append((i, j))
                i = j
            else:
                i += 1
    # Runs that may be elided: every field, and every stretch no field covers (all of it when
    # there are no fields). Rows wholly inside a long run, except its first and last, are hidden.
    runs = [(sp.start, sp.end, sp.name) for sp in spans]
    runs += [(a, b, None) for a, b in (gaps if spans else [(0, n)])]
    hidden: dict[int, int] = {}  # row number -> index into runs
    if elide:
        for k, (a, b, _) in enumerate(runs):
            if b - a > elide:
                for r in range(-(-a // width) + 1, b // width - 1):
                    hidden.setdefault(r, k)
    rows: list[tuple[str, int, int, str | None]] = []
    r, nrows = 0, -(-n // width)
    while r < nrows:
        if r in hidden:
            k, start = hidden[r], r
            while r in hidden and hidden[r] == k:
                r += 1
            rows.append(("elided", start * width, min(n, r * width), runs[k][2]))
        else:
            rows.append(("bytes", r * width, min(n, (r + 1) * width), None))
            r += 1
    return _Plan(data, tuple(spans), tuple(owner), tuple(rows), tuple(gaps))


def _printable(b: int) -> str:
    return chr(b) if 0x20 <= b < 0x7F else "."


def _masked(plan: _Plan, i: int) -> bool:
    o = plan.owner[i]
    return o != -1 and plan.spans[o].masked


def _bytes_word(n: int) -> str:
    return f"{n:,} byte" + ("" if n == 1 else "s")


def _elided(count: int, name: str | None) -> str:
    return f"… {_bytes_word(count)} of {name} …" if name else f"… {_bytes_word(count)} …"


def _span_label(s: _Span) -> str:
    return f"{s.name}[{s.start}:{s.end}]"


def _secret_label(s: _Span) -> str:
    what = "kid" if s.length == 32 else "sha256"
    return f"secret, {what} {fingerprint(s.value)}"


# -- text ---------------------------------------------------------------------------------------
def dump_text(
    data: bytes,
    fields: Sequence[Field] = (),
    *,
    width: int = 16,
    elide: int | None = 64,
    reveal: bool = True,
    secret: Iterable[str] = (),
) -> str:
    """offset | hex | ASCII with a legend and a margin naming the fields that start on each row.

    A "|" between two hex bytes is a field boundary. Fields longer than `elide` bytes keep their
    first and last full rows; the rows between become one "… N bytes of <field> …" line.
    Fields named in `secret` are masked as "••" unless `reveal`.
    """
    plan = _plan(data, fields, width, elide, secret, reveal)
    out: list[str] = []
    if plan.spans:
        out.append(f"{_bytes_word(len(plan.data))}, {len(plan.spans)} field{'s' if len(plan.spans) != 1 else ''}:")
        name_w = max(len(s.name) for s in plan.spans)
        range_w = max(len(f"[{s.start}:{s.end}]") for s in plan.spans)
        for s in plan.spans:
            note = _secret_label(s) if s.masked else s.note
            line = f"  {s.name:<{name_w}}  {f'[{s.start}:{s.end}]':<{range_w}}  {_bytes_word(s.length):>12}"
            out.append((line + ("  " + note if note else "")).rstrip())
        for a, b in plan.gaps:
            out.append(f"  {'(no field)':<{name_w}}  {f'[{a}:{b}]':<{range_w}}  {_bytes_word(b - a):>12}")
    else:
        out.append(f"{_bytes_word(len(plan.data))}")
    if not plan.data:
        return "\n".join(out)
    hex_w = 3 * width
    for kind, start, end, name in plan.rows:
        if kind == "elided":
            out.append(f"{'':8}{_elided(end - start, name):^{hex_w}}".rstrip())
            continue
        hex_part, asc = [], []
        for i in range(start, end):
            boundary = bool(plan.spans) and i > 0 and plan.owner[i] != plan.owner[i - 1]
            sep = "|" if boundary else " "
            if _masked(plan, i):
                hex_part.append(sep + MASK_HEX)
                asc.append(MASK_CHAR)
            else:
                hex_part.append(f"{sep}{plan.data[i]:02x}")
                asc.append(_printable(plan.data[i]))
        starts = [s for s in plan.spans if start <= s.start < end and s.length]
        margin = "  ".join(_span_label(s) for s in starts)
        line = f"{start:06x} {''.join(hex_part):<{hex_w}}  |{''.join(asc):<{width}}|"
        out.append((line + ("  " + margin if margin else "")).rstrip())
    return "\n".join(out)


# -- HTML ---------------------------------------------------------------------------------------
def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _colour(s: _Span) -> str:
    return "#d9d9d9" if s.masked else PALETTE[s.index % len(PALETTE)]


def _span_style(s: _Span) -> str:
    return f"background:{_colour(s)};color:#111;border-radius:2px"


def dump_html(
    data: bytes,
    fields: Sequence[Field] = (),
    *,
    width: int = 16,
    elide: int | None = 64,
    reveal: bool = True,
    secret: Iterable[str] = (),
) -> str:
    """The same dump as HTML: one colour per field (hex and ASCII), a legend with name, offset,
    length and note, hover titles. Inline styles only; every text is escaped."""
    plan = _plan(data, fields, width, elide, secret, reveal)
    parts = [f'<div class="decoy-hexdump" style="{MONO};font-size:12px;line-height:1.45;margin:4px 0">']
    if plan.spans:
        parts.append(
            '<table style="border-collapse:collapse;margin:0 0 6px 0;font-size:12px">'
            '<tr style="text-align:left;color:#666"><th style="padding:1px 8px 1px 0"></th>'
            '<th style="padding:1px 8px 1px 0">field</th><th style="padding:1px 8px 1px 0">offset</th>'
            '<th style="padding:1px 8px 1px 0">length</th><th style="padding:1px 8px 1px 0">note</th></tr>'
        )
        for s in plan.spans:
            note = _secret_label(s) if s.masked else s.note
            parts.append(
                f'<tr><td style="padding:1px 8px 1px 0"><span style="{_span_style(s)};display:inline-block;'
                f'width:1.4em">&nbsp;</span></td><td style="padding:1px 8px 1px 0"><b>{_esc(s.name)}</b></td>'
                f'<td style="padding:1px 8px 1px 0">{s.start}</td>'
                f'<td style="padding:1px 8px 1px 0">{_esc(_bytes_word(s.length))}</td>'
                f'<td style="padding:1px 8px 1px 0">{_esc(note)}</td></tr>'
            )
        for a, b in plan.gaps:
            parts.append(
                f'<tr><td></td><td style="padding:1px 8px 1px 0;color:#666">(no field)</td>'
                f'<td style="padding:1px 8px 1px 0">{a}</td>'
                f'<td style="padding:1px 8px 1px 0">{_esc(_bytes_word(b - a))}</td><td></td></tr>'
            )
        parts.append("</table>")
    else:
        parts.append(f'<div style="color:#666">{_esc(_bytes_word(len(plan.data)))}</div>')
    parts.append('<pre style="margin:0;padding:0;background:none;white-space:pre;overflow-x:auto">')
    for kind, start, end, name in plan.rows:
        if kind == "elided":
            parts.append(
                f'<span style="color:#777;font-style:italic">{"":7}{_esc(_elided(end - start, name))}</span>\n'
            )
            continue
        hex_html, asc_html = [], []
        i = start
        while i < end:  # one <span> per run of bytes in the same field
            o = plan.owner[i] if plan.spans else -1
            j = i
            while j < end and (plan.owner[j] if plan.spans else -1) == o:
                j += 1
            masked = o != -1 and plan.spans[o].masked
            hx = " ".join(MASK_HEX if masked else f"{b:02x}" for b in plan.data[i:j])
            asc = "".join(MASK_CHAR if masked else _printable(b) for b in plan.data[i:j])
            if o == -1:
                hex_html.append(_esc(hx))
                asc_html.append(_esc(asc))
            else:
                s = plan.spans[o]
                title = _esc(
                    f"{s.name} [{s.start}:{s.end}] {_bytes_word(s.length)}"
                    + (f" — {_secret_label(s)}" if s.masked else (f" — {s.note}" if s.note else ""))
                )
                hex_html.append(f'<span style="{_span_style(s)}" title="{title}">{_esc(hx)}</span>')
                asc_html.append(f'<span style="{_span_style(s)}" title="{title}">{_esc(asc)}</span>')
            i = j
        pad = " " * (3 * width - 1 - (3 * (end - start) - 1))
        starts = [s for s in plan.spans if start <= s.start < end and s.length]
        margin = "  ".join(f'<span style="color:#555">{_esc(_span_label(s))}</span>' for s in starts)
        parts.append(
            f'<span style="color:#888">{start:06x}</span> {" ".join(hex_html)}{pad}  '
            f"|{''.join(asc_html)}{' ' * (width - (end - start))}|" + (f"  {margin}" if margin else "") + "\n"
        )
    parts.append("</pre></div>")
    return "".join(parts)


# -- traces -------------------------------------------------------------------------------------
def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _value(v: Any, *, secret: bool, reveal: bool, limit: int = 160) -> str:
    """One input or output value, in words; secrets as fingerprints unless `reveal`."""
    if v is None:
        return "—"
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if secret and not reveal:
            what = "kid" if len(b) == 32 else "sha256"
            return f"secret {_bytes_word(len(b))}, {what} {fingerprint(b)}"
        head = b[:32].hex()
        return head if len(b) <= 32 else f"{head}… ({_bytes_word(len(b))})"
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


def _status(step: Any) -> str:
    ok = getattr(step, "ok", None)
    return "✓" if ok else ("✗" if ok is False else "…")


def _step_dump_args(step: Any, reveal: bool) -> tuple[bytes, list[Field], set[str]] | None:
    """The bytes, fields and masked names a step's dump shows (None when it has no bytes)."""
    data = getattr(step, "data", None)
    if data is None:
        return None
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fields = list(getattr(step, "fields", ()) or ())
    secret = set(getattr(step, "secret_fields", ()) or ())
    names = {f.name for f in fields}
    if secret and (not fields or secret - names):
        # A secret named by no field covers the whole input (e.g. the key text an owner wrap seals).
        label = next(iter(sorted(secret - names)), "secret")
        return data, [Field(label, 0, len(data), data)], {label}
    return data, fields, secret & names


def _dumps(steps: Sequence[Any], reveal: bool) -> list[tuple[tuple | None, int]]:
    """Per step: its dump arguments (or None) and the index of the step whose dump shows them —
    itself, or an earlier step with the very same bytes, fields and masking."""
    out: list[tuple[tuple | None, int]] = []
    last_key, last_at = None, -1
    for i, step in enumerate(steps):
        args = _step_dump_args(step, reveal)
        if args is None:
            out.append((None, -1))
            continue
        key = (args[0], tuple((f.name, f.offset, f.length) for f in args[1]), frozenset(args[2]))
        if key != last_key:
            last_key, last_at = key, i
        out.append((args, last_at))
    return out


def _headline(trace: Any) -> str:
    steps = list(getattr(trace, "steps", ()))
    title = getattr(trace, "title", "") or "trace"
    failed = next((s for s in steps if getattr(s, "ok", None) is False), None)
    if not steps:
        status = "no steps"
    elif failed is not None:
        status = f"✗ failed at step {steps.index(failed) + 1} of {len(steps)}: {failed.name}"
    elif all(getattr(s, "ok", None) for s in steps):
        status = f"✓ all {len(steps)} steps passed"
    else:
        status = "… not finished"
    return f"{title} — {status}"


def _step_lines(step: Any, reveal: bool) -> list[tuple[str, str]]:
    """(label, text) rows shown under a step's name."""
    rows: list[tuple[str, str]] = []
    if getattr(step, "ok", None) is False and getattr(step, "reason", None):
        rows.append(("reason", str(step.reason)))
    secret_names = set(getattr(step, "secret_fields", ()) or ())
    inputs = getattr(step, "inputs", None) or {}
    if inputs:
        rows.append(
            (
                "inputs",
                " · ".join(
                    f"{k}: {_value(v, secret=k in secret_names, reveal=reveal, limit=80)}" for k, v in inputs.items()
                ),
            )
        )
    if getattr(step, "output", None) is not None:
        rows.append(("output", _value(step.output, secret=bool(getattr(step, "secret_output", False)), reveal=reveal)))
    if getattr(step, "note", ""):
        rows.append(("note", str(step.note)))
    return rows


def trace_text(trace: Trace, reveal: bool = False, *, width: int = 16, elide: int | None = 64) -> str:
    """Every step of a trace: number, ✓/✗ and name, the reason it failed, its inputs and output,
    and an annotated dump of its bytes (a dump equal to an earlier one is referred to by step)."""
    out = [_headline(trace)]
    steps = list(getattr(trace, "steps", ()))
    for n, (step, (args, shown_at)) in enumerate(zip(steps, _dumps(steps, reveal)), 1):
        out.append(f"{n:>2}. {_status(step)} {step.name}")
        for label, text in _step_lines(step, reveal):
            out.append(f"      {label:<8}{text}")
        if args is None:
            continue
        if shown_at != n - 1:
            out.append(f"      bytes   the same {_bytes_word(len(args[0]))} as step {shown_at + 1}")
        else:
            dump = dump_text(args[0], args[1], width=width, elide=elide, reveal=reveal, secret=args[2])
            out.extend("      " + line for line in dump.splitlines())
    return "\n".join(out)


def trace_html(trace: Trace, reveal: bool = False, *, width: int = 16, elide: int | None = 64) -> str:
    """The trace as HTML: one block per step with a green ✓ or red ✗, the reason, inputs, output,
    and its coloured dump in a <details> (the one nearest the failure is open). Inline styles only."""
    steps = list(getattr(trace, "steps", ()))
    failed = next((s for s in steps if getattr(s, "ok", None) is False), None)
    head_colour = "#b42318" if failed is not None else "#1a7f37"
    parts = [
        '<div class="decoy-trace" style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;'
        'font-size:13px;margin:4px 0">',
        f'<div style="font-weight:600;color:{head_colour};margin-bottom:4px">{_esc(_headline(trace))}</div>',
        '<ol style="margin:0;padding-left:1.6em">',
    ]
    # Open the dump nearest the failure (or the last one): the bytes the user most needs to see.
    dumps = _dumps(steps, reveal)
    stop = steps.index(failed) if failed is not None else len(steps) - 1
    open_at = next((dumps[i][1] for i in range(stop, -1, -1) if dumps[i][0] is not None), -1)
    for i, (step, (args, shown_at)) in enumerate(zip(steps, dumps)):
        ok = getattr(step, "ok", None)
        colour = "#1a7f37" if ok else ("#b42318" if ok is False else "#9a6700")
        parts.append(
            f'<li style="margin:3px 0;padding-left:6px;border-left:3px solid {colour}">'
            f'<span style="color:{colour};font-weight:700">{_status(step)}</span> '
            f"<b>{_esc(step.name)}</b>"
        )
        for label, text in _step_lines(step, reveal):
            style = "color:#b42318" if label == "reason" else ""
            parts.append(
                f'<div style="{style}"><span style="color:#666;display:inline-block;width:4.5em">'
                f'{_esc(label)}</span><span style="{MONO};font-size:12px;word-break:break-all">'
                f"{_esc(text)}</span></div>"
            )
        if args is not None and shown_at != i:
            parts.append(
                f'<div style="color:#666">bytes: the same {_esc(_bytes_word(len(args[0])))} '
                f"as step {shown_at + 1}</div>"
            )
        elif args is not None:
            is_open = " open" if i == open_at else ""
            summary = f"{_bytes_word(len(args[0]))}" + (f", {len(args[1])} fields" if args[1] else "")
            dump = dump_html(args[0], args[1], width=width, elide=elide, reveal=reveal, secret=args[2])
            parts.append(
                f'<details{is_open}><summary style="cursor:pointer;color:#555">{_esc(summary)}'
                f"</summary>{dump}</details>"
            )
        parts.append("</li>")
    parts.append("</ol></div>")
    return "".join(parts)
