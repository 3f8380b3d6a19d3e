"""Hostile answers and a sound row to hide among them (hypothesis strategies), for the robustness tests."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from decoy_lab import memory
from decoy_lab.wire.crypto import AgentKey

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
