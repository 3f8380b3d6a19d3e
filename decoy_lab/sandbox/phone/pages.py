"""The owner's pages as HTML: the layout and headers every page shares, what is waiting and who is
connected in words, and the page an Approve or Deny lands on. `routes/pages.py` serves the home
page and `/connect` with them; `routes/surface.py` answers a browser's Approve or Deny with
`decided`, and `routes/acctsurface.py` an unlock's Allow or Deny with `decided_unlock`. Every
name an agent chose, and every reason it gave, is escaped; pages are never cached nor framed.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from decoy_lab.sandbox.checks.grants import Row
from decoy_lab.sandbox.core import HTTPProblem, is_form, state_of
from decoy_lab.sandbox.phone.owner import normalize_user_code

HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a form post's Origin "null", which the guard refuses
    "X-Frame-Options": "DENY",
}

_LAYOUT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title} — Decoy sandbox</title>
<style>
:root{{color-scheme:light dark;--fg:#1b1b1b;--muted:#4d4d4d;--bg:#fff;--line:#d4d4d4;--box:#f4f4f4;--ok:#17622c;--no:#a3191b}}
@media (prefers-color-scheme:dark){{:root{{--fg:#ececec;--muted:#b9b9b9;--bg:#181818;--line:#444;--box:#242424;
 --ok:#7fd69a;--no:#ff9b9b}}}}
body{{font:15px/1.45 system-ui,sans-serif;max-width:46em;margin:1.5em auto;padding:0 1em;color:var(--fg);background:var(--bg)}}
a{{color:inherit}} nav{{color:var(--muted);margin-bottom:1em}} h1{{font-size:1.5em;margin:.2em 0 .6em}}
h2{{font-size:1.1em;border-top:1px solid var(--line);padding-top:.8em;margin-top:1.2em}}
.item{{background:var(--box);border:1px solid var(--line);border-radius:6px;padding:.6em .8em;margin:.5em 0}}
.muted{{color:var(--muted)}} .code{{font:600 1.5em ui-monospace,monospace;letter-spacing:.1em}}
code{{font-family:ui-monospace,monospace;background:var(--box);padding:0 .25em;border-radius:3px}}
ul{{margin:.3em 0}} form{{display:inline}} .ok{{color:var(--ok)}} .no{{color:var(--no)}}
button,input{{font:inherit;padding:.35em 1em;margin:.2em .4em .2em 0}}
</style></head><body><nav><a href="/">Decoy sandbox</a> · the owner's pages</nav>{body}</body></html>"""


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_LAYOUT.format(title=html.escape(title), body=body), status_code=status, headers=HEADERS)


def wants_page(request: Request) -> bool:
    """A browser's form post (it accepts HTML) gets a page; a script's keeps its JSON answer."""
    return is_form(request) and "text/html" in request.headers.get("accept", "")


def esc(value: Any) -> str:
    return html.escape(str(value))


def _decision(request: Request, name: str, value: str, base: str, yes: str) -> str:
    """Yes and Deny for one waiting ask: two forms to the owner surface (`{base}approve`,
    `{base}deny`) carrying its `name`=`value` and the run's secret."""
    hidden = (
        f'<input type="hidden" name="{name}" value="{esc(value)}">'
        f'<input type="hidden" name="token" value="{esc(state_of(request).owner_secret)}">'
    )
    return (
        f'<form method="post" action="{base}approve">{hidden}<button>{yes}</button></form>'
        f'<form method="post" action="{base}deny">{hidden}<button>Deny</button></form>'
    )


def buttons(request: Request, ref: str) -> str:
    """Approve and Deny for one pairing or request."""
    return _decision(request, "ref", ref, "/_sandbox/", "Approve")


def asked(item: dict) -> str:
    lines = "".join(f"<li>{esc(h)}</li>" for h in item.get("headlines") or []) or "<li>nothing named</li>"
    warnings = "".join(f"<p>⚠ {esc(w)}</p>" for w in item.get("warnings") or [])
    return f"<ul>{lines}</ul>{warnings}"


def waiting(request: Request, pending: list[dict], unlocks: list[dict] | None = None) -> str:
    """Pairings and grant requests (Approve / Deny), then unlocks (Allow / Deny)."""
    if not pending and not unlocks:
        return "<p class='muted'>Nothing is waiting for you.</p>"
    out = []
    for p in pending:
        if p["kind"] == "pairing":
            code = esc(p["user_code"])
            head = f"<b>“{esc(p['name'])}”</b> asks to pair · code <a href='/connect?code={code}'>{code}</a>" + (
                " <span class='muted'>(already connected: approving continues it)</span>" if p["reconnect"] else ""
            )
        else:
            what = "to renew its access" if p.get("renewal") else "for more access"
            reasons = "; ".join(p.get("reasons") or [])
            head = f"<b>“{esc(p['name'])}”</b> asks {what}" + (f": <i>{esc(reasons)}</i>" if reasons else "")
        out.append(f"<div class='item'>{head}{asked(p)}{buttons(request, p['request_id'])}</div>")
    out.extend(_unlock_item(request, u) for u in unlocks or [])
    return "".join(out)


#: What an unlock reads, in the owner's words, by `target.datatypes` kind.
KIND_WORDS = {
    "basic-auth": "its password",
    "custom-fields": "its custom fields",
    "totp": "its current 2FA code",
    "note": "its notes",
    "address": "its address",
    "credit-card": "its card",
}


def unlock_what(u: dict) -> str:
    """What a pending unlock asks to read, in words ("every secret" when it names no kind)."""
    kinds = u.get("datatypes") or []
    if kinds == ["passkey"]:
        return "to sign in with its passkey, once"
    if not kinds:
        return "to read its password and its other secrets"
    return "to read " + " and ".join(KIND_WORDS.get(k, k) for k in kinds)


def _unlock_item(request: Request, u: dict) -> str:
    """One unlock waiting on the owner: who asks, which account, why (the agent's words, escaped)."""
    who = esc(u.get("connection") or "An agent")
    account = esc(u.get("account") or "an account")
    reason = f": <i>{esc(u['reason'])}</i>" if u.get("reason") else ""
    head = f"<b>“{who}”</b> asks to unlock <b>{account}</b>{reason}"
    what = f"<ul><li>{esc(unlock_what(u))}</li></ul>"
    return f"<div class='item unlock'>{head}{what}{unlock_buttons(request, u['id'])}</div>"


def unlock_buttons(request: Request, unlock_id: str) -> str:
    """Allow and Deny for one unlock, as the phone's Lock Screen asks."""
    return _decision(request, "id", unlock_id, "/_sandbox/unlocks/", "Allow")


def connections(conns: list[dict]) -> str:
    if not conns:
        return "<p class='muted'>No agent is connected yet.</p>"
    rows = []
    for c in conns:
        state = "revoked" if c["revoked"] else esc(c.get("memories") or "no memory access")
        ends = f" · access ends {esc(c['ends_at'])}" if c.get("ends_at") and not c["revoked"] else ""
        rows.append(f"<li><b>{esc(c['name'])}</b> — {state}{ends}</li>")
    return f"<ul>{''.join(rows)}</ul>"


CODE_BOX = (
    "<form method='get' action='/connect'><label>Pairing code "
    "<input name='code' placeholder='ABCD-EFGH' autocomplete='off' required></label>"
    "<button>Show the ask</button></form>"
)


def _name_of(owner: Any, ref: str) -> tuple[str, str]:
    """(connection name, "pairing" | "request") of what `ref` names, looked up before it is decided."""
    for p in owner.pending():
        if ref in (p["request_id"], p.get("user_code")) or (
            p["kind"] == "pairing" and normalize_user_code(ref) == normalize_user_code(p["user_code"])
        ):
            return p["name"], "pairing" if p["kind"] == "pairing" else "request"
    return "the agent", "ask"


def decided(request: Request, owner: Any, ref: str, verb: str, act: Callable[[], dict]) -> HTMLResponse:
    """The page an Approve or Deny form lands on: what was decided, in words, or why not."""
    name, kind = _name_of(owner, ref)
    home_link = "<p><a href='/'>Back to the home page</a></p>"
    try:
        done = act()
    except HTTPProblem as exc:
        body = f"<h1 class='no'>Could not {verb} {esc(name)}'s {kind}</h1><p>{esc(exc.message)}</p>{home_link}"
        return page(f"could not {verb}", body, status=exc.status)
    if verb == "deny":
        body = f"<h1 class='no'>Denied “{esc(name)}”</h1><p>Its {kind} was denied: it was given nothing.</p>"
        return page("denied", body + home_link)
    lines = "".join(f"<li>{esc(h)}</li>" for r in done.get("permissions") or [] for h in Row.from_json(r).headlines())
    narrowed = " (narrowed from what it asked)" if done.get("status") == "resolved" else ""
    body = (
        f"<h1 class='ok'>Approved “{esc(name)}”</h1><p>Its {kind} was approved{narrowed}. It may now:</p>"
        f"<ul>{lines or '<li>nothing new (it held all of it already)</li>'}</ul>"
        "<p class='muted'>The agent picks up its access on its next poll.</p>"
    )
    return page("approved", body + home_link)


def decided_unlock(asked: dict | None, allow: bool, act: Callable[[], dict]) -> HTMLResponse:
    """The page an unlock's Allow or Deny lands on: what was decided, in words, or why not.
    `asked` is the unlock as it waited (phone/keeper.py `pending_unlocks`), None when it no longer
    waits."""
    who = esc((asked or {}).get("connection") or "the agent")
    account = esc((asked or {}).get("account") or "the account")
    verb = "allow" if allow else "deny"
    home_link = "<p><a href='/'>Back to the home page</a></p>"
    try:
        act()
    except HTTPProblem as exc:
        body = f"<h1 class='no'>Could not {verb} “{who}”'s unlock</h1><p>{esc(exc.message)}</p>{home_link}"
        return page(f"could not {verb}", body, status=exc.status)
    if not allow:
        body = f"<h1 class='no'>Denied “{who}”</h1><p>It was not given {account}: nothing was read.</p>"
        return page("denied", body + home_link)
    if (asked or {}).get("datatypes") == ["passkey"]:  # nothing is read: the phone signs one sign-in
        done_words = f"Your phone signed this one sign-in to {account} for it; nothing was read or stored."
    else:
        what = esc(unlock_what(asked or {}).removeprefix("to "))
        done_words = f"Your phone sealed {account} to it, once: it may {what}."
    body = (
        f"<h1 class='ok'>Allowed “{who}”</h1><p>{done_words}</p>"
        "<p class='muted'>The agent picks it up on its next poll.</p>"
    )
    return page("allowed", body + home_link)
