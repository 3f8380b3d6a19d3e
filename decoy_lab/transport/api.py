"""The one httpx client of a connection: `Api` sends each request with this connection's token.

What an answer means is decided in answers.py (a value or a typed error from errors.py, and
nowhere else); the tokens are tokens.py's; the bearer header and the refresh a 401 calls for are
auth.py's flow, the one place a call is sent again with a new token; a large answer is read as it
arrives by streams.py.

Token handling follows the spec: a 401 with `recovery: refresh` (`TOKEN_EXPIRED`,
`TOKEN_REPLACED`) refreshes once and repeats the call — unless another thread, or another process
sharing the saved profile (`saved_tokens`), already holds a newer access token: that one is used,
because refreshing again would replace it. `TOKEN_REVOKED` (`recovery: re_pair`) is a `TokenError`
that says a new pairing is needed. `revoke` ends the connection at the server's RFC 7009
revocation endpoint, found in its RFC 8414 metadata.
The retry rule for writes lives in retry.py's `send_with_retries`: an unknown outcome resends the SAME
body, a definite refusal is never retried, a 429 waits `retry_after_seconds`, and `REVIEW_BUSY`
("send this one again") is resent after a short backoff.

Every call has an overall deadline (`deadline`, the timeout by default; the body of a streamed read
gets `STREAM_DEADLINES` times it, and ends sooner when no new row comes within the deadline) that
every socket connect, read and write keeps (deadline.py): a server that drips its headers, its
body or whitespace a byte at a time ends in a TransportError, not a hang.

Logging names the method, path and status only: never a header, a body or a token.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

import httpx

from decoy_lab.errors import RevocationUnavailable, ServerError, TokenError, TransportError
from decoy_lab.secret import Secret, secret_fingerprint
from decoy_lab.transport import routes
from decoy_lab.transport.answers import (
    answer_of,
    body_of,
    error_of,
    expect_object,
    guarded,
    is_unknown_outcome,
    late,
    retry_after,
)
from decoy_lab.transport.auth import Bearer
from decoy_lab.transport.deadline import Bound, bind
from decoy_lab.transport.jsonstream import Known
from decoy_lab.transport.streams import STREAM_DEADLINES, StreamedArray, array_of
from decoy_lab.transport.tokens import Tokens
from decoy_lab.vocab import REFRESH_GRANT

# Other layers import these from here too.
__all__ = ["METADATA_PATH", "STREAM_DEADLINES", "USER_AGENT", "Api", "Tokens", "expect_object", "is_unknown_outcome"]

log = logging.getLogger(__name__)
_ACCEPT = httpx.Headers({"Accept": "application/json"})
_DECODED = (b"content-encoding", b"content-length", b"transfer-encoding")  # the body is held decoded

METADATA_PATH = routes.METADATA
USER_AGENT = "decoy-lab/0.1 (+python-httpx)"


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


class TokenStore(Protocol):
    """Where a saved connection's tokens live between processes (client/saved.py's `Saved`)."""

    def saved_tokens(self) -> Tokens | None:
        """The tokens saved now (another process may have refreshed them); None without any."""

    def save_tokens(self, tokens: Tokens) -> None:
        """Save new tokens (called while `lock()` is held)."""

    def lock(self) -> contextlib.AbstractContextManager[Any]:
        """A lock shared by every process using the same saved connection."""


class Api:
    """Sends requests to one Decoy server with this connection's token.

    `http` may be any `httpx.Client` (a Starlette `TestClient` runs the sandbox in-process);
    `transport` builds a client on that transport (e.g. `httpx.MockTransport`).
    `keep_tokens(store, on_tokens)` ties it to where a saved connection's tokens live
    (`TokenStore`: the tokens saved now, saving new ones while the refresh still holds the store's
    lock, shared by every process using the profile); `on_tokens(tokens)` is called after every
    refresh.
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
        self.token_store: TokenStore | None = None
        self._metadata: dict[str, Any] | None = None
        self._refresh_lock = threading.Lock()
        self.refreshes = 0  # how many times the token was refreshed (shown in status, checked in tests)

    # -- plumbing -------------------------------------------------------------------------
    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}{path}" if self.base_url else path

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        bearer: Bearer | None = None,
    ) -> httpx.Response:
        bound = Bound.start(self.deadline)
        if bearer is not None:
            bearer.restarts = (bound,)  # sent again after a refresh, it has a new call's deadline

        def exchange() -> httpx.Response | None:  # None: the deadline passed while the body came
            with self.http.stream(
                method,
                self.url(path),
                json=json,
                params=params,
                data=_revealed(data),
                headers=_ACCEPT,
                auth=bearer if bearer is not None else httpx.USE_CLIENT_DEFAULT,
            ) as resp:
                chunks = []
                for chunk in resp.iter_bytes():  # each socket read ends by the deadline; so does the whole
                    chunks.append(chunk)
                    if bound.passed():  # a transport without sockets (MockTransport, TestClient)
                        return None  # raised below, so no frame of the error holds the partial body
            kept = [(k, v) for k, v in resp.headers.raw if k.lower() not in _DECODED]
            return httpx.Response(resp.status_code, headers=kept, content=b"".join(chunks), request=resp.request)

        resp = guarded(method, path, bound, exchange, self.base_url)
        if bearer is not None and bearer.failure is not None:
            raise bearer.failure  # the refresh a 401 called for failed
        if resp is None:
            raise late(method, path, bound)
        log.debug("%s %s → %s", method, path, resp.status_code)
        return resp

    # -- the one request function ---------------------------------------------------------
    def request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None, auth: bool = True
    ) -> Any:
        """Send one request and return the parsed JSON answer, or raise a typed error."""
        bearer = Bearer(self) if auth else None  # the token it is sent with, refreshed once if it expired
        return answer_of(method, path, self._send(method, path, json=json, params=params, bearer=bearer))

    def stream_array(
        self, path: str, key: str, *, fingerprints: bool = False, known: Known | None = None
    ) -> StreamedArray:
        """GET `path` and hand out the elements of its answer's `key` array while the body is still
        arriving (so a large read can be worked on as it downloads); the answer's other members
        are in `.rest` once the elements are used up. Close it (it is a context manager).
        An error status is read whole and raised exactly as `request` raises it. `fingerprints` /
        `known`: see jsonstream.ArrayStream (`.fingerprints` once the elements are used up)."""
        head = Bound.start(self.deadline)  # the status line and headers: the plain deadline
        whole = Bound.start(self.deadline * STREAM_DEADLINES)  # the whole answer, headers included
        bearer = Bearer(self, restarts=(head, whole))
        opened = self.http.stream("GET", self.url(path), headers=_ACCEPT, auth=bearer)
        resp = guarded("GET", path, head, opened.__enter__, self.base_url)
        log.debug("GET %s → %s (streamed)", path, resp.status_code)
        if bearer.failure is not None:  # the refresh a 401 called for failed
            opened.__exit__(None, None, None)
            raise bearer.failure
        return array_of(
            self.base_url, path, key, opened, resp, whole, fingerprints=fingerprints, known=known, stall=self.deadline
        )

    # -- OAuth token endpoint -------------------------------------------------------------
    def token_endpoint(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST /oauth/token form-encoded; returns (status, body) without raising on 4xx. A
        `Retry-After` header (in seconds) is read into `retry_after_seconds` when the body has none."""
        resp = self._send("POST", routes.TOKEN, data=form)
        body = body_of(resp)
        body = body if isinstance(body, dict) else {}
        for name in ("access_token", "refresh_token"):  # held masked from here on
            if isinstance(body.get(name), str):
                body[name] = Secret(body[name])
        wait = retry_after(resp.headers.get("retry-after"))
        if "retry_after_seconds" not in body and wait is not None:
            body["retry_after_seconds"] = wait
        return resp.status_code, body

    def keep_tokens(self, store: TokenStore | None, on_tokens: Callable[[Tokens], None] | None = None) -> None:
        """Refresh through `store` (None: this process alone holds the tokens); `on_tokens` after each."""
        self.token_store, self.on_tokens = store, on_tokens

    def _saved_tokens(self) -> Tokens | None:
        return self.token_store.saved_tokens() if self.token_store is not None else None

    def _newer_than(self, refused: Secret) -> Tokens | None:
        """Tokens newer than the `refused` access token: this Api's own (another thread refreshed)
        or the saved profile's (another process refreshed the same connection)."""
        if self.tokens is not None and self.tokens.access_token != refused:
            return self.tokens
        saved = self._saved_tokens()
        if saved is not None and saved.access_token != refused:
            return saved
        return None

    def refresh(self, refused: Secret | None = None) -> Tokens:
        """Refresh the access token with the refresh token, one refresh at a time across threads
        and — under the token store's lock, a file lock beside the saved profile — across processes.
        `refused` is the access token a 401 refused: when a newer one is already at hand (this
        Api's, or the profile's, re-read under the lock), it is used and nothing is sent. The new
        tokens are saved (`save_tokens`) before the lock is released, so the next process to take it
        finds them. A refresh answered `REFRESH_TOKEN_USED` / `TOKEN_REPLACED` takes the newer
        tokens the profile holds instead of giving up (another process rotated them)."""
        shared = self.token_store.lock() if self.token_store is not None else contextlib.nullcontext()
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
            if self.token_store is not None:
                self.token_store.save_tokens(self.tokens)
        if self.on_tokens is not None:
            self.on_tokens(self.tokens)
        return self.tokens

    def _renewed_or_saved(self, held: Tokens | None) -> Tokens:
        try:
            renewed = self._renewed(held)
        except TokenError as exc:
            saved = self._saved_tokens()
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
            raise error_of(status, body)
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
        resp = self._send("POST", endpoint, data={"token": token, "token_type_hint": hint, "client_id": self.client_id})
        if resp.status_code != 200:
            raise error_of(resp.status_code, body_of(resp))
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
