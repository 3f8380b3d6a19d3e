"""The proxy's own client towards the upstream (upstream.py), through the proxy over real HTTP:
request bodies of every framing arrive whole, a HEAD answer has no body to wait for, and the
upstream connection is kept alive between exchanges."""

from __future__ import annotations

import hashlib
import os

import httpx

from decoy_lab.inspector import Inspector, flow_record


def test_request_bodies_of_every_framing_and_a_head_pass_through(upstream, client):
    url, app = upstream
    body = os.urandom(200_000)
    echo = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}

    def pieces():
        for i in range(0, len(body), 30_000):
            yield body[i : i + 30_000]

    with Inspector.start(upstream=url) as insp:
        assert client.post(f"{insp.url}/echo", content=pieces()).json() == echo  # no length: sent chunked
        assert client.post(f"{insp.url}/echo", content=body).json() == echo
        head = client.head(f"{insp.url}/anything")
        assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == "12"
        assert client.get(f"{insp.url}/anything").json() == {"ok": True}  # the connection after a HEAD
        insp.settle()
        flows = insp.all_flows()
    assert [(m, p, n) for m, p, n in app.seen] == [
        ("POST", "/echo", 200_000),
        ("POST", "/echo", 200_000),
        ("HEAD", "/anything", 0),
        ("GET", "/anything", 0),
    ]
    assert [f.request_body.size for f in flows] == [200_000, 200_000, 0, 0]
    assert flows[0].request_body.data == flows[1].request_body.data == body
    assert flows[0].header("transfer-encoding") == "chunked" and flows[1].header("content-length") == "200000"
    assert all(f.ended == flow_record.ANSWERED for f in flows)


def test_the_upstream_connection_is_kept_alive_between_exchanges(upstream):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        for _ in range(5):  # each on a new agent connection: the upstream one is reused all the same
            with httpx.Client(trust_env=False) as c:
                assert c.get(f"{insp.url}/anything").json() == {"ok": True}
    assert len(app.peers) == 5 and len(set(app.peers)) == 1
