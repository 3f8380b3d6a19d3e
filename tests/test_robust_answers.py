"""A hostile or broken server cannot crash a load: whatever JSON (or not-JSON) `GET /memories`
answers, `Connection.load()` returns a Vault that reports each unusable row, or raises a typed
DecoyError — never a TypeError or AttributeError from deep inside.

The answers are served by an `httpx.MockTransport`, so every byte is chosen by the test.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoy_lab import memory
from decoy_lab.client import Connection
from decoy_lab.crypto import AgentKey
from decoy_lab.errors import DecoyError, TransportError
from decoy_lab.http import Tokens

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
MEMORIES = "/api/agent/context/memories"

AGENT = AgentKey.generate()
OWNER = AgentKey.generate()
KEYS = memory.RecipientKeys(OWNER.public_key_b64, AGENT.public_key_b64)
GOOD = memory.new_memory_row(KEYS, "a sound row among hostile ones")
SERVED_GOOD = {
    "id": GOOD["id"],
    "kid": GOOD["kid"],
    "rev": 1,
    "ciphertext": GOOD["ciphertext"],
    "wrapped_key": GOOD["self_wrap"],
    "via": ["self"],
    "mine": True,
    "author_kind": "agent",
    "created_at": "2026-11-30T10:00:00.000Z",
    "updated_at": "2026-11-30T10:00:00.000Z",
}

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
fields = st.sampled_from(
    ["id", "kid", "rev", "ciphertext", "wrapped_key", "via", "mine", "author_kind", "created_at", "updated_at"]
)
hostile_rows = st.one_of(
    json_values,
    st.dictionaries(fields, json_values, max_size=10),
    st.builds(lambda changes: {**SERVED_GOOD, **changes}, st.dictionaries(fields, json_values, max_size=3)),
)
answers = st.one_of(
    json_values,
    st.builds(
        lambda rows, rest: {"memories": rows, **rest},
        st.lists(hostile_rows, max_size=5),
        st.dictionaries(
            st.sampled_from(
                [
                    "preparing",
                    "preparing_others",
                    "failed",
                    "retry_after_seconds",
                    "preparing_unknown",
                    "shared_complete_at",
                ]
            ),
            json_values,
            max_size=3,
        ),
    ),
)


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
