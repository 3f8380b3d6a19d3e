"""Rules on pairing and tokens: the device-code poll, slow_down, refresh, where a token travels, a client_uri's host."""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
from urllib.parse import parse_qsl, urlsplit

from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run
from decoy_lab.conformance.rules.base import pairings, token_calls

SLACK = 0.5
SECRET_PARAMS = frozenset({"access_token", "refresh_token", "token", "device_code", "code", "id_token"})
FINGERPRINT = re.compile(r"sha256:[0-9a-f]{8}")  # how the record shows a learned secret


def _polls(run: Run) -> list[tuple[float, list[Exchange]]]:
    """(interval the device answer gave, its token polls in order) per pairing."""
    out = []
    for dev in pairings(run):
        body = dev.response if isinstance(dev.response, dict) else {}
        code = body.get("device_code")
        if not code:
            continue
        polls = [x for x in token_calls(run, "device_code") if x.form.get("device_code") == code]
        out.append((float(body.get("interval") or 5), polls))
    return out


def _walk(run: Run) -> list[tuple[Exchange, Exchange, float, bool]]:
    """(poll, next poll, the interval owed between them, whether the first answered slow_down)."""
    steps = []
    for interval, polls in _polls(run):
        for a, b in itertools.pairwise(polls):
            slowed = a.code == "slow_down"
            if slowed:
                interval = max(interval + 5, float((a.response or {}).get("interval") or 0))
            steps.append((a, b, interval, slowed))
    return steps


def poll_interval(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for a, b, interval, slowed in _walk(run):
        if slowed:
            continue
        gap = b.start - a.start
        (bad if gap < interval - SLACK else good).append(
            Evidence(f"{b.label()}: polled {gap:.1f} s after #{a.id} (interval {interval:g} s)", b)
        )
    return Result.judge(bad[:3], good[:3])


def slow_down(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for a, b, interval, slowed in _walk(run):
        if not slowed:
            continue
        gap = b.start - a.start
        (bad if gap < interval - SLACK else good).append(
            Evidence(f"{b.label()}: polled {gap:.1f} s after the slow_down of #{a.id} (owed {interval:g} s)", b)
        )
    return Result.judge(bad[:3], good[:3])


def refresh_once(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    refreshes = token_calls(run, "refresh_token")
    for i, x in enumerate(refreshes):
        used = x.form.get("refresh_token", "")
        earlier = [p for p in refreshes[:i] if p.form.get("refresh_token") == used]
        if earlier and all(p.answered for p in earlier):
            bad.append(
                Evidence(
                    f"{x.label()}: refresh token {used} sent again (already used at #{earlier[0].id}; they rotate)", x
                )
            )
        elif not earlier:
            good.append(Evidence(f"{x.label()}: refreshed with a token used once", x))
    for e in _refresh_triggers(run):
        nxt = next((x for x in run.exchanges if x.start > e.start and x.path.startswith("/oauth/")), None)
        if nxt is not None and nxt.path == "/oauth/device":
            bad.append(
                Evidence(f"{nxt.label()}: paired again after 401 {e.code} at #{e.id} instead of refreshing", nxt)
            )
        elif nxt is None or "refresh_token" not in nxt.form.get("grant_type", ""):
            bad.append(
                Evidence(
                    f"{e.label()}: 401 {e.code} with recovery: refresh, and the agent never refreshed "
                    "(no POST /oauth/token with grant_type=refresh_token after it)",
                    e,
                )
            )
    return Result.judge(bad, good[:3])


def _refresh_triggers(run: Run) -> list[Exchange]:
    """The first 401 answered `recovery: refresh` for each token (a trigger the agent must meet)."""
    seen: set[str] = set()
    out = []
    for x in run.exchanges:
        body = x.response if isinstance(x.response, dict) else {}
        refresh = body.get("recovery") == "refresh" or x.code in ("TOKEN_EXPIRED", "TOKEN_REPLACED")
        if x.status == 401 and refresh and x.token not in seen:
            seen.add(x.token)
            out.append(x)
    return out


def no_token_in_url(run: Run) -> Result:
    bad: list[str] = []
    sent = 0  # authenticated requests with nothing secret in their URL
    for x in run.exchanges:
        params = parse_qsl(x.query, keep_blank_values=True) if x.query else []  # most requests have no query
        leaked = [k for k, v in params if k.lower() in SECRET_PARAMS or FINGERPRINT.search(v)]
        if leaked:
            bad.append(Evidence(f"{x.label()}: a secret in the URL ({', '.join(sorted(set(leaked)))}=…)", x))
        elif x.token:
            sent += 1
    good = [f"{sent} authenticated requests sent their token in the Authorization header only"] if sent else []
    return Result.judge(bad[:3], [] if bad else good)


def ask_by_name(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in pairings(run):
        body = x.request if isinstance(x.request, dict) else dict(x.form)
        details = body.get("authorization_details")
        if isinstance(details, str):
            try:
                details = json.loads(details)
            except ValueError:
                details = None
        named = (
            isinstance(details, list)
            and details
            and all(
                isinstance(d, dict) and isinstance(d.get("permissions"), list) and d["permissions"] for d in details
            )
        )
        if not named and not body.get("request_uri"):
            bad.append(Evidence(f"{x.label()}: pairs without naming permissions in authorization_details "
                                f"(sent: {sorted(body)})", x))  # fmt: skip
        elif not body.get("name"):
            bad.append(Evidence(f"{x.label()}: pairs without a display name for the owner's approval screen", x))
        else:
            good.append(Evidence(f"{x.label()}: asks by name for {details if named else 'a PAR request_uri'}", x))
    return Result.judge(bad, good[:3])


def _client_id(x: Exchange) -> str:
    body = x.request if isinstance(x.request, dict) else dict(x.form)
    return str(body.get("client_id") or "")


def continue_session(run: Run) -> Result:
    """After a 401 `recovery: continue` the agent reconnects with its own client_id (the connection
    lives on); after `recovery: re_pair`, a new pairing; never a refresh for either."""
    bad: list[str] = []
    good: list[str] = []
    paired = pairings(run)
    seen: set[tuple[str, str]] = set()
    for x in run.exchanges:
        body = x.response if isinstance(x.response, dict) else {}
        recovery = str(body.get("recovery") or "")
        if x.status != 401 or recovery not in ("continue", "re_pair") or (x.token, recovery) in seen:
            continue
        seen.add((x.token, recovery))
        steps = [p for p in [*paired, *token_calls(run, "refresh_token")] if p.start > x.start]
        nxt = min(steps, key=lambda p: p.start) if steps else None
        mine = next((_client_id(p) for p in paired if p.start < x.start), "")
        if nxt is None:
            bad.append(Evidence(f"{x.label()}: 401 {x.code} (recovery: {recovery}); the agent never reconnected", x))
        elif nxt.path == "/oauth/token":
            bad.append(Evidence(f"{nxt.label()}: refreshed after {x.label()} (recovery: {recovery}): "
                                "the spec's recovery is a reconnect, not a refresh", nxt, x))  # fmt: skip
        elif recovery == "continue" and mine and _client_id(nxt) != mine:
            bad.append(Evidence(f"{nxt.label()}: after {x.label()} (recovery: continue) reconnected as client_id "
                                f"{_client_id(nxt)[:40]!r}, not its own {mine[:40]!r}: another connection", nxt, x))  # fmt: skip
        else:
            good.append(Evidence(f"{nxt.label()}: after {x.label()} (recovery: {recovery}) reconnected"
                                 + (" with the same client_id" if recovery == "continue" else ""), nxt, x))  # fmt: skip
    return Result.judge(bad, good[:3])


INTERNAL = (".local", ".localhost", ".internal", ".lan", ".home", ".corp", ".intranet", ".test", ".invalid", ".example")


def _host_fault(uri: str) -> str:
    """Why `client_uri` is not a public https site ("" when it is): 001 "The host must be a public domain
    name: no IP address, `localhost` or internal name, no port and no credentials"."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return "not a URL"
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme != "https":
        return f"{parts.scheme or 'no'} scheme, not https"
    if not host:
        return "no host"
    if parts.username is not None or parts.password is not None:
        return "credentials in it"
    if port is not None:
        return f"a port ({port})"
    try:
        ipaddress.ip_address(host.strip("[]"))
        return "an IP address"
    except ValueError:
        pass
    if host == "localhost" or "." not in host or host.endswith(INTERNAL):
        return f"{host!r} is not a public domain name"
    return ""


def client_uri_public(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in run.exchanges:
        if x.method != "POST" or x.path not in ("/oauth/device", "/oauth/par"):
            continue
        body = x.request if isinstance(x.request, dict) else dict(x.form)
        uri = body.get("client_uri")
        if uri is None:
            continue
        answer = x.response if isinstance(x.response, dict) else {}
        ignored = [w for w in answer.get("warnings") or [] if str(w).startswith("client_uri_ignored")]
        fault = _host_fault(str(uri)) if isinstance(uri, str) else "not a string"
        if fault or ignored:
            said = f"; the answer warns {ignored[0]!r}" if ignored else ""
            bad.append(
                Evidence(f"{x.label()}: client_uri {str(uri)[:80]!r}: {fault or 'refused by the server'}{said}", x)
            )
        else:
            good.append(Evidence(f"{x.label()}: client_uri {str(uri)[:80]!r} names a public https site", x))
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "pairing.poll-interval",
        "The device-code poll waits interval seconds",
        "001",
        "Connect (OAuth 2.0 Device Grant)",
        "Poll (every `interval` seconds, up to `expires_in`) until they approve",
        poll_interval,
        scenarios=("slow-pairing", "clean"),
        bug="poll-fast",
        catches="polls the token endpoint every second",
    ),
    Rule(
        "pairing.slow-down",
        "slow_down adds 5 seconds to the poll interval",
        "RFC 8628",
        "§3.5 Device Access Token Response",
        "the interval MUST be increased by 5 seconds for this and all subsequent requests.",
        slow_down,
        scenarios=("slow-pairing",),
        bug="ignore-slow-down",
        catches="keeps polling every interval after slow_down",
    ),
    Rule(
        "pairing.refresh-once",
        "An expired token is refreshed once, with a refresh token used once",
        "001",
        "Errors › 401",
        "`recovery: refresh` (`TOKEN_EXPIRED`, `TOKEN_REPLACED`) → `POST /oauth/token` with `grant_type=refresh_token` renews the same connection",
        refresh_once,
        scenarios=("token-rotation",),
        bug="refresh-twice",
        catches="sends the same refresh token twice",
    ),
    Rule(
        "pairing.no-token-in-url",
        "Tokens travel in the Authorization header, never in a URL",
        "001",
        "Connect (OAuth 2.0 Device Grant)",
        "Then send: Authorization: Bearer",
        no_token_in_url,
        scenarios=("clean",),
        bug="token-in-url",
        catches="adds ?access_token=… to its reads",
    ),
    Rule(
        "pairing.ask-by-name",
        "A pairing names the permissions it needs in authorization_details, and a display name",
        "001",
        "Connect (OAuth 2.0 Device Grant)",
        "**Always request something:** name permissions in `authorization_details` (inline, or via "
        "`POST /oauth/par` → `request_uri`).",
        ask_by_name,
        scenarios=("clean",),
        bug="bare-pairing",
        catches="pairs with a name and a key but no authorization_details",
    ),
    Rule(
        "pairing.client-uri-public",
        "A client_uri names a public https domain: no IP, localhost or internal name, port or credentials",
        "001",
        "POST /oauth/device",
        "The host must be a public domain",
        client_uri_public,
        scenarios=("clean",),
        bug="local-client-uri",
        catches="sends `client_uri: https://localhost:8443/agent` with its pairing",
    ),
    Rule(
        "pairing.continue-session",
        "After 401 recovery: continue the agent reconnects with its own client_id; after re_pair, pairs anew",
        "001",
        "Errors › 401",
        "with no registered browser, reconnect with the same `client_id`",
        continue_session,
        scenarios=("session-ended",),
        bug="new-client-on-continue",
        catches="meets 401 SESSION_ENDED (recovery: continue) by pairing with a new client_id",
    ),
]
