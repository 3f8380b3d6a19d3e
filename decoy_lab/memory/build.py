"""Building POST-ready rows: a plaintext sealed under a fresh key, wrapped to the owner, to this
agent and to every grantee it reaches; and the topic references new rows and edits name.

Row ids are drawn from `decoy_lab.memory.uuid` at call time (see the package docstring).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from decoy_lab.errors import MemoryModelError
from decoy_lab.memory.plaintext import (
    DEFAULT_RELATION_FROM_TOPIC,
    DEFAULT_RELATION_FROM_USER,
    MAX_RELATION_TYPE,
    MAX_TOPIC_NAME,
    decode_plaintext,
    is_user_name,
)
from decoy_lab.memory.reach import RecipientKeys, as_account_id, as_topic_id, grantee_wraps, self_via_of
from decoy_lab.memory.read import Memory
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.vocab import CATEGORIES, ENTITY_TYPES, MAX_CIPHERTEXT, USER_ENTITY
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

_METADATA_TOPIC_KEYS = ("topic", "topics", "topic_name")


# -- building rows ------------------------------------------------------------------------------
def need_owner(keys: RecipientKeys) -> str:
    """The owner's public key, once the keys are complete enough to seal a row."""
    if not isinstance(keys, RecipientKeys):
        raise MemoryModelError("keys must be a RecipientKeys (owner_public_key, agent_public_key, grantees)")
    if not keys.owner_public_key:
        raise MemoryModelError(
            "the owner has not finished key setup in the Decoy app: complete that setup before saving "
            "(memory-grantees serves owner_public_key: null)"
        )
    if not keys.agent_public_key:
        raise MemoryModelError(
            "keys.agent_public_key is missing: this connection's own public key is needed for self_wrap"
        )
    return keys.owner_public_key


def seal_row(
    key: bytes, plaintext: dict[str, Any], keys: RecipientKeys, *, trace: Trace | None = None
) -> dict[str, Any]:
    """Seal `plaintext` under `key` and wrap the key to the owner, this agent and the grantees."""
    row_id = plaintext["row_id"]
    plain = decode_plaintext(plaintext, row_id)  # we write only what we can read back
    blob = sealing.seal_json(key, plaintext, trace=trace)
    if len(blob) > MAX_CIPHERTEXT:
        raise MemoryModelError(
            f"the sealed row is {len(blob)} bytes; the server takes at most {MAX_CIPHERTEXT} "
            "(100 KiB): split the text into several memories"
        )
    row = {
        "id": row_id,
        "kid": wire.kid(key),
        "ciphertext": wire.b64encode(blob),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, need_owner(keys), trace=trace)),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, keys.agent_public_key, trace=trace)),
    }
    wraps = grantee_wraps(key, plain, keys, trace=trace)
    if wraps:
        row["grantee_wraps"] = wraps
    self_via = self_via_of(plain, keys)
    if self_via is not None:
        row["self_via"] = self_via
    return row


def checked_categories(values: Iterable[str] | str | None) -> list[str]:
    """Known categories, each once, in the order given; an unknown one is a MemoryModelError."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for c in values:
        if not isinstance(c, str) or c not in CATEGORIES:
            raise MemoryModelError(f"unknown category {c!r}; categories are mem0's: {', '.join(CATEGORIES)}")
        if c not in out:
            out.append(c)
    return out


@dataclass(frozen=True)
class _TopicRef:
    id: str
    name: str
    ids: tuple[str, ...]


def topic_parts(topic: Any) -> tuple[Any, Any, Any]:
    """(id, name, ids) of a topic given as {"id", "name"}, a Topic, a TopicEntity, TopicRows or a
    Memory (its topic)."""
    if isinstance(topic, (Memory, TopicRows)):
        topic = topic.topic
    if topic is None:
        return None, None, ()
    if isinstance(topic, Mapping):
        return topic.get("id"), topic.get("name"), topic.get("ids") or ()
    tid = getattr(topic, "topic_id", None) or getattr(topic, "id", None)
    return tid, getattr(topic, "name", None), getattr(topic, "ids", None) or ()


def topic_ref(topic: Any, what: str = "topic") -> _TopicRef:
    """A topic as new rows and edits name it: its id (`topic:<row id>`), name and every copy's id."""
    tid, name, ids = topic_parts(topic)
    if not isinstance(tid, str) or not tid or not isinstance(name, str) or not name.strip():
        raise MemoryModelError(
            f"{what} must be {{'id': 'topic:<row id>', 'name': …}} (from find_topic or new_topic_rows), got {topic!r}"
        )
    tid = as_topic_id(tid)
    all_ids = tuple(dict.fromkeys([tid, *(as_topic_id(i) for i in ids if isinstance(i, str) and i)]))
    return _TopicRef(tid, name, all_ids)


def _new_id(given: str | None = None, name: str = "row_id") -> str:
    """A fresh uuid4 row id, or the caller's own (checked: lowercase hyphenated uuid form)."""
    if given is None:
        return str(uuid.uuid4())
    try:
        ok = isinstance(given, str) and str(uuid.UUID(given)) == given
    except ValueError:
        ok = False
    if not ok:
        raise MemoryModelError(f"{name} must be a lowercase hyphenated uuid, got {given!r}")
    return given


def _account_uuid(account: str) -> str:
    if not isinstance(account, str):
        raise MemoryModelError(f"account is the granted account's uuid, got {type(account).__name__}")
    value = as_account_id(account.strip())
    try:
        uuid.UUID(value)
    except ValueError:
        raise MemoryModelError(f"account must be the account's uuid (never its name), got {account!r}") from None
    return value


def new_memory_row(
    keys: RecipientKeys,
    text: str,
    *,
    topic: Any = None,
    categories: Iterable[str] = (),
    account: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    about_hint: str | None = None,
    trace: Trace | None = None,
    row_id: str | None = None,
) -> dict[str, Any]:
    """A POST-ready memory row `{id, kid, ciphertext, owner_wrap, self_wrap, grantee_wraps?, self_via?}`.

    Exactly one `about`: the user (default), `topic` ({"id", "name"}) or `account` (its uuid).
    """
    need_owner(keys)
    if not isinstance(text, str) or not text.strip():
        raise MemoryModelError("a memory needs non-empty text")
    if topic is not None and account is not None:
        raise MemoryModelError(
            "a memory has exactly one about: the user, one topic or one account — not both a topic and an account"
        )
    cats = checked_categories(categories)
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise MemoryModelError(f"metadata is an object of free notes, got {type(metadata).__name__}")
        named = [k for k in _METADATA_TOPIC_KEYS if k in metadata]
        if named:
            raise MemoryModelError(
                f"metadata.{named[0]} files nothing: a topic never goes in metadata. "
                "Pass topic={'id': 'topic:<id>', 'name': …} to new_memory_row (find_topic "
                "or new_topic_rows gives it)"
            )
    if about_hint is not None and not isinstance(about_hint, str):
        raise MemoryModelError("about_hint is text")
    row_id = _new_id(row_id, "row_id")
    observation: dict[str, Any] = {}
    if topic is not None:
        ref = topic_ref(topic)
        observation["entityName"], about = ref.name, ref.id
    elif account is not None:
        about = f"account:{_account_uuid(account)}"  # never the account's name
    else:
        observation["entityName"], about = USER_ENTITY, "user"
    observation["content"] = text
    plaintext: dict[str, Any] = {"v": 2, "row_id": row_id, "observation": observation, "about": [about]}
    if cats:
        plaintext["categories"] = cats
    if metadata is not None:
        plaintext["metadata"] = dict(metadata)
    if about_hint is not None:
        plaintext["about_hint"] = about_hint
    return seal_row(random_key(), plaintext, keys, trace=trace)


@dataclass
class TopicRows:
    """A new topic: its id (`topic:<entity row id>`), `{"id", "name"}` for new_memory_row, and the
    entity and relation rows to POST together with its first memory."""

    topic_id: str
    topic: dict[str, Any]
    rows: list[dict[str, Any]]


def new_topic_rows(
    keys: RecipientKeys,
    name: str,
    *,
    type: str | None = "",
    relation_type: str | None = None,
    parent: Any = None,
    trace: Trace | None = None,
    ids: tuple[str, str] | None = None,
) -> TopicRows:
    """The entity row of a new topic and its one relation row, from You or from `parent`.
    `ids` (entity id, relation id) are fresh uuid4s unless given (a seeded demo vault)."""
    need_owner(keys)
    if not isinstance(name, str) or not name.strip():
        raise MemoryModelError("a topic needs a name")
    name = name.strip()
    if len(name) > MAX_TOPIC_NAME:
        raise MemoryModelError(f"a topic name is at most {MAX_TOPIC_NAME} characters, this one is {len(name)}")
    if is_user_name(name):
        raise MemoryModelError(
            f"{name!r} names the user, never a topic: save memories about the user with no topic instead"
        )
    etype = type or ""
    if etype not in ("", *ENTITY_TYPES):
        raise MemoryModelError(f'unknown topic type {etype!r}; use one of {", ".join(ENTITY_TYPES)}, or ""')
    if parent is not None:
        pref = topic_ref(parent, "parent")
        start, start_end = pref.name, pref.id
        default = DEFAULT_RELATION_FROM_TOPIC
    else:
        start, start_end, default = USER_ENTITY, "user", DEFAULT_RELATION_FROM_USER
    if relation_type is None:
        relation_type = default
    if not isinstance(relation_type, str) or not relation_type.strip():
        raise MemoryModelError("relation_type is free text in active voice, e.g. 'is planning'")
    relation_type = relation_type.strip()
    if len(relation_type) > MAX_RELATION_TYPE:
        raise MemoryModelError(
            f"relation_type is at most {MAX_RELATION_TYPE} characters, this one is {len(relation_type)}"
        )
    entity_id, relation_id = (_new_id(ids[0], "ids[0]"), _new_id(ids[1], "ids[1]")) if ids else (_new_id(), _new_id())
    topic_id = f"topic:{entity_id}"
    entity = {"v": 2, "row_id": entity_id, "entity": {"name": name, "entityType": etype}, "about": []}
    relation = {
        "v": 2,
        "row_id": relation_id,
        "relation": {"from": start, "to": name, "relationType": relation_type},
        "endpoints": [start_end, topic_id],
        "about": [],
    }
    rows = [
        seal_row(random_key(), entity, keys, trace=trace),
        seal_row(random_key(), relation, keys, trace=trace),
    ]
    return TopicRows(topic_id, {"id": topic_id, "name": name}, rows)
