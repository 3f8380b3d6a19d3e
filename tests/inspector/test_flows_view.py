"""The flows view in the kernel: the table's cells and count line, the filter and sort rule the page
applies too, a clicked flow opened (rows, their recipe, blobs in hex), live flows sent in batches,
the state an exported page embeds, the recipe view of a bad row; and notebook 05 run end to end."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from decoy_lab import memory
from decoy_lab.inspector.flow_record import READABLE, UNREADABLE, Body, Flow, Row, Timings
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.widgets.flows import FLUSH_EVERY, FlowsPanel, FlowsView, count_text, detail_of
from decoy_lab.wire.crypto import AgentKey

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
MEMORIES = "/api/agent/context/memories"


@pytest.fixture(scope="module")
def cast():
    return {"me": AgentKey.generate(), "owner": AgentKey.generate(), "stranger": AgentKey.generate()}


def opened(row: dict, where: str, owner: AgentKey) -> Row:
    """A written row as the owner's app opens it, with the recipe's Trace."""
    t = Trace("open as the owner's app")
    try:
        key = sealing.unwrap_as_owner(row["owner_wrap"], owner, trace=t)
        plain = sealing.open_json(key, row["ciphertext"], row_id=row["id"], trace=t)
    except Exception as exc:
        return Row(
            row["id"], where, UNREADABLE, str(exc), "owner_wrap", None, "memory", row["kid"], "owner key", trace=t
        )
    text = plain["observation"]["content"]
    return Row(row["id"], where, READABLE, text=text, kind="memory", kid=row["kid"], opened_by="owner key", trace=t)


def write_flow(fid: int, rows: list[dict], owner: AgentKey, *, agent: str = "example agent") -> Flow:
    body = json.dumps({"rows": rows}).encode()
    answer = json.dumps({"created": [r["id"] for r in rows]}).encode()
    return Flow(
        fid,
        "POST",
        MEMORIES,
        status=201,
        request_headers=[("content-type", "application/json"), ("authorization", "Bearer sha256:1a2b3c4d")],
        request_body=Body(body, len(body)),
        response_body=Body(answer, len(answer)),
        timings=Timings(10.0 * fid, None, None, 10.0 * fid + 3.5),
        agent=agent,
        ended="answered",
        rows=[opened(r, f"request.rows[{i}]", owner) for i, r in enumerate(rows)],
    )


def plain_flow(fid: int, method: str = "GET", path: str = "/api/agent/policies", status: int = 200, **kw) -> Flow:
    return Flow(fid, method, path, status=status, timings=Timings(0, None, None, float(fid)), ended="answered", **kw)


@pytest.fixture(scope="module")
def flows(cast):
    me, owner, stranger = cast["me"], cast["owner"], cast["stranger"]
    good = memory.new_memory_row(memory.RecipientKeys(owner.public_key_b64, me.public_key_b64), "Prefers trams.")
    # the bug: owner_wrap made for the wrong key, so the owner's app cannot open it
    bad = memory.new_memory_row(memory.RecipientKeys(stranger.public_key_b64, me.public_key_b64), "Quiet hotel.")
    return [
        plain_flow(1, "POST", "/oauth/device", 200, agent=""),
        plain_flow(2, "GET", "/api/agent/context/memory-grantees", 200, agent="example agent"),
        write_flow(3, [good, bad], owner),
        plain_flow(4, "GET", MEMORIES, 200, agent="other agent"),
        plain_flow(5, "DELETE", "/api/agent/thing", 404, agent="other agent"),
    ]


def test_the_count_line_and_the_filter_agree(flows):
    view = FlowsView(flows)
    assert view.count == "5 exchanges" and count_text(1, 1) == "1 exchange"
    assert list(view.rows["verdict"]) == ["", "", "1 unreadable", "", ""]
    cases = {"unreadable": [3], "404": [5], "OTHER agent": [4, 5], "memories 200": [4], "example": [2, 3], "zzz": []}
    for text, ids in cases.items():
        view.search = text
        assert view.shown_ids() == ids, text
        assert view.count == (count_text(len(ids), 5))
    view.search = "context"
    assert view.count == "3 of 5 exchanges"


def test_sorting_by_a_header(flows):
    view = FlowsView(flows)
    view.sort = "status:desc"
    assert view.shown_ids() == [5, 3, 1, 2, 4]  # numbers, ties as they came
    view.sort = "ms:asc"
    assert view.shown_ids() == [1, 2, 3, 4, 5]
    view.sort = "path:asc"
    paths = [view.flow(i).path for i in view.shown_ids()]
    assert paths == sorted(paths, key=str.lower)
    view.sort = "id:desc"
    assert view.shown_ids() == [5, 4, 3, 2, 1]


def test_a_clicked_flow_opens_its_rows_recipe_and_blobs(flows):
    view = FlowsView(flows)
    d = view.pick(3)
    assert d["id"] == 3 and ["verdict", "1 unreadable"] in d["facts"]
    good, bad = d["rows"]
    assert good["verdict"] == READABLE and good["text"] == "Prefers trams."
    assert bad["verdict"] == UNREADABLE and "RSA-OAEP-SHA256" in bad["reason"]
    assert bad["recipe"]["steps"][bad["recipe"]["failed"]]["name"] == "RSA-OAEP-SHA256 unwrap"
    # the JSON tree marks each row where it sits, and every blob is there in hex
    tree = d["request"]["tree"]
    rows_node = next(c for c in tree["c"] if c["k"] == "rows")
    assert [c.get("row") for c in rows_node["c"]] == [0, 1]
    kinds = sorted(b["kind"] for b in d["blobs"])
    assert kinds == ["agent envelope"] * 2 + ["owner envelope"] * 2 + ["vault"] * 2
    assert all("decoy-hexdump" in b["html"] for b in d["blobs"])
    owner_wrap = next(c for c in rows_node["c"][1]["c"] if c["k"] == "owner_wrap")
    assert d["blobs"][owner_wrap["blob"]]["where"] == "request.rows.1.owner_wrap"
    assert "key length 256 matches RSA-2048" in d["blobs"][owner_wrap["blob"]]["certainty"]
    # the bad flow is opened ahead, so an exported page opens it with no kernel
    assert set(view.details) == {"3"} and view.details["3"]["rows"][1]["verdict"] == UNREADABLE
    assert view.bad_rows() == [(flows[2], 1, flows[2].rows[1])]
    assert "sha256:1a2b3c4d" in json.dumps(d["request"]["headers"])  # as recorded: masked upstream


def test_the_recipe_button_shows_the_stepper_at_the_failing_step(flows):
    panel = FlowsPanel(flows)
    assert panel.stepper is None
    panel.flows.recipe = "3:1"
    stepper = panel.stepper
    assert stepper is not None and stepper.step.name == "RSA-OAEP-SHA256 unwrap" and stepper.step.ok is False
    panel.flows.recipe = "3:0"
    assert panel.stepper.trace.ok
    panel.flows.recipe = "1:0"  # a flow without rows: nothing to show
    assert panel.stepper is None
    with pytest.raises(LookupError):
        panel.flows.trace(1, 0)


def test_new_flows_from_another_thread_reach_the_page_in_batches(flows, monkeypatch):
    view = FlowsView(flows[:2])
    sent: list[dict] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append(content))
    started = time.monotonic()

    def agent() -> None:
        for i in range(200):
            view.add(plain_flow(100 + i, agent="busy agent"))
            time.sleep(0.001)

    t = threading.Thread(target=agent)
    t.start()
    t.join()
    deadline = time.monotonic() + 10  # the last batch goes at most FLUSH_EVERY after the last add
    while sum(len(m["rows"]["id"]) for m in list(sent)) < 200 and time.monotonic() < deadline:
        time.sleep(0.005)
    spent = time.monotonic() - started
    assert len(view.rows["id"]) == 202 and view.count == "202 exchanges"
    assert 1 <= len(sent) <= spent / FLUSH_EVERY + 1, "batched: at most one message every 100 ms"
    assert [m["seq"] for m in sent] == list(range(1, len(sent) + 1)) and view.seq == len(sent)
    assert sum(len(m["rows"]["id"]) for m in sent) == 200
    # a changed flow (it finished) replaces its row; a page that missed a batch gets every row
    done = plain_flow(100, status=500, agent="busy agent")
    view.add(done)
    view.flush()
    assert len(view.rows["id"]) == 202 and view.rows["status"][2] == "500"
    view._on_msg(view, {"kind": "resync"}, [])
    assert sent[-1]["kind"] == "all" and len(sent[-1]["rows"]["id"]) == 202 and sent[-1]["seq"] == view.seq


def test_the_view_follows_an_inspector_and_stops_when_closed(flows):
    from decoy_lab.inspector import Inspector
    from decoy_lab.inspector.recorder import Recorder

    ins = Inspector(Recorder())
    for f in flows[:3]:
        ins.recorder.flows.append(f)
    view = FlowsView(ins)
    assert view.count == "3 exchanges" and ins.recorder.listeners == [view.add] == ins.recorder.watchers
    for listener in ins.recorder.listeners:  # as the recorder tells of a finished flow
        listener(flows[3])
    view.flush()
    assert view.count == "4 exchanges"
    view.close()
    assert ins.recorder.listeners == [] == ins.recorder.watchers
    ins.close()


def test_the_state_embeds_the_table_and_the_bad_flow_for_an_offline_page(flows):
    from ipywidgets.embed import embed_data

    view = FlowsView(flows)
    view.pick(3)
    state = embed_data(views=[view], drop_defaults=False)["manager_state"]["state"]
    mine = state[view.model_id]["state"]
    assert mine["rows"]["id"] == [1, 2, 3, 4, 5] and mine["detail"]["id"] == 3 and "3" in mine["details"]
    assert "export default" in mine["_esm"]  # the script travels with the state


def test_ten_thousand_flows_fit_the_page(flows):
    """The cells of 10,000 flows are sent once; they stay near 1 MB, so no windowing is needed
    for the table (the openings stay in the kernel but the bad ones)."""
    many = [
        plain_flow(i, path=f"/api/agent/context/memories?page={i}", agent="example agent") for i in range(1, 10_001)
    ]
    view = FlowsView(many)
    size = len(json.dumps(view.rows))
    assert size < 1_500_000, size
    view.search = "page=99"
    assert view.count == "111 of 10,000 exchanges"


def test_an_opening_survives_bodies_that_are_not_json():
    f = Flow(9, "POST", "/oauth/token", status=400, ended="answered")
    f.request_body = Body(b"grant_type=x&device_code=sha256:abcd", 37)
    f.response_body = Body(bytes(range(256)), 256)
    d = detail_of(f)
    assert d["request"]["text"].startswith("grant_type=") and "not text" in d["response"]["text"]
    assert d["rows"] == [] and d["blobs"] == []


# -- notebook 05 ----------------------------------------------------------------------------------
@pytest.mark.notebook
def test_notebook_05_finds_the_badly_sealed_row(tmp_path):
    from support.node import NODE

    if NODE is None:
        pytest.skip("node is not installed")
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "notebooks" / "05-inspect-an-agent.ipynb", as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DECOY_LAB_CONFIG_DIR", str(tmp_path / "config"))
        NotebookClient(
            nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
        ).execute()
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outs if o.get("output_type") == "error"]
    printed = "".join(o.get("text", "") for o in outs)
    assert "bad row:" in printed and "verdict: unreadable" in printed
    assert "the owner's app fails at step" in printed and "RSA-OAEP-SHA256 unwrap" in printed
    widgets = [o for o in outs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widgets) >= 2  # the flows view and the recipe view
