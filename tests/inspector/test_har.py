"""A run recorded as HAR 1.2, re-opened offline and replayed, gives the same flows and verdicts."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import sys

import pandas as pd
import pytest

from decoy_lab import AgentKey, Connection, memory
from decoy_lab.errors import DecoyError, WireFormatError
from decoy_lab.inspector import Inspector, har
from decoy_lab.inspector.flow_record import UNREAD, Body, Flow
from decoy_lab.widgets.flows import detail_of
from decoy_lab.wire import layouts as wire

pytestmark = pytest.mark.timeout(120)
MEMORIES = "/api/agent/context/memories"


def _check_har(doc: dict) -> None:
    """The fields HAR 1.2 requires (http://www.softwareishard.com/blog/har-12-spec/)."""
    log = doc["log"]
    assert (
        log["version"] == "1.2"
        and isinstance(log["creator"]["name"], str)
        and isinstance(log["creator"]["version"], str)
    )
    assert isinstance(log["entries"], list) and log["entries"]
    for e in log["entries"]:
        assert dt.datetime.fromisoformat(e["startedDateTime"].replace("Z", "+00:00")).tzinfo is not None
        assert isinstance(e["time"], (int, float)) and e["time"] >= 0
        assert isinstance(e["cache"], dict)
        req, resp, t = e["request"], e["response"], e["timings"]
        for k in ("method", "url", "httpVersion"):
            assert isinstance(req[k], str)
        assert req["url"].startswith("http://")
        for k in ("cookies", "headers", "queryString"):
            assert isinstance(req[k], list)
        assert all(set(h) == {"name", "value"} for h in req["headers"] + resp["headers"])
        assert isinstance(req["headersSize"], int) and isinstance(req["bodySize"], int)
        if "postData" in req:
            assert isinstance(req["postData"]["mimeType"], str) and isinstance(req["postData"]["text"], str)
        assert isinstance(resp["status"], int) and isinstance(resp["statusText"], str)
        assert isinstance(resp["httpVersion"], str) and isinstance(resp["redirectURL"], str)
        assert isinstance(resp["cookies"], list) and isinstance(resp["headers"], list)
        assert isinstance(resp["content"]["size"], int) and isinstance(resp["content"]["mimeType"], str)
        assert isinstance(resp["headersSize"], int) and isinstance(resp["bodySize"], int)
        for k in ("send", "wait", "receive"):
            assert isinstance(t[k], (int, float)) and t[k] >= 0
        for k in ("blocked", "dns", "connect", "ssl"):
            assert t.get(k, -1) == -1 or t[k] >= 0


def _verdicts(flows) -> list[tuple]:
    return [
        (f.method, f.path, f.status, f.verdict, [(r.id, r.verdict, r.problem, r.text) for r in f.rows]) for f in flows
    ]


def _record(sandbox, agent_key, path, client) -> list[tuple]:
    with Inspector.start(sandbox=sandbox, agent_key=agent_key, record=path) as insp:
        conn = Connection.pair(insp.url, name="Recorded", agent_key=agent_key, profile=None, on_link=lambda *a: None)
        try:
            conn.save("Recorded and replayed.")
            token = {"Authorization": f"Bearer {conn.tokens.access_token.reveal()}"}
        finally:
            conn.close()
        keys = memory.RecipientKeys(sandbox.owner.public_key_b64, agent_key.public_key_b64)
        wrong = memory.RecipientKeys(AgentKey.generate().public_key_b64, agent_key.public_key_b64)
        bad = [
            memory.new_memory_row(wrong, "Wrong owner."),
            {**memory.new_memory_row(keys, "Kid."), "kid": wire.kid(bytes(32))},
        ]
        assert client.post(f"{insp.url}{MEMORIES}", json={"rows": bad}, headers=token).status_code == 201
        assert client.get(f"{insp.url}{MEMORIES}", headers=token).status_code == 200
        insp.settle()
        live = _verdicts(insp)
    return live


def test_a_recording_reopens_offline_and_replays_with_the_same_verdicts(sandbox, owner, agent_key, client, tmp_path):
    path = tmp_path / "run.har"
    live = _record(sandbox, agent_key, path, client)
    assert any("unreadable" in v[3] for v in live) and any(v[3] == "readable" for v in live)
    doc = json.loads(path.read_text())
    _check_har(doc)
    assert all(e["_decoy"]["ended"] == "answered" for e in doc["log"]["entries"])

    reopened = Inspector.open(path, owner_key=owner.to_pem(), agent_key=agent_key)
    assert reopened.url is None and _verdicts(reopened) == live
    assert list(reopened.flows["verdict"]) == [v[3] for v in live]
    as_recorded = Inspector.open(path)  # no key: the rows and verdicts as recorded, without their text
    assert _verdicts(as_recorded) == [(*v[:4], [(i, vd, p, None) for i, vd, p, _ in v[4]]) for v in live]
    assert all(r["text"] is None for e in doc["log"]["entries"] for r in e["_decoy"]["rows"])

    with Inspector.replay(path, owner_key=owner, agent_key=agent_key) as replay:
        answers = har.resend(har.read_har(path), replay.url)
        replay.settle()
        replayed = _verdicts(replay)
        assert all(flow_id is not None for _, flow_id in replay.replayed.served)
    assert [a.status_code for a in answers] == [v[2] for v in live]
    assert replayed == live


def test_an_unrecorded_request_is_refused_by_the_replay(tmp_path, upstream, client):
    url, _app = upstream
    path = tmp_path / "small.har"
    with Inspector.start(upstream=url, record=path) as insp:
        client.post(f"{insp.url}/echo", content=b"one")
        client.post(f"{insp.url}/echo", content=b"two")
    with Inspector.replay(path) as replay:
        second = client.post(f"{replay.url}/echo", content=b"two")
        first = client.post(f"{replay.url}/echo", content=b"other")
        none = client.post(f"{replay.url}/echo", content=b"two")
    assert second.json()["size"] == 3 and second.headers["x-decoy-replay"] == "flow 2"  # by body first
    assert first.headers["x-decoy-replay"] == "flow 1"  # then by method and path, in order
    assert none.status_code == 404 and none.json()["code"] == "NOT_RECORDED"


def test_a_damaged_recording_opens_with_each_bad_entry_said_and_the_rest_kept(tmp_path, upstream, client):
    """An entry that is no exchange (not an object, fields of the wrong type) is a flow saying why,
    in its place; the entries around it open and replay as recorded."""
    url, _app = upstream
    path = tmp_path / "run.har"
    with Inspector.start(upstream=url, record=path) as insp:
        client.post(f"{insp.url}/echo", content=b"one")
    doc = json.loads(path.read_text())
    good = doc["log"]["entries"][0]
    doc["log"]["entries"] = [7, good, {"request": {"method": "GET", "url": []}, "response": "gone"}]
    path.write_text(json.dumps(doc))

    opened = Inspector.open(path)
    frame = opened.flows
    assert list(frame["ended"]) == ["not readable in the recording", "answered", "not readable in the recording"]
    assert list(frame["status"]) == [pd.NA, 200, pd.NA] and str(frame["status"].dtype) == "Int64"
    assert list(frame["verdict"]) == ["error", "", "error"]
    said = [f.notes for f in opened]
    assert "entry 1 of the recording cannot be read as an exchange (not a JSON object)" in said[0][0]
    assert "entry 3 of the recording" in said[2][0] and "its response is text, not an object" in said[2][0]
    facts = dict(detail_of(opened.all_flows()[0])["facts"])  # what the flows view shows on a click
    assert facts["ended"].startswith("not readable in the recording: not a JSON object")
    assert facts["started"] == "—"  # the recording did not say: no 1970 made up
    with Inspector.replay(path) as replay:  # the readable entry still answers as recorded
        again = client.post(f"{replay.url}/echo", content=b"one")
    assert again.status_code == 200 and again.headers["x-decoy-replay"] == "flow 1"  # its recorded id
    assert sorted(frame["id"]) == [1, 2, 3]  # the ids stay one per flow


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"upstream": "notaurl"}, "notaurl: not an http:// or https:// URL"),
        ({"sandbox": True, "port": 70_000}, "port 70000 is not a TCP port"),
        ({"sandbox": True, "record": "/no/such/folder/run.har"}, "its folder does not exist"),
    ],
)
def test_a_proxy_that_cannot_start_says_why_before_starting_anything(kwargs, said):
    import threading

    before = set(threading.enumerate())
    with pytest.raises(ValueError) as got:
        Inspector.start(**kwargs)
    assert said in str(got.value)
    assert set(threading.enumerate()) <= before  # no sandbox or proxy thread started (one may have ended)


def test_a_recording_that_is_not_there_says_so(tmp_path):
    with pytest.raises(ValueError, match="none.har: no such file"):
        Inspector.open(tmp_path / "none.har")


# -- security issue: a recording holds the exchanges; a recording read back is untrusted ---------
def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _flow(i: int = 1) -> Flow:
    return Flow(i, "POST", "/echo", status=200, request_body=Body(b"secret-ish", 10), ended="answered")


def test_both_har_writers_create_the_file_0600_from_the_start(tmp_path, monkeypatch):
    """A recording holds what the agent sent and was answered: `HarWriter` (record=…) and
    `write_har` (save) create it 0600 — under umask 000, over a 0644 file and a stale 0644
    `.part` an earlier run left — with no chmod after (chmod is made to fail here)."""
    recorded, saved = tmp_path / "run.har", tmp_path / "saved.har"
    for path in (recorded, saved):
        for left in (path, path.with_name(path.name + ".part")):
            left.write_text("{}")
            os.chmod(left, 0o644)

    def no_chmod(*args, **kwargs):
        raise AssertionError("the mode is set when the file is created, not changed after")

    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(os, "fchmod", no_chmod)
    old = os.umask(0)
    try:
        writer = har.HarWriter(recorded, upstream="http://upstream")
        assert _mode(recorded.with_name("run.har.part")) == 0o600  # before a byte of an exchange
        writer.add(_flow())
        assert writer.close() == recorded
        assert har.write_har(saved, [_flow(1), _flow(2)]) == saved
    finally:
        os.umask(old)
    monkeypatch.undo()
    assert _mode(recorded) == 0o600 and _mode(saved) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.har", "saved.har"]
    assert [f.path for f in Inspector.open(recorded)] == ["/echo"]
    assert [f.id for f in Inspector.open(saved)] == [1, 2]


def test_the_inspectors_recording_and_save_are_0600(tmp_path, upstream, client):
    url, _app = upstream
    recorded, saved = tmp_path / "run.har", tmp_path / "saved.har"
    with Inspector.start(upstream=url, record=recorded) as insp:
        client.post(f"{insp.url}/echo", content=b"one")
        assert _mode(recorded.with_name("run.har.part")) == 0o600
        insp.save(saved)
    assert _mode(recorded) == 0o600 and _mode(saved) == 0o600


def _deep_har(tmp_path, depth: int = 100_000):
    """A HAR whose second entry holds `depth` nested arrays (written by hand: json cannot)."""
    good = json.dumps(har.entry(_flow(), "http://upstream"))
    deep = "[" * depth + "]" * depth
    bad = '{"request": {"method": "GET", "url": "http://upstream/", "headers": ' + deep + '}, "response": {}}'
    path = tmp_path / "deep.har"
    path.write_text('{"log": {"version": "1.2", "entries": [' + good + ", " + bad + "]}}")
    return path


def test_a_har_nested_100000_deep_in_an_entry_is_a_typed_error_naming_it(tmp_path):
    """Not a RecursionError from inside json: the parse stops at the depth bound (so nothing
    recursed into it) with a WireFormatError — a DecoyError and a ValueError — naming entry 2."""
    path = _deep_har(tmp_path)
    limit = sys.getrecursionlimit()
    for read in (Inspector.open, har.read_har, Inspector.replay):
        with pytest.raises(WireFormatError) as caught:
            read(path)
        text = str(caught.value)
        assert isinstance(caught.value, DecoyError) and isinstance(caught.value, ValueError)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__  # raised `from None`
        assert "entry 2 of the recording is nested more than 1024 levels deep" in text and str(path) in text
        assert caught.value.field is not None and caught.value.field.startswith("request.headers[0]")
    assert sys.getrecursionlimit() == limit


def test_a_har_nested_too_deep_outside_the_entries_is_a_typed_error(tmp_path):
    path = tmp_path / "deep.har"
    path.write_text('{"log": {"x": ' + "[" * 5000 + "]" * 5000 + ', "entries": []}}')
    with pytest.raises(WireFormatError, match="the recording is nested more than 1024 levels deep"):
        Inspector.open(path)
    path.write_text('{"log": {"x": NaN, "entries": [' + "[" * 5000 + "]" * 5000 + "]}}")  # json reads NaN
    with pytest.raises(WireFormatError, match="nested more than 1024 levels deep"):
        Inspector.open(path)


def test_an_entry_missing_request_is_a_typed_error_naming_it(tmp_path):
    """A HAR entry with no `request` (or no `response`) is no exchange: never a made-up `GET /`.
    Read strictly, it is a WireFormatError naming the entry and the member; opened for review,
    it is a flow in its place saying the same, and the entries around it open as recorded."""
    good = har.entry(_flow(), "http://upstream")
    no_request = {k: v for k, v in good.items() if k != "request"}
    no_response = {k: v for k, v in good.items() if k != "response"}
    path = tmp_path / "run.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": [good, no_request, no_response]}}))
    with pytest.raises(WireFormatError) as caught:
        har.read_har(path, strict=True)
    assert isinstance(caught.value, DecoyError) and caught.value.field == "request"
    assert str(caught.value).startswith("entry 2 of the recording cannot be read as an exchange (it has no request)")
    opened = Inspector.open(path).all_flows()
    assert [f.ended for f in opened] == ["answered", UNREAD, UNREAD]
    assert [f.method for f in opened] == ["POST", "?", "?"]
    assert "entry 2 of the recording" in opened[1].notes[0] and "it has no request" in opened[1].notes[0]
    assert "entry 3 of the recording" in opened[2].notes[0] and "it has no response" in opened[2].notes[0]


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        (("request", "headers"), [{"name": "content-type", "value": [[["x"]]]}], "request.headers[0]"),
        (("request", "url"), 7, "request.url"),
        (("response", "status"), "200", "response.status"),
        (("response", "content"), {"text": [[[]]]}, "response.content.text"),
        (("_decoy", "rows"), [{"id": "r", "text": [[[]]]}], "_decoy.rows[0].text"),
        (("_decoy", "timings"), {"start": "soon"}, "_decoy.timings.start"),
    ],
)
def test_an_entry_member_of_the_wrong_shape_is_named_not_used(where, value, said):
    """Every member read from an entry is checked: one of the wrong shape (a nested list for a
    header value, text for a status) makes the entry unreadable, named — never a value that
    breaks the opening or the views later."""
    bad = har.entry(_flow(), "http://upstream")
    bad[where[0]] = {**bad[where[0]], where[1]: value}
    doc = {"log": {"version": "1.2", "entries": [har.entry(_flow(), "http://upstream"), bad]}}
    with pytest.raises(WireFormatError) as caught:
        har.read_har(doc, strict=True)
    assert caught.value.field == said and "entry 2 of the recording" in str(caught.value)
    opened = Inspector.open(doc)
    assert [f.ended for f in opened.all_flows()] == ["answered", UNREAD] and len(opened.flows) == 2
