"""A token refresh whose answer is lost on the way is sent again, and the connection carries on.

"A network failure after a write is resolved by resending" — a refresh is a write: the sandbox
rotates the refresh token when it commits. A proxy transport lets the refresh reach the sandbox
and drops its answer; the client's call that needed the refresh must still succeed, on the same
connection, without a new pairing.
"""

from __future__ import annotations

import httpx

from decoy_lab.client.connection import Connection

YEAR = 365 * 86400


class DropFirstRefreshAnswer(httpx.BaseTransport):
    def __init__(self):
        self.inner = httpx.HTTPTransport()
        self.refreshes = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if request.url.path == "/oauth/token" and b"grant_type=refresh_token" in request.content:
            self.refreshes += 1
            if self.refreshes == 1:
                resp.read()
                raise httpx.ReadError("connection reset after the server committed the refresh")
        return resp

    def close(self) -> None:
        self.inner.close()


def test_the_refresh_is_sent_again_and_the_call_succeeds(clocked_sb, clock):
    proxy = DropFirstRefreshAnswer()
    conn = Connection.pair(
        clocked_sb.url,
        name="lost refresh",
        permissions=["memory.read", "memory.save"],
        profile=None,
        on_link=lambda link, code: None,
        http=httpx.Client(transport=proxy),
    )
    conn.backoff = 0.0
    token_id = conn.tokens.token_id
    clock.advance(YEAR + 1)  # the access token has expired: the next call refreshes first
    vault = conn.load()
    assert vault.counts()["memories"] == 0
    assert proxy.refreshes == 2, "the same refresh was sent again after its answer was lost"
    assert conn.tokens.token_id == token_id, "the same connection, not a new pairing"
    assert conn.access().memory["save"], "and its access is the one it had"
