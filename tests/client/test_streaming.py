"""load() opens rows while the answer is still arriving, and a body cut off mid-way is read again.

A proxy transport sits between the client and a real sandbox and controls how the body of
`GET /api/agent/context/memories` arrives: in two halves with a gate between them, cut off by a
dropped connection, or cut short.
"""

from __future__ import annotations

import threading

import httpx
import pytest

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, TransportError

MEMORIES = "/api/agent/context/memories"
N = 40


class Body(httpx.SyncByteStream):
    def __init__(self, halves: list[bytes], between):
        self.halves, self.between = halves, between

    def __iter__(self):
        yield self.halves[0]
        self.between()
        yield self.halves[1]


class Proxy(httpx.BaseTransport):
    """Forwards to the sandbox; the memories answer arrives in two halves, `between()` running
    after the first (it may wait, or raise as a dropped connection would)."""

    def __init__(self, between, *, cut: float = 0.5, times: int | None = None, truncate: bool = False):
        self.inner = httpx.HTTPTransport()
        self.between, self.cut, self.times, self.truncate = between, cut, times, truncate
        self.gets = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if request.method != "GET" or request.url.path != MEMORIES:
            return resp
        resp.read()
        self.gets += 1
        if self.times is not None and self.gets > self.times:
            return httpx.Response(resp.status_code, headers=resp.headers, content=resp.content)
        data = resp.content
        at = int(len(data) * self.cut)
        rest = b"" if self.truncate else data[at:]
        return httpx.Response(
            200, headers={"content-type": "application/json"}, stream=Body([data[:at], rest], self.between)
        )

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def saved(sb):
    conn = Connection.pair(
        sb.url,
        name="streaming",
        permissions=["memory.read", "memory.save"],
        profile=None,
        on_link=lambda link, code: None,
    )
    keys = conn.keys()
    rows = [memory.new_memory_row(keys, f"streamed memory {i}") for i in range(N)]
    conn.session.send("POST", MEMORIES, {"rows": rows})
    yield conn
    conn.close()


def _through(conn, proxy) -> Connection:
    return Connection(
        conn.base_url,
        agent_key=conn.agent_key,
        tokens=conn.tokens,
        http=httpx.Client(transport=proxy),
        retries=2,
        backoff=0.0,
    )


def test_rows_are_opened_before_the_answer_has_finished_arriving(saved):
    """The second half of the body is held back until a row of the first half has been read: a
    client that waited for the whole answer would never get it (the gate gives up after 20 s)."""
    opened = threading.Event()
    waited: list[bool] = []
    proxy = Proxy(lambda: waited.append(opened.wait(20)), cut=0.75)  # 30 rows: more than a pool task takes
    vault = _through(saved, proxy).load(progress=lambda n, total: opened.set())
    assert waited == [True], "no row was opened while the second half of the answer was held back"
    assert vault.counts()["memories"] == N and not vault.unreadable()


def test_a_connection_dropped_mid_body_is_read_again(saved):
    """A read is safe to repeat: a body cut off by a network error is asked for again, and the
    vault holds every row once."""

    def drop():
        raise httpx.ReadError("connection reset mid-body")

    proxy = Proxy(drop, times=1)
    vault = _through(saved, proxy).load()
    assert proxy.gets == 2
    assert vault.counts()["memories"] == N and len(vault.served) == N


def test_an_answer_cut_short_is_a_transport_error_after_the_retries(saved):
    """A body that ends inside the JSON is never taken for a shorter vault."""
    proxy = Proxy(lambda: None, cut=0.6, truncate=True)
    with pytest.raises(TransportError, match="not JSON"):
        _through(saved, proxy).load()
    assert proxy.gets == 3, "asked again twice (retries=2), then reported"


def test_a_refused_read_is_raised_as_the_api_error(saved):
    """An error status is read whole and raised as any other call raises it."""
    conn = Connection(saved.base_url, agent_key=saved.agent_key, tokens=type(saved.tokens)(access_token="nope"))
    with pytest.raises(APIError) as got:
        conn.load()
    assert got.value.status == 401


def _api_answering(answers: dict[str, list[httpx.Response]], seen: list[httpx.Request]):
    from decoy_lab.transport.api import Api
    from decoy_lab.transport.tokens import Tokens

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        queue = answers[request.url.path]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    api = Api("http://decoy.invalid", transport=httpx.MockTransport(handler))
    api.tokens = Tokens("at-OLD", "rt-OLD", "tok-1")
    return api


EXPIRED = {"code": "TOKEN_EXPIRED", "recovery": "refresh"}


def test_a_streamed_read_refreshes_an_expired_token_once_and_asks_again():
    """The same refresh-on-401 as every other call: one refresh, the same GET with the new token."""
    seen: list[httpx.Request] = []
    api = _api_answering(
        {
            MEMORIES: [httpx.Response(401, json=EXPIRED), httpx.Response(200, json={"memories": [1, 2], "x": 3})],
            "/oauth/token": [httpx.Response(200, json={"access_token": "at-NEW", "refresh_token": "rt-NEW"})],
        },
        seen,
    )
    with api.stream_array(MEMORIES, "memories") as answer:
        assert list(answer) == [1, 2] and answer.rest == {"x": 3}
    gets = [r.headers["authorization"] for r in seen if r.url.path == MEMORIES]
    assert gets == ["Bearer at-OLD", "Bearer at-NEW"] and api.refreshes == 1


def test_a_streamed_read_answered_401_again_is_not_refreshed_twice():
    seen: list[httpx.Request] = []
    api = _api_answering(
        {
            MEMORIES: [httpx.Response(401, json=EXPIRED)],
            "/oauth/token": [httpx.Response(200, json={"access_token": "at-NEW", "refresh_token": "rt-NEW"})],
        },
        seen,
    )
    with pytest.raises(APIError) as got:
        api.stream_array(MEMORIES, "memories")
    assert got.value.status == 401 and api.refreshes == 1
    assert [r.url.path for r in seen] == [MEMORIES, "/oauth/token", MEMORIES]


def test_a_failed_refresh_of_a_streamed_read_is_its_error_with_no_httpx_frame():
    """The refresh's own error is raised, outside httpx's frames (their locals hold the request)."""
    seen: list[httpx.Request] = []
    api = _api_answering(
        {MEMORIES: [httpx.Response(401, json=EXPIRED)], "/oauth/token": [httpx.Response(500, json={"code": "BOOM"})]},
        seen,
    )
    with pytest.raises(APIError) as got:
        api.stream_array(MEMORIES, "memories")
    assert got.value.status == 500
    frames = [tb.tb_frame.f_code.co_filename for tb in _walk(got.value.__traceback__)]
    assert not [f for f in frames if "/httpx/" in f or "/httpcore/" in f]


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next
