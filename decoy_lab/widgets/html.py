"""What every widget's HTML shares: escaping, the theme's colours, the countdown clock, and the
helpers every anywidget's script starts with (`widget_script`).

Colours are JupyterLab's theme variables (`--jp-*`) with a fallback for pages outside it
(exported HTML, the offline tour). A status colour is mixed 70/30 with the theme's own text
colour, so one value reads on a light background (it darkens) and on a dark one (it lightens).
The workbench's displays and the shell use them too (they sit above the widgets).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).with_name("assets")

TEXT = "var(--jp-content-font-color0, #1f2328)"
MUTED = "var(--jp-ui-font-color1, #444c56)"  # secondary words: readable, not grey-on-grey
LINK = "var(--jp-content-link-color, #0b5cad)"
BORDER = "var(--jp-border-color1, #d0d7de)"
HEAD_BACKGROUND = "var(--jp-layout-color2, #f6f8fa)"
BUTTON = f"color:{TEXT};background:{HEAD_BACKGROUND};border:1px solid {BORDER};border-radius:3px;padding:1px 8px"


def tone(colour: str) -> str:
    """`colour` as text that reads in any theme: mixed with the theme's text colour."""
    return f"color-mix(in srgb, {colour} 70%, {TEXT})"


OK_COLOUR = tone("var(--jp-success-color1, #1a7f37)")
BAD_COLOUR = tone("var(--jp-error-color1, #cf222e)")
PENDING_COLOUR = tone("var(--jp-warn-color1, #9a6700)")


def countdown(seconds: float | None) -> str:
    """`m:ss` left (never below 0:00), or "" when unknown: the pairing widget's and the CLI's clock."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    return f"{s // 60}:{s % 60:02d}"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def status_parts(status: str, message: str) -> tuple[str, str]:
    """A status and its message, the status word said once: ("waiting", " for the owner to
    approve"), not "waiting: waiting for the owner to approve"; the pairing widget and the shell
    both say it so."""
    if message.casefold().startswith(status.casefold()):
        return message[: len(status)], message[len(status) :]
    return status, f": {message}" if message else ""


def widget_script(name: str) -> str:
    """A widget's `_esm`: assets/common.js (the helpers every widget script uses), then assets/`name`."""
    # anywidget loads one module per widget from its `_esm` text: an `import` there has no file to resolve from
    return (ASSETS / "common.js").read_text(encoding="utf-8") + "\n" + (ASSETS / name).read_text(encoding="utf-8")
