"""Pairing: the OAuth 2.0 Device Grant (RFC 8628) with named permissions (RFC 9396 rows).

`authorization_details(...)` turns what the user asks for into rows: plain names share one
row, names the spec says are asked alone (`memory.save`, `account.create`, `everything`) get
rows of their own, and full rows with a selection pass through after a check. The default ask
is `memory.read` and `memory.save`, because a request with nothing in it leaves the owner a
near-empty screen.

`PairingHandle` runs the flow in a background thread, so a notebook widget never blocks the
kernel: PAR → `/oauth/device` → poll `/oauth/token` every `interval` seconds (+5 s on
`slow_down`), stopping at `expires_in`, cancellable at any moment. Transient errors are ridden out:
no answer doubles the interval (RFC 8628 §3.5: "clients MUST unilaterally reduce their polling
frequency before retrying"), and a 429 or 5xx waits its `Retry-After` before the next poll.
`result()` returns what the `finish` step built from the token (the Connection).

The device answer's `verification_uri` and `verification_uri_complete` are shown as links, printed
to be opened and drawn as QR codes: one that is not an absolute http(s) URL (`javascript:`,
`data:`, `file:` …, `is_web_link`) is refused where the answer is read, so no consumer ever gets it.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from decoy_lab.errors import APIError, PairingCancelled, PairingError, TransportError
from decoy_lab.shapes import fits
from decoy_lab.transport import routes
from decoy_lab.transport.api import Api, Tokens, expect_object
from decoy_lab.transport.retry import RetryPolicy
from decoy_lab.vocab import ASKED_ALONE, DEVICE_GRANT, SELECTION_KEYS

log = logging.getLogger(__name__)

ROW_KEYS = frozenset(("permissions", "type", *SELECTION_KEYS))
DEFAULT_PERMISSIONS = ("memory.read", "memory.save")
SLOW_DOWN_STEP = 5.0
BACKOFF_CAP = 60.0  # doubling after lost answers stops here (a longer interval from the server stays)
# The members of the device answer that are read, and their shapes (http.expect_object).
DEVICE_ANSWER = {
    "device_code": str,
    "user_code": str,
    "verification_uri": str,
    "verification_uri_complete": str,
    "expires_in": float,
    "interval": float,
    "warnings": list,
}

# An absolute http(s) URL with nothing a browser strips or reads another way (spaces, controls).
_WEB_LINK = re.compile(r"https?://[^\s\x00-\x1f\x7f]+", re.IGNORECASE)

# statuses a PairingHandle passes through
STARTING, WAITING, APPROVED, DONE = "starting", "waiting", "approved", "done"
DENIED, EXPIRED, CANCELLED, FAILED = "denied", "expired", "cancelled", "failed"
FINAL = frozenset({DONE, DENIED, EXPIRED, CANCELLED, FAILED})


def _bad(message: str) -> PairingError:
    return PairingError(message, code="invalid_authorization_details")


def check_row(row: dict) -> dict:
    """One RFC 9396 row: `permissions` plus at most one selection, names asked alone alone."""
    if not isinstance(row, dict):
        raise _bad(f"a permission row must be a dict, got {type(row).__name__}")
    unknown = sorted(set(row) - ROW_KEYS)
    if unknown:
        raise _bad(
            f"unknown keys in a permission row: {', '.join(unknown)} "
            f"(a row takes permissions and one of {', '.join(SELECTION_KEYS)})"
        )
    perms = row.get("permissions")
    if isinstance(perms, str):
        perms = [perms]
    if not perms or not all(isinstance(p, str) and p for p in perms):
        raise _bad("a permission row needs a non-empty list of permission names")
    selection = [k for k in SELECTION_KEYS if row.get(k) not in (None, [], "")]
    if len(selection) > 1 and set(selection) != {"record_type", "personal_id"}:
        raise _bad(f"one selection per row, got {', '.join(selection)}: make several rows")
    alone = [p for p in perms if p in ASKED_ALONE]
    if alone and (len(perms) > 1 or selection):
        raise _bad(f"{alone[0]} is asked alone: give it a row of its own with no selection")
    out = {k: v for k, v in row.items() if v not in (None, [], "")}
    out["permissions"] = list(dict.fromkeys(perms))
    return out


def authorization_details(permissions: Iterable[str | dict] | str | None = None) -> list[dict]:
    """Rows to ask for: plain names share a row, names asked alone get their own, rows pass."""
    if permissions is None:
        permissions = DEFAULT_PERMISSIONS
    if isinstance(permissions, (str, dict)):
        permissions = [permissions]
    items = list(permissions)
    if not items:
        raise _bad(
            "always ask for something: name at least one permission (the default is memory.read and memory.save)"
        )
    shared: list[str] = []
    rows: list[dict] = []
    for item in items:
        if isinstance(item, str):
            if item in ASKED_ALONE:
                rows.append({"permissions": [item]})
            elif item not in shared:
                shared.append(item)
        else:
            rows.append(check_row(item))
    if shared:
        rows.insert(0, {"permissions": shared})
    return rows


def selection_row(
    permissions: Sequence[str] | str,
    *,
    datatypes: Sequence[str] | None = None,
    about: Sequence[str] | str | None = None,
    account_id: str | None = None,
    **selection: Any,
) -> list[dict]:
    """Bodies for grant-request: one selection, names asked alone split into their own asks."""
    names = [permissions] if isinstance(permissions, str) else list(permissions)
    if not names:
        raise _bad("name at least one permission to ask for")
    if isinstance(about, str):
        about = [about]
    if about:
        about = [a if a.startswith("topic:") else f"topic:{a}" for a in about]
    sel = {
        "datatypes": list(datatypes) if datatypes else None,
        "about": list(about) if about else None,
        "account_id": account_id,
        **selection,
    }
    sel = {k: v for k, v in sel.items() if v not in (None, [], "")}
    rows: list[dict] = []
    rest = [n for n in names if n not in ASKED_ALONE]
    if rest:
        rows.append(check_row({"permissions": rest, **sel}))
    for n in names:
        if n in ASKED_ALONE:
            if sel and not rest:
                raise _bad(f"{n} is asked alone, with no selection")
            rows.append({"permissions": [n]})  # the selection belongs to the other names
    return rows


# -- the device flow ---------------------------------------------------------------------------
def is_web_link(url: object) -> bool:
    """Is `url` an absolute http(s) URL with a host (the only served URL made a link, printed to
    open or drawn as a QR code)? `javascript:`, `data:`, `file:`, a relative URL, or one with
    spaces or control characters a browser would strip before reading its scheme, are not."""
    if not isinstance(url, str) or not _WEB_LINK.fullmatch(url):
        return False
    try:
        return bool(urlsplit(url).hostname)
    except ValueError:  # a bracketed host that is no IPv6 address, a port that is no number
        return False


@dataclass
class DeviceSession:
    """What `/oauth/device` answered (the device_code stays out of the repr)."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: float
    interval: float
    warnings: list = field(default_factory=list)


def start_device(
    api: Api,
    *,
    name: str,
    client_id: str,
    rows: list[dict],
    agent_public_key: str,
    use_par: bool = True,
    sleep: Callable[[float], Any] = time.sleep,
) -> DeviceSession:
    """PAR (when the server takes it) then `/oauth/device` with the request_uri and our key."""
    body: dict[str, Any] = {
        "name": name,
        "client_id": client_id,
        "agent_public_key": agent_public_key,
        "platform": "oauth",
    }

    def post(path: str, payload: dict, **members: Any) -> dict:
        def send() -> dict:  # a lost or unreadable answer only costs an unused session: ask again
            return expect_object(api.request("POST", path, json=payload, auth=False), f"POST {path}", **members)

        return RetryPolicy(retries=2, backoff=0.5, sleep=sleep).run(send)

    if use_par:
        try:
            par = post(routes.PAR, {"client_id": client_id, "authorization_details": rows}, request_uri=str)
            if not par.get("request_uri"):
                raise PairingError("the PAR answer carries no request_uri", code="bad_response")
            body["request_uri"] = par["request_uri"]
        except APIError as exc:
            if exc.status not in (404, 405):
                raise PairingError(f"the pairing request was refused: {exc}", code=exc.code) from exc
    if "request_uri" not in body:
        body["authorization_details"] = rows
    try:
        ans = post(routes.DEVICE, body, **DEVICE_ANSWER)
    except APIError as exc:
        raise PairingError(f"the pairing request was refused: {exc}", code=exc.code) from exc
    try:
        session = DeviceSession(
            device_code=ans["device_code"],
            user_code=ans["user_code"],
            verification_uri=ans.get("verification_uri") or ans["verification_uri_complete"],
            verification_uri_complete=ans.get("verification_uri_complete") or ans["verification_uri"],
            expires_in=float(ans.get("expires_in") or 600),
            interval=float(ans.get("interval") or 5),
            warnings=list(ans.get("warnings") or []),
        )
    except (KeyError, TypeError) as exc:
        raise PairingError(f"the device answer lacks {exc}", code="bad_response") from None
    for member in ("verification_uri_complete", "verification_uri"):
        url = getattr(session, member)
        if not is_web_link(url):
            shown = repr(url) if len(url) <= 80 else repr(url[:77]) + "…"
            raise PairingError(
                f"the server's {member} {shown} is not an http(s) link: the pairing stopped, nothing "
                f"was opened or shown as a link (is {api.base_url} the Decoy server you meant?)",
                code="bad_response",
            )
    return session


class PairingHandle:
    """A pairing running in a background thread. Watch `.status`, show `.link` and `.user_code`,
    `.cancel()` at any time, and `.result(timeout)` for the Connection."""

    def __init__(
        self,
        api: Api,
        *,
        name: str,
        client_id: str,
        rows: list[dict],
        agent_public_key: str,
        finish: Callable[[Tokens], Any],
        on_link: Callable[[str, str], Any] | None = None,
        on_status: Callable[[PairingHandle], Any] | None = None,
        use_par: bool = True,
        poll_interval: float | None = None,
        wait: Callable[[float], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        timeout: float | None = None,
    ):
        self.api, self.name, self.client_id, self.rows = api, name, client_id, rows
        self.agent_public_key = agent_public_key
        self._finish, self._on_link, self.on_status = finish, on_link, on_status
        self.use_par, self.poll_interval, self._wait, self.clock = use_par, poll_interval, wait, clock
        self.timeout = timeout
        self.status = STARTING
        self.message = "asking the server for a pairing link"
        self.session: DeviceSession | None = None
        self.expires_at: dt.datetime | None = None
        self.interval: float | None = None
        self.polls = 0
        self.waits: list[float] = []  # every pause between polls, in seconds (for tests and the widget)
        self.error: BaseException | None = None
        self._result: Any = None
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decoy-lab-pairing", daemon=True)

    # -- public -----------------------------------------------------------------------------
    @property
    def link(self) -> str | None:
        return self.session.verification_uri_complete if self.session else None

    @property
    def user_code(self) -> str | None:
        return self.session.user_code if self.session else None

    @property
    def warnings(self) -> list:
        return self.session.warnings if self.session else []

    def start(self) -> PairingHandle:
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop waiting for the owner. `result()` then raises PairingCancelled."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def done(self) -> bool:
        return self._done.is_set()

    def seconds_left(self) -> float | None:
        if self.expires_at is None:
            return None
        return max(0.0, (self.expires_at - dt.datetime.now(dt.UTC)).total_seconds())

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the pairing to finish; the Connection, or the error that ended it."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"pairing still {self.status} after {timeout} s; it carries on (cancel() stops it)")
        if self.error is not None:
            raise self.error
        return self._result

    def __repr__(self) -> str:
        return f"<PairingHandle {self.status} link={self.link!r} code={self.user_code!r}>"

    # -- worker -----------------------------------------------------------------------------
    def _set(self, status: str, message: str) -> None:
        self.status, self.message = status, message
        log.info("pairing %s: %s", status, message)
        if self.on_status is not None:
            try:
                self.on_status(self)
            except Exception:  # a widget callback must not kill the pairing
                log.exception("pairing status callback failed")

    def pause(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self._wait is not None:
            self._wait(seconds)
        else:
            self._cancel.wait(seconds)
        if self._cancel.is_set():
            raise PairingCancelled("pairing cancelled before the owner approved", code="cancelled")

    def _run(self) -> None:
        tokens: Tokens | None = None
        try:
            tokens = self._device_flow()
            self._check_not_cancelled()
            self._set(APPROVED, "approved: reading what the owner granted")
            result = self._finish(tokens)
            if self._cancel.is_set():  # cancelled while the grant was read: that connection is ended
                self._end(result)
                tokens = None
                self._check_not_cancelled()
            self._result = result
            self._set(DONE, "paired")
        except PairingCancelled as exc:
            if tokens is not None:  # an approval that came after Cancel never becomes a connection
                self._revoke(tokens)
            self.error = exc
            self._set(CANCELLED, str(exc))
        except PairingError as exc:
            self.error = exc
            status = {"access_denied": DENIED, "expired_token": EXPIRED}.get(exc.code or "", FAILED)
            self._set(status, str(exc))
        except BaseException as exc:  # surfaced by result()
            self.error = exc
            self._set(FAILED, str(exc))
        finally:
            self._done.set()

    def _check_not_cancelled(self) -> None:
        if self._cancel.is_set():
            raise PairingCancelled(
                "pairing cancelled; the owner's approval that came meanwhile was not used (its token is revoked)",
                code="cancelled",
            )

    def _revoke(self, tokens: Tokens) -> None:
        self.api.tokens = tokens
        try:
            self.api.revoke()
        except Exception as exc:  # best effort: the owner can still end it in the app
            log.info("could not revoke the token of a cancelled pairing: %s", exc)

    @staticmethod
    def _end(conn: Any) -> None:
        try:
            conn.unpair()
        except Exception as exc:
            log.info("could not end the connection of a cancelled pairing: %s", exc)

    def _device_flow(self) -> Tokens:
        if self._cancel.is_set():
            raise PairingCancelled("pairing cancelled", code="cancelled")
        s = start_device(
            self.api,
            name=self.name,
            client_id=self.client_id,
            rows=self.rows,
            agent_public_key=self.agent_public_key,
            use_par=self.use_par,
            sleep=self._wait or self._cancel.wait,
        )
        self.session = s
        started = self.clock()
        life = s.expires_in if self.timeout is None else min(s.expires_in, self.timeout)
        deadline = started + life
        self.expires_at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=s.expires_in)
        self.interval = float(self.poll_interval if self.poll_interval is not None else s.interval)
        if self._on_link is not None:
            self._on_link(s.verification_uri_complete, s.user_code)
        self._set(WAITING, f"waiting for the owner to approve (code {s.user_code})")
        first = True
        hold = 0.0  # a 429 / 5xx's Retry-After: the next poll waits at least this long
        while True:
            left = deadline - self.clock()
            if left <= 0:
                raise PairingError(
                    f"the pairing link expired after {life:.0f} s without an approval; start a new pairing",
                    code="expired_token",
                )
            if not first:  # RFC 8628 §3.5: at least `interval` between polls (the first goes at once)
                self.pause(min(max(self.interval, hold), left))
            first, hold = False, 0.0
            if self.clock() >= deadline:
                raise PairingError(
                    f"the pairing link expired after {life:.0f} s without an approval; start a new pairing",
                    code="expired_token",
                )
            self.polls += 1
            try:
                status, body = self.api.token_endpoint(
                    {"grant_type": DEVICE_GRANT, "device_code": s.device_code, "client_id": self.client_id}
                )
            except TransportError as exc:
                self.interval = max(self.interval, min(self.interval * 2 or 1.0, BACKOFF_CAP))
                log.info("pairing poll: no answer (%s); polling every %g s", exc, self.interval)
                continue
            if status == 200:
                return Tokens.from_response(body)
            code = next(
                (c for c in (body.get("error"), body.get("code")) if isinstance(c, str) and c), f"http_{status}"
            )
            if status >= 500 or status == 429:  # transient: poll on, after its Retry-After if longer
                served = body.get("retry_after_seconds")
                hold = float(served) if fits(served, float) and served > 0 else 0.0
                continue
            if code == "authorization_pending":
                continue
            if code == "slow_down":  # +5 s for this and every later poll (or the server's own, if longer)
                served = body.get("interval")
                self.interval = max(self.interval + SLOW_DOWN_STEP, float(served) if fits(served, float) else 0.0)
                self._set(WAITING, f"the server asked to poll slower: every {self.interval:g} s")
                continue
            if code == "access_denied":
                raise PairingError("the owner declined this pairing; nothing was granted", code="access_denied")
            if code == "expired_token":
                raise PairingError(
                    "the pairing link expired before the owner approved; start a new pairing", code="expired_token"
                )
            desc = body.get("error_description") or body.get("message") or ""
            raise PairingError(f"the token exchange was refused: {code} {desc}".strip(), code=code)
