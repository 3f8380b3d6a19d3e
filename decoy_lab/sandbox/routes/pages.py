"""The owner's pages in a browser: the home page (`/`, `/_sandbox/`), the pairing page a link
opens (`/connect`, with a box to type a code), and the page an Approve or Deny lands on.

The home page says what is waiting (pairings and grant requests, by connection name, each with
Approve and Deny; unlocks of an account, with who asks, which account and why, each with Allow
and Deny), which connections hold what, how to pair an agent, and links to the owner's
views. These are owner-surface pages: the owner on this machine only (guard.check_owner, as
every read there), forms that carry this run's secret, never cached, never framed, and every
name an agent chose escaped. A form the browser posts (it asks for `text/html`) gets a page
back; a script's post keeps its JSON answer.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks.guard import check_owner
from decoy_lab.sandbox.core import base_url, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.phone.owner import normalize_user_code
from decoy_lab.sandbox.phone.pages import CODE_BOX, asked, buttons, connections, esc, page, waiting


async def home(request: Request) -> HTMLResponse:
    """The owner's home page: what is waiting, who is connected, how to pair, where to look."""
    check_owner(request, changes=False)
    state = state_of(request)
    pending, unlocks, conns = state.owner.pending(), keeper.pending_unlocks(state), state.owner.connections()
    url = esc(base_url(request))
    mode = (
        "This sandbox approves every ask at once (<code>--approve auto</code>)."
        if state.approve == "auto"
        else "This sandbox waits for you to approve each ask (<code>--approve manual</code>)."
    )
    body = (
        "<h1>Your Decoy sandbox</h1>"
        f"<h2>Waiting for you ({len(pending) + len(unlocks)})</h2>{waiting(request, pending, unlocks)}"
        f"<h2>Connections ({sum(1 for c in conns if not c['revoked'])} live)</h2>{connections(conns)}"
        "<h2>Pair an agent</h2>"
        f"<p>Give the agent this server's URL: <code>{url}</code>. It asks to pair and shows you a link and a "
        f"code; open the link, or type the code on <a href='/connect'>the pairing page</a>. {mode}</p>"
        f'<p>From a shell: <code>decoy-lab connect {url} --name "My agent"</code>. In a notebook: '
        f"<code>%decoy connect {url}</code>.</p>"
        "<h2>The owner's views</h2><ul>"
        "<li><a href='/_sandbox/app-view'>every row as the owner's app shows it</a> (JSON)</li>"
        "<li><a href='/_sandbox/pending'>what is waiting</a>, "
        "<a href='/_sandbox/unlocks'>the unlocks waiting</a> and "
        "<a href='/_sandbox/connections'>the connections</a> (JSON)</li>"
        "<li><a href='/_sandbox/rows'>every row as the server stores it</a> (JSON)</li></ul>"
    )
    return page("home", body)


async def connect_page(request: Request) -> HTMLResponse:
    """What a pairing link opens: the ask in the owner's words, and the owner's buttons; without a
    code, a box to type the one the agent shows."""
    check_owner(request, changes=False)
    code = request.query_params.get("code", "")
    if not code.strip():
        return page("connect", f"<h1>Connect an agent</h1><p>Type the code the agent shows.</p>{CODE_BOX}")
    match = None
    for item in state_of(request).owner.pending():
        if item["kind"] == "pairing" and normalize_user_code(item["user_code"]) == normalize_user_code(code):
            match = item
    if match is None:
        body = (
            f"<h1>No pairing for {esc(code)}</h1><p>No pairing is waiting for this code (it was answered, "
            f"or it expired). Check the code the agent shows.</p>{CODE_BOX}"
        )
        return page("connect", body, status=404)
    name = esc(match["name"])
    again = "<p class='muted'>It is already connected: approving continues that connection.</p>"
    key = f" · its key {esc(match['key_fingerprint'])}" if match.get("key_fingerprint") else ""
    body = (
        f"<h1>Connect “{name}”</h1><p class='code'>{esc(match['user_code'])}</p>"
        f"<p>“{name}” asks for:</p>{asked(match)}{again if match['reconnect'] else ''}"
        f"{buttons(request, match['request_id'])}"
        f"<p class='muted'><small>Approving works only from this machine{key}.</small></p>"
    )
    return page(f"connect {match['name']}", body)


routes = [
    Route("/", home, methods=["GET"]),
    Route("/_sandbox/", home, methods=["GET"]),
    Route("/connect", connect_page, methods=["GET"]),
]
