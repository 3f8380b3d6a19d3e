"""The memory model: build, read and edit Decoy memory rows as the Decoy app and other agents do.

This is the Python form of the helper functions the memory contract names (agent-memory.mjs):

    new_memory_row / new_topic_rows      POST-ready rows: plaintext sealed under a fresh key,
                                         wrapped to the owner, to this agent and to grantees
    read_row / read_memory_row           served row -> Memory | TopicEntity | Link (or None),
                                         raising UnreadableRow with the reason in words
    read_memory_rows / summarize_rows    a whole GET answer, read in parallel
    list_topics / find_topic / same_topic / normalize_topic_name
    edit_memory_row / attach_duplicate   PUT bodies: re-seal with only what changed, rotate the
                                         key when a label is removed
    is_definite_refusal                  "did not happen" vs "may have committed"

Every plaintext carries `"v": 2` and the row id it is bound to. One row is one of three kinds:
an observation (a memory), an entity (a topic, id `topic:<row id>`) or a relation (a link).
Access reasons (`via`) are worked out in one place, reach.py, from the labels inside the plaintext:
`all`, `category:<c>`, `topic:<id>`, `account:<id>`, or `and:<a>+<b>` for a link between ends.

One module per concern, each importing only those above it:

    plaintext.py   the contract's limits, topic names, Plain and decode_plaintext (the literals
                   the spec gives, categories and entity types among them, are in decoy_lab.vocab)
    reach.py       Selectors, Grantee, RecipientKeys, reasons_for, grantee_wraps
    shared.py      one copy of the values many rows hold alike (interned strings, a topic's dict)
    read.py        KeyCache, Memory / TopicEntity / Link, read_row … read_rows, served_fields, Summary, summarize
    build.py       new_memory_row, new_topic_rows, TopicRows, and the topic references rows name
    topics.py      Topic, build_topics, list_topics, find_topic, same_topic, read_memory_rows
    edit.py        edit_memory_row, attach_duplicate, is_definite_refusal

tests/package/test_layers.py holds the package to that order, function-local imports included.

Import from the package (`from decoy_lab.memory import new_memory_row`), not from the modules.
"""

from __future__ import annotations

from decoy_lab.memory.build import TopicRows, new_memory_row, new_topic_rows
from decoy_lab.memory.edit import attach_duplicate, edit_memory_row, is_definite_refusal
from decoy_lab.memory.plaintext import (
    DEFAULT_RELATION_FROM_TOPIC,
    DEFAULT_RELATION_FROM_USER,
    MAX_GRANTEE_WRAPS,
    MAX_RELATION_TYPE,
    MAX_TOPIC_NAME,
    Plain,
    decode_plaintext,
    normalize_topic_name,
)
from decoy_lab.memory.reach import Grantee, RecipientKeys, Selectors, grantee_wraps, reasons_for
from decoy_lab.memory.read import (
    KeyCache,
    Link,
    Memory,
    Row,
    Served,
    Summary,
    TopicEntity,
    read_graph_row,
    read_memory_row,
    read_row,
    read_rows,
    served_fields,
    summarize,
    summarize_rows,
)
from decoy_lab.memory.topics import Topic, build_topics, find_topic, list_topics, read_memory_rows, same_topic
from decoy_lab.vocab import CATEGORIES, ENTITY_TYPES, MAX_CIPHERTEXT, USER_ENTITY, USER_NAMES

__all__ = [
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
]
