"""The bearer token on every request, and its refresh on a 401, as one `httpx.Auth` flow.

`Bearer(api)` is made for one call: it reads the connection's token then (a call without one, or
with one a Bearer header cannot carry, is refused before anything is sent) and its `auth_flow`
sends the request with it. A 401 that means the token expired (`recovery: refresh`,
`TOKEN_EXPIRED`, `TOKEN_REPLACED`, and a refresh token at hand) refreshes once, through
`api.refresh` (one refresh at a time), and sends the same request again with the new token; any
other 401, or a second one, is the call's answer. Each request, streamed or not, goes through it.

A 401's body is read here (it is small, and says whether the token expired); any other answer is
left unread, so a streamed 200 still streams (`requires_response_body` stays False). A refresh
that fails is not raised inside httpx's frames, whose locals hold the request, token included:
the flow ends, and the caller raises `failure`.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any, Protocol

import httpx

from decoy_lab.errors import DecoyError, TokenError
from decoy_lab.secret import Secret
from decoy_lab.transport.answers import body_of
from decoy_lab.transport.deadline import Bound
from decoy_lab.transport.tokens import Tokens, is_bearer_token

log = logging.getLogger(__name__)


class Refreshing(Protocol):
    """What the flow needs of the client: its tokens, and the one way to refresh them."""

    tokens: Tokens | None

    def refresh(self, refused: Secret | None = None) -> Tokens: ...


def bearer(tokens: Tokens | None) -> Secret:
    """The Authorization header's value for `tokens`, or the error saying why there is none."""
    if tokens is None:
        raise TokenError(401, "NO_TOKEN", "this connection has no token yet: pair first", recovery="re_pair")
    if not is_bearer_token(tokens.access_token.reveal()):  # e.g. a hand-edited profile
        raise DecoyError("the saved access token holds characters a Bearer token cannot carry: pair again")
    return Secret(f"Bearer {tokens.access_token.reveal()}")


def expired(body: Any, tokens: Tokens | None) -> bool:
    """Whether a 401's body says the token expired and a refresh can renew it."""
    if not isinstance(body, dict) or tokens is None or not tokens.refresh_token:
        return False
    return body.get("recovery") == "refresh" or body.get("code") in ("TOKEN_EXPIRED", "TOKEN_REPLACED")


def _again(request: httpx.Request) -> httpx.Request:
    """The same request (method, URL, headers, body and extensions) as a new one, to send again."""
    return httpx.Request(
        request.method, request.url, headers=request.headers, stream=request.stream, extensions=dict(request.extensions)
    )


class Bearer(httpx.Auth):
    """One call's bearer token, refreshed once on a 401 that means it expired. `restarts`: the
    call's deadlines, begun again when the request is sent again (as for a new call)."""

    requires_response_body = False  # a streamed 200 is never read here; a 401 is (auth_flow)

    def __init__(self, api: Refreshing, *, restarts: tuple[Bound, ...] = ()):
        self._api, self.restarts = api, restarts
        self._sent = api.tokens.access_token if api.tokens is not None else None
        self._header = bearer(api.tokens)  # refused here, before anything is sent
        self.failure: Exception | None = None  # why the refresh failed: the caller raises it

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        for attempt in (0, 1):  # a second 401 is the answer: the token is refreshed once per call
            request.headers["Authorization"] = self._header.reveal()  # the one place the token is revealed
            response = yield request
            if attempt or not self._renewed(request, response):
                return
            request = _again(request)  # a new request: the one sent stays as it was sent

    def _renewed(self, request: httpx.Request, response: httpx.Response) -> bool:
        """Whether `response` is a 401 for an expired token that is now refreshed (the header then
        holds the new one, and the deadlines begin again)."""
        if response.status_code != 401:
            return False
        response.read()
        if not expired(body_of(response), self._api.tokens):
            return False
        log.debug("%s %s → 401 (the token expired): refreshing", request.method, request.url.path)
        self.failure = self._refreshed()
        if self.failure is not None:
            return False
        for bound in self.restarts:
            bound.restart()
        return True

    def _refreshed(self) -> Exception | None:
        """Refresh the refused token: None once the new one is in the header, or the error, which
        the caller raises outside httpx's frames (its traceback starts here: no request in it)."""
        try:
            self._header = bearer(self._api.refresh(refused=self._sent))
        except Exception as exc:
            return exc
        return None

    def __repr__(self) -> str:
        return f"<Bearer {self._header!r}>"
