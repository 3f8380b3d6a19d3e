"""The rest of what a notebook sees: legacy space rows included and marked, `Connection.sandbox`,
and the text/HTML of Access and Vault (with no secret in them)."""

from __future__ import annotations

import importlib.util
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key


@pytest.fixture(scope="module")
def conn():
    c = Connection.sandbox(
        seed="none", permissions=["memory.read", "memory.edit", "memory.save"], agent_key=AgentKey.generate()
    )
    yield c
    c.close()


def test_sandbox_starts_pairs_and_stops_with_the_connection():
    c = Connection.sandbox(seed="none", agent_key=AgentKey.generate())
    sb = c.sandbox_handle
    assert isinstance(sb, Sandbox) and c.base_url == sb.url and c.profile is None
    assert c.access().names == {"memory.read", "memory.save"}
    c.close()
    assert not sb._thread.is_alive()


def make_space(conn: Connection, texts: list[str]) -> tuple[str, list[str]]:
    """Write a legacy Me space and rows as an older client would (through the raw API)."""
    key = random_key()
    owner = conn.keys().owner_public_key
    ans = conn.session.api.request(
        "POST",
        "/api/agent/context/spaces",
        json={
            "kind": "me",
            "skid": wire.kid(key),
            "own_wrap": wire.b64encode(sealing.wrap_to_agent(key, conn.agent_key.public_key_b64)),
            "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, owner)),
            "grantee_wraps": [],
        },
    )
    space_id = ans["space"]["id"]
    ids = [str(uuid.uuid4()) for _ in texts]
    rows = [
        {
            "id": rid,
            "skid": wire.kid(key),
            "ciphertext": wire.b64encode(
                sealing.seal_space_row(
                    key, {"observation": {"entityName": "default_user", "content": t}}, space_id=space_id, row_id=rid
                )
            ),
        }
        for rid, t in zip(ids, texts)
    ]
    conn.session.api.request("POST", "/api/agent/context/rows", json={"space_id": space_id, "rows": rows})
    return space_id, ids


def test_legacy_space_rows_are_included_and_marked(conn):
    """ "Legacy space rows included and marked"; their plaintext binds space_id and row_id."""
    space_id, ids = make_space(conn, ["Legacy: likes jazz.", "Legacy: lives in Porto."])
    v = conn.load()
    mem = v.memories.set_index("id")
    assert mem.loc[ids, "source"].tolist() == ["space", "space"]
    assert mem.loc[ids[0], "text"] == "Legacy: likes jazz."
    rows = v.rows.set_index("id")
    assert (rows.loc[ids, "kind"] == "space_row").all() and (rows.loc[ids, "space_id"] == space_id).all()
    assert "(2 from legacy space rows)" in v.summary  # the count vocabulary: memories wherever stored
    t = conn.unseal(ids[1])
    assert t.ok and t.steps[-1].name == "bind check: space_id and row_id"


def test_access_text_and_html_put_the_summary_first(conn):
    acc = conn.access()
    text = str(acc)
    assert text.splitlines()[0] == acc.raw["access"]["summary"]
    assert "memory.edit" in text and "Access ends" in text
    html = acc._repr_html_()
    assert html.index("What this connection holds") < html.index("<table") and "memory.save" in html
    assert conn.tokens.access_token.reveal() not in text + html + repr(acc)


def test_vault_text_and_html(conn):
    conn.save("Shown in the table.", categories=["music"])
    v = conn.load()
    assert "Shown in the table." in v._repr_html_() and v.summary in repr(v)
    assert str(v).startswith(v.summary)


@pytest.mark.skipif(importlib.util.find_spec("decoy_lab.sandbox.phone.seed") is None, reason="demo seed not installed")
def test_done_when_the_demo_vault_loads_and_round_trips():
    """Issue 4, done when: pair with `Sandbox.start()`, `conn.load().memories` shows the demo vault,
    save / edit / delete round-trip, and the owner's app-view shows every row written as readable."""
    with Sandbox.start() as sb:
        conn = Connection.pair(
            sb.url,
            name="Done-when check",
            profile=None,
            on_link=lambda *a: None,
            permissions=["memory.read", "memory.edit", "memory.delete", "memory.save"],
        )
        sb.owner.share()
        v = conn.load()
        assert len(v.memories) >= 40 and len(v.topics) >= 8 and v.counts()["unreadable"] == 0
        mid = conn.save("Done-when memory.", topic=v.topics.iloc[0]["name"], categories=["misc"])
        conn.edit(mid, text="Done-when memory, edited.")
        written = [r for r in sb.owner.app_view() if r["id"] == mid]
        assert written and written[0]["readable"] and written[0]["text"] == "Done-when memory, edited."
        assert conn.delete([mid]).deleted == [mid]
        conn.close()


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_in_process_with_a_test_client_and_dropped_answers():
    """`http=` takes any httpx.Client, so the sandbox app runs in-process (no socket)."""
    from starlette.testclient import TestClient

    from decoy_lab.sandbox import create_app

    app = create_app(":memory:", seed="none")
    with TestClient(app) as tc:
        app.state.sb.device_interval = 0
        c = Connection.pair(
            "",
            http=tc,
            name="In process",
            profile=None,
            on_link=lambda *a: None,
            agent_key=AgentKey.generate(),
            backoff=0,
        )
        app.state.sb.faults.configure({"drop_after_commit": 0.5, "seed": 3})
        ids = [c.save(f"In-process fact {i}") for i in range(8)]
        app.state.sb.faults.configure({})
        assert c.resends > 0 and set(ids) <= set(c.load().memories["id"])
        assert len(c.load().memories) == 8
