"""What every widget's HTML shares: escaping, the status colours and the countdown clock.

The workbench's displays and the shell use them too (they sit above the widgets).
"""

from __future__ import annotations

import html
from typing import Any

OK_COLOUR, BAD_COLOUR, PENDING_COLOUR = "#1a7f37", "#cf222e", "#9a6700"


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
