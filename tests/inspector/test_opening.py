"""Rows opened where a key allows and said where none does; a wrongly sealed row is flagged on
its flow with the reason the owner's app (or the agent) meets."""

from __future__ import annotations

import pytest

from decoy_lab import AgentKey, memory
from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.wire import layouts as wire

pytestmark = pytest.mark.timeout(120)
MEMORIES = "/api/agent/context/memories"


def _rows(sandbox, agent_key) -> dict[str, dict]:
    keys = memory.RecipientKeys(sandbox.owner.public_key_b64, agent_key.public_key_b64)
    wrong = memory.RecipientKeys(AgentKey.generate().public_key_b64, agent_key.public_key_b64)
    good = memory.new_memory_row(keys, "Sealed right.")
    return {
        "good": good,
        "wrong owner": memory.new_memory_row(wrong, "Sealed to another owner."),
        "kid": {**memory.new_memory_row(keys, "Another kid."), "kid": wire.kid(bytes(32))},
    }


def _post(client, insp, token, rows):
    got = client.post(f"{insp.url}{MEMORIES}", json={"rows": list(rows)}, headers=token)
    assert got.status_code == 201, got.text
    insp.settle()
    return insp.flow(len(insp))


def test_a_wrongly_sealed_row_is_flagged_with_the_owners_reason(sandbox, insp, agent_key, pair, auth, client):
    token = auth(pair(insp.url, agent_key))
    rows = _rows(sandbox, agent_key)
    flow = _post(client, insp, token, rows.values())
    by_id = {r.id: r for r in flow.rows}
    good, wrong, kid = (by_id[rows[k]["id"]] for k in ("good", "wrong owner", "kid"))
    assert (good.verdict, good.text, good.opened_by) == (flow_record.READABLE, "Sealed right.", "owner key")
    assert (wrong.verdict, wrong.problem) == (flow_record.UNREADABLE, "owner_wrap")
    assert "cannot open owner_wrap" in wrong.reason
    assert (kid.verdict, kid.problem) == (flow_record.UNREADABLE, "kid_mismatch")
    assert wire.kid(bytes(32)) in kid.reason
    assert flow.verdict == "2 unreadable"
    failed = kid.recipe_trace()
    assert failed is not None and not failed.ok and failed.failed is not None  # the step that stopped it
    table = insp.rows(flow)
    assert set(table["verdict"]) == {"readable", "unreadable"}
    assert insp.flows.set_index("id").loc[flow.id, "verdict"] == "2 unreadable"
    # the same rows read back as the agent sees them
    client.get(f"{insp.url}{MEMORIES}", headers=token)
    insp.settle()
    read = {r.id: r for r in insp.flow(len(insp)).rows}
    assert read[rows["good"]["id"]].verdict == flow_record.READABLE
    assert (
        read[rows["kid"]["id"]].verdict == flow_record.UNREADABLE
        and "kid check failed" in read[rows["kid"]["id"]].reason
    )
    assert (
        read[rows["wrong owner"]["id"]].verdict == flow_record.READABLE
    )  # its self_wrap is fine: only the owner is locked out


def test_without_a_key_rows_are_parsed_by_layout(sandbox, agent_key, pair, auth, client):
    with Inspector.start(upstream=sandbox.url) as insp:
        token = auth(pair(insp.url, agent_key))
        good = _rows(sandbox, agent_key)["good"]
        swapped = {
            **memory.new_memory_row(memory.RecipientKeys(sandbox.owner.public_key_b64, agent_key.public_key_b64), "x")
        }
        swapped["owner_wrap"] = swapped["self_wrap"]  # a headerless envelope as owner_wrap
        flow = _post(client, insp, token, [good, swapped])
        plain, bad = flow.rows
        assert plain.verdict == flow_record.LAYOUT and plain.text is None
        assert "looks like a VAULT blob" in plain.certainty and "looks like an owner envelope" in plain.certainty
        assert bad.verdict == flow_record.UNREADABLE and bad.problem == "layout"
        assert "owner_wrap should be owner envelope" in bad.reason
        client.get(f"{insp.url}{MEMORIES}", headers=token)
        insp.settle()
        assert {r.verdict for r in insp.flow(len(insp)).rows} == {flow_record.LAYOUT}
        assert plain.recipe_trace() is not None


def test_an_unreadable_body_is_recorded_with_its_reason(upstream, client):
    url, app = upstream
    with Inspector.start(upstream=url) as insp:
        app.answer = b"<html>not json</html>"
        assert client.get(f"{insp.url}{MEMORIES}").status_code == 200
        app.answer = b'{"memories": [{"id": "a", "kid": "00", "ciphertext": "AAAA"}, {"id": '
        assert client.get(f"{insp.url}{MEMORIES}").status_code == 200
        assert (
            client.post(
                f"{insp.url}{MEMORIES}", content=b"{not json", headers={"content-type": "application/json"}
            ).status_code
            == 200
        )
        insp.settle()
        html, cut, posted = insp.all_flows()
    assert html.verdict == flow_record.ERROR and "not a JSON object of rows" in html.notes[0]
    assert cut.rows and cut.rows[0].id == "a"  # the rows before the cut are still read
    assert any("cut short" in n for n in cut.notes)
    assert posted.verdict == flow_record.ERROR and "is not JSON" in posted.notes[0]


def test_an_edit_that_keeps_its_key_opens_with_the_key_its_save_showed(insp, agent_key):
    from decoy_lab import Connection

    conn = Connection.pair(insp.url, name="Editor", agent_key=agent_key, profile=None, on_link=lambda *a: None)
    try:
        saved = conn.save("First words.")
        conn.edit(saved, text="Second words.")  # save returns the new id
    finally:
        conn.close()
    insp.settle()
    (put,) = [f for f in insp if f.method == "PUT"]
    assert [(r.verdict, r.text) for r in put.rows] == [(flow_record.READABLE, "Second words.")]
