"""What "Verify the result" finds when a write does not read back as intended, against the sandbox:
"After saving, retain the returned memory ID and fetch that row through Decoy. Decrypt it and
confirm its text, categories and associations match the intended save", and "After a correction,
read the same ID and verify the new content". A client whose sealing step is wrong (patched here
for one save) stores a row that opens but says something else: each difference is named, in
words, on `last_verify` and in the log; the write itself succeeded, so nothing is raised. Against
a server that is not on this machine the sandbox's owner's-eye check is never asked."""

from __future__ import annotations

import json
import logging
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, OWNER, SERVED_GOOD
from support.connections import paired


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture(scope="module")
def conn(sb) -> Connection:
    return paired(sb, ["memory.save", "memory.read", "memory.edit"], name="Verify findings")


def _memories_sealed_with(monkeypatch, change) -> None:
    """This client's sealing step changes each memory's plaintext (not a topic's rows) by `change`."""
    seal = sealing.seal_json

    def sealed(key, obj, trace=None):
        return seal(key, change(dict(obj)) if "observation" in obj else obj)

    monkeypatch.setattr(sealing, "seal_json", sealed)


def _saved(conn, monkeypatch, caplog, change, text, **kw):
    _memories_sealed_with(monkeypatch, change)
    with caplog.at_level(logging.WARNING, logger="decoy_lab.protocol.verify"):
        mid = conn.save(text, **kw)
    monkeypatch.undo()
    v = conn.session.last_verify
    assert v.id == mid and v.ok is False
    assert [r.getMessage() for r in caplog.records] == [f"memory {mid}: {p}" for p in v.problems]
    return v


def test_a_save_that_reads_back_with_other_text_is_named(conn, monkeypatch, caplog):
    def other_text(obj):
        return {**obj, "observation": {**obj["observation"], "content": "Aisle seats."}}

    v = _saved(conn, monkeypatch, caplog, other_text, "Window seats.")
    assert v.problems == ["its text reads 'Aisle seats.', not 'Window seats.'"]


def test_a_save_that_reads_back_with_other_categories_is_named(conn, monkeypatch, caplog):
    v = _saved(
        conn,
        monkeypatch,
        caplog,
        lambda obj: {**obj, "categories": ["music"]},
        "Jazz.",
        categories=["travel", "travel"],
    )
    assert v.problems == ["its categories read ['music'], not ['travel']"]


def test_a_save_filed_under_the_user_instead_of_its_topic_is_named(conn, monkeypatch, caplog):
    def about_the_user(obj):
        return {**obj, "about": ["user"], "observation": {**obj["observation"], "entityName": "default_user"}}

    v = _saved(conn, monkeypatch, caplog, about_the_user, "Direct flights.", topic="Lisbon trip")
    assert v.problems == ["it is filed under the user, not the intended topic"]


def test_a_save_filed_under_a_topic_instead_of_the_user_is_named(conn, monkeypatch, caplog):
    v = _saved(conn, monkeypatch, caplog, lambda obj: {**obj, "about": ["topic:t-elsewhere"]}, "Short answers.")
    assert v.problems == ["it is filed under topic:t-elsewhere, not the intended topic"]


def test_a_save_about_another_account_than_asked_is_named(conn, monkeypatch, caplog):
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    v = _saved(
        conn, monkeypatch, caplog, lambda obj: {**obj, "about": [f"account:{other}"]}, "Squash merges.", account=mine
    )
    assert v.problems == [f"it is about account {other}, not {mine}"]


def test_a_save_matching_what_was_asked_is_ok(conn):
    mid = conn.save("Tea, no sugar.", topic="Kitchen", categories=["food"])
    v = conn.session.last_verify
    assert (v.id, v.ok, v.problems) == (mid, True, [])
    assert v.owner_view is not None and v.owner_view["readable"] is True


def test_an_edit_is_verified_against_its_new_content(conn, monkeypatch, caplog):
    """ "After a correction, read the same ID and verify the new content"."""
    mid = conn.save("Runs on Tuesdays.")
    _memories_sealed_with(monkeypatch, lambda obj: {**obj, "observation": {**obj["observation"], "content": "Runs."}})
    with caplog.at_level(logging.WARNING, logger="decoy_lab.protocol.verify"):
        conn.edit(mid, text="Runs on Thursdays.")
    monkeypatch.undo()
    v = conn.session.last_verify
    assert v.id == mid and v.problems == ["its text reads 'Runs.', not 'Runs on Thursdays.'"]


# -- the owner's-eye check is the sandbox's, on this machine only ------------------------------------
def _front(base: str, app_view: httpx.Response | None) -> tuple[Connection, list[str]]:
    asked: list[str] = []
    rows: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        route = (request.method, request.url.path)
        asked.append(request.url.path)
        if route == ("GET", "/api/agent/context/memory-grantees"):
            return httpx.Response(200, json={"owner_public_key": OWNER.public_key_b64, "grantees": []})
        if route == ("GET", "/api/agent/context/spaces"):
            return httpx.Response(200, json={"spaces": []})
        if route == ("POST", "/api/agent/context/memories"):
            new = json.loads(request.content)["rows"]
            rows.extend(
                dict(SERVED_GOOD, id=r["id"], kid=r["kid"], ciphertext=r["ciphertext"], wrapped_key=r["self_wrap"])
                for r in new
            )
            return httpx.Response(201, json={"created": [r["id"] for r in new]})
        if route == ("GET", "/api/agent/context/memories"):
            return httpx.Response(200, json={"memories": rows})
        if route == ("GET", "/_sandbox/app-view") and app_view is not None:
            return app_view
        return httpx.Response(404, json={"code": "NOT_FOUND", "message": "no such route"})

    conn = Connection(
        base,
        agent_key=AGENT,
        tokens=Tokens(access_token="AT", refresh_token="RT", token_id=f"tok-{uuid.uuid4().hex[:6]}"),
        transport=httpx.MockTransport(handler),
        retries=0,
        backoff=0,
        sleep=lambda s: None,
    )
    return conn, asked


def test_a_server_elsewhere_is_never_asked_the_sandboxs_owner_view():
    conn, asked = _front("https://decoy.example", httpx.Response(200, json={"rows": [{"readable": False}]}))
    conn.save("Prefers tea.")
    assert conn.session.last_verify.ok and conn.session.last_verify.owner_view is None
    assert "/_sandbox/app-view" not in asked


@pytest.mark.parametrize("base", ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9"])
def test_a_local_server_is_asked_and_an_owner_who_cannot_open_it_is_named(base):
    seen = {"readable": False, "reason": "the owner_wrap is not for the owner's key"}
    conn, asked = _front(base, httpx.Response(200, json={"rows": [seen]}))
    conn.save("Prefers tea.")
    v = conn.session.last_verify
    assert "/_sandbox/app-view" in asked and v.owner_view == seen
    assert v.problems == ["the owner's app would not open it: the owner_wrap is not for the owner's key"]


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(404, json={"code": "NOT_FOUND", "message": "not a sandbox"}),
        httpx.Response(200, json={"rows": []}),
        httpx.Response(200, json={"rows": ["not an entry"]}),
        httpx.Response(200, json={"rows": {"readable": False}}),
        httpx.Response(200, json=["rows"]),
        httpx.Response(200, json={"rows": [{"readable": True}]}),
    ],
    ids=["404", "no rows", "not an entry", "rows not a list", "not an object", "readable"],
)
def test_a_local_server_without_a_usable_owner_view_leaves_the_save_verified(answer):
    conn, asked = _front("http://127.0.0.1:9", answer)
    conn.save("Prefers tea.")
    v = conn.session.last_verify
    assert "/_sandbox/app-view" in asked and v.ok and v.problems == []
