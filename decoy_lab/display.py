"""Small display helpers shared by the widgets and magics: one Trace step as HTML (through
hexdump.py, so secrets show as fingerprints unless revealed), status marks, and a progress
bar for slow calls. Nothing here prints.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

OK_COLOUR, BAD_COLOUR, PENDING_COLOUR = "#1a7f37", "#cf222e", "#9a6700"


def countdown(seconds: float | None) -> str:
    """`m:ss` left (never below 0:00), or "" when unknown: the pairing widget's and the CLI's clock."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    return f"{s // 60}:{s % 60:02d}"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def status_mark(ok: bool | None) -> str:
    colour = OK_COLOUR if ok else BAD_COLOUR if ok is False else PENDING_COLOUR
    mark = "✓" if ok else "✗" if ok is False else "…"
    return f'<span style="color:{colour};font-weight:bold">{mark}</span>'


def step_html(step: Any, index: int | None = None, *, reveal: bool = False, before: Any = None) -> str:
    """One Trace step, for the stepper: ✓/✗ and its name, then the reason it failed, its inputs
    and output (hexdump's wording: secrets as fingerprints unless `reveal`) and its bytes as
    an annotated, coloured dump. A failing check with no bytes of its own names what it was
    given: `before`, the step whose output it checked."""
    from . import hexdump

    head = f"{index + 1}. " if index is not None else ""
    parts = [
        f'<div class="decoy-step" style="font-family:system-ui,sans-serif;font-size:13px">'
        f'<h4 style="margin:4px 0">{status_mark(step.ok)} {head}{esc(step.name)}</h4>'
    ]
    for label, text in hexdump._step_lines(step, reveal):
        if label == "reason":
            parts.append(
                f'<div class="decoy-reason" style="border-left:4px solid {BAD_COLOUR};padding:4px 8px;'
                f'background:#ffebe9;margin:4px 0"><b>Why it failed:</b> {esc(text)}</div>'
            )
        else:
            parts.append(
                f'<div style="margin:2px 0"><b style="display:inline-block;width:5.5em">{esc(label)}</b>'
                f'<code style="word-break:break-all">{esc(text)}</code></div>'
            )
    args = hexdump._step_dump_args(step, reveal)
    if step.ok is False and args is None and before is not None and before.output is not None:
        given = hexdump._value(before.output, secret=bool(getattr(before, "secret_output", False)), reveal=reveal)
        parts.append(
            f'<div style="margin:2px 0"><b style="display:inline-block;width:5.5em">checked</b>'
            f'<code style="word-break:break-all">the output of “{esc(before.name)}”: {esc(given)}</code></div>'
        )
    if args is not None:
        data, fields, secret = args
        parts.append(hexdump.dump_html(data, fields, reveal=reveal, secret=secret))
    parts.append("</div>")
    return "".join(parts)


class Progress:
    """A thread-safe count that a long call advances (`progress(n, total)`) and a bar reads."""

    def __init__(self) -> None:
        self.done = 0
        self.total: int | None = None
        self._lock = threading.Lock()

    def __call__(self, n: int, total: int | None = None) -> None:
        with self._lock:
            self.done += n
            if total is not None:
                self.total = total


def with_progress(fn: Callable[[Progress], T], desc: str, *, after: float = 1.0, poll: float = 0.1) -> T:
    """Run `fn(progress)` in a worker thread; show a `tqdm.auto` bar if it takes longer than
    `after` seconds: rows done of the total when `fn` reports them, else the time elapsed.

    The bar is made and updated in the calling thread, so in a notebook it lands in the running cell.
    """
    box: dict[str, Any] = {}
    progress = Progress()

    def work() -> None:
        try:
            box["value"] = fn(progress)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"decoy:{desc}", daemon=True)
    worker.start()
    worker.join(after)
    if worker.is_alive():
        from tqdm.auto import tqdm

        start = time.monotonic()
        with tqdm(desc=desc, total=None, unit="rows", leave=False) as bar:
            while worker.is_alive():
                worker.join(poll)
                if progress.total:
                    bar.total = progress.total
                    bar.n = progress.done
                else:
                    bar.n = round(time.monotonic() - start, 1)
                    bar.unit = "s"
                bar.refresh()
    if "error" in box:
        raise box["error"]
    return box["value"]
