"""An exchange shows while it runs, and a long run stays bounded: the newest `keep` flows are
kept (the count line says how many older ones were dropped) while `record` gets every exchange,
written to the HAR as each one finishes. All over real HTTP through the proxy."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pandas as pd
import pytest

from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.inspector.har import load_har
from decoy_lab.widgets.flows import FlowsView

from support.polling import wait_for
from support.sockets import refused_url

pytestmark = pytest.mark.timeout(60)


def test_an_exchange_shows_in_flight_from_its_request_head_and_then_how_it_ended(upstream):
    url, _app = upstream
    with Inspector.start(upstream=url) as insp:
        view = FlowsView(insp)
        host, port = insp.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(f"POST /echo HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n\r\n".encode() + b"0123")
            (flow,) = wait_for(insp.all_flows, 10)  # there as soon as its head came, its body still coming
            assert flow.ended == flow_record.IN_FLIGHT and flow.status is None
            row = insp.flows.iloc[0]
            assert (row["ended"], row["path"]) == ("in flight", "/echo") and row["status"] is pd.NA  # no answer yet
            wait_for(lambda: view.rows["id"] == [1], 10)
            assert view.rows["status"] == ["…"] and view.rows["t0"][0] > 0 and view.rows["ms"] == [-1]
            facts = dict(view.pick(1)["facts"])
            assert "so far (in flight)" in facts["time"]
            assert facts["verdict"].startswith("— (in flight")  # not "no sealed rows": its body is still coming
        # the agent hangs up mid-body: the same row says so
        wait_for(lambda: view.rows["status"] == ["agent disconnected"], 10)
        assert flow.ended == flow_record.AGENT_DISCONNECTED and view.rows["t0"] == [0] and view.rows["ms"][0] >= 0
        assert view.count == "1 exchange"

        # an answer that drips: in flight with its status once the head came, then whole
        got: list[httpx.Response] = []
        slow = threading.Thread(target=lambda: got.append(httpx.get(f"{insp.url}/drip", trust_env=False)))
        slow.start()
        wait_for(lambda: len(view.rows["id"]) == 2 and view.rows["status"][1] == "200 …", 10)
        slow.join(10)
        wait_for(lambda: view.rows["status"][1] == "200", 10)
        assert got[0].text == "".join(f"part {i}\n" for i in range(5))
        view.close()


def test_an_upstream_that_is_down_shows_how_the_exchange_ended():
    with Inspector.start(upstream=refused_url()) as insp:
        view = FlowsView(insp)
        assert httpx.get(f"{insp.url}/api/agent/policies", trust_env=False).status_code == 502
        wait_for(lambda: view.rows["status"] == ["502 upstream down"], 10)
        assert view.rows["tone"] == ["error"] and view.shown_ids() == [1]
        view.search = "upstream down"
        assert view.shown_ids() == [1]
        view.close()


def test_only_the_newest_flows_are_kept_and_the_har_gets_every_exchange_as_it_finishes(upstream, tmp_path):
    url, _app = upstream
    record = tmp_path / "run.har"
    with Inspector.start(upstream=url, keep=5, record=record) as insp:
        view = FlowsView(insp)
        with httpx.Client(trust_env=False) as client:
            for i in range(12):
                assert client.get(f"{insp.url}/api/agent/policies", params={"n": i}).status_code == 200
        assert insp.settle(10)
        assert [f.id for f in insp] == [8, 9, 10, 11, 12] and insp.dropped == 7 and len(insp.flows) == 5
        assert list(insp.flows["path"]) == [f"/api/agent/policies?n={i}" for i in range(7, 12)]
        with pytest.raises(KeyError, match="7 older ones were dropped"):
            insp.flow(3)
        assert "(7 older dropped)" in repr(insp)
        wait_for(lambda: view.rows["id"] == [8, 9, 10, 11, 12], 10)
        assert view.count == "5 exchanges · 7 older dropped" and view.rows["dropped"] == 7
        view.search = "n=11"
        assert view.count == "1 of 5 exchanges · 7 older dropped"
        # streamed: the twelve entries are on disk already, the finished file not yet
        part = record.with_name("run.har.part")
        assert not record.exists() and part.read_text().count('"startedDateTime"') == 12
        view.close()
    doc = load_har(record)
    assert not part.exists()
    assert [e["request"]["url"].rsplit("=", 1)[-1] for e in doc["log"]["entries"]] == [str(i) for i in range(12)]
    assert doc["log"]["_decoy"]["inspector"] == insp.url and len(Inspector.open(record)) == 12


def test_the_view_trims_to_keep_and_tells_the_page_what_to_drop(monkeypatch):
    from decoy_lab.inspector.flow_record import Flow

    flows = [Flow(i, "GET", f"/p{i}", status=200, ended="answered") for i in range(1, 5)]
    view = FlowsView(flows)
    view.keep = 4
    sent: list[dict] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append(content))
    for i in (5, 6, 7):
        view.add(Flow(i, "GET", f"/p{i}", status=200, ended="answered"))
    view.flush()
    assert view.rows["id"] == [4, 5, 6, 7] and [f.id for f in view.flows] == [4, 5, 6, 7]
    assert sent[-1]["drop"] == 3 and sent[-1]["dropped"] == 3 and sent[-1]["rows"]["id"] == [5, 6, 7]
    view.add(Flow(2, "GET", "/p2", status=500, ended="answered"))  # a dropped flow that changed stays dropped
    view.flush()
    assert view.rows["id"] == [4, 5, 6, 7] and sent[-1]["rows"]["id"] == [] and sent[-1]["drop"] == 0
    assert view.count == "4 exchanges · 3 older dropped"


def test_a_flow_is_finished_off_the_request_path_and_at_once_when_looked_at():
    from decoy_lab.inspector.recorder import Recorder
    from decoy_lab.inspector.tee import Tee

    rec = Recorder(clock=lambda: 100.0)  # time stands still: no lull ever comes, nor MAX_LAG
    insp = Inspector(rec)
    view = FlowsView(insp)
    heard: list[int] = []
    insp.on_flow(lambda f: heard.append(f.id))
    flows = []
    for i in range(3):
        flow = rec.begin("GET", "/api/agent/policies", "", [("authorization", "Bearer tok-123456")], "HTTP/1.1")
        answer = Tee()
        answer.add(b'{"policies": [], "n": %d}' % i)
        answer.complete = True
        flow.status = 200
        rec.finish(flow, Tee(), answer, [("content-type", "application/json")], ended=flow_record.ANSWERED)
        flows.append(flow)
    time.sleep(0.2)
    assert all(f.pending and f.response_body.data == b"" for f in flows) and heard == []  # queued, not yet done
    view._on_msg(view, {"kind": "want", "ids": [2, 99]}, [])  # the page asks for the rows in view
    assert not flows[1].pending and flows[1].response_body.data == b'{"policies": [], "n": 1}' and heard == [2]
    assert flows[0].pending and flows[2].pending
    assert insp.settle(5) and heard == [2, 1, 3]  # someone waits: the rest are finished at once
    assert "tok-123456" not in repr(flows[0].to_dict()) and "Bearer" in flows[0].header("authorization")
    rec.close()


def test_a_gap_between_exchanges_told_in_batches_is_no_lull_while_one_is_still_running():
    """A proxy in its own process tells of its exchanges in batches: the recorder sees no exchange
    begin or end between two, though writers are busy. The rows are opened in a lull only once
    none is in flight (their unwraps would otherwise take the cores the exchanges need)."""
    from decoy_lab.inspector.recorder import IDLE, MAX_LAG, Recorder
    from decoy_lab.inspector.tee import Tee

    now = [100.0]
    rec = Recorder(clock=lambda: now[0])
    head = [("authorization", "Bearer tok-123456")]
    first = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    second = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    rec.finish(first, Tee(), Tee(), [], ended=flow_record.ANSWERED)
    now[0] += IDLE * 4  # a gap between batches, the second exchange still running
    time.sleep(0.3)  # the worker looks every IDLE seconds of its own waiting
    assert first.pending
    rec.finish(second, Tee(), Tee(), [], ended=flow_record.ANSWERED)
    now[0] += IDLE * 2  # now none is in flight: a lull
    wait_for(lambda: not first.pending and not second.pending, 5)
    third = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    fourth = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    rec.finish(third, Tee(), Tee(), [], ended=flow_record.ANSWERED)
    now[0] += MAX_LAG  # under a steady load a finished flow waits MAX_LAG at most
    wait_for(lambda: not third.pending, 5)
    assert fourth.ended == flow_record.IN_FLIGHT
    rec.close()


def test_the_page_is_sent_the_openings_of_the_rows_in_view_but_not_of_one_in_flight(monkeypatch):
    from decoy_lab.inspector.flow_record import Body, Flow

    done = Flow(1, "GET", "/api/agent/policies", status=200, ended="answered", response_body=Body(b'{"a": 1}', 8))
    running = Flow(2, "GET", "/api/agent/policies")
    view = FlowsView([done, running])
    sent: list[dict] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append(content))
    view._on_msg(view, {"kind": "want", "ids": [1, 2, 3]}, [])
    assert sent[-1]["kind"] == "opened" and list(sent[-1]["details"]) == ["1"]
    assert sent[-1]["details"]["1"]["response"]["tree"]["c"][0] == {"k": "a", "t": "int", "v": 1}


def test_an_inspector_that_cannot_start_leaves_no_half_recording(tmp_path, sandbox):
    with socket.socket() as taken:  # a port in use
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RuntimeError, match="failed to start"):
            Inspector.start(sandbox=sandbox, port=taken.getsockname()[1], record=tmp_path / "run.har")
    assert list(tmp_path.iterdir()) == []


def test_a_header_seen_before_is_masked_again_once_a_secret_in_it_is_learned():
    from decoy_lab.inspector.recorder import Recorder

    rec = Recorder()
    head = [("x-note", "refresh with tok-abcdef-123456"), ("authorization", "Bearer tok-zyxwvu-987654")]
    first = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    assert first.request_headers[0] == head[0] and "tok-zyxwvu-987654" not in repr(first.request_headers)
    rec.masker.learn("tok-abcdef-123456")  # as a token answer teaches it
    second = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
    assert "tok-abcdef-123456" not in repr(second.request_headers)
    assert second.request_headers[0][1].startswith("refresh with sha256:")
    rec.close()


def test_a_secret_header_masks_its_token_in_the_headers_before_it_on_the_first_request():
    """Learning comes before masking across the whole head: a header that precedes `Authorization`
    and repeats its token is masked in the flow shown in flight, on the first request and after."""
    from decoy_lab.inspector.recorder import Recorder

    rec = Recorder()
    head = [("x-debug", "sent with tok-qwerty-246810"), ("authorization", "Bearer tok-qwerty-246810")]
    for _ in range(2):
        flow = rec.begin("GET", "/api/agent/policies", "", head, "HTTP/1.1")
        assert "tok-qwerty-246810" not in repr(flow.request_headers)
        assert flow.request_headers[0][1].startswith("sent with sha256:") and flow.token.startswith("sha256:")
    rec.close()
