"""Bad input never stops the proxy: each hostile body and dying peer is recorded with what
happened, and the next exchange is served."""

from __future__ import annotations

import hashlib
import socket
import time

import httpx
import pytest

from decoy_lab.inspector import Inspector, flow_record

from support.sockets import drip_head, refused_url, reset_mid_body, serving, silent, whole

pytestmark = pytest.mark.timeout(60)


def _wait_for(insp: Inspector, n: int, timeout: float = 10.0) -> list:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        insp.settle(1.0)
        flows = insp.all_flows()
        if len(flows) >= n and all(f.ended != flow_record.IN_FLIGHT for f in flows[:n]):
            return flows
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} finished flows: {insp.all_flows()}")


def _still_serving(insp: Inspector, client) -> None:
    assert client.get(f"{insp.url}/anything").status_code == 200


def test_bodies_over_the_cap_are_kept_up_to_it_counted_and_passed_whole(upstream, client):
    url, _app = upstream
    body = bytes(range(256)) * 400  # 102,400 bytes, not UTF-8
    with Inspector.start(upstream=url, cap=1024) as insp:
        echo = client.post(f"{insp.url}/echo", content=body).json()
        assert echo == {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        assert client.get(f"{insp.url}/big", params={"n": 5000}).content == b"x" * 5000
        sent, got = _wait_for(insp, 2)
    assert (sent.request_body.size, len(sent.request_body.data), sent.request_body.truncated) == (102_400, 1024, True)
    assert sent.request_body.data == body[:1024] and "base64" in sent.to_dict()["request"]["body"]
    assert (got.response_body.size, len(got.response_body.data), got.response_body.truncated) == (5000, 1024, True)
    assert sent.ended == got.ended == flow_record.ANSWERED


def _until(condition, timeout: float = 10.0) -> None:
    """Poll `condition` until it holds (the event the test waits for), at most `timeout` seconds."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_an_agent_that_leaves_mid_body_is_recorded_and_the_next_is_served(upstream, client):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        host = insp.url.removeprefix("http://")
        with socket.create_connection(tuple(host.rsplit(":", 1)), timeout=5) as s:  # type: ignore[arg-type]
            s.sendall(f"POST /echo HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n\r\n".encode() + b"0123456789")
            _until(lambda: ("POST", "/echo") in app.started)  # its body begun, passed on: then the agent leaves
        (flow,) = _wait_for(insp, 1)
        assert flow.ended == flow_record.AGENT_DISCONNECTED and "sending its body" in flow.reason
        assert flow.request_body.size == 10 and not flow.request_body.complete
        _still_serving(insp, client)


def test_an_agent_that_leaves_mid_answer_is_recorded(upstream, client):
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        host = insp.url.removeprefix("http://")
        with socket.create_connection(tuple(host.rsplit(":", 1)), timeout=5) as s:  # type: ignore[arg-type]
            s.sendall(f"GET /drip HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 200")
        (flow,) = _wait_for(insp, 1)
        assert flow.ended == flow_record.AGENT_DISCONNECTED and "after" in flow.reason
        assert flow.status == 200  # (the rest of the answer may still have come within the grace)
        _still_serving(insp, client)


def _stall(conn: socket.socket, stop) -> None:
    """A long poll: the head and one byte of a 100-byte body, then nothing."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    stop.wait(30)


def _answers(method: str, path: str, body: bytes):
    return {
        "/stall": _stall,
        "/die": reset_mid_body,
        "/drip": drip_head(0.01),
        "/silent": silent,
        "/hangup": lambda conn, stop: None,
    }.get(path, whole(200, {"ok": True}))


def test_an_upstream_that_drips_or_dies_is_recorded_and_the_next_is_served(client):
    with serving(_answers) as url, Inspector.start(upstream=url, timeout=1.0) as insp:
        assert client.get(f"{insp.url}/drip").json() == {}  # slow, but within every read timeout
        with pytest.raises(httpx.HTTPError):  # the agent sees a cut answer, never a short one
            client.get(f"{insp.url}/die")
        hung = client.get(f"{insp.url}/hangup")
        silent_answer = client.get(f"{insp.url}/silent")
        _still_serving(insp, client)
        drip, die, hangup, quiet, fine = _wait_for(insp, 5)
    assert drip.ended == flow_record.ANSWERED and drip.status == 200
    assert die.ended == flow_record.UPSTREAM_CUT_OFF and die.response_body.size == 11 and not die.response_body.complete
    assert "closed the connection after 11 bytes" in die.reason
    assert hung.status_code == 502 and hung.json()["code"] == "UPSTREAM_CUT_OFF"
    assert hangup.ended == flow_record.UPSTREAM_CUT_OFF and hangup.status == 502
    assert silent_answer.status_code == 504 and quiet.ended == flow_record.UPSTREAM_TIMEOUT
    assert fine.ended == flow_record.ANSWERED


def test_an_upstream_that_is_down_answers_502_with_the_reason(client):
    with Inspector.start(upstream=refused_url()) as insp:
        got = client.get(f"{insp.url}/api/agent/policies")
        (flow,) = _wait_for(insp, 1)
    assert got.status_code == 502
    assert got.json()["code"] == "UPSTREAM_DOWN" and "is it running" in got.json()["message"]
    assert flow.ended == flow_record.UPSTREAM_DOWN and flow.status == 502
    assert flow.response_body.data == got.content and "cannot reach" in flow.reason


def test_a_fault_of_the_proxy_itself_answers_500_and_is_recorded(upstream, client):
    from decoy_lab.inspector.proxy import ProxyApp
    from decoy_lab.inspector.recorder import Recorder
    from decoy_lab.inspector.serve import serve_in_thread
    from decoy_lab.inspector.upstream import Pool

    class Broken(Pool):  # the real upstream client, with a fault no one foresaw on one path
        async def send(self, method, target, headers, body):
            if target == "/boom":
                raise RuntimeError("a fault no one foresaw")
            return await super().send(method, target, headers, body)

    url, _app = upstream
    rec = Recorder()
    served = serve_in_thread(ProxyApp(rec, url, pool=Broken(url)))
    try:
        boom = client.get(f"{served.url}/boom")
        assert client.get(f"{served.url}/fine").json() == {"ok": True}
    finally:
        served.stop()
    assert boom.status_code == 500 and boom.json()["code"] == "INSPECTOR_ERROR"
    rec.settle()
    first, second = rec.flows
    assert first.ended == flow_record.PROXY_ERROR and "a fault no one foresaw" in first.reason
    assert second.ended == flow_record.ANSWERED


def test_closing_during_an_exchange_records_it_as_stopped(client):
    import threading

    with serving(_answers) as url:
        insp = Inspector.start(upstream=url, timeout=30.0)
        answers: list[httpx.Response] = []

        def call() -> None:
            answers.append(client.get(f"{insp.url}/silent"))

        t = threading.Thread(target=call)
        t.start()
        end = time.monotonic() + 5
        while not len(insp) and time.monotonic() < end:
            time.sleep(0.02)
        began = time.monotonic()
        insp.close()
        # close() gives a running exchange `graceful` seconds (2 s), never the 30 s upstream
        # timeout: 8 s of slack for two busy cores, still far from 30
        assert time.monotonic() - began < 2 + 8
        t.join(10)
    (flow,) = insp.all_flows()
    assert flow.ended == flow_record.STOPPED and flow.status == 503
    assert answers[0].status_code == 503 and answers[0].json()["code"] == "INSPECTOR_STOPPED"


@pytest.mark.parametrize("path", ["/silent", "/stall"])
def test_an_agent_that_leaves_a_silent_upstream_is_not_waited_for(path, client):
    arrived: list[str] = []

    def answers(method: str, target: str, body: bytes):
        arrived.append(target)
        return _answers(method, target, body)

    with serving(answers) as url, Inspector.start(upstream=url, timeout=30.0) as insp:
        host = insp.url.removeprefix("http://")
        began = time.monotonic()
        with socket.create_connection(tuple(host.rsplit(":", 1)), timeout=5) as s:  # type: ignore[arg-type]
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            if path == "/stall":
                assert s.recv(100).startswith(b"HTTP/1.1 200")
            else:
                _until(lambda: path in arrived)  # the upstream has it and says nothing: then the agent leaves
        (flow,) = _wait_for(insp, 1)
        assert time.monotonic() - began < 10  # ended when the agent left, not at the 30 s read timeout
        assert flow.ended == flow_record.AGENT_DISCONNECTED
        assert ("before the answer came" if path == "/silent" else "after 1 bytes") in flow.reason
        _still_serving(insp, client)


def test_an_idempotent_request_on_a_connection_that_fails_before_any_answer_is_sent_once_more(client):
    calls: list[str] = []

    def once_then_fine(method: str, path: str, body: bytes):
        calls.append(method)
        return (lambda conn, stop: None) if len(calls) in (1, 3) else whole(200, {"ok": True})

    with serving(once_then_fine) as url, Inspector.start(upstream=url) as insp:
        assert client.get(f"{insp.url}/again").json() == {"ok": True}  # calls 1 (hung up) and 2
        assert client.post(f"{insp.url}/again", json={}).status_code == 502  # call 3: a POST is not sent twice
        got, posted = _wait_for(insp, 2)
    assert calls == ["GET", "GET", "POST"]
    assert got.ended == flow_record.ANSWERED and any("sent again" in n for n in got.notes)
    assert posted.ended == flow_record.UPSTREAM_CUT_OFF
