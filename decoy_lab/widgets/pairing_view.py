"""Pairing widget: the link (code pre-filled) styled as a link, a QR code of it for the owner's
phone (drawn here with segno: nothing leaves the machine), the user code with a Copy button,
live status and countdown, and Cancel. It never blocks the kernel: the pairing runs in its
handle's thread and a small ticker thread refreshes the widget, so Cancel works at any moment.
An ending is one line in the widget (done, denied, expired, cancelled, failed); when it is done
the consent card (asked · granted · held now) appears below. Only an http(s) link is made a link
or a QR code (`is_web_link`; the pairing refuses any other where the device answer is read): any
other is shown as text, with a one-line warning.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from decoy_lab.protocol.pairing import FINAL, is_web_link
from decoy_lab.widgets.consent import ConsentCard
from decoy_lab.widgets.html import (
    BAD_COLOUR,
    BORDER,
    BUTTON,
    LINK,
    MUTED,
    OK_COLOUR,
    PENDING_COLOUR,
    countdown,
    esc,
    status_parts,
)

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.client.connection import Connection
    from decoy_lab.protocol.pairing import PairingHandle
    from decoy_lab.sandbox import Sandbox


def qr_svg(text: str) -> str:
    """`text` as an inline SVG QR code (segno, drawn locally)."""
    import io

    import segno

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="svg", scale=4, border=2, xmldecl=False, svgns=True)
    return out.getvalue().decode()


def status_words(status: str, message: str) -> str:
    """The status in bold and the handle's message, the status word said once (html.status_parts)."""
    word, rest = status_parts(status, message)
    return f"<b>{esc(word)}</b>{esc(rest)}"


class PairingWidget(W.VBox):
    """Shows a running `PairingHandle`; `connection` is set once the owner approved.

    `now` (UTC datetime) is injectable so the countdown is testable; `tick` is the refresh
    period of the ticker thread (`ticker=False` to drive `refresh()` by hand).
    """

    def __init__(
        self,
        handle: PairingHandle,
        *,
        on_done: Callable[[Any], Any] | None = None,
        now: Callable[[], dt.datetime] | None = None,
        tick: float = 1.0,
        ticker: bool = True,
        consent: bool = True,
        qr: bool = False,  # the spec: "Never render the QR / `qr_data` yourself. Always send the link."
        sandbox: Sandbox | None = None,
    ):
        self.handle = handle
        self.sandbox_handle = sandbox  # the embedded sandbox this pairs with (its owner phone), if any
        self._qr_on = qr
        self.connection: Connection | None = None
        self.error: BaseException | None = None
        self._on_done = on_done
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self._consent = consent
        self._finished = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._title = W.HTML(
            "<b>Pair with Decoy</b> — open the link on the owner's phone, or enter the code in the Decoy app."
        )
        self._link = W.HTML()
        # Room for the QR only when one is drawn; otherwise the link sits at the left edge.
        size = {"min_width": "170px", "min_height": "170px"} if qr else {"display": "none"}
        self._qr = W.HTML(layout=W.Layout(**size))
        self._qr.add_class("decoy-pair-qr")
        self._code = W.HTML()
        self._status = W.HTML()
        # the default style: ipywidgets' "warning" puts white words on orange (2.2:1)
        self._cancel = W.Button(description="Cancel", icon="times")
        self._cancel.on_click(lambda _: self.cancel())
        self._card = W.VBox()
        note = W.HTML(
            f'<span style="color:{MUTED};font-size:90%">The token and the agent key stay in the '
            "profile store (or in memory for the sandbox); outputs show fingerprints only.</span>"
        )
        left = W.VBox([self._link, W.HBox([self._code, self._cancel]), self._status, note])
        super().__init__([self._title, W.HBox([self._qr, left]), self._card])
        self.add_class("decoy-pairing")
        if hasattr(handle, "on_status"):
            handle.on_status = lambda _h: self.refresh()
        self.refresh()
        if ticker and not self._finished:
            threading.Thread(target=self._tick, args=(tick,), name="decoy-lab-pairing-widget", daemon=True).start()

    # -- actions -------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop waiting for the owner (the handle's thread ends; the kernel never waited)."""
        self.handle.cancel()
        self._cancel.disabled = True
        self.refresh()

    @property
    def waiting(self) -> bool:
        """The pairing is still going (the owner has not answered, nothing has ended it)."""
        return not self.handle.done()

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the pairing ends (for scripts and `--wait`); the Connection."""
        try:
            return self.handle.result(timeout)
        finally:
            self.refresh()

    def __repr__(self) -> str:
        h = self.handle
        return f"<PairingWidget {h.status}: {getattr(h, 'message', '')}>"

    # -- rendering -----------------------------------------------------------------------------
    def _tick(self, period: float) -> None:
        while not self._stop.wait(period):
            self.refresh()
            if self._finished:
                return

    def refresh(self) -> None:
        """Bring every part up to date with the handle (safe from any thread)."""
        with self._lock:
            h = self.handle
            link, code = h.link, h.user_code
            if link and not is_web_link(link):  # never an href: `javascript:` would run on a click
                self._link.value = (
                    f'<span style="color:{BAD_COLOUR}">This pairing link is not an http(s) address and '
                    f"is not opened: <code>{esc(link)}</code></span>"
                )
                self._qr.value = ""
            elif link:
                self._link.value = (
                    f'<a href="{esc(link)}" target="_blank" rel="noopener" class="decoy-pair-link" '
                    f'style="color:{LINK};text-decoration:underline;font-size:15px;cursor:pointer">'
                    f"{esc(link)}</a>"
                )
                if self._qr_on and not self._qr.value:
                    self._qr.value = (
                        '<div title="Scan with the owner\'s phone" style="margin-right:12px">' + qr_svg(link) + "</div>"
                    )
            else:
                self._link.value = "<i>asking the server for a pairing link…</i>"
            if code:
                js = "navigator.clipboard&&navigator.clipboard.writeText(this.dataset.code)"
                self._code.value = (
                    f'<span class="decoy-user-code" style="font:bold 20px monospace;'
                    f'letter-spacing:2px;padding:2px 8px;border:1px solid {BORDER}">{esc(code)}</span> '
                    f'<button class="decoy-copy" data-code="{esc(code)}" onclick="{js}" style="{BUTTON}" '
                    f'title="Copy the code">Copy code</button>'
                )
            status = h.status
            colour = OK_COLOUR if status == "done" else BAD_COLOUR if status in FINAL else PENDING_COLOUR
            left = None
            expires = h.expires_at
            if status not in FINAL and expires is not None:
                left = (expires - self._now()).total_seconds()
            clock = f" — link expires in {countdown(left)}" if left is not None else ""
            self._status.value = (
                f'<span class="decoy-pair-status" style="color:{colour}">'
                f"{status_words(status, getattr(h, 'message', ''))}{clock}</span>"
            )
            self._cancel.disabled = status in FINAL or bool(getattr(h, "cancelled", False))
            self._cancel.layout.display = "none" if status in FINAL else None
            if status in FINAL:  # the link no longer pairs: do not invite a scan
                self._qr.value = ""
                self._qr.layout.display = "none"
            done = status in FINAL and (not hasattr(h, "done") or h.done())
            if done and not self._finished:
                self._finished = True
                self._stop.set()
            else:
                return
        self._finish()

    def _finish(self) -> None:
        try:
            self.connection = self.handle.result(0)
        except BaseException as exc:  # the status line already says how it ended, in one line
            self.error = exc
            return
        if self._consent:
            try:
                card = ConsentCard.for_connection(self.connection, asked=getattr(self.handle, "rows", None))
            except Exception as exc:
                card = W.HTML(f"<i>Paired; could not read the grant yet: {esc(exc)}</i>")
            self._card.children = [card]
        if self._on_done is not None:
            self._on_done(self.connection)
