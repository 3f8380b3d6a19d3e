"""A hostile or broken server cannot crash a load: whatever JSON (or not-JSON) `GET /memories`
answers, `Connection.load()` returns a Vault that reports each unusable row, or raises a typed
DecoyError — never a TypeError or AttributeError from deep inside.

The answers are served by an `httpx.MockTransport`, so every byte is chosen by the test.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from decoy_lab.client.connection import Connection
from decoy_lab.errors import DecoyError, TransportError
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, FAST, MEMORIES, SERVED_GOOD, answers


def _connection(body: bytes, status: int = 200) -> Connection:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == MEMORIES:
            return httpx.Response(status, content=body, headers={"content-type": "application/json"})
        return httpx.Response(200, json={"spaces": []})

    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="t"),
        transport=httpx.MockTransport(handle),
        retries=1,
        backoff=0.0,
        sleep=lambda s: None,
    )


def _load_or_typed_error(body: bytes, status: int = 200):
    conn = _connection(body, status)
    try:
        return conn.load()
    except DecoyError as exc:
        return exc


@FAST
@given(answers)
def test_any_json_answer_loads_or_raises_a_typed_error(answer):
    out = _load_or_typed_error(json.dumps(answer).encode())
    if not isinstance(out, DecoyError):
        assert len(out.decoded_rows) == len(out.served)
        for row in out.decoded_rows:
            assert row.status == "readable" or row.reason, "an unusable row is reported with its reason"


@FAST
@given(st.binary(max_size=200), st.sampled_from([200, 201, 400, 401, 404, 409, 429, 500, 503]))
def test_any_bytes_with_any_status_load_or_raise_a_typed_error(body, status):
    _load_or_typed_error(body, status)


def test_the_sound_row_among_hostile_ones_is_read():
    body = json.dumps({"memories": [{"id": [1]}, 7, SERVED_GOOD, {**SERVED_GOOD, "kid": "0" * 16}]}).encode()
    vault = _load_or_typed_error(body)
    assert not isinstance(vault, DecoyError)
    assert list(vault.memories["text"]) == ["a sound row among hostile ones"]


@pytest.mark.parametrize("value", [5, "rows", {"id": "x"}, None, True])
def test_a_memories_member_that_is_not_a_list_is_a_transport_error(value):
    """Not a vault with nothing in it: the answer itself is broken, and saying so is the honest result."""
    out = _load_or_typed_error(json.dumps({"memories": value}).encode())
    assert isinstance(out, TransportError) and "memories" in str(out)
