"""An agent whose HTTP is curl's, not ours: it pairs (device grant), writes a sealed row and reads
it back through the inspector, every request made by the curl program as the Agent API's own
examples make them. What it gets through the inspector is what it gets direct, byte for byte;
each exchange is recorded under the agent's name, its row opened and judged, and no token or
device code is left in what the inspector keeps.

The spec's pairing, as curl: "exchange the code for a token. curl -X POST
https://api.decoys.me/oauth/token \\ -d
'grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=…&client_id=my-agent'
# Then send: Authorization: Bearer".
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from decoy_lab import memory
from decoy_lab.inspector import flow_record

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("curl") is None, reason="the curl program is not installed"),
]
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
MEMORIES = "/api/agent/context/memories"


def curl(tmp: Path, *args: str) -> tuple[int, bytes]:
    """Run curl (no proxy from the environment, no retries) and return (status, body)."""
    body = tmp / "body.out"
    done = subprocess.run(
        ["curl", "-sS", "--noproxy", "*", "-o", str(body), "-w", "%{http_code}", *args],
        capture_output=True,
        timeout=30,
        check=True,
    )
    return int(done.stdout), body.read_bytes()


def test_curl_pairs_writes_and_reads_through_the_inspector(sandbox, insp, agent_key, tmp_path):
    base = insp.url
    ask = {
        "client_id": "curl-agent",
        "name": "Curl agent",
        "agent_public_key": agent_key.public_key_b64,
        "authorization_details": [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}],
    }
    status, body = curl(
        tmp_path, "-H", "Content-Type: application/json", "--data", json.dumps(ask), f"{base}/oauth/device"
    )
    assert status == 200, body
    device = json.loads(body)
    grant = f"grant_type={DEVICE_GRANT}&device_code={device['device_code']}&client_id=curl-agent"
    form = ["-X", "POST", "-d", grant]  # as the spec's line sends it
    status, body = curl(tmp_path, *form, f"{base}/oauth/token")
    if status == 400 and json.loads(body).get("error") == "authorization_pending":  # the owner approves
        httpx.post(f"{sandbox.url}/_sandbox/approve", json={"ref": device["user_code"]}, timeout=10).raise_for_status()
        status, body = curl(tmp_path, *form, f"{base}/oauth/token")
    assert status == 200, body
    tokens = json.loads(body)
    bearer = ["-H", f"Authorization: Bearer {tokens['access_token']}"]

    status, body = curl(tmp_path, *bearer, f"{base}/api/agent/context/memory-grantees")
    assert status == 200, body
    keys = memory.RecipientKeys(json.loads(body)["owner_public_key"], agent_key.public_key_b64)
    row = memory.new_memory_row(keys, "Written by curl.")
    rows = tmp_path / "rows.json"
    rows.write_bytes(json.dumps({"rows": [row]}).encode())
    sent = ["-H", "Content-Type: application/json", "--data-binary", f"@{rows}"]
    status, body = curl(tmp_path, *bearer, *sent, f"{base}{MEMORIES}")
    assert status == 201 and json.loads(body)["created"] == [row["id"]], body

    status, proxied = curl(tmp_path, *bearer, f"{base}{MEMORIES}")
    _, direct = curl(tmp_path, *bearer, f"{sandbox.url}{MEMORIES}")
    assert status == 200 and proxied == direct  # byte for byte
    assert [m["id"] for m in json.loads(proxied)["memories"]] == [row["id"]]

    insp.settle()
    flows = insp.flows
    paths = list(flows["path"])
    assert [p for p in paths if p != "/oauth/token"] == [
        "/oauth/device",
        "/api/agent/context/memory-grantees",
        MEMORIES,
        MEMORIES,
    ]
    assert paths.count("/oauth/token") in (1, 2)  # asked again once the owner approved
    agents = set(flows[flows["path"].str.startswith("/api/agent/")]["agent"])
    assert agents == {"Curl agent"}, agents  # named by its pairing, through its token
    assert set(flows["ended"]) == {flow_record.ANSWERED}
    write, read = [f for f in insp if f.path == MEMORIES]
    assert write.method == "POST" and write.verdict == flow_record.READABLE
    assert [(r.text, r.verdict, r.opened_by) for r in write.rows] == [
        ("Written by curl.", flow_record.READABLE, "owner key")
    ]
    assert read.method == "GET" and [(r.text, r.opened_by) for r in read.rows] == [("Written by curl.", "agent key")]

    kept = json.dumps(insp.to_har()) + insp.flows.to_json() + json.dumps(insp.rows(read, frame=False), default=str)
    for secret in (tokens["access_token"], tokens["refresh_token"], device["device_code"]):
        assert secret not in kept
