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
Access reasons (`via`) are worked out here, in one place, from the labels inside the plaintext:
`all`, `category:<c>`, `topic:<id>`, `account:<id>`, or `and:<a>+<b>` for a link between ends.
"""
from __future__ import annotations

import copy
import os
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Union

from . import sealing, wire
from .crypto import AgentKey, random_key
from .errors import (APIError, DecoyError, KidConflict, MemoryModelError, NotFound, RevConflict,
                     ServerError, TransportError, UnreadableRow)
from .trace import Trace, tracer

__all__ = [
    "CATEGORIES", "ENTITY_TYPES", "USER_NAMES", "USER_ENTITY", "KeyCache", "Selectors", "Grantee", "RecipientKeys",
    "Plain", "Memory", "TopicEntity", "Link", "Topic", "TopicRows", "Summary",
    "normalize_topic_name", "decode_plaintext", "reasons_for", "grantee_wraps",
    "new_memory_row", "new_topic_rows", "read_row", "read_graph_row", "read_memory_row",
    "read_rows", "read_memory_rows", "summarize", "summarize_rows", "build_topics", "list_topics", "find_topic",
    "same_topic", "edit_memory_row", "attach_duplicate", "is_definite_refusal",
]

# -- the contract's vocabularies ----------------------------------------------------------------
CATEGORIES = ("personal_details", "family", "professional_details", "sports", "travel", "food", "music",
              "health", "technology", "hobbies", "fashion", "entertainment", "milestones",
              "user_preferences", "misc")
"""mem0's categories: the only values `categories` may hold."""

ENTITY_TYPES = ("device", "document", "event", "goal", "hobby", "media", "organization", "person", "pet",
                "place", "product", "project", "team", "trip")
"""A topic's `entityType` is one of these, or "" when no type is given."""

USER_NAMES = frozenset({"default_user", "you", "user", "me"})
"""Names that mean the user: never a topic name."""

USER_ENTITY = "default_user"
DEFAULT_RELATION_FROM_USER = "is interested in"
DEFAULT_RELATION_FROM_TOPIC = "includes"
MAX_TOPIC_NAME = 200
MAX_RELATION_TYPE = 100
MAX_CIPHERTEXT = 100 * 1024
MAX_GRANTEE_WRAPS = 100
_QUOTES = "\"'“”‘’`"
_METADATA_TOPIC_KEYS = ("topic", "topics", "topic_name")
_MEMORY_CHANGES = frozenset({"text", "categories", "topic"})


# -- names --------------------------------------------------------------------------------------
def normalize_topic_name(name: str) -> str:
    """NFKC, lowercase, collapse whitespace, trim, strip surrounding quotes: how names compare."""
    if not isinstance(name, str):
        raise MemoryModelError(f"a topic name is text, got {type(name).__name__}")
    s = unicodedata.normalize("NFKC", name).lower()
    s = re.sub(r"\s+", " ", s).strip()
    while True:
        t = s.strip(_QUOTES).strip()
        if t == s:
            return s
        s = t


def _is_user_name(name: str) -> bool:
    return normalize_topic_name(name) in USER_NAMES


# -- keys and recipients ------------------------------------------------------------------------
class KeyCache(dict):
    """kid -> raw 32-byte memory key, filled by the readers so a reload of unchanged rows costs no
    RSA work. A dict whose repr shows kids only: the keys are secrets."""

    def __repr__(self) -> str:
        return f"<KeyCache {len(self)} keys: {', '.join(sorted(self)[:8])}{' …' if len(self) > 8 else ''}>"

    __str__ = __repr__


def _as_topic_id(value: str) -> str:
    return value if value.startswith("topic:") else f"topic:{value}"


def _as_account_id(value: str) -> str:
    return value[len("account:"):] if value.startswith("account:") else value


@dataclass(frozen=True)
class Selectors:
    """What a connection reads, as memory-grantees serves it:
    `{all, categories, topics, account_ids, account_wildcard}`."""

    all: bool = False
    categories: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    account_ids: frozenset[str] = frozenset()
    account_wildcard: bool = False

    @classmethod
    def from_json(cls, value: Any) -> "Selectors":
        """From the served JSON object (or anything with `as_json()`); None is "nothing"."""
        if value is None:
            return cls()
        if isinstance(value, Selectors):
            return value
        if hasattr(value, "as_json"):
            value = value.as_json()
        if not isinstance(value, Mapping):
            raise MemoryModelError(f"grant selectors are a JSON object, got {type(value).__name__}")
        return cls(all=bool(value.get("all")),
                   categories=frozenset(str(c) for c in value.get("categories") or ()),
                   topics=frozenset(_as_topic_id(str(t)) for t in value.get("topics") or ()),
                   account_ids=frozenset(_as_account_id(str(a)) for a in value.get("account_ids") or ()),
                   account_wildcard=bool(value.get("account_wildcard")))

    def as_json(self) -> dict:
        return {"all": self.all, "categories": sorted(self.categories), "topics": sorted(self.topics),
                "account_ids": sorted(self.account_ids), "account_wildcard": self.account_wildcard}

    def reaches_end(self, end: str) -> bool:
        """Whether a link end (`topic:<id>` or `account:<id>`) is granted."""
        if end.startswith("account:"):
            return self.account_wildcard or _as_account_id(end) in self.account_ids
        if end.startswith("topic:"):
            return self.all or end in self.topics
        return False


@dataclass(frozen=True)
class Grantee:
    """One eligible connection from memory-grantees: who to wrap a new key to, and what it reads."""

    token_id: str
    public_key: str
    connection_id: str | None = None
    selectors: Selectors = Selectors()

    @classmethod
    def from_json(cls, value: Any) -> "Grantee":
        if isinstance(value, Grantee):
            return value
        if not isinstance(value, Mapping) or not value.get("token_id") or not value.get("public_key"):
            raise MemoryModelError("a grantee is {token_id, public_key, connection_id, selectors} "
                                   "as memory-grantees serves it")
        return cls(str(value["token_id"]), str(value["public_key"]),
                   value.get("connection_id") or str(value["token_id"]),
                   Selectors.from_json(value.get("selectors")))


@dataclass
class RecipientKeys:
    """Who a new key is wrapped to: the owner (required), this agent, and the grantees.

    `self_selectors` / `self_token_id` come from memory-grantees' `self`; with them each row
    carries `self_via` (the reasons this connection reads it by under the labels it chose).
    """

    owner_public_key: str | None
    agent_public_key: str
    grantees: Sequence[Any] = ()
    self_selectors: Any = None
    self_token_id: str | None = None

    def __post_init__(self) -> None:
        self.grantees = tuple(Grantee.from_json(g) for g in self.grantees or ())
        if self.self_selectors is not None:
            self.self_selectors = Selectors.from_json(self.self_selectors)

    @classmethod
    def from_response(cls, body: Mapping, agent_public_key: str) -> "RecipientKeys":
        """From a `GET /api/agent/context/memory-grantees` answer."""
        me = body.get("self") or {}
        return cls(body.get("owner_public_key"), agent_public_key, body.get("grantees") or (),
                   self_selectors=me.get("selectors") if me else None, self_token_id=me.get("token_id"))

    def others(self) -> list[Grantee]:
        """The grantees that are not this connection."""
        return [g for g in self.grantees
                if g.public_key != self.agent_public_key and (self.self_token_id is None
                                                              or g.token_id != self.self_token_id)]

    def __repr__(self) -> str:
        from .crypto import public_key_fingerprint

        def fp(b64: str | None) -> str:
            if b64 is None:
                return "None (owner key setup not finished)"
            try:
                return public_key_fingerprint(b64)
            except DecoyError:
                return "(not base64)"
        return (f"RecipientKeys(owner={fp(self.owner_public_key)}, agent={fp(self.agent_public_key)}, "
                f"grantees={len(self.grantees)}, self_via={'yes' if self.self_selectors else 'no'})")


# -- plaintexts ---------------------------------------------------------------------------------
@dataclass
class Plain:
    """A decrypted, checked plaintext: a memory, a topic (entity) or a link (relation)."""

    kind: str  # "memory" | "topic" | "link" | "other"
    row_id: str
    plaintext: dict = field(repr=False)
    text: str | None = None
    entity_name: str | None = None
    about: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    metadata: dict | None = None
    about_hint: str | None = None
    name: str | None = None
    entity_type: str | None = None
    relation_from: str | None = None
    relation_to: str | None = None
    relation_type: str | None = None
    endpoints: list[str] = field(default_factory=list)

    @property
    def about_label(self) -> str:
        """A memory's one about value: "user", "topic:<id>" or "account:<id>"."""
        return self.about[0] if self.about else "user"

    @property
    def topic_id(self) -> str | None:
        if self.kind == "topic":
            return f"topic:{self.row_id}"
        a = self.about_label if self.kind == "memory" else ""
        return a if a.startswith("topic:") else None

    @property
    def account_id(self) -> str | None:
        a = self.about_label if self.kind == "memory" else ""
        return a[len("account:"):] if a.startswith("account:") else None

    @property
    def labels(self) -> list[str]:
        """What decides who reads the row, as via-style labels (the user is not a label)."""
        if self.kind == "memory":
            out = [f"category:{c}" for c in self.categories]
            if self.about_label != "user":
                out.append(self.about_label)
            return out
        if self.kind == "topic":
            return [f"topic:{self.row_id}"]
        if self.kind == "link":
            return [e for e in self.endpoints if e != "user"]
        return []


def _fail(row_id: str | None, reason: str):
    raise UnreadableRow(row_id, reason)


def _str_list(value: Any, name: str, row_id: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        _fail(row_id, f"{name} must be a list of strings, got {_type(value)}")
    return list(value)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _opt(obj: Mapping, key: str, typ: type | tuple, row_id: str, where: str) -> Any:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, typ) or isinstance(value, bool) and typ is not bool:
        names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
        _fail(row_id, f"{where}{key} must be {names}, got {_type(value)}")
    return value


def _req(obj: Mapping, key: str, typ: type, row_id: str, where: str) -> Any:
    if key not in obj:
        _fail(row_id, f"{where}{key} is missing")
    return _opt(obj, key, typ, row_id, where)


def decode_plaintext(obj: Any, row_id: str, *, trace: Trace | None = None) -> Plain:
    """Classify an opened plaintext as memory / topic / link (or "other") with its labels.

    Checks the binding (`v` is 2, `row_id` is the served id) and every field's type; a wrong one
    raises UnreadableRow. Used by the readers and by the sandbox's owner phone.
    """
    t = tracer(trace)
    with t.step("bind check: v == 2 and row_id == id",
                inputs={"v": obj.get("v") if isinstance(obj, dict) else None,
                        "row_id": obj.get("row_id") if isinstance(obj, dict) else None,
                        "served id": row_id}) as s:
        if not isinstance(obj, dict):
            _fail(row_id, f"the plaintext is not a JSON object but {_type(obj)}")
        v = obj.get("v")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != 2:
            _fail(row_id, f"the plaintext's v is {v!r}, not 2: not a memory row this helper can read")
        if obj.get("row_id") != row_id:
            _fail(row_id, f"the plaintext is bound to row_id {obj.get('row_id')!r}, not to the served id "
                          f"{row_id!r}: a ciphertext moved from another row")
        s.output = "bound"
    with t.step("field types") as s:
        plain = _classify(obj, row_id)
        s.output = f"{plain.kind}: " + (", ".join(plain.labels) or "no labels")
    return plain


def _classify(obj: dict, row_id: str) -> Plain:
    about = _str_list(obj["about"], "about", row_id) if "about" in obj else []
    if "observation" in obj:
        obs = obj["observation"]
        if not isinstance(obs, dict):
            _fail(row_id, f"observation must be an object, got {_type(obs)}")
        text = _req(obs, "content", str, row_id, "observation.")
        entity_name = _opt(obs, "entityName", str, row_id, "observation.")
        if len(about) > 1:
            _fail(row_id, f"a memory has exactly one about value, this one has {len(about)}")
        if about and not (about[0] == "user" or re.fullmatch(r"(topic|account):\S+", about[0])):
            _fail(row_id, f"about {about[0]!r} is not user, topic:<id> or account:<id>")
        cats = _str_list(obj["categories"], "categories", row_id) if "categories" in obj else []
        return Plain("memory", row_id, obj, text=text, entity_name=entity_name, about=about,
                     categories=cats, metadata=_opt(obj, "metadata", dict, row_id, ""),
                     about_hint=_opt(obj, "about_hint", str, row_id, ""))
    if "entity" in obj:
        ent = obj["entity"]
        if not isinstance(ent, dict):
            _fail(row_id, f"entity must be an object, got {_type(ent)}")
        return Plain("topic", row_id, obj, name=_req(ent, "name", str, row_id, "entity."),
                     entity_type=_opt(ent, "entityType", str, row_id, "entity.") or "", about=about)
    if "relation" in obj:
        rel = obj["relation"]
        if not isinstance(rel, dict):
            _fail(row_id, f"relation must be an object, got {_type(rel)}")
        ends = _str_list(obj["endpoints"], "endpoints", row_id) if "endpoints" in obj else []
        return Plain("link", row_id, obj, relation_from=_req(rel, "from", str, row_id, "relation."),
                     relation_to=_req(rel, "to", str, row_id, "relation."),
                     relation_type=_req(rel, "relationType", str, row_id, "relation."),
                     endpoints=ends, about=about)
    return Plain("other", row_id, obj, about=about)


# -- access reasons -----------------------------------------------------------------------------
def reasons_for(selectors: Any, plain: Plain) -> list[str]:
    """The via reasons a connection with these selectors reads this row by ([] = it does not).

    A memory about an account is reached only through that account (acctmem grants); any other
    memory by `all`, each of its categories, or its topic. A topic by `all` or its own topic id.
    A link needs every non-user end: one end is a plain reason, several an `and:` reason.
    """
    sel = Selectors.from_json(selectors)
    out: list[str] = []
    if plain.kind == "memory":
        account = plain.account_id
        if account is not None:
            if sel.reaches_end(f"account:{account}"):
                out.append(f"account:{account}")
            return out
        if sel.all:
            out.append("all")
        out.extend(f"category:{c}" for c in plain.categories if c in sel.categories)
        tid = plain.topic_id
        if tid and tid in sel.topics:
            out.append(tid)
    elif plain.kind == "topic":
        if sel.all:
            out.append("all")
        if plain.topic_id in sel.topics:
            out.append(plain.topic_id)
    elif plain.kind == "link":
        ends = list(dict.fromkeys(plain.labels))
        has_account = any(e.startswith("account:") for e in ends)
        if sel.all and not has_account:
            out.append("all")
        if ends and all(sel.reaches_end(e) for e in ends):
            specific = all(e in sel.topics or e.startswith("account:") for e in ends)
            if specific or has_account:  # with `all` alone, "all" already says it
                out.append(ends[0] if len(ends) == 1 else "and:" + "+".join(ends))
    return list(dict.fromkeys(out))


def grantee_wraps(key: bytes, plain: Plain, keys: RecipientKeys, *, trace: Trace | None = None) -> list[dict]:
    """`[{token_id, via, wrapped_key}]` for every other connection whose selectors reach the row
    (at most 100, the server's limit; the owner's phone shares with the rest)."""
    out: list[dict] = []
    for g in keys.others():
        via = reasons_for(g.selectors, plain)
        if via and len(out) < MAX_GRANTEE_WRAPS:
            out.append({"token_id": g.token_id, "via": via,
                        "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, g.public_key, trace=trace))})
    return out


def _self_via(plain: Plain, keys: RecipientKeys) -> list[str] | None:
    if keys.self_selectors is None:
        return None
    return ["self", *reasons_for(keys.self_selectors, plain)]


# -- building rows ------------------------------------------------------------------------------
def _need_owner(keys: RecipientKeys) -> None:
    if not isinstance(keys, RecipientKeys):
        raise MemoryModelError("keys must be a RecipientKeys (owner_public_key, agent_public_key, grantees)")
    if not keys.owner_public_key:
        raise MemoryModelError("the owner must finish key setup in the Decoy app before memories can be saved "
                               "(memory-grantees serves owner_public_key: null)")
    if not keys.agent_public_key:
        raise MemoryModelError("keys.agent_public_key is missing: this connection's own public key is needed "
                               "for self_wrap")


def _sealed_row(key: bytes, plaintext: dict, keys: RecipientKeys, *, trace: Trace | None = None) -> dict:
    """Seal `plaintext` under `key` and wrap the key to the owner, this agent and the grantees."""
    row_id = plaintext["row_id"]
    plain = decode_plaintext(plaintext, row_id)  # we write only what we can read back
    blob = sealing.seal_json(key, plaintext, trace=trace)
    if len(blob) > MAX_CIPHERTEXT:
        raise MemoryModelError(f"the sealed row is {len(blob)} bytes; the server takes at most {MAX_CIPHERTEXT} "
                               "(100 KiB): split the text into several memories")
    row = {"id": row_id, "kid": wire.kid(key), "ciphertext": wire.b64encode(blob),
           "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, keys.owner_public_key, trace=trace)),
           "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, keys.agent_public_key, trace=trace))}
    wraps = grantee_wraps(key, plain, keys, trace=trace)
    if wraps:
        row["grantee_wraps"] = wraps
    self_via = _self_via(plain, keys)
    if self_via is not None:
        row["self_via"] = self_via
    return row


def _categories(values: Iterable[str] | str | None) -> list[str]:
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


def _topic_parts(topic: Any) -> tuple[Any, Any, Any]:
    """(id, name, ids) of a topic given as {"id", "name"}, a Topic, a TopicEntity, TopicRows or a
    Memory (its topic)."""
    if isinstance(topic, Memory):
        topic = topic.topic
    elif isinstance(topic, TopicRows):
        topic = topic.topic
    if topic is None:
        return None, None, ()
    if isinstance(topic, Mapping):
        return topic.get("id"), topic.get("name"), topic.get("ids") or ()
    tid = getattr(topic, "topic_id", None) or getattr(topic, "id", None)
    return tid, getattr(topic, "name", None), getattr(topic, "ids", None) or ()


def _topic_ref(topic: Any, what: str = "topic") -> _TopicRef:
    """A topic as new rows and edits name it: its id (`topic:<row id>`), name and every copy's id."""
    tid, name, ids = _topic_parts(topic)
    if not isinstance(tid, str) or not tid or not isinstance(name, str) or not name.strip():
        raise MemoryModelError(f"{what} must be {{'id': 'topic:<row id>', 'name': …}} (from find_topic or "
                               f"new_topic_rows), got {topic!r}")
    tid = _as_topic_id(tid)
    all_ids = tuple(dict.fromkeys([tid, *(_as_topic_id(i) for i in ids if isinstance(i, str) and i)]))
    return _TopicRef(tid, name, all_ids)


def _account_uuid(account: str) -> str:
    if not isinstance(account, str):
        raise MemoryModelError(f"account is the granted account's uuid, got {type(account).__name__}")
    value = _as_account_id(account.strip())
    try:
        uuid.UUID(value)
    except ValueError:
        raise MemoryModelError(f"account must be the account's uuid (never its name), got {account!r}") from None
    return value


def new_memory_row(keys: RecipientKeys, text: str, *, topic: Any = None, categories: Iterable[str] = (),
                   account: str | None = None, metadata: Mapping | None = None, about_hint: str | None = None,
                   trace: Trace | None = None) -> dict:
    """A POST-ready memory row `{id, kid, ciphertext, owner_wrap, self_wrap, grantee_wraps?, self_via?}`.

    Exactly one `about`: the user (default), `topic` ({"id", "name"}) or `account` (its uuid).
    """
    _need_owner(keys)
    if not isinstance(text, str) or not text.strip():
        raise MemoryModelError("a memory needs non-empty text")
    if topic is not None and account is not None:
        raise MemoryModelError("a memory has exactly one about: the user, one topic or one account — "
                               "not both a topic and an account")
    cats = _categories(categories)
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise MemoryModelError(f"metadata is an object of free notes, got {type(metadata).__name__}")
        named = [k for k in _METADATA_TOPIC_KEYS if k in metadata]
        if named:
            raise MemoryModelError(f"metadata.{named[0]} files nothing: a topic never goes in metadata. "
                                   "Pass topic={'id': 'topic:<id>', 'name': …} to new_memory_row (find_topic "
                                   "or new_topic_rows gives it)")
    if about_hint is not None and not isinstance(about_hint, str):
        raise MemoryModelError("about_hint is text")
    row_id = str(uuid.uuid4())
    observation: dict[str, Any] = {}
    if topic is not None:
        ref = _topic_ref(topic)
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
    return _sealed_row(random_key(), plaintext, keys, trace=trace)


@dataclass
class TopicRows:
    """A new topic: its id (`topic:<entity row id>`), `{"id", "name"}` for new_memory_row, and the
    entity and relation rows to POST together with its first memory."""

    topic_id: str
    topic: dict
    rows: list[dict]


def new_topic_rows(keys: RecipientKeys, name: str, *, type: str | None = "", relation_type: str | None = None,
                   parent: Any = None, trace: Trace | None = None) -> TopicRows:
    """The entity row of a new topic and its one relation row, from You or from `parent`."""
    _need_owner(keys)
    if not isinstance(name, str) or not name.strip():
        raise MemoryModelError("a topic needs a name")
    name = name.strip()
    if len(name) > MAX_TOPIC_NAME:
        raise MemoryModelError(f"a topic name is at most {MAX_TOPIC_NAME} characters, this one is {len(name)}")
    if _is_user_name(name):
        raise MemoryModelError(f"{name!r} names the user, never a topic: save memories about the user with no "
                               "topic instead")
    etype = type or ""
    if etype not in ("", *ENTITY_TYPES):
        raise MemoryModelError(f"unknown topic type {etype!r}; use one of {', '.join(ENTITY_TYPES)}, or \"\"")
    if parent is not None:
        pref = _topic_ref(parent, "parent")
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
        raise MemoryModelError(f"relation_type is at most {MAX_RELATION_TYPE} characters, this one is "
                               f"{len(relation_type)}")
    entity_id, relation_id = str(uuid.uuid4()), str(uuid.uuid4())
    topic_id = f"topic:{entity_id}"
    entity = {"v": 2, "row_id": entity_id, "entity": {"name": name, "entityType": etype}, "about": []}
    relation = {"v": 2, "row_id": relation_id,
                "relation": {"from": start, "to": name, "relationType": relation_type},
                "endpoints": [start_end, topic_id], "about": []}
    rows = [_sealed_row(random_key(), entity, keys, trace=trace),
            _sealed_row(random_key(), relation, keys, trace=trace)]
    return TopicRows(topic_id, {"id": topic_id, "name": name}, rows)


# -- reading rows -------------------------------------------------------------------------------
@dataclass
class _Served:
    """What the server says about a row, next to its ciphertext."""

    rev: int | None = None
    kid: str | None = None
    via: list[str] = field(default_factory=list)
    mine: bool = False
    author_kind: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class Memory:
    """A memory as this connection reads it."""

    id: str
    text: str
    about: str  # "user", "topic:<id>" or "account:<id>"
    entity_name: str | None = None
    topic: dict | None = None  # {"id": "topic:<id>", "name": …}
    account: str | None = None
    categories: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    rev: int | None = None
    kid: str | None = None
    via: list[str] = field(default_factory=list)
    mine: bool = False
    author_kind: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    about_hint: str | None = None

    kind = "memory"


@dataclass
class TopicEntity:
    """A topic's own entity row. `topic_id` is `topic:<id>`, how memories and grants name it."""

    id: str
    topic_id: str
    name: str
    type: str = ""
    rev: int | None = None
    kid: str | None = None
    via: list[str] = field(default_factory=list)
    mine: bool = False
    author_kind: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    kind = "topic"


@dataclass
class Link:
    """A relation row: `from_` --relation_type--> `to`, with the ends it joins (`endpoints`)."""

    id: str
    from_: str
    to: str
    relation_type: str
    endpoints: list[str] = field(default_factory=list)
    rev: int | None = None
    kid: str | None = None
    via: list[str] = field(default_factory=list)
    mine: bool = False
    author_kind: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    kind = "link"


Row = Union[Memory, TopicEntity, Link]


def _timestamp(value: Any, name: str, row_id: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        except ValueError:
            dt = None
        if dt is not None:
            return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    _fail(row_id, f"the served {name} {value!r} is not an ISO 8601 date-time")


def _served(row: Mapping, row_id: str) -> _Served:
    via = row.get("via")
    if via is None:
        via = ["self"] if _is_posted(row) else []
    rev = row.get("rev")
    if rev is not None and (isinstance(rev, bool) or not isinstance(rev, int)):
        _fail(row_id, f"the served rev must be an integer, got {_type(rev)}")
    return _Served(rev=rev, kid=row.get("kid"), via=_str_list(via, "via", row_id),
                   mine=bool(row.get("mine", _is_posted(row))), author_kind=row.get("author_kind"),
                   created_at=_timestamp(row.get("created_at"), "created_at", row_id),
                   updated_at=_timestamp(row.get("updated_at"), "updated_at", row_id))


def _is_posted(row: Mapping) -> bool:
    """A row as new_memory_row built it (self_wrap, no wrapped_key): ours, readable offline."""
    return "wrapped_key" not in row and "self_wrap" in row


def _row_id(row: Any) -> str:
    if not isinstance(row, Mapping):
        raise UnreadableRow(None, f"a served row is a JSON object, got {_type(row)}")
    rid = row.get("id")
    if not isinstance(rid, str) or not rid:
        raise UnreadableRow(None, "the served row has no id")
    return rid


def _row_key(row: Mapping, row_id: str, agent_key: AgentKey, trace: Trace | None,
             key_cache: MutableMapping[str, bytes] | None) -> bytes:
    """Unwrap the row's key with this connection's private key and check it against `kid`."""
    t = tracer(trace)
    kid = row.get("kid")
    if not isinstance(kid, str):
        _fail(row_id, "the served row has no kid")
    if key_cache is not None and kid in key_cache:
        with t.step("key cache", inputs={"kid": kid}) as s:
            s.output = f"kid {kid} was unwrapped and checked on an earlier read: no RSA work"
        return key_cache[kid]
    wrapped = row.get("wrapped_key") if "wrapped_key" in row else row.get("self_wrap")
    if not isinstance(wrapped, str) or not wrapped:
        _fail(row_id, "the served row carries no wrapped_key for this connection")
    try:
        key = sealing.unwrap_as_agent(wrapped, agent_key, trace=trace)
    except (DecoyError, ValueError) as exc:
        raise UnreadableRow(row_id, f"this connection's key does not open wrapped_key: {exc}") from exc
    with t.step("kid check", inputs={"served kid": kid}) as s:
        got = wire.kid(key)
        s.output = got
        if got != kid:
            _fail(row_id, f"kid check failed: the row says {kid} but the unwrapped key's kid is {got}; "
                          "the wrap and the ciphertext do not belong to the same key")
    if key_cache is not None:
        key_cache[kid] = key
    return key


def _open(row: Mapping, agent_key: AgentKey, trace: Trace | None,
          key_cache: MutableMapping[str, bytes] | None) -> tuple[str, bytes, Plain]:
    row_id = _row_id(row)
    blob = row.get("ciphertext")
    if not isinstance(blob, str) or not blob:
        _fail(row_id, "the served row has no ciphertext")
    size = len(blob) // 4 * 3 - (len(blob) - len(blob.rstrip("=")))
    if size > MAX_CIPHERTEXT:  # checked before any RSA work: the API never stores such a row
        _fail(row_id, f"the ciphertext decodes to {size:,} bytes, over the 100 KiB ({MAX_CIPHERTEXT:,}-byte) "
                      "maximum: no row this large was stored through the API")
    key = _row_key(row, row_id, agent_key, trace, key_cache)
    try:
        obj = sealing.open_json(key, blob, trace=trace, row_id=row_id)
    except UnreadableRow:
        raise
    except (DecoyError, ValueError) as exc:
        raise UnreadableRow(row_id, f"the ciphertext does not open under its key: {exc}") from exc
    return row_id, key, decode_plaintext(obj, row_id, trace=trace)


def _model(plain: Plain, meta: _Served) -> Row | None:
    common = dict(rev=meta.rev, kid=meta.kid, via=meta.via, mine=meta.mine, author_kind=meta.author_kind,
                  created_at=meta.created_at, updated_at=meta.updated_at)
    if plain.kind == "memory":
        about = plain.about_label
        topic = {"id": about, "name": plain.entity_name or ""} if about.startswith("topic:") else None
        return Memory(plain.row_id, plain.text or "", about, plain.entity_name, topic, plain.account_id,
                      list(plain.categories), dict(plain.metadata or {}), about_hint=plain.about_hint, **common)
    if plain.kind == "topic":
        return TopicEntity(plain.row_id, plain.topic_id, plain.name or "", plain.entity_type or "", **common)
    if plain.kind == "link":
        return Link(plain.row_id, plain.relation_from or "", plain.relation_to or "", plain.relation_type or "",
                    list(plain.endpoints), **common)
    return None


def read_row(row: Mapping, agent_key: AgentKey, *, trace: Trace | None = None,
             key_cache: MutableMapping[str, bytes] | None = None) -> Row | None:
    """Read any served row: a Memory, a TopicEntity or a Link (None for a row of another kind).

    Steps: unwrap `wrapped_key`, kid check, open `ciphertext`, bind check (`v` == 2 and
    `row_id` == id), field types. Raises UnreadableRow with the reason in words.
    """
    row_id, _key, plain = _open(row, agent_key, trace, key_cache)
    return _model(plain, _served(row, row_id))


read_graph_row = read_row


def read_memory_row(row: Mapping, agent_key: AgentKey, *, trace: Trace | None = None,
                    key_cache: MutableMapping[str, bytes] | None = None) -> Memory | None:
    """Read one served memory. None for a graph row (topic or link): None never means unreadable."""
    out = read_row(row, agent_key, trace=trace, key_cache=key_cache)
    return out if isinstance(out, Memory) else None


def read_rows(rows: Sequence[Mapping], agent_key: AgentKey, *, key_cache: MutableMapping[str, bytes] | None = None,
              workers: int | None = None, progress: Callable[[int, int], None] | None = None,
              then: Callable[[Mapping, Any], Any] | None = None) -> list[Any]:
    """Read every row, in served order: a model, None (another kind) or the UnreadableRow it raised.

    Runs on a thread pool over all cores (the RSA unwrap releases the GIL); `workers=1` is serial.
    `progress(1, total)` is called after each row, from the worker threads. `then(row, result)`,
    when given, runs in the workers too (so its Python work overlaps other rows' RSA work) and
    its value takes the result's place.
    """
    rows = list(rows)
    cache = key_cache if key_cache is not None else KeyCache()
    total = len(rows)

    def one(row: Mapping) -> Any:
        try:
            result: Any = read_row(row, agent_key, key_cache=cache)
        except UnreadableRow as exc:
            result = exc
        if then is not None:
            result = then(row, result)
        if progress is not None:
            progress(1, total)
        return result

    n = workers if workers is not None else (os.cpu_count() or 1)
    if n <= 1 or len(rows) < 2:
        return [one(r) for r in rows]
    # Chunks, not one task per row: a task costs a few µs of GIL-held bookkeeping, a row ~40 µs.
    size = max(1, min(64, len(rows) // (n * 4)))
    chunks = [rows[i:i + size] for i in range(0, len(rows), size)]
    with ThreadPoolExecutor(max_workers=min(n, len(chunks))) as pool:
        return [r for chunk in pool.map(lambda c: [one(r) for r in c], chunks) for r in chunk]


def read_memory_rows(rows: Sequence[Mapping], agent_key: AgentKey, topics: Sequence[Topic] | None = None, *,
                     key_cache: MutableMapping[str, bytes] | None = None, workers: int | None = None) -> list[Memory]:
    """The memories among `rows`, skipping topics, links and unreadable rows. With `topics`
    (from list_topics) each memory's topic carries that topic's listed name."""
    out = [r for r in read_rows(rows, agent_key, key_cache=key_cache, workers=workers) if isinstance(r, Memory)]
    if topics:
        by_id = {i: t for t in topics for i in t.ids}
        for m in out:
            if m.topic and m.topic["id"] in by_id:
                m.topic = {"id": m.topic["id"], "name": by_id[m.topic["id"]].name}
    return out


@dataclass
class Summary:
    """Counts of one GET answer; print `text` first."""

    memories: int
    topics: int
    links: int
    unreadable: int
    other: int
    unreadable_ids: list[str]
    text: str
    unreadable_reasons: dict[str, str] = field(default_factory=dict)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summarize(results: Sequence[Row | None | UnreadableRow]) -> Summary:
    """A Summary of results from read_rows."""
    mem = sum(isinstance(r, Memory) for r in results)
    top = sum(isinstance(r, TopicEntity) for r in results)
    lnk = sum(isinstance(r, Link) for r in results)
    bad = [r for r in results if isinstance(r, UnreadableRow)]
    other = len(results) - mem - top - lnk - len(bad)
    text = ", ".join([_count(mem, "memory", "memories"), _count(top, "topic", "topics"),
                      _count(lnk, "link", "links"), f"{len(bad)} unreadable"])
    if other:
        text += f", {other} other"
    return Summary(mem, top, lnk, len(bad), other, [str(b.row_id) for b in bad], text,
                   {str(b.row_id): b.reason for b in bad})


def summarize_rows(rows: Sequence[Mapping], agent_key: AgentKey, *,
                   key_cache: MutableMapping[str, bytes] | None = None, workers: int | None = None) -> Summary:
    """`Summary(memories, topics, links, unreadable, other, unreadable_ids, text)` of a GET answer."""
    return summarize(read_rows(rows, agent_key, key_cache=key_cache, workers=workers))


# -- topics -------------------------------------------------------------------------------------
@dataclass
class Topic:
    """A topic as listed: under its oldest id and name, `ids` naming every same-name copy and
    `memories` the ids of the memories filed under any of them. `type` is None when known only
    from a memory's about."""

    id: str
    name: str
    type: str | None
    memories: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    created_at: datetime | None = None


_NEVER = datetime.max.replace(tzinfo=timezone.utc)
_DAWN = datetime.min.replace(tzinfo=timezone.utc)


def build_topics(items: Iterable[Any]) -> list[Topic]:
    """Topics from already-read rows (Memory / TopicEntity; others are ignored), oldest first."""
    entities: dict[str, TopicEntity] = {}
    memories: dict[str, list[Memory]] = {}
    for it in items:
        if isinstance(it, TopicEntity):
            entities.setdefault(it.topic_id, it)
        elif isinstance(it, Memory) and it.topic:
            memories.setdefault(it.topic["id"], []).append(it)
    found: list[Topic] = []
    for tid, e in entities.items():
        found.append(Topic(tid, e.name, e.type, [m.id for m in memories.get(tid, ())], [tid], e.created_at))
    for tid, mems in memories.items():
        if tid in entities:
            continue
        newest = max(mems, key=lambda m: (m.updated_at or m.created_at or _DAWN))
        oldest = min((m.created_at for m in mems if m.created_at), default=None)
        found.append(Topic(tid, newest.entity_name or "", None, [m.id for m in mems], [tid], oldest))
    found.sort(key=lambda t: (t.created_at or _NEVER, t.id))
    merged: dict[str, Topic] = {}
    out: list[Topic] = []
    for t in found:
        norm = normalize_topic_name(t.name)
        first = merged.get(norm) if norm else None
        if first is None:
            merged[norm] = t
            out.append(t)
        else:
            first.ids.append(t.id)
            first.memories.extend(m for m in t.memories if m not in first.memories)
    return out


def list_topics(rows: Sequence[Mapping], agent_key: AgentKey, *,
                key_cache: MutableMapping[str, bytes] | None = None, workers: int | None = None) -> list[Topic]:
    """Every topic this connection can see: each topic row it opens, plus each `topic:<id>` named by
    a memory it opens. Oldest first; same normalized name listed once, under the oldest id."""
    return build_topics(r for r in read_rows(rows, agent_key, key_cache=key_cache, workers=workers)
                        if isinstance(r, (Memory, TopicEntity)))


def find_topic(topics: Sequence[Topic], name_or_id: Any) -> Topic | None:
    """The listed topic with this normalized name, or holding this `topic:<id>`; None when none."""
    if name_or_id is None:
        return None
    if not isinstance(name_or_id, str):
        ref = _topic_ref(name_or_id)
        return find_topic(topics, ref.id) or find_topic(topics, ref.name)
    if name_or_id.startswith("topic:"):
        return next((t for t in topics if name_or_id in t.ids), None)
    norm = normalize_topic_name(name_or_id)
    if not norm:
        return None
    return next((t for t in topics if normalize_topic_name(t.name) == norm), None)


def _topic_keys(value: Any) -> tuple[set[str], str]:
    if isinstance(value, str):
        return ({value}, "") if value.startswith("topic:") else (set(), normalize_topic_name(value))
    tid, name, ids = _topic_parts(value)
    keys = {_as_topic_id(i) for i in [tid, *ids] if isinstance(i, str) and i}
    return keys, normalize_topic_name(name) if isinstance(name, str) else ""


def same_topic(a: Any, b: Any) -> bool:
    """Whether two topics (dicts, Topics, ids, names or Memories) are one: a shared id, or the same
    normalized name (same-name copies count as one)."""
    ids_a, name_a = _topic_keys(a)
    ids_b, name_b = _topic_keys(b)
    return bool(ids_a & ids_b) or bool(name_a and name_a == name_b)


# -- editing ------------------------------------------------------------------------------------
def edit_memory_row(served_row: Mapping, changes: Mapping, agent_key: AgentKey, keys: RecipientKeys, *,
                    trace: Trace | None = None, key_cache: MutableMapping[str, bytes] | None = None) -> dict:
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
    row_id = _row_id(served_row)
    rev = served_row.get("rev")
    if isinstance(rev, bool) or not isinstance(rev, int) or rev < 1:
        raise MemoryModelError("the row has no rev: pass the row as GET /api/agent/context/memories serves it")
    _rid, key, plain = _open(served_row, agent_key, trace, key_cache)
    if plain.kind != "memory":
        raise MemoryModelError(f"row {row_id} is a {plain.kind} row, not a memory: edit_memory_row edits memories")
    new = copy.deepcopy(plain.plaintext)
    obs = new["observation"]
    if "text" in changes:
        text = changes["text"]
        if not isinstance(text, str) or not text.strip():
            raise MemoryModelError("a memory needs non-empty text")
        obs["content"] = text
    if "topic" in changes:
        _move(new, obs, plain, changes["topic"])
    if "categories" in changes:
        given = changes["categories"]
        given = [given] if isinstance(given, str) else list(given or ())
        if set(given) != set(plain.categories):  # same set: leave the list byte-identical
            cats = _categories(given)
            if cats:
                new["categories"] = cats
            else:
                new.pop("categories", None)
    relabelled = (new.get("about") != plain.plaintext.get("about")
                  or new.get("categories") != plain.plaintext.get("categories")
                  or obs.get("entityName") != plain.plaintext["observation"].get("entityName"))
    if relabelled and served_row.get("mine") is not True:
        raise MemoryModelError("only the memory's author or the owner may relabel it: a connection editing "
                               "someone else's memory may correct its text and must leave its categories "
                               "and topic byte-identical")
    after = decode_plaintext(new, row_id)
    removed = [label for label in plain.labels if label not in after.labels]
    body: dict[str, Any] = {"id": row_id, "expected_rev": rev}
    if not removed:
        body["ciphertext"] = wire.b64encode(sealing.seal_json(key, new, trace=trace))
        return body
    _need_owner(keys)
    row = _sealed_row(random_key(), new, keys, trace=trace)
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


def _move(new: dict, obs: dict, plain: Plain, topic: Any) -> None:
    """Apply a topic change to `new` in place (naming the current topic changes nothing)."""
    current = plain.about_label
    if current.startswith("account:"):
        if topic is None:
            return  # not on a topic, and a memory about an account stays with it
        raise MemoryModelError("a memory about an account stays with that account; it cannot be filed under "
                               "a topic")
    if topic is None:
        if current != "user":
            new["about"] = ["user"]
            obs["entityName"] = USER_ENTITY
        return
    if isinstance(topic, str) and topic.startswith("topic:") and topic == current:
        return
    ref = _topic_ref(topic)
    same_name = plain.entity_name is not None and \
        normalize_topic_name(ref.name) == normalize_topic_name(plain.entity_name)
    if current.startswith("topic:") and (current in ref.ids or same_name):
        return  # the current topic, by any spelling: it stays where it is
    new["about"] = [ref.id]
    obs["entityName"] = ref.name


def attach_duplicate(served: Mapping, *, topic: Any = None, categories: Iterable[str] = (),
                     agent_key: AgentKey, keys: RecipientKeys, trace: Trace | None = None) -> dict | None:
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
    extra = [c for c in _categories(categories) if c not in m.categories]
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
