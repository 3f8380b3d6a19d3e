"""The proxy runs in a process of its own (so its parsing and copying take a core of their own,
not the GIL of the kernel that serves the sandbox), and that process never outlives, nor is lost
by, the inspector: a proxy process that dies ends its flows saying so; one whose inspector dies goes too."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from decoy_lab.inspector import Inspector, flow_record

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


def _gone(pid: int, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_proxy_is_another_process_and_is_gone_after_close(upstream, client):
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        assert insp.pid is not None and insp.pid != os.getpid()
        assert client.get(f"{insp.url}/echo").status_code == 200
        (flow,) = insp.all_flows()
        assert (flow.method, flow.path, flow.status, flow.ended) == ("GET", "/echo", 200, flow_record.ANSWERED)
        pid = insp.pid
    assert not insp.running
    assert _gone(pid, 5)


def test_the_flows_a_batch_of_frames_makes_go_straight_to_the_oldest_generation(upstream, client):
    """The process that records (a kernel) also serves the sandbox: what each batch of the proxy's
    frames makes is moved to the oldest generation at once, so no collection scans it on its way
    there while the sandbox waits (8 writers through the proxy lost ~4 % of their time to those)."""
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        for _ in range(3):
            assert client.get(f"{insp.url}/echo").status_code == 200
        assert insp.settle(10)
        flows = insp.all_flows()
        oldest = {id(o) for o in gc.get_objects(generation=2)}
        assert len(flows) == 3 and all(id(f) in oldest for f in flows)


def test_a_proxy_process_that_dies_ends_its_flows_in_flight_saying_so(upstream):
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        got: list[BaseException] = []

        def slow() -> None:
            try:
                httpx.get(f"{insp.url}/drip", timeout=10, trust_env=False)
            except httpx.HTTPError as exc:
                got.append(exc)

        t = threading.Thread(target=slow)
        t.start()
        end = time.monotonic() + 10
        while not insp.all_flows() or insp.all_flows()[0].status is None:
            assert time.monotonic() < end, "the dripping answer never began"
            time.sleep(0.02)
        os.kill(insp.pid, signal.SIGKILL)
        t.join(10)
        assert got, "the agent's answer was cut, not completed"
        assert insp.settle(10)
        (flow,) = insp.all_flows()
        assert flow.ended == flow_record.PROXY_ERROR
        assert "the inspector's proxy process ended (exit status -9)" in flow.reason
        assert not insp.running


CHILD = """
import os, sys, time
from decoy_lab.inspector import Inspector
insp = Inspector.start(upstream=sys.argv[1])
print(insp.pid, flush=True)
time.sleep(0.2)
os._exit(0)  # no close(): the process just ends
"""


def test_the_proxy_process_goes_when_the_inspectors_process_does(upstream):
    url, _app = upstream
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, url], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert _gone(int(out.stdout.strip()), 10)


def test_large_bodies_come_back_whole_from_the_proxy_process(upstream, client):
    """The proxy's process sends a large body's kept bytes on in pieces (it keeps none itself):
    the record still holds every byte, in order, up to the cap."""
    url, _app = upstream
    sent = os.urandom(700_000).hex().encode()  # 1.4 MB, several pieces
    with Inspector.start(upstream=url, cap=1_000_000) as insp:
        assert client.post(f"{insp.url}/echo", content=sent).status_code == 200
        answer = client.get(f"{insp.url}/big", params={"n": 3_000_000})
        assert answer.status_code == 200 and len(answer.content) == 3_000_000
        post, big = insp.all_flows()
        assert post.request_body.size == len(sent) and post.request_body.data == sent[:1_000_000]
        assert post.request_body.truncated
        assert big.response_body.size == 3_000_000 and big.response_body.data == answer.content[:1_000_000]


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_the_proxy_process_memory_does_not_grow_with_the_answer(upstream, client):
    """It sends a body's kept bytes on in pieces and waits when its frames pile up: the peak of
    its resident memory is the same for a 2 MB answer as for a 40 MB one."""
    url, _app = upstream
    with Inspector.start(upstream=url, cap=64 * 1024 * 1024) as insp:
        base = _peak_kib(insp.pid)
        assert len(client.get(f"{insp.url}/big", params={"n": 2_000_000}).content) == 2_000_000
        small = _peak_kib(insp.pid) - base
        assert len(client.get(f"{insp.url}/big", params={"n": 40_000_000}).content) == 40_000_000
        large = _peak_kib(insp.pid) - base
        insp.settle(30)
        assert insp.all_flows()[-1].response_body.size == 40_000_000
    assert large - small < 8 * 1024, (small, large)  # KiB: well under the 38 MB more it carried


def test_frames_come_out_whole_however_the_bytes_are_cut():
    """The proxy process's frames arrive in whatever pieces the socket gives: each message comes out once,
    whole and in order, whether a piece ends inside a length, inside a body or between frames."""
    from decoy_lab.inspector.proxy_child import Frames, frame

    messages = [
        ("begin", i, "POST", "/api/agent/context/memories", "", [("a", "b" * i)], b"\x00" * (i * 37)) for i in range(40)
    ]
    data = b"".join(frame(m) for m in messages)
    for cut in (1, 3, 4, 5, 97, 1000, len(data)):
        frames, got = Frames(), []
        for at in range(0, len(data), cut):
            got += frames.feed(data[at : at + cut])
        assert got == messages, f"pieces of {cut} bytes"
