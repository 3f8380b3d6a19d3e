"""The proxy's own server towards the agents (agentside.py), over raw sockets: keep-alive and
pipelined requests, `Expect: 100-continue`, and what it refuses (a head too long or malformed, a
body framed two ways), each refusal closing that connection while the next is served."""

from __future__ import annotations

import socket

import pytest

from decoy_lab.inspector import Inspector

pytestmark = pytest.mark.timeout(60)


def _talk(url: str, data: bytes) -> bytes:
    """Send `data` on a new connection and read until the server closes it."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(data)
        got = b""
        while more := s.recv(65536):
            got += more
        return got


def test_pipelined_requests_on_one_connection_are_answered_in_order(upstream):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        three = (
            b"GET /anything HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            b"GET /anything HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        got = _talk(insp.url, three)  # read until the server closes, as the last one asked
    assert got.count(b"HTTP/1.1 200 OK\r\n") == 3 and got.index(b'{"ok": true}') < got.index(b'"size": 3')
    assert got.rstrip().endswith(b'{"ok": true}') and b"connection: close" in got
    assert [(m, p, n) for m, p, n in app.seen] == [
        ("GET", "/anything", 0),
        ("POST", "/echo", 3),
        ("GET", "/anything", 0),
    ]


def test_an_agent_that_expects_100_continue_gets_it_before_sending_its_body(upstream):
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        host, port = insp.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"  # as curl waits for, before its body
            s.sendall(b"hello")
            answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200 OK") and b'"size": 5' in answer


@pytest.mark.parametrize(
    "head",
    [
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc",
        b"GET /anything HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"y" * 20_000 + b"\r\n\r\n",
        b"NOT HTTP AT ALL\r\n\r\n",
    ],
    ids=["length-and-chunked", "two-lengths", "head-too-long", "not-http"],
)
def test_what_is_refused_gets_400_is_never_sent_upstream_and_the_next_is_served(upstream, client, head):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        got = _talk(insp.url, head)
        assert got.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"connection: close" in got
        assert client.get(f"{insp.url}/anything").json() == {"ok": True}
    assert [p for _m, p, _n in app.seen] == ["/anything"]
