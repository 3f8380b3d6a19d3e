"""Legacy space rows and memory-wraps opened in flight, over real HTTP through the inspector: the
owner's key opens a new space's `owner_wrap`, the agent's key its `own_wrap` and the served
`wrapped_key`; the space key opens the rows, with the spec's bind check ("The plaintext embeds
`space_id` and `row_id`; check both after decrypting"); a wrap the agent's key opens is checked
against the memory's `kid`."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import AgentKey, memory
from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

pytestmark = pytest.mark.timeout(120)
SPACES, ROWS = "/api/agent/context/spaces", "/api/agent/context/rows"
MEMORIES, WRAPS = "/api/agent/context/memories", "/api/agent/context/memory-wraps"
EDIT = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}, {"permissions": ["memory.edit"]}]
OBS = {"observation": {"entityName": "default_user", "content": "Prefers meetings after 10 am."}}


def space_body(sandbox, agent_key, key, *, owner_key=None):
    return {
        "kind": "me",
        "skid": wire.kid(key),
        "own_wrap": wire.b64encode(sealing.wrap_to_agent(key, agent_key.public_key_b64)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(owner_key or key, sandbox.owner.public_key_b64)),
        "grantee_wraps": [],
    }


def space_row(space_id, key, plain, *, bound_to=None):
    rid = str(uuid.uuid4())
    blob = sealing.seal_space_row(key, plain, space_id=bound_to or space_id, row_id=rid)
    return {"id": rid, "skid": wire.kid(key), "ciphertext": wire.b64encode(blob)}


def last(insp, client, method, path, token, **kw):
    r = client.request(method, f"{insp.url}{path}", headers={"Authorization": f"Bearer {token}"}, **kw)
    insp.settle()
    return r, insp.flow(len(insp))


@pytest.fixture
def paired(owner, agent_key):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        yield sb, insp, pair_agent(insp.url, agent_key, EDIT, "Legacy agent")


def test_a_space_its_key_and_its_rows_open_with_the_owner_and_agent_keys(paired, agent_key, client):
    sandbox, insp, tok = paired
    key = random_key()
    r, made = last(insp, client, "POST", SPACES, tok["access_token"], json=space_body(sandbox, agent_key, key))
    assert r.status_code == 201, r.text
    sid = r.json()["space"]["id"]
    (space,) = made.rows
    assert (space.id, space.verdict, space.kind, space.kid) == (sid, flow_record.READABLE, "space", wire.kid(key))
    assert space.opened_by == "owner key, agent key"  # owner_wrap and own_wrap both open, to one key
    _, listed = last(insp, client, "GET", SPACES, tok["access_token"])
    assert [(x.id, x.verdict, x.opened_by) for x in listed.rows] == [(sid, flow_record.READABLE, "agent key")]

    good = space_row(sid, key, OBS)
    moved = space_row(sid, key, OBS, bound_to=str(uuid.uuid4()))  # sealed for another space
    r, wrote = last(insp, client, "POST", ROWS, tok["access_token"], json={"space_id": sid, "rows": [good, moved]})
    assert r.status_code == 201, r.text  # the server never decrypts: it stores both
    by_id = {x.id: x for x in wrote.rows}
    assert by_id[good["id"]].verdict == flow_record.READABLE and by_id[good["id"]].kind == "observation"
    assert by_id[good["id"]].text == "default_user: Prefers meetings after 10 am."
    assert by_id[moved["id"]].verdict == flow_record.UNREADABLE
    assert "is not the space it was served in" in by_id[moved["id"]].reason
    assert wrote.verdict == "1 unreadable"
    _, read = last(insp, client, "GET", ROWS, tok["access_token"], params={"space_id": sid})
    assert {x.id: x.verdict for x in read.rows} == {
        good["id"]: flow_record.READABLE,
        moved["id"]: flow_record.UNREADABLE,
    }
    trace = {x.id: x for x in read.rows}[moved["id"]].recipe_trace()
    assert trace is not None and trace.failed is not None and "bind check" in trace.failed.name


def test_a_space_whose_two_wraps_disagree_is_flagged(paired, agent_key, client):
    sandbox, insp, tok = paired
    key = random_key()
    body = space_body(sandbox, agent_key, key, owner_key=random_key())  # the owner gets another key
    r, made = last(insp, client, "POST", SPACES, tok["access_token"], json=body)
    assert r.status_code == 201, r.text
    (space,) = made.rows
    assert space.verdict == flow_record.UNREADABLE and space.problem == "space_key"
    assert "not skid" in space.reason and "different keys" in space.reason


def test_memory_wraps_open_with_the_agent_key_and_a_stale_kid_is_said(paired, agent_key, client):
    sandbox, insp, tok = paired
    keys = memory.RecipientKeys(sandbox.owner.public_key_b64, agent_key.public_key_b64)
    row = memory.new_memory_row(keys, "Window seat on long flights.")
    r, _ = last(insp, client, "POST", MEMORIES, tok["access_token"], json={"rows": [row]})
    assert r.status_code == 201, r.text
    mem_key = sealing.unwrap_as_agent(row["self_wrap"], agent_key)
    other = AgentKey.generate()
    wraps = [
        {"token_id": tok["token_id"], "via": ["all"], "wrapped_key": row["self_wrap"]},
        {"token_id": str(uuid.uuid4()), "via": ["all"], "wrapped_key": wire.b64encode(
            sealing.wrap_to_agent(mem_key, other.public_key_b64))},
    ]  # fmt: skip
    body = {"row_id": row["id"], "kid": row["kid"], "wraps": wraps}
    _, shared = last(insp, client, "POST", WRAPS, tok["access_token"], json=body)
    mine, theirs = shared.rows
    assert (mine.verdict, mine.opened_by, mine.kid) == (flow_record.READABLE, "agent key", row["kid"])
    assert theirs.verdict == flow_record.LAYOUT and "RSA-2048" in theirs.certainty  # only its recipient opens it
    stale = {**body, "kid": wire.kid(random_key())}
    _, old = last(insp, client, "POST", WRAPS, tok["access_token"], json=stale)
    assert all(x.verdict == flow_record.UNREADABLE and x.problem == "kid_mismatch" for x in old.rows)
    assert f"not the memory's current key id {row['kid']}" in old.rows[1].reason
