"""A trace as HTML: one block per step, its coloured dump in a <details>; inline styles only."""

from __future__ import annotations

import html
from typing import Any

from decoy_lab.recipes.trace.step import COLOURS, MARKS, TraceLike
from decoy_lab.recipes.trace.wording import dump_spans, headline, step_lines, tone
from decoy_lab.text import plural
from decoy_lab.wire.hexdump import bytes_word, dump_html


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def status_html(ok: bool | None) -> str:
    """The one ✓/✗/… mark every HTML view shows."""
    return f'<span style="color:{COLOURS[ok]};font-weight:700">{MARKS[ok]}</span>'


def trace_html(trace: TraceLike, reveal: bool = False, *, width: int = 16, elide: int | None = None) -> str:
    """The trace as HTML: one block per step with its ✓/✗, the reason, inputs, output, and its
    coloured dump in a <details> (the step a view opens on is open). Inline styles only."""
    steps = trace.steps
    parts = [
        '<div class="decoy-trace" style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;'
        'font-size:13px;margin:4px 0">',
        f'<div style="font-weight:600;color:{COLOURS[tone(trace)]};margin-bottom:4px">{_esc(headline(trace))}</div>',
    ]
    if trace.verdict:
        parts.append(f'<div class="decoy-verdict" style="margin-bottom:4px">{_esc(trace.verdict)}</div>')
    parts.append('<ol style="margin:0;padding-left:1.6em">')
    dumps = dump_spans(steps)
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
            summary = bytes_word(len(args[0])) + (f", {plural(len(args[1]), 'field')}" if args[1] else "")
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
