"""Editing: PUT bodies that re-seal a memory with only what changed (rotating the key when a
label is removed), filing a duplicate in an add flow, and telling a refusal from an unknown outcome.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from decoy_lab.errors import APIError, KidConflict, MemoryModelError, NotFound, RevConflict, ServerError, TransportError
from decoy_lab.memory.build import checked_categories, need_owner, seal_row, topic_ref
from decoy_lab.memory.plaintext import Plain, decode_plaintext, normalize_topic_name
from decoy_lab.memory.reach import RecipientKeys
from decoy_lab.memory.read import KeyCache, open_served_row, read_memory_row, row_id_of
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.vocab import USER_ENTITY
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

_MEMORY_CHANGES = frozenset({"text", "categories", "topic"})


# -- editing ------------------------------------------------------------------------------------
def apply_text(observation: dict[str, Any], changes: Mapping[str, Any]) -> None:
    """Put `changes["text"]`, when given, into an observation's content; it must be non-empty."""
    if "text" in changes:
        text = changes["text"]
        if not isinstance(text, str) or not text.strip():
            raise MemoryModelError("a memory needs non-empty text")
        observation["content"] = text


def edit_memory_row(
    served_row: Mapping[str, Any],
    changes: Mapping[str, Any],
    agent_key: AgentKey,
    keys: RecipientKeys,
    *,
    trace: Trace | None = None,
    key_cache: MutableMapping[str, bytes] | None = None,
) -> dict[str, Any]:
    """A PUT body that re-seals the whole plaintext with only what changed.

    `changes` may hold `text`, `categories` and `topic` ({"id","name"}; None = back to You). Removing
    a label (a category or the topic) rotates the key: new kid, owner and self wraps, grantee wraps
    for every connection the remaining labels still reach, and `removed_reasons`. A connection that
    did not author the memory may change its text only.
    """
    if not isinstance(changes, Mapping):
        raise MemoryModelError("changes is a mapping of text / categories / topic")
    unknown = sorted(set(changes) - _MEMORY_CHANGES)
    if unknown:
        raise MemoryModelError(f"edit_memory_row changes text, categories or topic, not {', '.join(unknown)}")
    row_id = row_id_of(served_row)
    rev = served_row.get("rev")
    if isinstance(rev, bool) or not isinstance(rev, int) or rev < 1:
        raise MemoryModelError("the row has no rev: pass the row as GET /api/agent/context/memories serves it")
    _rid, key, plain = open_served_row(served_row, agent_key, trace, key_cache)
    if plain.kind != "memory":
        raise MemoryModelError(f"row {row_id} is a {plain.kind} row, not a memory: edit_memory_row edits memories")
    new = copy.deepcopy(plain.plaintext)
    obs = new["observation"]
    apply_text(obs, changes)
    if "topic" in changes:
        _move(new, obs, plain, changes["topic"])
    if "categories" in changes:
        given = changes["categories"]
        given = [given] if isinstance(given, str) else list(given or ())
        if set(given) != set(plain.categories):  # same set: leave the list byte-identical
            cats = checked_categories(given)
            if cats:
                new["categories"] = cats
            else:
                new.pop("categories", None)
    relabelled = (
        new.get("about") != plain.plaintext.get("about")
        or new.get("categories") != plain.plaintext.get("categories")
        or obs.get("entityName") != plain.plaintext["observation"].get("entityName")
    )
    if relabelled and served_row.get("mine") is not True:
        raise MemoryModelError(
            "only the memory's author or the owner may relabel it: a connection editing "
            "someone else's memory may correct its text and must leave its categories "
            "and topic byte-identical"
        )
    after = decode_plaintext(new, row_id)
    removed = [label for label in plain.labels if label not in after.labels]
    body: dict[str, Any] = {"id": row_id, "expected_rev": rev}
    if not removed:
        body["ciphertext"] = wire.b64encode(sealing.seal_json(key, new, trace=trace))
        return body
    need_owner(keys)
    row = seal_row(random_key(), new, keys, trace=trace)
    body["ciphertext"] = row["ciphertext"]
    body["kid"] = row["kid"]
    body["owner_wrap"] = row["owner_wrap"]
    body["self_wrap"] = row["self_wrap"]
    if "self_via" in row:
        body["self_via"] = row["self_via"]
    body["removed_reasons"] = removed
    if row.get("grantee_wraps"):
        body["grantee_wraps"] = row["grantee_wraps"]
    return body


def _move(new: dict[str, Any], obs: dict[str, Any], plain: Plain, topic: Any) -> None:
    """Apply a topic change to `new` in place (naming the current topic changes nothing)."""
    current = plain.about_label
    if current.startswith("account:"):
        if topic is None:
            return  # not on a topic, and a memory about an account stays with it
        raise MemoryModelError("a memory about an account stays with that account; it cannot be filed under a topic")
    if topic is None:
        if current != "user":
            new["about"] = ["user"]
            obs["entityName"] = USER_ENTITY
        return
    if isinstance(topic, str) and topic.startswith("topic:") and topic == current:
        return
    ref = topic_ref(topic)
    same_name = plain.entity_name is not None and normalize_topic_name(ref.name) == normalize_topic_name(
        plain.entity_name
    )
    if current.startswith("topic:") and (current in ref.ids or same_name):
        return  # the current topic, by any spelling: it stays where it is
    new["about"] = [ref.id]
    obs["entityName"] = ref.name


def attach_duplicate(
    served: Mapping[str, Any],
    *,
    topic: Any = None,
    categories: Iterable[str] = (),
    agent_key: AgentKey,
    keys: RecipientKeys,
    trace: Trace | None = None,
) -> dict[str, Any] | None:
    """In an add flow: a PUT body filing this connection's own duplicate under `topic` (adding
    `categories`), when it is `mine` and has no topic or account yet. None otherwise — someone
    else's memory is reported, never touched — and None when there is nothing to add."""
    if served.get("mine") is not True:
        return None
    cache = KeyCache()
    m = read_memory_row(served, agent_key, key_cache=cache)
    if m is None or m.topic is not None or m.account is not None:
        return None
    changes: dict[str, Any] = {}
    if topic is not None:
        changes["topic"] = topic
    extra = [c for c in checked_categories(categories) if c not in m.categories]
    if extra:
        changes["categories"] = [*m.categories, *extra]
    if not changes:
        return None
    return edit_memory_row(served, changes, agent_key, keys, trace=trace, key_cache=cache)


# -- outcomes -----------------------------------------------------------------------------------
def is_definite_refusal(err: BaseException) -> bool:
    """True when the server definitely did not apply the request: 403, 404, or 409 REV_CONFLICT /
    KID_CONFLICT. False when the outcome is unknown (network error, timeout, 5xx) or otherwise."""
    if isinstance(err, (TransportError, ServerError)):
        return False
    if isinstance(err, (RevConflict, KidConflict, NotFound)):
        return True
    status = getattr(err, "status", None)
    if isinstance(err, APIError) or isinstance(status, int):
        code = getattr(err, "code", None)
        if status in (403, 404):
            return True
        return status == 409 and code in ("REV_CONFLICT", "KID_CONFLICT")
    return False
