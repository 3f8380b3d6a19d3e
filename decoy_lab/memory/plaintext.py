"""What a plaintext says: the contract's vocabularies, topic names, and the checked Plain.

decode_plaintext is the one place a decrypted plaintext is judged: the binding (`"v": 2` and the
served row id), every field's type, and the kind (memory / topic / link) with its labels.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from decoy_lab.errors import MemoryModelError, UnreadableRow
from decoy_lab.recipes.trace import Trace, tracer
from decoy_lab.vocab import USER_NAMES

# -- the contract's vocabularies (the literals in ..vocab) ---------------------------------------
DEFAULT_RELATION_FROM_USER = "is interested in"
DEFAULT_RELATION_FROM_TOPIC = "includes"
MAX_TOPIC_NAME = 200
MAX_RELATION_TYPE = 100
MAX_GRANTEE_WRAPS = 100
_QUOTES = "\"'“”‘’`"


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


def is_user_name(name: str) -> bool:
    return normalize_topic_name(name) in USER_NAMES


# -- plaintexts ---------------------------------------------------------------------------------
@dataclass
class Plain:
    """A decrypted, checked plaintext: a memory, a topic (entity) or a link (relation)."""

    kind: str  # "memory" | "topic" | "link" | "other"
    row_id: str
    plaintext: dict[str, Any] = field(repr=False)
    text: str | None = None
    entity_name: str | None = None
    about: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
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
        return a[len("account:") :] if a.startswith("account:") else None

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


_ABOUT = re.compile(r"(topic|account):\S+")


def fail_row(row_id: str | None, reason: str) -> NoReturn:
    raise UnreadableRow(row_id, reason)


def string_list(value: Any, name: str, row_id: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        fail_row(row_id, f"{name} must be a list of strings, got {type_name(value)}")
    return list(value)


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _opt(obj: Mapping[str, Any], key: str, typ: type | tuple[type, ...], row_id: str, where: str) -> Any:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is not bool):
        names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
        fail_row(row_id, f"{where}{key} must be {names}, got {type_name(value)}")
    return value


def _req(obj: Mapping[str, Any], key: str, typ: type, row_id: str, where: str) -> Any:
    if key not in obj:
        fail_row(row_id, f"{where}{key} is missing")
    return _opt(obj, key, typ, row_id, where)


def decode_plaintext(obj: Any, row_id: str, *, trace: Trace | None = None) -> Plain:
    """Classify an opened plaintext as memory / topic / link (or "other") with its labels.

    Checks the binding (`v` is 2, `row_id` is the served id) and every field's type; a wrong one
    raises UnreadableRow. Used by the readers and by the sandbox's owner phone.
    """
    if trace is None:  # bulk reads: the same checks, nothing recorded
        _bind_check(obj, row_id)
        return _classify(obj, row_id)
    t = tracer(trace)
    with t.step(
        "bind check: v == 2 and row_id == id",
        inputs=lambda: {
            "v": obj.get("v") if isinstance(obj, dict) else None,
            "row_id": obj.get("row_id") if isinstance(obj, dict) else None,
            "served id": row_id,
        },
    ) as s:
        _bind_check(obj, row_id)
        s.output = "bound"
    with t.step("field types") as s:
        plain = _classify(obj, row_id)
        if trace is not None:  # the labels are worked out only to be shown
            s.output = f"{plain.kind}: " + (", ".join(plain.labels) or "no labels")
    return plain


def _bind_check(obj: Any, row_id: str) -> None:
    if not isinstance(obj, dict):
        fail_row(row_id, f"the plaintext is not a JSON object but {type_name(obj)}")
    v = obj.get("v")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != 2:
        fail_row(row_id, f"the plaintext's v is {v!r}, not 2: not a memory row this helper can read")
    if obj.get("row_id") != row_id:
        fail_row(
            row_id,
            f"the plaintext is bound to row_id {obj.get('row_id')!r}, not to the served id "
            f"{row_id!r}: a ciphertext moved from another row",
        )


def _classify(obj: dict[str, Any], row_id: str) -> Plain:
    about = string_list(obj["about"], "about", row_id) if "about" in obj else []
    if "observation" in obj:
        obs = obj["observation"]
        if not isinstance(obs, dict):
            fail_row(row_id, f"observation must be an object, got {type_name(obs)}")
        text = _req(obs, "content", str, row_id, "observation.")
        entity_name = _opt(obs, "entityName", str, row_id, "observation.")
        if len(about) > 1:
            fail_row(row_id, f"a memory has exactly one about value, this one has {len(about)}")
        if about and not (about[0] == "user" or _ABOUT.fullmatch(about[0])):
            fail_row(row_id, f"about {about[0]!r} is not user, topic:<id> or account:<id>")
        cats = string_list(obj["categories"], "categories", row_id) if "categories" in obj else []
        return Plain(
            "memory",
            row_id,
            obj,
            text=text,
            entity_name=entity_name,
            about=about,
            categories=cats,
            metadata=_opt(obj, "metadata", dict, row_id, ""),
            about_hint=_opt(obj, "about_hint", str, row_id, ""),
        )
    if "entity" in obj:
        ent = obj["entity"]
        if not isinstance(ent, dict):
            fail_row(row_id, f"entity must be an object, got {type_name(ent)}")
        return Plain(
            "topic",
            row_id,
            obj,
            name=_req(ent, "name", str, row_id, "entity."),
            entity_type=_opt(ent, "entityType", str, row_id, "entity.") or "",
            about=about,
        )
    if "relation" in obj:
        rel = obj["relation"]
        if not isinstance(rel, dict):
            fail_row(row_id, f"relation must be an object, got {type_name(rel)}")
        ends = string_list(obj["endpoints"], "endpoints", row_id) if "endpoints" in obj else []
        return Plain(
            "link",
            row_id,
            obj,
            relation_from=_req(rel, "from", str, row_id, "relation."),
            relation_to=_req(rel, "to", str, row_id, "relation."),
            relation_type=_req(rel, "relationType", str, row_id, "relation."),
            endpoints=ends,
            about=about,
        )
    return Plain("other", row_id, obj, about=about)
