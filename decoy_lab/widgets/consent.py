"""Consent card: what this connection asked for, what the owner granted, what it holds now.

Three columns a user can compare at a glance, so a narrowed approval or a grant that has since
expired is visible, not a surprise at the next 403.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import pandas as pd

from decoy_lab.vocab import PERMISSION_WORDS as PERMISSIONS
from decoy_lab.widgets.html import BAD_COLOUR, BORDER, HEAD_BACKGROUND, OK_COLOUR, PENDING_COLOUR, TEXT, esc

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.client.connection import Connection


def why_needed(asked: Iterable[str], listed: Iterable[str]) -> dict[str, str]:
    """For each permission the answer lists beyond what was asked: which asked one needs it
    (through the spec's Needs column), e.g. {"memory.read": "memory.edit needs it (for memory.delete)"}."""
    asked = list(asked)
    out: dict[str, str] = {}

    def walk(name: str, chain: list[str]) -> None:
        for need in PERMISSIONS.get(name, ("", ()))[1]:
            if need not in asked and need not in out:
                via = f" (for {chain[0]})" if len(chain) > 1 or chain[0] != name else ""
                out[need] = f"{name} needs it{via}"
            walk(need, [*chain, need])

    for name in asked:
        walk(name, [name])
    return {k: v for k, v in out.items() if k in set(listed) or not listed}


def owner_sees(permission: str, *, datatypes: Iterable[str] = (), topic: str | None = None) -> str:
    """What the owner's phone shows for a permission row. 001 Access: "The owner sees" is the line
    "for the whole-vault form of the row (for one account it reads, for example, "Read details from
    this account")": a memory row with a selection names it instead of "all memories"."""
    words = PERMISSIONS.get(permission, ("", ()))[0]
    cats = ", ".join(datatypes or ())
    narrowed = f"memories in {cats}" if cats else f"memories about {topic}" if topic else None
    if narrowed and permission.startswith("memory.") and "all memories" in words:
        return words.replace("all memories", narrowed)
    return words


def rows_html(rows: Any) -> str:
    """Permission rows (RFC 9396 dicts), an Access, or a DataFrame, as a compact HTML list."""
    if rows is None:
        return "<i>unknown</i>"
    frame = _frame_of(rows)
    if frame is not None:
        if frame.empty:
            return "<i>nothing</i>"
        if "expires_at" in frame:  # no end date is the spec's null expires_at: say it as Access does
            frame = frame.assign(
                expires_at=frame["expires_at"].astype(object).where(frame["expires_at"].notna(), "never")
            )
        return frame.to_html(index=False, border=0, na_rep="", classes="decoy-consent-table")
    items = list(rows) if isinstance(rows, (list, tuple)) else [rows]
    if not items:
        return "<i>nothing</i>"
    lines = []
    for row in items:
        if isinstance(row, dict):
            perms = row.get("permissions") or row.get("permission") or []
            perms = [perms] if isinstance(perms, str) else list(perms)
            sel = {k: v for k, v in row.items() if k not in ("permissions", "permission", "type")}
            where = "; ".join(
                f"{k}: {', '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                for k, v in sel.items()
                if v not in (None, [], "")
            )
            lines.append(f"<li><b>{esc(', '.join(perms))}</b>{' — ' + esc(where) if where else ''}</li>")
        else:
            lines.append(f"<li>{esc(row)}</li>")
    return f"<ul style='margin:2px 0;padding-left:18px'>{''.join(lines)}</ul>"


def _frame_of(value: Any) -> pd.DataFrame | None:
    frame = value if isinstance(value, pd.DataFrame) else None
    for name in ("frame", "permissions", "table", "df"):
        got = getattr(value, name, None) if frame is None else None
        if isinstance(got, pd.DataFrame):
            frame = got
    if frame is None:
        return None
    cols = [c for c in ("permission", "selection", "expires_at") if c in frame]
    return frame[cols] if cols else frame


def summary_of(value: Any) -> str:
    """The Access's plain one-line summary, when it has one."""
    for name in ("summary", "text", "plain"):
        got = getattr(value, name, None)
        if isinstance(got, str) and got:
            return got
    return ""


class ConsentCard(W.HTML):
    """Asked · granted · held now, side by side (an HTML widget, so it renders anywhere)."""

    def __init__(self, *, asked: Any = None, granted: Any = None, held: Any = None, name: str = ""):
        super().__init__(self.render(asked=asked, granted=granted, held=held, name=name))
        self.add_class("decoy-consent")

    def __repr__(self) -> str:
        return "<ConsentCard asked · granted by the owner · held now>"

    @classmethod
    def for_connection(cls, conn: Connection, *, asked: Any = None, granted: Any = None) -> ConsentCard:
        """Build the card from a Connection: what it asked, what was granted (by default the access
        read when the pairing finished) and `access()` read now."""
        if granted is None:
            try:
                granted = conn.access(refresh=False)
            except TypeError:
                granted = None
        held = conn.access()
        return cls(asked=asked, granted=granted, held=held, name=getattr(conn, "name", "") or "")

    @staticmethod
    def render(*, asked: Any, granted: Any, held: Any, name: str = "") -> str:
        line = summary_of(held)
        cell = f"vertical-align:top;padding:6px 10px;border:1px solid {BORDER};min-width:180px"
        head = f"background:{HEAD_BACKGROUND};color:{TEXT};padding:4px 10px;border:1px solid {BORDER};text-align:left"
        title = f"Consent — {esc(name)}" if name else "Consent"
        return (
            f'<div class="decoy-consent-card" style="font-family:sans-serif;margin:6px 0">'
            f'<div style="font-weight:bold;margin-bottom:4px">{title}</div>'
            + (f'<div style="margin-bottom:4px;white-space:pre-line">{esc(line)}</div>' if line else "")
            + f'<table style="border-collapse:collapse"><tr><th style="{head}">Asked</th>'
            f'<th style="{head}">Granted by the owner</th><th style="{head}">Held now</th></tr>'
            f'<tr><td style="{cell}">{rows_html(asked)}</td><td style="{cell}">{rows_html(granted)}</td>'
            f'<td style="{cell}">{rows_html(held)}</td></tr></table></div>'
        )

    def _repr_mimebundle_(self, **kw: Any) -> dict:
        """The widget, plus the card as HTML for viewers without widgets (exports, GitHub)."""
        return {**(super()._repr_mimebundle_(**kw) or {}), "text/html": self.value}


class RequestCard(W.VBox):
    """A grant request as the owner will see it: its status, every permission it lists with the
    owner's words for it, and why each one beyond what was asked is there (the spec's Needs).
    While it is pending, "Check again" asks the server where it stands (the kernel is idle
    meanwhile: nothing here waits)."""

    def __init__(
        self, request: Any, *, asked: Any = None, reason: str = "", datatypes: Any = None, topic: str | None = None
    ):
        self.request = request
        self.asked = list(asked or request.permissions)
        self.reason = reason
        self.selection: dict[str, Any] = {"datatypes": list(datatypes or []), "topic": topic}
        self._card = W.HTML()
        self._check = W.Button(description="Check again", icon="refresh")
        self._check.on_click(lambda _: self.check())
        super().__init__([self._card, self._check])
        self.add_class("decoy-request")
        self._show()

    @property
    def value(self) -> str:
        return self._card.value

    def check(self) -> str:
        """Read the request's status from the server; the card shows it. Returns the status."""
        try:
            self.request.refresh()
        except Exception as exc:  # an unknown answer is said, the request stays as it was
            self._card.value = self.render(self.request, self.asked, self.reason, **self.selection) + (
                f"<div style='color:{BAD_COLOUR}'>Could not ask the server: {esc(exc)}</div>"
            )
            return self.request.status
        self._show()
        return self.request.status

    def _show(self) -> None:
        self._card.value = self.render(self.request, self.asked, self.reason, **self.selection)
        self._check.layout.display = None if not self.request.done else "none"

    def __repr__(self) -> str:
        return f"<RequestCard {self.request.status}: {', '.join(self.request.permissions)}>"

    @staticmethod
    def render(req: Any, asked: list[str], reason: str = "", datatypes: Any = (), topic: str | None = None) -> str:
        listed = list(req.permissions) or asked
        extra = why_needed(asked, listed)
        cell = f"padding:3px 10px;border:1px solid {BORDER};text-align:left"
        rows = "".join(
            f'<tr><td style="{cell}"><code>{esc(p)}</code></td>'
            f'<td style="{cell}">{esc(owner_sees(p, datatypes=datatypes, topic=topic))}</td>'
            f'<td style="{cell}">{esc(extra.get(p, "asked for"))}</td></tr>'
            for p in listed
        )
        status = req.status
        colour = OK_COLOUR if req.granted else PENDING_COLOUR if not req.done else BAD_COLOUR
        what = {
            "pending": "waiting for the owner to answer in the Decoy app (Check again, or "
            "<code>req.wait()</code>; <code>%decoy status</code> shows what is held)",
            "already_granted": "nothing was sent: this connection holds it already",
        }.get(status, "")
        said = f"<div>The reason the owner reads: “{esc(reason)}”</div>" if reason else ""
        return (
            f'<div class="decoy-request-card" style="font-family:sans-serif;margin:6px 0">'
            f"<div><b>Grant request</b> <code>{esc(req.request_id or '(none sent)')}</code> — "
            f'<span class="decoy-request-status" style="color:{colour};font-weight:bold">{esc(status)}</span>'
            f"{' — ' + what if what else ''}</div>{said}"
            f'<table style="border-collapse:collapse;margin-top:4px"><tr><th style="{cell}">permission</th>'
            f'<th style="{cell}">the owner sees</th><th style="{cell}">why</th></tr>{rows}</table></div>'
        )

    def _repr_mimebundle_(self, **kw: Any) -> dict:
        return {**(super()._repr_mimebundle_(**kw) or {}), "text/html": self.value}
