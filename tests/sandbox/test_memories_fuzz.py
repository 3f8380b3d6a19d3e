"""Any body to the memory routes gets a typed answer, never a server error (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.sandbox_kit import Lab

ROUTES = [
    ("POST", "/api/agent/context/memories"),
    ("PUT", "/api/agent/context/memories"),
    ("POST", "/api/agent/context/memories/delete"),
    ("POST", "/api/agent/context/memory-wraps"),
    ("POST", "/api/agent/context/spaces"),
    ("POST", "/api/agent/context/rows"),
    ("PUT", "/api/agent/context/rows"),
    ("POST", "/api/agent/context/rows/delete"),
]
KEYS = [
    "rows",
    "id",
    "kid",
    "ciphertext",
    "owner_wrap",
    "self_wrap",
    "self_via",
    "grantee_wraps",
    "token_id",
    "via",
    "wrapped_key",
    "expected_rev",
    "row_id",
    "wraps",
    "ids",
    "removed_reasons",
    "space_id",
    "skid",
    "kind",
    "own_wrap",
    "account_id",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.text(max_size=30),
    st.sampled_from(
        [
            "AQE=",
            "AQIBAA==",
            "0123456789abcdef",
            "11111111-1111-4111-8111-111111111111",
            "self",
            "all",
            "category:travel",
            "me",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=12,
)
bodies = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)


@pytest.fixture(scope="module")
def peer():
    lab = Lab()
    return lab.pair(
        "fuzz",
        "memory.save",
        {"permissions": ["memory.read"]},
        {"permissions": ["memory.edit"]},
        {"permissions": ["memory.delete"]},
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), body=bodies)
def test_never_a_server_error(peer, route, body):
    method, path = route
    r = peer.lab.client.request(method, path, json=body, headers=peer.headers)
    assert r.status_code in (200, 201, 400, 403, 404, 409), (r.status_code, r.text)
    assert isinstance(r.json(), dict)


@pytest.fixture(scope="module")
def base_row(peer):
    return peer.new_row("fuzz base", categories=["travel"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(["id", "kid", "ciphertext", "owner_wrap", "self_wrap", "self_via", "grantee_wraps"]),
    value=values,
    drop=st.booleans(),
)
def test_one_spoiled_field_of_a_good_row(peer, base_row, field, value, drop):
    """A good row with one field replaced or removed: refused with a typed answer, or taken; never a 500."""
    row = dict(base_row)
    if drop:
        row.pop(field, None)
    else:
        row[field] = value
    r = peer.save([row])
    assert r.status_code in (201, 400, 409), (r.status_code, r.text)
    if r.status_code == 400:
        assert r.json()["code"] and r.json()["message"]
