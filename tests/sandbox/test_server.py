"""The sandbox over real HTTP: Sandbox.start in a background thread, httpx as the client, and the CLI."""

from __future__ import annotations

import argparse
import asyncio
import os

import httpx
import pytest

from decoy_lab.sandbox import FakeClock, Sandbox
from decoy_lab.sandbox.server import add_cli, default_db_path, run
from decoy_lab.sandbox.testing import bearer, pair_agent
from decoy_lab.wire.crypto import AgentKey


@pytest.fixture(scope="module")
def agent_key() -> AgentKey:
    return AgentKey.generate()


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox.start(approve="manual", seed="none", clock=FakeClock(1_800_000_000.0)) as sb:
        yield sb


def test_start_serves_on_a_loopback_port(sandbox):
    """Sandbox.start(...) serves on a free loopback port in a background thread with its own event loop."""
    assert sandbox.url.startswith("http://127.0.0.1:") and not sandbox.url.endswith(":0")
    r = httpx.get(f"{sandbox.url}/.well-known/oauth-protected-resource")
    assert r.status_code == 200 and r.json()["resource"] == sandbox.url
    assert sandbox.owner is sandbox.app.state.sb.owner


def test_pairing_and_step_up_over_real_http(sandbox, agent_key):
    tok = pair_agent(sandbox.url, agent_key, [{"permissions": ["memory.save"]}], name="HTTP agent")
    with httpx.Client(base_url=sandbox.url, headers=bearer(tok)) as c:
        rid = c.post("/api/agent/grant-request", json={"permissions": ["memory.read"], "datatypes": ["food"]}).json()
        assert rid["status"] == "pending"
        sandbox.owner.approve(rid["request_id"])  # the Python owner surface, same as /_sandbox/approve
        assert c.get("/api/agent/grant-request", params={"id": rid["request_id"]}).json()["status"] == "approved"
        assert c.get("/api/agent/policies").json()["access"]["memories"]["read"]["categories"] == ["food"]
        c.post("/_sandbox/clock", json={"advance": 365 * 86400})  # the token lives "about a year"
        r = c.get("/api/agent/policies")
        assert r.status_code == 401 and r.json()["recovery"] == "refresh"


def test_start_does_not_touch_the_callers_event_loop(agent_key):
    """Never run it on the kernel's own loop: starting from inside a running loop works."""

    async def inside() -> int:
        with Sandbox.start(seed="none") as sb:
            async with httpx.AsyncClient(base_url=sb.url) as c:
                return (await c.get("/.well-known/oauth-authorization-server")).status_code

    assert asyncio.run(inside()) == 200


def test_stop_closes_the_port():
    sb = Sandbox.start(seed="none")
    url = sb.url
    sb.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/.well-known/oauth-authorization-server", timeout=2)


def test_cli_options_and_defaults(tmp_path, monkeypatch):
    """decoy-lab sandbox [--host 127.0.0.1] [--port 8787] [--db PATH|:memory:] [--approve auto|manual]
    [--owner-key PEM_FILE] [--seed demo|none]"""
    parser = argparse.ArgumentParser()
    add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sandbox"])
    assert (args.host, args.port, args.db, args.approve, args.seed) == (None, 8787, None, "auto", "demo")
    args = parser.parse_args(
        [
            "sandbox",
            "--host",
            "0.0.0.0",
            "--port",
            "9",
            "--db",
            ":memory:",
            "--approve",
            "manual",
            "--owner-key",
            "k.pem",
            "--seed",
            "none",
        ]
    )
    assert (args.host, args.approve, args.owner_key, args.seed) == ("0.0.0.0", "manual", "k.pem", "none")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    path = default_db_path()
    assert path.name == "sandbox.sqlite3" and path.parent.is_dir() and str(tmp_path) in str(path)


def test_the_default_database_directory_is_0700_under_umask_000(monkeypatch, tmp_path):
    """It will hold the owner's private key: each level made for it is 0700 whatever the umask."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    old = os.umask(0)
    try:
        path = default_db_path()
    finally:
        os.umask(old)
    assert [oct(p.stat().st_mode & 0o777) for p in (path.parent, tmp_path / "data")] == ["0o700", "0o700"]


def test_non_loopback_host_needs_explicit_flag_and_warns(capsys, monkeypatch):
    """Binding anything but loopback needs an explicit --host and prints a warning."""
    assert run(host="0.0.0.0", db=":memory:", seed="none") == 2
    served = []
    monkeypatch.setattr("uvicorn.Server.run", lambda self: served.append(self.config.host))
    assert run(host="0.0.0.0", port=0, db=":memory:", seed="none", host_explicit=True) == 0
    err = capsys.readouterr()
    assert "WARNING" in err.err and served == ["0.0.0.0"]
    assert "Decoy sandbox on" not in err.out, "the URL is printed once the server listens (it never did here)"


def test_cli_db_file_survives_a_restart(tmp_path, agent_key, monkeypatch):
    """The default database is a file …, so a restart loses nothing."""
    db = str(tmp_path / "s.sqlite3")
    with Sandbox.start(db=db) as sb:
        tok = pair_agent(sb.url, agent_key, [{"permissions": ["memory.save"]}])
        owner = sb.owner.key.fingerprint
        rows = len(sb.owner.rows())
    with Sandbox.start(db=db) as sb:
        assert len(sb.owner.rows()) == rows  # reopened, not seeded a second time
        r = httpx.get(f"{sb.url}/api/agent/policies", headers=bearer(tok))
        assert r.status_code == 200 and r.json()["access"]["memories"]["save"] is True
        assert sb.owner.key.fingerprint == owner  # the same owner phone, so its wraps still open
    assert (tmp_path / "s.sqlite3").stat().st_mode & 0o077 == 0  # it holds the owner's private key


def test_default_start_serves_the_demo_vault(agent_key):
    """Sandbox.start(owner_key=None, approve="auto", seed="demo", db=":memory:", faults=None)."""
    with Sandbox.start() as sb:
        tok = pair_agent(sb.url, agent_key, [{"permissions": ["memory.read"]}], name="Tour")
        with httpx.Client(base_url=sb.url) as c:
            names = [x["name"] for x in c.get("/_sandbox/connections").json()["connections"]]
            assert "Tour" in names and len(names) == 2  # the seeded demo agent, and us
            assert len(c.get("/_sandbox/rows").json()["rows"]) >= 60
            assert c.get("/api/agent/policies", headers=bearer(tok)).json()["access"]["memories"]["read"]["all"]
