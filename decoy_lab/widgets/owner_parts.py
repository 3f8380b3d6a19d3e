"""The owner panel's parts that hold no state of the panel: its theme (`--jp-*` variables, with
fallbacks for pages outside JupyterLab), its words for grants and asks, changing a choice's
options in place, and the thread that follows the owner."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import ipywidgets as W

from decoy_lab.sandbox.checks.grants import Row
from decoy_lab.text import plural
from decoy_lab.widgets.html import esc

STYLE = """<style>
.decoy-owner{color:var(--jp-ui-font-color1,#1f1f1f);background:var(--jp-layout-color1,#fff);
 border:1px solid var(--jp-border-color2,#d0d0d0);border-radius:4px;padding:6px 10px;max-width:980px}
.decoy-owner .decoy-owner-head{font-weight:600;font-size:1.1em}
.decoy-owner .widget-hbox{flex-wrap:wrap}
.decoy-owner .decoy-owner-section{border-top:1px solid var(--jp-border-color2,#d0d0d0);margin-top:6px;padding-top:4px}
.decoy-owner .decoy-owner-title{font-weight:600;color:var(--jp-ui-font-color1,#1f1f1f)}
.decoy-owner .decoy-owner-note{color:var(--jp-ui-font-color2,#4a4a4a)}
.decoy-owner .decoy-owner-warn{color:var(--jp-warn-color0,#8a4b00)}
.decoy-owner select{color:var(--jp-widgets-input-color,var(--jp-ui-font-color1,#1f1f1f));
 background:var(--jp-widgets-input-background-color,var(--jp-layout-color1,#fff))}
.decoy-owner .jupyter-button.mod-success{background-color:#1e6b32;color:#fff}
.decoy-owner .jupyter-button.mod-info{background-color:#0b5aa8;color:#fff}
.decoy-owner .jupyter-button.mod-warning{background-color:#8a4b00;color:#fff}
.decoy-owner .jupyter-button.mod-danger{background-color:#b3261e;color:#fff}
</style>"""
# The coloured buttons: ipywidgets' own shades put white text at 2.7-4.1:1; these are 4.5:1 or more.
# A row wraps in a narrow notebook rather than run past the panel's edge, where it was cut off.


def short(text: Any, n: int = 60) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def headlines(rows: list[dict], topics: dict[str, str]) -> str:
    """A grant's rows in the owner's words, the topics it is about named."""
    out = []
    for r in rows:
        about = [topics.get(t, "a topic it cannot open") for t in r.get("about") or []]
        words = "; ".join(Row.from_json(r).headlines())
        out.append(words + (f" ({', '.join(about)})" if about else ""))
    return "; ".join(out) or "nothing"


def set_options(widget: W.Widget, options: list[tuple[str, Any]]) -> None:
    """New options for a choice, the current choice kept when it is still offered, else the first."""
    if list(widget.options) != options:
        keep = widget.value
        widget.options = options
        values = [v for _, v in options]
        if keep in values:
            widget.value = keep
        elif values and widget.value not in values:
            widget.value = values[0]


def button(label: str, style: str = "", name: str = "") -> W.Button:
    # Never shrunk: beside a long choice in a narrow notebook, "Allow" was cut to "All…".
    b = W.Button(description=label, button_style=style, layout=W.Layout(width="auto", flex="0 0 auto"))
    b.add_class(f"decoy-owner-{name or label.lower().replace(' ', '-')}")
    return b


def wide_choice() -> W.Dropdown:
    """A choice that takes the row's room left by its buttons, down to a readable least width."""
    return W.Dropdown(options=[], layout=W.Layout(width="auto", flex="1 1 auto", min_width="12em", max_width="60em"))


def memory_label(m: dict) -> str:
    """One memory as the list shows it: its text, where it is filed, its categories."""
    if not m.get("readable"):
        return f"✗ cannot open {m['id'][:8]}: {short(m.get('reason'), 50)}"
    where = (m.get("topic") or {}).get("name") or "You"
    return f"{short(m.get('text'), 70)}  · {short(where, 24)} · {', '.join(m.get('categories') or []) or '—'}"


def memory_details(m: dict) -> str:
    """The selected memory's line: where, categories, author, revision and what the app finds wrong."""
    if not m.get("readable"):
        return f"<span class='decoy-owner-warn'>✗ the app cannot open it: {esc(m.get('reason'))}</span>"
    problems = "".join(f"<div class='decoy-owner-warn'>⚠ {esc(p)}</div>" for p in m.get("problems") or [])
    where = (m.get("topic") or {}).get("name") or "You"
    cats = ", ".join(m.get("categories") or []) or "no category"
    return (
        f"<span class='decoy-owner-note'>under {esc(where)} · {esc(cats)} · by {esc(m.get('author'))}"
        f" · revision {m.get('rev')}</span>{problems}"
    )


def shared(report: Any, names: dict[str, str]) -> str:
    """A sharing pass in words: new wraps per connection (by name), rows the app cannot open."""
    who = ", ".join(f"{names.get(t, 'a connection')} {n}" for t, n in report.per_connection.items())
    cannot = f"; {plural(len(report.unreadable), 'row')} the app cannot open" if report.unreadable else ""
    return f"Shared: {plural(report.shared, 'new key wrap')}" + (f" ({who})" if who else "") + cannot


def what(p: dict) -> str:
    return "pairing" if p["kind"] == "pairing" else "renewal" if p.get("renewal") else "request for more access"


def asks(p: dict) -> str:
    return "to pair" if p["kind"] == "pairing" else "to renew" if p.get("renewal") else "for more access"


def follow_owner(panel: weakref.ref, stop: threading.Event, every: float) -> None:
    """Look at the owner every `every` seconds and refresh the panel when something changed
    (a pairing, a save, a grant); ends with the panel, or when the sandbox is gone."""

    def run() -> None:
        while not stop.wait(every):
            p = panel()
            if p is None:
                return
            try:
                mark = p.look()
                if mark != p._mark:
                    p.refresh(mark)
            except Exception as exc:  # the sandbox stopped: say so once and stop looking
                p.status.value = f"✗ stopped following the owner: {esc(exc)}"
                return
            del p

    threading.Thread(target=run, name="decoy-owner-panel", daemon=True).start()


def resolved_as(exc: BaseException) -> str | None:
    """The status an owner's answer met when it came too late (409 ALREADY_RESOLVED: the phone, or
    another look, decided first), or None for any other refusal."""
    if getattr(exc, "code", None) != "ALREADY_RESOLVED":
        return None
    status = (getattr(exc, "extra", None) or {}).get("status")
    return status if isinstance(status, str) else None


def kinds(datatypes: list[str] | None) -> str:
    """An unlock's kinds in the owner's words ("every secret" when none is named)."""
    words = {"basic-auth": "password", "custom-fields": "secret fields", "totp": "2FA code", "note": "note"}
    return ", ".join(words.get(d, d) for d in datatypes or []) or "every secret"


def unlock_label(u: dict) -> str:
    """One unlock on the Lock Screen: who asks to read what of which account."""
    account = short(u.get("account") or f"account {str(u.get('target_id'))[:8]}", 40)
    why = f" · “{short(u['reason'], 40)}”" if u.get("reason") else ""
    who = u.get("connection") or "a connection"
    if u.get("datatypes") == ["passkey"]:  # a sign-in, signed on the phone: nothing is read
        return f"{who} asks to sign in to {account} with its passkey, once{why}"
    return f"{who} asks to read {account}'s {kinds(u.get('datatypes'))}{why}"


def edit_label(e: dict) -> str:
    """One queued decoy edit as the phone opens it: the address, its name now and what it becomes."""
    who = e.get("connection") or "a connection"
    where = short(e.get("email") or str(e.get("decoy_id"))[:8], 40)
    patch = e.get("patch") if isinstance(e.get("patch"), dict) else None
    if patch is None:
        return f"{who}: an edit of {where} the phone cannot open ({short(e.get('problem'), 40)})"
    sets = patch.get("set") if isinstance(patch.get("set"), dict) else {}
    change = "; ".join(f"{'name' if k == 'serviceName' else 'avatar' if k == 'avatarUrl' else k} → “{short(v, 40)}”"
                       for k, v in sets.items()) or "no change named"  # fmt: skip
    now = f" (now “{short(e['current_name'], 30)}”)" if e.get("current_name") else ""
    flag = f" ⚠ {e['problem']}" if e.get("problem") else ""
    return f"{who}: {where}{now}: {change}{flag}"
