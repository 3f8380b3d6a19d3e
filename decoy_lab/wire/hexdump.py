"""Annotated hex dumps of a blob and its wire.Field list, as text and as HTML. Pure functions
over bytes and fields that return strings; nothing prints, and nothing here knows of traces
(trace.py renders its steps through these).

    dump_text(data, fields)   offset | hex | ASCII, a field boundary drawn as "|" between bytes,
                              a margin naming each field where it starts, a legend on top; every
                              byte is shown unless the caller asks to elide long fields
    dump_html(data, fields)   the same with one colour per field and a legend; inline styles only,
                              so it reads the same in JupyterLab and in a static HTML export
    changed_runs(data, ref)   the runs of bytes where `data` differs from a reference (the blob
                              as served), which both dumps mark when given as `changed`

Secret bytes (raw keys, the key text inside an owner wrap) are replaced by "••" and named by a
fingerprint (the first 8 bytes of their SHA-256, which for a memory key is its kid) unless the
caller passes `reveal=True`.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from decoy_lab.text import plural
from decoy_lab.wire.layouts import Field

__all__ = ["bytes_word", "changed_runs", "dump_html", "dump_text", "fingerprint", "secret_label"]

MASK_HEX = "••"
MASK_CHAR = "•"
PALETTE = ("#fde2e4", "#d8f0c8", "#cde4f5", "#fff0b8", "#e6daf7", "#cff3e4", "#fbd9c4", "#dbe2f7", "#f7d6ea", "#ebeccb")
MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"


def fingerprint(value: bytes | str) -> str:
    """What a secret is shown as: hex of the first 8 bytes of its SHA-256 (a key's kid)."""
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return hashlib.sha256(raw).digest()[:8].hex()


def changed_runs(data: bytes, reference: bytes) -> tuple[tuple[int, int], ...]:
    """[start, end) runs of `data` that differ from `reference`; bytes past the reference's end
    count as changed (and a shorter `data` changes nothing it does not have)."""
    runs: list[tuple[int, int]] = []
    n, m = len(data), len(reference)
    i = 0
    while i < n:
        if i < m and data[i] == reference[i]:
            i += 1
            continue
        j = i + 1
        while j < n and not (j < m and data[j] == reference[j]):
            j += 1
        runs.append((i, j))
        i = j
    return tuple(runs)


def _changed_set(changed: Iterable[tuple[int, int]] | None) -> frozenset[int]:
    return frozenset(i for a, b in (changed or ()) for i in range(a, b))


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
    runs: list[tuple[int, int, str | None]] = [(sp.start, sp.end, sp.name) for sp in spans]
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


def bytes_word(n: int) -> str:
    return plural(n, "byte")


def _elided(count: int, name: str | None) -> str:
    return f"… {bytes_word(count)} of {name} …" if name else f"… {bytes_word(count)} …"


def _span_label(s: _Span) -> str:
    return f"{s.name}[{s.start}:{s.end}]"


def secret_label(value: bytes) -> str:
    """How a masked run of bytes is named: its length and fingerprint (a 32-byte key's kid)."""
    what = "kid" if len(value) == 32 else "sha256"
    return f"secret, {what} {fingerprint(value)}"


def _secret_label(s: _Span) -> str:
    return secret_label(s.value)


# -- text ---------------------------------------------------------------------------------------
def dump_text(
    data: bytes,
    fields: Sequence[Field] = (),
    *,
    width: int = 16,
    elide: int | None = None,
    reveal: bool = True,
    secret: Iterable[str] = (),
    changed: Iterable[tuple[int, int]] = (),
) -> str:
    """offset | hex | ASCII with a legend and a margin naming the fields that start on each row.

    A "|" between two hex bytes is a field boundary. When asked (`elide=N`), fields longer than
    N bytes keep their first and last full rows and the rows between become one
    "… N bytes of <field> …" line. Fields named in `secret` are masked as "••" unless `reveal`.
    Bytes in the `changed` runs get a "^" under them on a line of their own.
    """
    plan = _plan(data, fields, width, elide, secret, reveal)
    marks = _changed_set(changed)
    out: list[str] = []
    if plan.spans:
        out.append(f"{bytes_word(len(plan.data))}, {plural(len(plan.spans), 'field')}:")
        name_w = max(len(s.name) for s in plan.spans)
        range_w = max(len(f"[{s.start}:{s.end}]") for s in plan.spans)
        for s in plan.spans:
            note = _secret_label(s) if s.masked else s.note
            line = f"  {s.name:<{name_w}}  {f'[{s.start}:{s.end}]':<{range_w}}  {bytes_word(s.length):>12}"
            out.append((line + ("  " + note if note else "")).rstrip())
        for a, b in plan.gaps:
            out.append(f"  {'(no field)':<{name_w}}  {f'[{a}:{b}]':<{range_w}}  {bytes_word(b - a):>12}")
    else:
        out.append(f"{bytes_word(len(plan.data))}")
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
        if marks.intersection(range(start, end)):
            under = "".join(" ^^" if i in marks else "   " for i in range(start, end))
            out.append(f"{'':6}{under}".rstrip() + "  changed")
    return "\n".join(out)


# -- HTML ---------------------------------------------------------------------------------------
def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _colour(s: _Span) -> str:
    return "#d9d9d9" if s.masked else PALETTE[s.index % len(PALETTE)]


def _span_style(s: _Span) -> str:
    return f"background:{_colour(s)};color:#111;border-radius:2px"


def _legend_html(plan: _Plan) -> str:
    """The legend above an HTML dump: one row per field (colour, name, offset, length, note) and
    one per gap no field covers; just the length when the dump has no fields."""
    parts = []
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
                f'<td style="padding:1px 8px 1px 0">{_esc(bytes_word(s.length))}</td>'
                f'<td style="padding:1px 8px 1px 0">{_esc(note)}</td></tr>'
            )
        for a, b in plan.gaps:
            parts.append(
                f'<tr><td></td><td style="padding:1px 8px 1px 0;color:#666">(no field)</td>'
                f'<td style="padding:1px 8px 1px 0">{a}</td>'
                f'<td style="padding:1px 8px 1px 0">{_esc(bytes_word(b - a))}</td><td></td></tr>'
            )
        parts.append("</table>")
    else:
        parts.append(f'<div style="color:#666">{_esc(bytes_word(len(plan.data)))}</div>')
    return "".join(parts)


def dump_html(
    data: bytes,
    fields: Sequence[Field] = (),
    *,
    width: int = 16,
    elide: int | None = None,
    reveal: bool = True,
    secret: Iterable[str] = (),
    changed: Iterable[tuple[int, int]] = (),
) -> str:
    """The same dump as HTML: one colour per field (hex and ASCII), a legend with name, offset,
    length and note, hover titles; bytes in the `changed` runs are outlined in red with the
    class "decoy-changed". Inline styles only; every text is escaped."""
    plan = _plan(data, fields, width, elide, secret, reveal)
    marks = _changed_set(changed)
    parts = [f'<div class="decoy-hexdump" style="{MONO};font-size:12px;line-height:1.45;margin:4px 0">']
    parts.append(_legend_html(plan))
    parts.append('<pre style="margin:0;padding:0;background:none;white-space:pre;overflow-x:auto">')
    for kind, start, end, name in plan.rows:
        if kind == "elided":
            parts.append(
                f'<span style="color:#777;font-style:italic">{"":7}{_esc(_elided(end - start, name))}</span>\n'
            )
            continue
        hex_html, asc_html = [], []
        i = start
        while i < end:  # one <span> per run of bytes in the same field and the same changed-ness
            o = plan.owner[i] if plan.spans else -1
            hot = i in marks
            j = i
            while j < end and (plan.owner[j] if plan.spans else -1) == o and (j in marks) == hot:
                j += 1
            masked = o != -1 and plan.spans[o].masked
            hx = " ".join(MASK_HEX if masked else f"{b:02x}" for b in plan.data[i:j])
            asc = "".join(MASK_CHAR if masked else _printable(b) for b in plan.data[i:j])
            if hot:
                mark = 'class="decoy-changed" style="outline:2px solid #cf222e;font-weight:700'
                mark += f';{_span_style(plan.spans[o])}"' if o != -1 else '"'
                hex_html.append(f'<span {mark} title="changed from the served bytes">{_esc(hx)}</span>')
                asc_html.append(f"<span {mark}>{_esc(asc)}</span>")
            elif o == -1:
                hex_html.append(_esc(hx))
                asc_html.append(_esc(asc))
            else:
                s = plan.spans[o]
                title = _esc(
                    f"{s.name} [{s.start}:{s.end}] {bytes_word(s.length)}"
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
