"""Two processes on one profile against a sandbox that rotates refresh tokens strictly (no replay
window): the refresh is taken under a file lock shared by both, the profile is re-read under it,
and neither process is told to pair again while the profile holds good tokens."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.workbench.shell.cli import build_parser

CHILD = """
import pathlib, sys, time
from decoy_lab.workbench.shell.cli import build_parser
from decoy_lab.client.connection import Connection
conn = Connection.resume("work", check=False, retries=0)
print("READY", flush=True)
go = pathlib.Path(sys.argv[1])
while not go.exists():
    time.sleep(0.005)
try:
    conn.access()
    print("OK", conn.session.api.refreshes, flush=True)
except Exception as exc:
    print("FAIL", type(exc).__name__, exc, flush=True)
"""


@pytest.fixture(scope="module")
def strict(clock):
    """A sandbox started with `strict_rotation=True`: no replay window for a used refresh token."""
    with Sandbox.start(seed="none", clock=clock, strict_rotation=True) as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def test_decoy_lab_sandbox_has_a_strict_rotation_switch():
    """`decoy-lab sandbox --strict-rotation` turns the replay window off; by default it is on."""
    parser = build_parser()
    assert parser.parse_args(["sandbox", "--strict-rotation"]).strict_rotation is True
    assert parser.parse_args(["sandbox"]).strict_rotation is False


def pair(sb, store) -> Connection:
    return Connection.pair(
        sb.url,
        name="Shared profile",
        profile="work",
        store=store,
        on_link=lambda *a: None,
        client_id=f"shared-{uuid.uuid4().hex[:8]}",
    )


def test_the_strict_sandbox_refuses_a_used_refresh_token_at_once(strict, store):
    """OAuth 2.1 §4.3.1 / RFC 6819 §5.2.2.3: with rotation "the old refresh token is invalidated";
    the switch turns off the sandbox's replay window."""
    conn = pair(strict, store)
    used = conn.tokens.refresh_token.reveal()
    conn.session.api.refresh()
    r = httpx.post(f"{strict.url}/oauth/token", data={"grant_type": "refresh_token", "refresh_token": used})
    assert r.status_code == 400 and r.json()["code"] == "REFRESH_TOKEN_USED"
    conn.close()


@pytest.mark.parametrize("round_", range(3))
def test_two_processes_on_one_profile_refresh_once_and_both_keep_working(strict, clock, store, tmp_path, round_):
    """Both processes meet `401 TOKEN_EXPIRED` at the same moment. "`recovery: refresh` → `POST
    /oauth/token` with `grant_type=refresh_token` renews the same connection": exactly one of them
    refreshes; the other, waiting on the profile's lock, reads the newer tokens and uses them."""
    pair(strict, store).close()
    env = {**os.environ, "DECOY_LAB_CONFIG_DIR": str(store.directory), "PYTHONPATH": os.pathsep.join(sys.path)}
    go = tmp_path / f"go-{round_}"
    kids = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CHILD), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for kid in kids:
            assert kid.stdout.readline().strip() == "READY", kid.stderr.read()
        clock.advance(strict.state.token_ttl + 60)  # both access tokens expire at once
        go.touch()
        out = [kid.communicate(timeout=120)[0].strip() for kid in kids]
    finally:
        for kid in kids:
            kid.kill()
    assert all(line.startswith("OK") for line in out), out
    assert sorted(int(line.split()[1]) for line in out) == [0, 1], "one refresh between them"
    final = Connection.resume("work", store=store)
    assert final.access().policies, "the profile holds the tokens that work now"
    final.close()


def test_a_refresh_token_used_elsewhere_takes_the_newer_saved_tokens(strict, store):
    """`REFRESH_TOKEN_USED` while the profile holds newer tokens (another process rotated them):
    those are taken instead of asking for a new pairing."""
    first = pair(strict, store)
    second = Connection.resume("work", store=store)
    first.session.api.refresh()  # rotates the refresh token and saves the profile
    second.session.api.refresh()  # sent with the used refresh token: refused, then the saved tokens
    assert second.tokens.access_token == first.tokens.access_token and second.access().policies
    assert second.session.api.refreshes == 0
    first.close()
    second.close()
