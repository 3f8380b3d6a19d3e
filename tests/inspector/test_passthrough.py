"""Through the inspector a client gets exactly what it gets direct, and every exchange is recorded."""

from __future__ import annotations

import httpx
import pytest

from decoy_lab import Connection
from decoy_lab.inspector import Flow, flow_record

pytestmark = pytest.mark.timeout(120)


def test_a_connection_pairs_saves_and_loads_through_the_inspector(sandbox, insp, agent_key, client):
    conn = Connection.pair(insp.url, name="Proxied agent", agent_key=agent_key, profile=None, on_link=lambda *a: None)
    try:
        conn.save("Prefers short answers.")
        vault = conn.load()
        assert "Prefers short answers." in list(vault.memories["text"])
        token = conn.tokens.access_token.reveal()
    finally:
        conn.close()
    head = {"Authorization": f"Bearer {token}"}
    direct = client.get(f"{sandbox.url}/api/agent/context/memories", headers=head)
    proxied = client.get(f"{insp.url}/api/agent/context/memories", headers=head)
    assert direct.status_code == proxied.status_code == 200
    assert proxied.content == direct.content  # byte for byte
    assert proxied.headers["content-type"] == direct.headers["content-type"]
    insp.settle()
    flows = insp.flows
    assert list(flows["id"]) == list(range(1, len(flows) + 1))
    assert {"/oauth/device", "/oauth/token", "/api/agent/context/memories"} <= set(flows["path"])
    assert set(flows["ended"]) == {flow_record.ANSWERED}
    paired = flows[flows["path"].str.startswith("/api/agent/")]
    assert set(paired["agent"]) == {"Proxied agent"}  # named by its pairing, through its tokens
    saves = [f for f in insp if f.method == "POST" and f.path == "/api/agent/context/memories"]
    assert saves and saves[0].verdict == flow_record.READABLE
    rows = insp.rows(saves[0])
    assert list(rows["text"]) == ["Prefers short answers."] and list(rows["verdict"]) == ["readable"]
    assert rows["field"][0] == "request.rows[0]"
    last = insp.flow(len(insp))
    assert last.response_body.data == direct.content and not last.response_body.truncated
    assert [r.text for r in last.rows] == ["Prefers short answers."]  # the read, opened with the agent's key
    assert all(r.opened_by == "agent key" for r in last.rows)
    trace = last.rows[0].recipe_trace()
    assert trace is not None and trace.ok


def test_keep_alive_chunked_and_streamed_answers_pass_through(upstream, client):
    from decoy_lab.inspector import Inspector

    url, _app = upstream
    with Inspector.start(upstream=url) as insp, httpx.Client(base_url=insp.url, timeout=10, trust_env=False) as c:
        for _ in range(3):  # one connection, kept alive
            assert c.get("/anything").json() == {"ok": True}
        with c.stream("GET", "/chunked") as r:
            assert r.headers.get("transfer-encoding") == "chunked" and "content-length" not in r.headers
            parts = list(r.iter_raw())
        assert b"".join(parts) == b"".join(f"part {i}\n".encode() for i in range(5))
        drip = c.get("/drip")
        assert drip.text.count("part") == 5
        big = c.get("/big", params={"n": 300_000})
        assert big.content == b"x" * 300_000
        insp.settle()
        flows = insp.all_flows()
        assert [f.status for f in flows] == [200] * 6
        assert flows[3].response_body.data == b"".join(parts)
        assert flows[4].timings.done - flows[4].timings.first_byte >= 300  # dripped: recorded as it came
        assert flows[5].response_body.size == 300_000
        assert all(isinstance(f, Flow) and f.ended == flow_record.ANSWERED for f in flows)


def test_pairing_passes_through_and_the_owner_surface_does_not(sandbox, insp, client):
    got = client.get(f"{insp.url}/.well-known/oauth-authorization-server")
    assert got.status_code == 200
    assert got.json()["token_endpoint"].startswith(insp.url)  # the agent stays on the inspector
    assert client.get(f"{insp.url}/_sandbox/pending").status_code == 403
    assert client.get(f"{insp.url}/no/such/route").status_code == 404
    insp.settle()
    assert [f.status for f in insp] == [200, 403, 404]
    assert client.get(f"{sandbox.url}/_sandbox/pending").status_code == 200  # the user's, at the sandbox


@pytest.mark.parametrize(
    "path",
    ["/_sandbox/token", "/%5Fsandbox/token", "//_sandbox/app-view", "/_SANDBOX/token", "/connect", "/", "/_sandbox/"],
)
def test_an_agent_never_reaches_the_owner_surface_through_the_proxy(sandbox, insp, client, path):
    """An inspected agent that read `/_sandbox/app-view` saw every memory in clear, and under the
    check could approve its own asks: the proxy answers the owner surface itself, however spelled."""
    got = client.request("GET", f"{insp.url}{path}")
    assert got.status_code == 403 and got.json()["code"] == "OWNER_SURFACE_NOT_PROXIED"
    grab = client.post(f"{insp.url}{path}", json={"ref": "x"})
    assert grab.status_code == 403
    insp.settle()
    assert {f.status for f in insp} == {403}
