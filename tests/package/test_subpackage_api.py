"""Each sub-package's surface is explicit and pinned, as the top level's is
(tests/client/test_public_api.py): a change here is a deliberate API change."""

from __future__ import annotations

import importlib

import pytest

PINNED = {
    "decoy_lab.memory": [
        "CATEGORIES",
        "DEFAULT_RELATION_FROM_TOPIC",
        "DEFAULT_RELATION_FROM_USER",
        "ENTITY_TYPES",
        "MAX_CIPHERTEXT",
        "MAX_GRANTEE_WRAPS",
        "MAX_RELATION_TYPE",
        "MAX_TOPIC_NAME",
        "USER_ENTITY",
        "USER_NAMES",
        "Grantee",
        "KeyCache",
        "Link",
        "Memory",
        "Plain",
        "RecipientKeys",
        "Row",
        "Selectors",
        "Served",
        "Summary",
        "Topic",
        "TopicEntity",
        "TopicRows",
        "attach_duplicate",
        "build_topics",
        "decode_plaintext",
        "edit_memory_row",
        "find_topic",
        "grantee_wraps",
        "is_definite_refusal",
        "list_topics",
        "new_memory_row",
        "new_topic_rows",
        "normalize_topic_name",
        "read_graph_row",
        "read_memory_row",
        "read_memory_rows",
        "read_row",
        "read_rows",
        "reasons_for",
        "same_topic",
        "served_fields",
        "summarize",
        "summarize_rows",
    ],
    "decoy_lab.sandbox": ["FakeClock", "HTTPProblem", "Sandbox", "create_app", "default_db_path", "server_config"],
    "decoy_lab.widgets": [
        "ConsentCard",
        "Filters",
        "FlowsPanel",
        "FlowsView",
        "MemoryBrowser",
        "MemoryGrid",
        "OwnerPanel",
        "PairingWidget",
        "ReachMatrixView",
        "SteppedTrace",
        "Stepper",
        "TopicMapWidget",
        "VaultView",
        "shown",
    ],
    "decoy_lab.vocab": [
        "ASKED_ALONE",
        "CATEGORIES",
        "DEVICE_GRANT",
        "ENTITY_TYPES",
        "MAX_CIPHERTEXT",
        "PERMISSIONS",
        "REFRESH_GRANT",
        "SELECTION_KEYS",
        "STATUSES",
        "USER_ENTITY",
        "USER_NAMES",
    ],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_pinned_and_every_name_resolves(name):
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(PINNED[name])
    assert len(set(module.__all__)) == len(module.__all__)
    for attr in module.__all__:
        assert getattr(module, attr) is not None, f"{name}.{attr}"
