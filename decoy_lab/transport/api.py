"""The HTTP boundary: one httpx client, the bearer token, errors translated once, retries.

Everything the server answers becomes a value or a typed error from errors.py here, and
nowhere else. Network errors and timeouts become `TransportError` (the outcome is unknown),
5xx `ServerError`, and every other error status the matching `APIError` subclass carrying the
server's `code`, `recovery` and message.

Token handling follows the spec: a 401 with `recovery: refresh` (`TOKEN_EXPIRED`,
`TOKEN_REPLACED`) refreshes once and repeats the call — unless another thread, or another process
sharing the saved profile (`saved_tokens`), already holds a newer access token: that one is used,
because refreshing again would replace it. `TOKEN_REVOKED` (`recovery: re_pair`) is a `TokenError`
that says a new pairing is needed. `revoke` ends the connection at the server's RFC 7009
revocation endpoint, found in its RFC 8414 metadata.
The retry rule for writes lives in retry.py's `send_with_retries`: an unknown outcome resends the SAME
body, a definite refusal is never retried, a 429 waits `retry_after_seconds`, and `REVIEW_BUSY`
("send this one again") is resent after a short backoff.

`stream_array` reads a large answer as it arrives (jsonstream.py), handing out the rows of one
array while the rest downloads; a body cut off or broken on the way is a TransportError (ask
again), never a shorter list.

Every call has an overall deadline (`deadline`, the timeout by default; the body of a streamed read
gets `STREAM_DEADLINES` times it) that every socket connect, read and write keeps (deadline.py): a
server that drips its headers or its body a byte at a time ends in a TransportError, not a hang.
That error carries no chain: the library's frames hold the request, token included, so they are
cleared and dropped, and the message keeps what the library said. A 3xx is never taken for success (redirects are not followed): its
outcome is unknown. `Retry-After` of any text is read safely (`retry_after`).

Logging names the method, path and status only: never a header, a body or a token.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import ipaddress
import json
import logging
import re
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from decoy_lab.errors import (
    APIError,
    DecoyError,
    RateLimited,
    RevocationUnavailable,
    ServerError,
    TokenError,
    TransportError,
    error_from_response,
)
from decoy_lab.secret import Secret, secret_fingerprint
from decoy_lab.shapes import fits, json_kind, shape_name
from decoy_lab.transport import routes
from decoy_lab.transport.deadline import Bound, bind
from decoy_lab.transport.jsonstream import ArrayStream
from decoy_lab.vocab import REFRESH_GRANT

log = logging.getLogger("decoy_lab.transport.api")
T = TypeVar("T")
_DECODED = (b"content-encoding", b"content-length", b"transfer-encoding")  # the body is held decoded

METADATA_PATH = routes.METADATA
USER_AGENT = "decoy-lab/0.1 (+python-httpx)"
STREAM_DEADLINES = 10  # a streamed read (thousands of rows) may take this many times the deadline
_SECONDS = re.compile(r"[0-9]{1,9}")
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 §2.1: what a Bearer header can carry


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """The wait a `Retry-After` header names, in seconds: delta-seconds or an HTTP-date (RFC 9110
    §10.2.3). Anything else — any text a server may send — is None, never an exception."""
    text = (value or "").strip()
    if not text or len(text) > 64:
        return None
    if _SECONDS.fullmatch(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    now = time.time() if now is None else now
    try:
        return max(0.0, when.timestamp() - now)
    except (OverflowError, OSError, ValueError):
        return None


def _revealed(form: dict[str, Any] | None) -> dict[str, Any] | None:
    """A form with its Secrets revealed, made only as it is handed to httpx."""
    if form is None:
        return None
    return {k: v.reveal() if isinstance(v, Secret) else v for k, v in form.items()}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _library_frames_cleared(exc: BaseException) -> None:
    """Clear the locals of the frames an httpx error passed through (and of the httpcore / socket
    errors it was raised from): they hold the request, its header bytes and any form, token
    included. Only the explicit chain (`__cause__`) is the library's; an implicit `__context__`
    may be the caller's own error, whose frames are left alone."""
    seen: BaseException | None = exc
    while seen is not None:
        traceback.clear_frames(seen.__traceback__)
        seen = seen.__cause__


def _late(method: str, path: str, bound: Bound) -> TransportError:
    return TransportError(
        f"{method} {path}: the server did not answer within {bound.seconds:g} s (the call's deadline); "
        "the outcome is unknown"
    )


@dataclass
class Tokens:
    """The connection's credentials. The tokens are held as `Secret`s (revealed only where the
    Authorization header is built and where they are saved); the repr shows fingerprints."""

    access_token: Secret = field(repr=False)
    refresh_token: Secret | None = field(default=None, repr=False)
    token_id: str | None = None
    expires_at: float | None = None
    access_version: int | None = None

    def __post_init__(self) -> None:
        self.access_token = Secret(self.access_token)
        self.refresh_token = None if self.refresh_token is None else Secret(self.refresh_token)

    @classmethod
    def from_response(cls, body: dict[str, Any], *, previous: Tokens | None = None, now: float | None = None) -> Tokens:
        """Read a `/oauth/token` answer (either grant)."""
        if not isinstance(body, dict) or not isinstance(body.get("access_token"), (str, Secret)):
            raise DecoyError("the token answer carries no access_token")
        now = time.time() if now is None else now
        expires_in, version = body.get("expires_in"), body.get("access_version")
        refresh_token, token_id = body.get("refresh_token"), body.get("token_id")
        for name, value, shape in (
            ("token_id", token_id, str),
            ("expires_in", expires_in, float),
            ("access_version", version, int),
        ):
            if value is not None and not fits(value, shape):
                raise DecoyError(f"the token answer's {name} is {json_kind(value)}, not {shape_name(shape)}")
        if refresh_token is not None and not isinstance(refresh_token, (str, Secret)):
            raise DecoyError(f"the token answer's refresh_token is {json_kind(refresh_token)}, not a string")
        for name, value in (("access_token", body["access_token"]), ("refresh_token", refresh_token)):
            if value is not None and not _B64TOKEN.fullmatch(Secret(value).reveal()):
                raise DecoyError(
                    f"the token answer's {name} holds characters a Bearer token cannot carry (RFC 6750 §2.1)"
                )
        return cls(
            access_token=Secret(body["access_token"]),
            refresh_token=Secret(refresh_token) if refresh_token else (previous.refresh_token if previous else None),
            token_id=token_id or (previous.token_id if previous else None),
            expires_at=now + float(expires_in) if expires_in is not None else None,
            access_version=version if version is not None else (previous.access_version if previous else None),
        )

    def __repr__(self) -> str:
        return (
            f"Tokens(token={secret_fingerprint(self.access_token)}, "
            f"refresh={secret_fingerprint(self.refresh_token)}, token_id={self.token_id!r}, "
            f"access_version={self.access_version})"
        )

    __str__ = __repr__


# -- reading the shape of an answer ----------------------------------------------------------------
def expect_object(answer: Any, where: str, **members: Any) -> dict[str, Any]:
    """`answer` itself, when it is a JSON object whose named members are absent, null or of the
    given shape (see `fits`). Otherwise a TransportError naming the member: an answer that cannot
    be read is treated like a lost one, so a read is asked again and a write sent again unchanged."""
    if not isinstance(answer, dict):
        raise TransportError(f"{where}: the answer is {json_kind(answer)}, not an object; the outcome is unknown")
    for name, shape in members.items():
        value = answer.get(name)
        if value is not None and not fits(value, shape):
            raise TransportError(
                f"{where}: the answer's {name} is not {shape_name(shape)} (it is "
                f"{json_kind(value)}); the outcome is unknown"
            )
    return answer


def is_unknown_outcome(exc: BaseException) -> bool:
    """True when a write may have committed: no answer read, or a 5xx."""
    return isinstance(exc, (TransportError, ServerError))


class Api:
    """Sends requests to one Decoy server with this connection's token.

    `http` may be any `httpx.Client` (a Starlette `TestClient` runs the sandbox in-process);
    `transport` builds a client on that transport (e.g. `httpx.MockTransport`).
    `persist(tokens)` saves new tokens while the refresh still holds `shared_lock()` (a lock
    shared by every process using the profile); `on_tokens(tokens)` is called after every refresh;
    `saved_tokens()` returns the tokens the saved profile holds now (None without one).
    """

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        client_id: str = "",
        tokens: Tokens | None = None,
        on_tokens: Callable[[Tokens], None] | None = None,
        deadline: float | None = None,
    ):
        self.base_url = (base_url or "").rstrip("/")
        self.deadline = float(deadline if deadline is not None else timeout)  # seconds for one whole call
        self._own_client = http is None
        self.http = (
            http
            if http is not None
            else httpx.Client(
                transport=transport, timeout=timeout, headers={"User-Agent": USER_AGENT}, follow_redirects=False
            )
        )
        self.deadline_reaches_sockets = bind(self.http)  # False: only the checks between chunks hold
        self.client_id = client_id
        self.tokens = tokens
        self.on_tokens = on_tokens
        self.saved_tokens: Callable[[], Tokens | None] | None = None
        self.persist: Callable[[Tokens], None] | None = None  # save new tokens (under the shared lock)
        self.shared_lock: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
        self._metadata: dict[str, Any] | None = None
        self._refresh_lock = threading.Lock()
        self.refreshes = 0  # how many times the token was refreshed (shown in status, checked in tests)

    # -- plumbing -------------------------------------------------------------------------
    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}{path}" if self.base_url else path

    def _headers(self, auth: bool) -> httpx.Headers:
        headers = {"Accept": "application/json"}
        if auth:
            if self.tokens is None:
                raise TokenError(401, "NO_TOKEN", "this connection has no token yet: pair first", recovery="re_pair")
            if not _B64TOKEN.fullmatch(self.tokens.access_token.reveal()):  # e.g. a hand-edited profile
                raise DecoyError("the saved access token holds characters a Bearer token cannot carry: pair again")
            headers["Authorization"] = f"Bearer {self.tokens.access_token.reveal()}"  # the one place
        return httpx.Headers(headers)  # its repr masks the Authorization header

    def _guarded(self, method: str, path: str, bound: Bound, step: Callable[[], T]) -> T:
        """`step()` with its socket operations ending by `bound`, and httpx's errors as a
        TransportError. That error is raised with no chain: the library's frames (their locals
        hold the request, token included) are cleared and dropped, and the message keeps what
        they said (the error's type and text)."""
        with bound.active():
            try:
                return step()
            except (httpx.HTTPError, OSError) as exc:
                failure = self._failure(method, path, bound, exc)
                _library_frames_cleared(exc)
        raise failure

    def _failure(self, method: str, path: str, bound: Bound, exc: BaseException) -> TransportError:
        """What a network error means, saying whether anything can have reached the server."""
        said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if bound.expired or (isinstance(exc, httpx.TimeoutException) and bound.passed()):
            log.info("%s %s → no answer within the deadline", method, path)
            return _late(method, path, bound)
        if isinstance(exc, httpx.ConnectError):  # the request never left: say which server and what to check
            log.info("%s %s → cannot connect", method, path)
            return TransportError(
                f"{method} {path}: cannot reach {self.base_url or 'the server'} ({said}); "
                "is the server running? Nothing was sent",
                sent=False,
            )
        log.info("%s %s → no answer (%s)", method, path, type(exc).__name__)  # network error, timeout, drop
        return TransportError(f"{method} {path}: no answer ({said}); the outcome is unknown")

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        auth: bool = True,
    ) -> httpx.Response:
        headers = self._headers(auth)
        bound = Bound.start(self.deadline)

        def exchange() -> httpx.Response | None:  # None: the deadline passed while the body came
            with self.http.stream(
                method, self.url(path), json=json, params=params, data=_revealed(data), headers=headers
            ) as resp:
                chunks = []
                for chunk in resp.iter_bytes():  # each socket read ends by the deadline; so does the whole
                    chunks.append(chunk)
                    if bound.passed():  # a transport without sockets (MockTransport, TestClient)
                        return None  # raised below, so no frame of the error holds the partial body
            kept = [(k, v) for k, v in resp.headers.raw if k.lower() not in _DECODED]
            return httpx.Response(resp.status_code, headers=kept, content=b"".join(chunks), request=resp.request)

        resp = self._guarded(method, path, bound, exchange)
        if resp is None:
            raise _late(method, path, bound)
        log.debug("%s %s → %s", method, path, resp.status_code)
        return resp

    @staticmethod
    def _body(resp: httpx.Response) -> Any:
        if not resp.content:
            return {}
        try:
            return resp.json()
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser can go
            return {"message": resp.text[:300]}

    # -- the one request function ---------------------------------------------------------
    def request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None, auth: bool = True
    ) -> Any:
        """Send one request and return the parsed JSON answer, or raise a typed error."""
        sent = self.tokens.access_token if auth and self.tokens is not None else None
        resp = self._send(method, path, json=json, params=params, auth=auth)
        if resp.status_code == 401 and auth and self._should_refresh(resp):
            self.refresh(refused=sent)
            resp = self._send(method, path, json=json, params=params, auth=auth)
        return self._answer(method, path, resp)

    def stream_array(
        self, path: str, key: str, *, fingerprints: bool = False, known: Mapping[str, Any] | None = None
    ) -> StreamedArray:
        """GET `path` and hand out the elements of its answer's `key` array while the body is still
        arriving (so a large read can be worked on as it downloads); the answer's other members
        are in `.rest` once the elements are used up. Close it (it is a context manager).
        An error status is read whole and raised exactly as `request` raises it. `fingerprints` /
        `known`: see jsonstream.ArrayStream (`.fingerprints` once the elements are used up)."""
        sent = self.tokens.access_token if self.tokens is not None else None
        for attempt in (0, 1):
            headers = self._headers(True)
            head = Bound.start(self.deadline)  # the status line and headers: the plain deadline
            whole = Bound.start(self.deadline * STREAM_DEADLINES)  # the whole answer, headers included
            opened = self.http.stream("GET", self.url(path), headers=headers)
            resp = self._guarded("GET", path, head, opened.__enter__)
            log.debug("GET %s → %s (streamed)", path, resp.status_code)
            if resp.status_code == 200:
                out = StreamedArray(self, path, key, opened, resp, bound=whole)
                out.parser = ArrayStream(key, fingerprints=fingerprints, known=known)
                return out
            try:
                self._guarded("GET", path, whole, resp.read)
            finally:
                opened.__exit__(None, None, None)
            if attempt == 0 and resp.status_code == 401 and self._should_refresh(resp):
                self.refresh(refused=sent)
                continue
            return StreamedArray.whole(self._answer("GET", path, resp), key, path)  # raises for an error status
        raise AssertionError("unreachable")  # pragma: no cover

    def _answer(self, method: str, path: str, resp: httpx.Response) -> Any:
        if 300 <= resp.status_code < 400:  # redirects are not followed: what was done, if anything, is unknown
            raise TransportError(
                f"{method} {path}: answered {resp.status_code} (a redirect), which proves nothing was done; "
                "the outcome is unknown"
            )
        if resp.status_code < 400:
            try:  # a success that cannot be read is no success: like a lost answer, its outcome is unknown
                body = resp.json() if resp.content else {}
            except (ValueError, RecursionError):
                body = None
            if not isinstance(body, (dict, list)):
                raise TransportError(f"{method} {path}: the answer is not JSON; the outcome is unknown")
            return body
        body = self._body(resp)
        err = self._error(resp.status_code, body)
        if isinstance(err, RateLimited) and err.retry_after is None:
            err.retry_after = retry_after(resp.headers.get("retry-after"))  # a 429 that says when only in its header
        raise err

    def _should_refresh(self, resp: httpx.Response) -> bool:
        body = self._body(resp)
        if not isinstance(body, dict) or self.tokens is None or not self.tokens.refresh_token:
            return False
        return body.get("recovery") == "refresh" or body.get("code") in ("TOKEN_EXPIRED", "TOKEN_REPLACED")

    @staticmethod
    def _error(status: int, body: Any) -> APIError:
        err = error_from_response(status, body)
        if isinstance(err, TokenError):
            if err.recovery == "re_pair" or err.code == "TOKEN_REVOKED":
                err.message = (
                    "this connection was revoked (TOKEN_REVOKED: the owner ended it, or it was "
                    "unpaired): a new pairing is needed — run Connection.pair(...) again; it starts a "
                    "new connection that inherits nothing"
                )
            elif err.recovery == "continue":
                err.message = (
                    err.message or "this session of the connection ended"
                ) + " — continue the same connection (reconnect with the same client_id); do not pair anew"
        return err

    # -- OAuth token endpoint -------------------------------------------------------------
    def token_endpoint(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST /oauth/token form-encoded; returns (status, body) without raising on 4xx. A
        `Retry-After` header (in seconds) is read into `retry_after_seconds` when the body has none."""
        resp = self._send("POST", routes.TOKEN, data=form, auth=False)
        body = self._body(resp)
        body = body if isinstance(body, dict) else {}
        for name in ("access_token", "refresh_token"):  # held masked from here on
            if isinstance(body.get(name), str):
                body[name] = Secret(body[name])
        wait = retry_after(resp.headers.get("retry-after"))
        if "retry_after_seconds" not in body and wait is not None:
            body["retry_after_seconds"] = wait
        return resp.status_code, body

    def _newer_than(self, refused: Secret) -> Tokens | None:
        """Tokens newer than the `refused` access token: this Api's own (another thread refreshed)
        or the saved profile's (another process refreshed the same connection)."""
        if self.tokens is not None and self.tokens.access_token != refused:
            return self.tokens
        saved = self.saved_tokens() if self.saved_tokens is not None else None
        if saved is not None and saved.access_token != refused:
            return saved
        return None

    def refresh(self, refused: Secret | None = None) -> Tokens:
        """Refresh the access token with the refresh token, one refresh at a time across threads
        and — under `shared_lock`, a file lock beside the saved profile — across processes.
        `refused` is the access token a 401 refused: when a newer one is already at hand (this
        Api's, or the profile's, re-read under the lock), it is used and nothing is sent. The new
        tokens are saved (`persist`) before the lock is released, so the next process to take it
        finds them. A refresh answered `REFRESH_TOKEN_USED` / `TOKEN_REPLACED` takes the newer
        tokens the profile holds instead of giving up (another process rotated them)."""
        shared = self.shared_lock() if self.shared_lock is not None else contextlib.nullcontext()
        with self._refresh_lock, shared:
            held = self.tokens
            newer = self._newer_than(refused) if refused is not None else None
            if newer is held and held is not None:
                return held  # another thread refreshed while this one waited for the lock
            if newer is not None:
                self.tokens = newer
                log.info("using the newer saved token (%s)", secret_fingerprint(newer.access_token))
            else:
                self.tokens = self._renewed_or_saved(held)
            if self.persist is not None:
                self.persist(self.tokens)
        if self.on_tokens is not None:
            self.on_tokens(self.tokens)
        return self.tokens

    def _renewed_or_saved(self, held: Tokens | None) -> Tokens:
        try:
            renewed = self._renewed(held)
        except TokenError as exc:
            saved = self.saved_tokens() if self.saved_tokens is not None else None
            rotated = exc.code in ("REFRESH_TOKEN_USED", "TOKEN_REPLACED")
            if rotated and saved is not None and held is not None and saved.refresh_token != held.refresh_token:
                log.info("the refresh token was rotated elsewhere: using the saved newer tokens")
                return saved
            raise
        self.refreshes += 1
        log.info("token refreshed (%s)", secret_fingerprint(renewed.access_token))
        return renewed

    def _renewed(self, before: Tokens | None) -> Tokens:
        """`POST /oauth/token` with `grant_type=refresh_token`; the new Tokens or a typed error."""
        if before is None or not before.refresh_token:
            raise TokenError(401, "NO_REFRESH_TOKEN", "no refresh token: pair again", recovery="re_pair")
        status, body = self.token_endpoint(
            {"grant_type": REFRESH_GRANT, "refresh_token": before.refresh_token, "client_id": self.client_id}
        )
        if status >= 500:
            raise ServerError(status, body.get("code") or body.get("error"), "the token refresh failed", body=body)
        if 300 <= status < 400:
            raise TransportError(f"POST /oauth/token: answered {status} (a redirect); the refresh did not happen")
        if status != 200:
            code = body.get("code") or body.get("error") or "invalid_grant"
            if code == "TOKEN_REVOKED" or body.get("recovery") == "re_pair" or code == "invalid_grant":
                raise TokenError(
                    status,
                    code,
                    "the refresh token was refused: the connection is revoked or "
                    "its refresh token is no longer valid — a new pairing is needed "
                    "(Connection.pair(...))",
                    recovery="re_pair",
                    body=body,
                )
            raise self._error(status, body)
        return Tokens.from_response(body, previous=before)

    # -- RFC 8414 metadata and RFC 7009 revocation ---------------------------------------
    def metadata(self) -> dict[str, Any]:
        """The server's authorization-server metadata (read once)."""
        if self._metadata is None:
            body = self.request("GET", METADATA_PATH, auth=False)
            self._metadata = body if isinstance(body, dict) else {}
        return self._metadata

    def revoke(self) -> None:
        """End this connection at the server's revocation endpoint (RFC 7009): the refresh token is
        revoked (the access token when there is none), which ends the connection's tokens. A 200
        also answers a token the server no longer knows, so revoking twice is safe; afterwards this
        Api holds no token. A 5xx is a ServerError: the token may still be live, revoke again."""
        if self.tokens is None:
            raise TokenError(
                401, "NO_TOKEN", "this connection holds no token: there is nothing to revoke", recovery="re_pair"
            )
        endpoint = self.metadata().get("revocation_endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://", "/")):
            raise RevocationUnavailable(
                f"{self.base_url or 'the server'} advertises no revocation_endpoint: "
                "end this connection in the Decoy app (Connected Apps)"
            )
        why = self._unsafe_endpoint(endpoint)
        if why:
            raise RevocationUnavailable(
                f"the advertised revocation_endpoint {why}, so the token was not sent there: "
                "end this connection in the Decoy app (Connected Apps)"
            )
        t = self.tokens
        token, hint = (t.refresh_token, "refresh_token") if t.refresh_token else (t.access_token, "access_token")
        resp = self._send(
            "POST", endpoint, data={"token": token, "token_type_hint": hint, "client_id": self.client_id}, auth=False
        )
        if resp.status_code != 200:
            raise self._error(resp.status_code, self._body(resp))
        log.info("revoked the %s (%s)", hint, secret_fingerprint(token))
        self.tokens = None

    def _unsafe_endpoint(self, endpoint: str) -> str | None:
        """Why a token may not be sent to `endpoint` (None when it may): only to this connection's
        own origin, and over https unless that origin is a loopback address."""
        if endpoint.startswith("/") and not endpoint.startswith("//"):
            return None
        own, there = urllib.parse.urlsplit(self.base_url), urllib.parse.urlsplit(endpoint)
        if (there.scheme, there.hostname, there.port) != (own.scheme, own.hostname, own.port):
            return "is on another origin than the server"
        if there.scheme != "https" and not _loopback(there.hostname or ""):
            return "is not https"
        return None

    def close(self) -> None:
        if self._own_client:
            self.http.close()

    def __repr__(self) -> str:
        return f"<Api {self.base_url or '(in-process)'} {self.tokens!r}>"


class StreamedArray:
    """The elements of one array of a JSON answer, handed out as the body arrives (jsonstream);
    `rest` holds the answer's other members once iteration has finished. A dropped connection
    or a body that is not JSON is a TransportError (the read can simply be asked again)."""

    def __init__(
        self,
        api: Api | None,
        path: str,
        key: str,
        opened: Any = None,
        resp: httpx.Response | None = None,
        *,
        bound: Bound | None = None,
    ):
        self._api, self.path, self.key = api, path, key
        self._opened, self._resp = opened, resp
        self._bound = bound or Bound.start(300.0)
        self.rest: dict[str, Any] = {}
        self._elements: list[Any] | None = None
        self.parser = ArrayStream(key)

    @property
    def fingerprints(self) -> list[str | None] | None:
        """Per object element, the SHA-256 of its text as served (None for an answer read whole)."""
        return self.parser.fingerprints if self._elements is None else None

    @classmethod
    def whole(cls, body: Any, key: str, path: str = "") -> StreamedArray:
        """An answer that was read in one piece (not a streamed 200)."""
        out = cls(None, path, key)
        body = body if isinstance(body, dict) else {}
        if key not in body:
            raise out._missing()
        items = body[key]
        if not isinstance(items, list):
            raise out._not_a_list(items)
        out._elements = items
        out.rest = {k: v for k, v in body.items() if k != key}
        return out

    def _missing(self) -> TransportError:
        return TransportError(
            f"GET {self.path}: the answer has no {self.key} array (it is not an empty list); ask again"
        )

    def _not_a_list(self, value: Any) -> TransportError:
        kind = "null" if value is None else type(value).__name__
        return TransportError(f"GET {self.path}: the answer's {self.key} is {kind}, not a list; ask again")

    def __iter__(self) -> Iterator[Any]:
        if self._elements is not None:
            yield from self._elements
            return
        parser = self.parser
        assert self._api is not None and self._resp is not None
        head = bytearray()  # the body while no element has come: was the array there at all?
        chunks = self._resp.iter_bytes()
        try:
            while (chunk := self._api._guarded("GET", self.path, self._bound, lambda: next(chunks, None))) is not None:
                if not parser.count and len(head) < _HEAD_KEPT:
                    head += chunk
                yield from parser.feed(chunk)
                if self._bound.passed():  # a transport without sockets (MockTransport, TestClient)
                    raise _late("GET", self.path, self._bound)
            self.rest = parser.close()
        except ValueError as exc:
            raise TransportError(f"GET {self.path}: the answer is not JSON ({exc}); ask again") from None
        if self.key in self.rest:  # the member was there, and not an array
            raise self._not_a_list(self.rest[self.key])
        if not parser.count and not _has_member(bytes(head), self.key):
            raise self._missing()

    def close(self) -> None:
        if self._opened is not None:
            opened, self._opened = self._opened, None
            opened.__exit__(None, None, None)

    def __enter__(self) -> StreamedArray:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_HEAD_KEPT = 1 << 20


def _has_member(body: bytes, key: str) -> bool:
    """Whether a body that handed out no element names `key` (`[]`), or may (too long to keep)."""
    if len(body) >= _HEAD_KEPT:
        return True
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    return isinstance(parsed, dict) and key in parsed
