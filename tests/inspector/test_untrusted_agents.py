"""The proxy faces agents nobody reviewed: each attack here is one an agent made, over raw sockets.

A request llhttp does not read as exactly one request is refused before it is sent upstream (the
smuggling that once stole another agent's token); a slow crowd cannot starve a real agent; a huge
chunk streams through without being held.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from decoy_lab.inspector import Inspector
from decoy_lab.inspector.proxy_process import ProxyProcess
from decoy_lab.inspector.recorder import Recorder

pytestmark = pytest.mark.timeout(120)


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _until_closed(s: socket.socket) -> bytes:
    got = b""
    while more := s.recv(65536):
        got += more
    return got


def test_a_smuggled_request_never_reaches_the_sandbox_and_no_token_is_stolen(sandbox, insp, client, pair, agent_key):
    """The attack as it was made: a bare LF hides `Transfer-Encoding: chunked` inside a header the
    proxy once passed on whole; the sandbox's parser then read the body `0` as the end and a
    half-sent `POST /_sandbox/accounts` as the start of the next request, so the next agent's
    request on the pooled connection became that form and its token an account's name."""
    smuggled = (
        b"POST /api/agent/policies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 91\r\n"
        b"X-A: x\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\nPOST /_sandbox/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 400\r\n\r\nservice_name="
    )
    with _connect(insp.url) as attacker:
        attacker.sendall(smuggled)
        got = _until_closed(attacker)
    assert got.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"connection: close" in got
    victim = pair(insp.url, agent_key, "Victim")
    answer = client.get(f"{insp.url}/api/agent/policies", headers={"Authorization": f"Bearer {victim['access_token']}"})
    assert answer.status_code == 200
    accounts = client.get(f"{sandbox.url}/_sandbox/accounts").json()
    assert victim["access_token"] not in str(accounts) and "Bearer" not in str(accounts)
    insp.settle()
    assert all(f.path != "/_sandbox/accounts" for f in insp)
    assert [f.path for f in insp if f.path == "/api/agent/policies"] == ["/api/agent/policies"]  # one, the victim's


@pytest.mark.parametrize(
    "head",
    [
        b"GET /anything HTTP/1.1\r\nHost: x\r\nX-A: x\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET /anything HTTP/1.1\nHost: x\n\n",
        b"GET /anything HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        b"GET /anything HTTP/1.1\r\nHost: x\r\nX-A: a\x1b]0;PWNED\x07b\r\n\r\n",
        b"GET /anything HTTP/1.1\r\nHost: x\r\nX\x01A: a\r\n\r\n",
        b"GET /any\x1bthing HTTP/1.1\r\nHost: x\r\n\r\n",
        b"$(touch${IFS}PWNED) /anything HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /anything HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    ],
    ids=[
        "bare-lf-in-a-value",
        "bare-lf-lines",
        "obs-fold",
        "chunked-and-length",
        "two-equal-lengths",
        "escape-in-a-value",
        "control-in-a-name",
        "escape-in-the-target",
        "shell-in-the-method",
        "two-hosts",
        "bare-lf-chunks",
        "chunked-not-last",
    ],
)
def test_what_is_not_one_well_framed_request_is_refused_and_never_forwarded(upstream, client, head):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        with _connect(insp.url) as s:
            s.sendall(head)
            got = _until_closed(s)
        assert got.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"connection: close" in got
        assert client.get(f"{insp.url}/anything").json() == {"ok": True}  # the next agent is served
        insp.settle()
        assert [f.path for f in insp] == ["/anything"]  # the refused one is no flow: nothing went up
    assert [p for _m, p, _n in app.seen] == ["/anything"]


def test_a_crowd_of_slow_bodies_cannot_starve_an_agent_and_a_stalled_body_is_cut(upstream, client):
    """Bounded in count and time: eight connections send a head and a few bytes of a 1,000-byte
    body, then nothing, filling the proxy's eight places; a real request still gets its answer
    (the longest-stalled one is closed for it), and every stalled body is closed at its deadline."""
    url, app = upstream
    limits = {"max_connections": 8, "body_timeout": 1.0}
    served = ProxyProcess(Recorder(), url, limits=limits)
    slow = []
    before = len(app.started)
    try:
        for _ in range(8):
            s = _connect(served.url)
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
            slow.append(s)
        deadline = time.monotonic() + 10  # until the proxy has taken them all in and begun passing each on
        while app.started[before:].count(("POST", "/echo")) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert app.started[before:].count(("POST", "/echo")) == 8, app.started[before:]
        t0 = time.monotonic()
        assert client.get(f"{served.url}/anything").json() == {"ok": True}
        for s in slow:  # each closed (evicted, or at its body deadline), none answered as if whole
            s.settimeout(5)
            assert not _until_closed(s).startswith(b"HTTP/1.1 200")
        # docs/security.md "a body may go 10 s without a byte" (1 s here): each is closed, with
        # 4 s of slack for two busy cores
        assert time.monotonic() - t0 < 1 + 4
        assert ("GET", "/anything", 0) in app.seen
        assert not any(p == "/echo" and n == 1000 for _m, p, n in app.seen)  # no cut body went up whole
    finally:
        for s in slow:
            s.close()
        served.stop()


def test_a_stalled_body_is_closed_at_its_deadline(upstream):
    url, _app = upstream
    served = ProxyProcess(Recorder(), url, limits={"body_timeout": 1.0})
    try:
        with _connect(served.url) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
            t0 = time.monotonic()
            s.settimeout(10)
            got = _until_closed(s)
            waited = time.monotonic() - t0
        # docs/security.md: "a body may go 10 s without a byte" (1 s here): not before, and closed
        # with 7 s of slack for two busy cores
        assert 0.9 <= waited < 1 + 7 and not got.startswith(b"HTTP/1.1 200")
    finally:
        served.stop()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the proxy's RSS from /proc")
def test_one_200_mib_chunk_streams_through_without_being_held(upstream):
    """One chunk of 200 MiB once took the proxy's process from 46 MB to 456 MB (it was read whole);
    llhttp hands it on piece by piece, so the proxy holds about a read buffer's worth of it."""
    url, app = upstream
    size = 200 * 1024 * 1024
    with Inspector.start(upstream=url) as insp:
        pid = insp._served.pid  # type: ignore[union-attr]
        before = _rss(pid)
        peak = before
        piece = b"z" * (1024 * 1024)
        with _connect(insp.url) as s:
            s.sendall(b"POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % size)
            for i in range(200):
                s.sendall(piece)
                if i % 20 == 0:
                    peak = max(peak, _rss(pid))
            s.sendall(b"\r\n0\r\n\r\n")
            s.settimeout(60)
            answer = s.recv(65536)
        peak = max(peak, _rss(pid))
    assert answer.startswith(b"HTTP/1.1 200") and b'"size": %d' % size in answer
    assert peak - before < 64 * 1024 * 1024, f"the proxy grew by {(peak - before) / 2**20:.0f} MiB"
    assert ("POST", "/count", size) in app.seen
