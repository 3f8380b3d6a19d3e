"""The permission model: named permissions, their selections, needs, scopes and coverage.

One place decides what a permission row means, for pairing (`/oauth/par`, `/oauth/device`),
for `grant-request`, for `policies`, and for every memory route (`memory_access`).

A *row* is what the spec calls a named-permission row: `{"permissions": [...], <one selection>}`.
`parse_row` refuses unknown keys, unknown names, a selection the names do not take, more than
one selection, and `account.create` / `memory.save` / `everything` asked with anything else;
it adds the needs (`memory.edit` brings `memory.read`), so a parsed row is exactly what the
owner sees.

Memory reach is a `Selector` per verb (`MemoryAccess.read/write/delete`), built from live rows:
`memory.*` with no selection reaches every memory that is not about an account (`all`);
`datatypes` reaches those categories, `about` those topics; `acctmem.*` reaches memories
about one account (`account_id`) or every account (none: `account_wildcard`); `everything`
reaches all of it; `memory.save` sets `save` (a connection's own memories are the `self`
reason, which no Selector grants).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from decoy_lab.vocab import ASKED_ALONE, CATEGORIES

UNLOCK_TYPE = "https://decoys.me/oauth/types/unlock"

#: name -> (needs, sensitive, what the owner sees). Order is the spec's table order.
PERMISSIONS: dict[str, tuple[tuple[str, ...], bool, str]] = {
    "account.create": ((), False, "Add accounts to Decoy"),
    "account.read": ((), False, "Read details from all accounts"),
    "account.edit": (("account.read",), False, "Edit all accounts"),
    "account.delete": (("account.edit",), True, "Delete all accounts"),
    "acctmail.read": ((), False, "Read all accounts' email"),
    "acctmail.mark": (("acctmail.read",), False, "Mark read or unread"),
    "acctmail.send": (("acctmail.read",), False, "Send and reply from them"),
    "acctmail.edit": (("acctmail.read",), False, "Edit their addresses"),
    "acctmail.delete": (("acctmail.read",), True, "Delete emails"),
    "acctmem.read": ((), False, "Read memories about all accounts"),
    "acctmem.edit": (("acctmem.read",), False, "Edit memories about all accounts"),
    "acctmem.delete": (("acctmem.edit",), True, "Delete memories about all accounts"),
    "alias.read": ((), False, "Read email"),
    "alias.mark": (("alias.read",), False, "Mark read or unread"),
    "alias.send": (("alias.read",), False, "Send and reply"),
    "alias.edit": (("alias.read",), False, "Edit your aliases"),
    "alias.delete": (("alias.read",), True, "Delete emails"),
    "alias.burn": (("alias.edit",), True, "Burn alias addresses"),
    "personal.read": ((), False, "Read all personal info"),
    "personal.edit": (("personal.read",), False, "Edit all personal info"),
    "personal.delete": (("personal.edit",), True, "Delete all personal info"),
    "memory.read": ((), False, "Read all memories"),
    "memory.save": ((), False, "Save new memories"),
    "memory.edit": (("memory.read",), False, "Edit all memories"),
    "memory.delete": (("memory.edit",), False, "Delete all memories"),
    "everything": ((), True, "Everything in your Decoy"),
}
ORDER = {name: i for i, name in enumerate(PERMISSIONS)}

#: selection key -> the permission families that take it
SELECTION_KEYS: dict[str, frozenset[str]] = {
    "account_id": frozenset({"account", "acctmail", "acctmem"}),
    "domain": frozenset({"account"}),
    "namespace_id": frozenset({"alias"}),
    "record_type": frozenset({"personal"}),
    "personal_id": frozenset({"personal"}),
    "datatypes": frozenset({"memory"}),
    "about": frozenset({"memory"}),
}
#: keys that together make one selection (personal's record_type and/or personal_id)
SELECTION_GROUP = {
    "account_id": "account_id",
    "domain": "domain",
    "namespace_id": "namespace_id",
    "record_type": "personal",
    "personal_id": "personal",
    "datatypes": "datatypes",
    "about": "about",
}
RECORD_TYPES = ("identities", "emails", "cards")
#: keys older clients send; refused beside `permissions`
LEGACY_KEYS = frozenset({"resource_id", "kind", "level", "action", "actions", "select", "capabilities", "resource_ids"})

#: capability scopes each permission implies (memories have none: no scope covers memories)
SCOPES: dict[str, tuple[str, ...]] = {
    "account.create": ("account.read", "account.write", "decoy.read", "decoy.write"),
    "account.read": ("account.read", "account.unlock"),
    "account.edit": ("account.write",),
    "account.delete": ("account.write", "decoy.write"),
    "acctmail.read": ("decoy.read", "forwarding.read", "message.read", "message.unlock"),
    "acctmail.mark": ("message.write",),
    "acctmail.send": ("message.write",),
    "acctmail.edit": ("decoy.write", "forwarding.write"),
    "acctmail.delete": ("message.write",),
    "alias.read": ("decoy.read", "message.read", "message.unlock"),
    "alias.mark": ("message.write",),
    "alias.send": ("message.write",),
    "alias.edit": ("decoy.write",),
    "alias.delete": ("message.write",),
    "alias.burn": ("decoy.write",),
    "personal.read": ("personal.read", "personal.unlock"),
    "personal.edit": ("personal.write",),
    "personal.delete": ("personal.write",),
}
ALL_SCOPES = (
    "account.read",
    "account.unlock",
    "account.write",
    "decoy.read",
    "decoy.write",
    "forwarding.read",
    "forwarding.write",
    "message.read",
    "message.unlock",
    "message.write",
    "personal.read",
    "personal.unlock",
    "personal.write",
    "profile.read",
    "webhook.write",
)
SCOPES["everything"] = tuple(s for s in ALL_SCOPES if s != "webhook.write")
#: what a pairing that asks for nothing gets (scopes only: a scope alone authorizes nothing)
DEFAULT_SCOPES = ("account.read", "decoy.read", "message.read", "profile.read")
#: held by every connection, never asked, never listed in `scopes`
IMPLICIT_SCOPES = ("webhook.read",)

_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DOMAIN_RE = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


class RequestError(ValueError):
    """An ask the server refuses and stores nothing for (400). `code` names the rule."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


def family(name: str) -> str:
    """`memory.read` -> `memory` (`everything` is its own family)."""
    return name.split(".", 1)[0]


def expand_needs(names: Iterable[str]) -> tuple[str, ...]:
    """Add every need, transitively, and return the names in the spec's table order."""
    out: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(PERMISSIONS[n][0])
    return tuple(sorted(out, key=ORDER.__getitem__))


@dataclass(frozen=True)
class Row:
    """One named-permission row: names (needs included) and at most one selection."""

    permissions: tuple[str, ...]
    selection: tuple[tuple[str, Any], ...] = ()

    @property
    def sel(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.selection}

    def as_json(self) -> dict[str, Any]:
        return {"permissions": list(self.permissions), **self.sel}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Row:
        """Rebuild a stored (already validated) row."""
        sel = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in obj.items() if k != "permissions"))
        return cls(tuple(obj["permissions"]), sel)

    def kind(self) -> str:
        """The policy row's `kind` as the spec's examples name it."""
        fam = family(self.permissions[0]) if self.permissions else "memory"
        return {
            "account": "account",
            "acctmail": "message",
            "alias": "message",
            "acctmem": "memory",
            "personal": "personal",
            "memory": "memory",
            "everything": "everything",
        }[fam]

    def policy_json(self) -> dict[str, Any]:
        """The row as `policies[].permissions[]` serves it."""
        return {"type": UNLOCK_TYPE, "kind": self.kind(), **self.as_json(), "named": True}

    def headlines(self) -> list[str]:
        """What the owner sees, one line per name, worded for the selection."""
        sel = self.sel
        lines = []
        for name in self.permissions:
            text = PERMISSIONS[name][2]
            if "account_id" in sel or "domain" in sel:
                text = text.replace("all accounts'", "this account's").replace("all accounts", "this account")
            elif "datatypes" in sel:
                text = text.replace("all memories", "memories in " + ", ".join(sel["datatypes"]))
            elif "about" in sel:
                n = len(sel["about"])
                text = text.replace("all memories", "memories about " + ("this topic" if n == 1 else f"{n} topics"))
            elif "record_type" in sel or "personal_id" in sel:
                text = text.replace("all personal info", "this personal info")
            elif "namespace_id" in sel:
                text += " (one Personal Alias)"
            lines.append(text + (" [sensitive]" if PERMISSIONS[name][1] else ""))
        return lines


def sanitize_reason(reason: Any) -> str:
    """One line for the owner: breaks and control characters become a space, invisibles go."""
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise RequestError("INVALID_REASON", "`reason` must be a string")
    out = []
    for ch in reason:
        cat = unicodedata.category(ch)
        if ch in "\r\n\t" or cat == "Cc" or cat in ("Zl", "Zp"):
            out.append(" ")
        elif cat == "Cf":
            continue
        else:
            out.append(ch)
    return re.sub(r" {2,}", " ", "".join(out)).strip()[:500]


def _uuid(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _UUID_RE.match(value):
        raise RequestError("INVALID_SELECTION", f"`{key}` must be a UUID string, got {value!r}")
    return value.lower()


def _selection_value(key: str, value: Any) -> Any:
    if key in ("account_id", "namespace_id", "personal_id"):
        return _uuid(key, value)
    if key == "domain":
        if not isinstance(value, str) or not _DOMAIN_RE.match(value.strip().lower()):
            raise RequestError("INVALID_SELECTION", f"`domain` must be a site's host name, got {value!r}")
        return value.strip().lower()
    if key == "record_type":
        if value not in RECORD_TYPES:
            raise RequestError("INVALID_SELECTION", f"`record_type` must be one of {', '.join(RECORD_TYPES)}")
        return value
    if key == "datatypes":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise RequestError("INVALID_SELECTION", "`datatypes` must be a non-empty list of categories")
        bad = [v for v in value if v not in CATEGORIES]
        if bad:
            raise RequestError(
                "INVALID_SELECTION", f"unknown categories {bad}; `datatypes` takes: {', '.join(CATEGORIES)}"
            )
        return tuple(sorted(set(value)))
    if key == "about":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise RequestError("INVALID_SELECTION", '`about` must be a non-empty list of "topic:<id>"')
        bad = [v for v in value if not v.startswith("topic:") or len(v) <= len("topic:")]
        if bad:
            raise RequestError("INVALID_SELECTION", f'`about` takes only "topic:<id>" values, got {bad}')
        return tuple(sorted(set(value)))
    raise RequestError("UNKNOWN_KEY", f"unknown key {key!r}")  # pragma: no cover - guarded by caller


#: the older `{"kind", "actions"}` form, still accepted for existing clients: kind -> action -> name
KIND_ACTIONS: dict[str, dict[str, str]] = {
    "memory": {
        "create": "memory.save",
        "read": "memory.read",
        "read_metadata": "memory.read",
        "unlock_content": "memory.read",
        "write": "memory.edit",
        "destroy": "memory.delete",
    },
    "account": {
        "create": "account.create",
        "read_metadata": "account.read",
        "unlock_credential": "account.read",
        "write": "account.edit",
        "destroy": "account.delete",
    },
    "message": {
        "read_metadata": "acctmail.read",
        "unlock_content": "acctmail.read",
        "write": "acctmail.send",
        "destroy": "acctmail.delete",
    },
    "personal": {
        "read_metadata": "personal.read",
        "unlock_content": "personal.read",
        "write": "personal.edit",
        "destroy": "personal.delete",
    },
}


def _from_kind_actions(obj: dict[str, Any]) -> dict[str, Any]:
    """Translate an older `{"kind", "actions"|"action", <selection>}` row into the named form."""
    kind = obj.get("kind")
    table = KIND_ACTIONS.get(kind) if isinstance(kind, str) else None
    if table is None:
        raise RequestError(
            "NAMED_PERMISSIONS_REQUIRED",
            f"older form with kind {kind!r} is not accepted by the "
            'sandbox; ask by permission name: {"permissions": [...]}',
        )
    actions = obj.get("actions", obj.get("action"))
    if isinstance(actions, str):
        actions = [actions]
    if not isinstance(actions, list) or not actions or not all(isinstance(a, str) for a in actions):
        raise RequestError("INVALID_ROW", "the older form needs `actions` (a list) or `action`")
    unknown = sorted({a for a in actions if a not in table})
    if unknown:
        raise RequestError("UNKNOWN_PERMISSION", f"unknown {kind} action(s) {unknown}; known: {sorted(table)}")
    rest = {k: v for k, v in obj.items() if k not in ("kind", "actions", "action")}
    return {"permissions": sorted({table[a] for a in actions}), **rest}


def parse_row(obj: Any, *, allowed_extra: Iterable[str] = (), drop_webhook_read: bool = True) -> Row:
    """Validate one named-permission row and add its needs. Raises RequestError (400)."""
    if not isinstance(obj, dict):
        raise RequestError("INVALID_ROW", "each row must be an object with `permissions`")
    extra = set(allowed_extra)
    if "permissions" not in obj:
        if "kind" in obj:
            obj = _from_kind_actions(obj)
        else:
            legacy = sorted(LEGACY_KEYS & obj.keys())
            if legacy:
                raise RequestError(
                    "NAMED_PERMISSIONS_REQUIRED",
                    f"the older form ({', '.join(legacy)}) is not accepted by the sandbox; "
                    'ask by permission name: {"permissions": [...]}',
                )
            raise RequestError("INVALID_ROW", "a row needs `permissions` (a list of permission names)")
    unknown = sorted(
        k for k in obj if k != "permissions" and k != "type" and k not in SELECTION_KEYS and k not in extra
    )
    if unknown:
        legacy = [k for k in unknown if k in LEGACY_KEYS]
        hint = " (never send resource_id, kind or level with permissions)" if legacy else ""
        raise RequestError("UNKNOWN_KEY", f"unknown key(s) {unknown}{hint}")
    if "type" in obj and obj["type"] != UNLOCK_TYPE:
        raise RequestError("INVALID_ROW", f"`type` must be {UNLOCK_TYPE!r} when sent")
    names = obj["permissions"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RequestError("INVALID_ROW", "`permissions` must be a list of permission names")
    if drop_webhook_read:
        names = [n for n in names if n != "webhook.read"]
    unknown_names = sorted({n for n in names if n not in PERMISSIONS})
    if unknown_names:
        raise RequestError(
            "UNKNOWN_PERMISSION", f'unknown permission name(s) {unknown_names}; see "Access: named permissions"'
        )
    if not names:
        raise RequestError("EMPTY_PERMISSIONS", "`permissions` names nothing to ask for")
    sel_keys = [k for k in obj if k in SELECTION_KEYS]
    groups = {SELECTION_GROUP[k] for k in sel_keys}
    if len(groups) > 1:
        raise RequestError("ONE_SELECTION", f"one selection per row, got {sorted(sel_keys)}")
    alone = set(names) & ASKED_ALONE
    if alone and (len(set(names)) > 1 or sel_keys):
        raise RequestError("ASK_ALONE", f"{sorted(alone)[0]} is asked alone: no other permission, no selection")
    for k in sel_keys:
        takers = SELECTION_KEYS[k]
        refused = sorted({n for n in names if family(n) not in takers})
        if refused:
            raise RequestError("SELECTION_NOT_TAKEN", f"{refused} do not take `{k}`")
    selection = tuple(sorted((k, _selection_value(k, obj[k])) for k in sel_keys))
    return Row(expand_needs(names), selection)


def parse_rows(rows: Any) -> list[Row]:
    """`authorization_details`: a list of rows (duplicates collapse)."""
    if not isinstance(rows, list):
        raise RequestError("INVALID_ROW", "`authorization_details` must be a list of rows")
    out: list[Row] = []
    for r in rows:
        row = parse_row(r)
        if row not in out:
            out.append(row)
    return out


def scopes_for(rows: Iterable[Row], extra: Iterable[str] = ()) -> list[str]:
    """The capability scopes a set of rows implies (sorted), plus legacy scopes held directly."""
    out = set(extra)
    for row in rows:
        for n in row.permissions:
            out.update(SCOPES.get(n, ()))
    return sorted(out)


# ── coverage: does what is held already give what is asked? ─────────────────────────────────


def _selection_covers(held: dict[str, Any], asked: dict[str, Any]) -> bool:
    if not held:
        return True
    if not asked:
        return False
    if "datatypes" in held and "datatypes" in asked:
        return set(asked["datatypes"]) <= set(held["datatypes"])
    if "about" in held and "about" in asked:
        return set(asked["about"]) <= set(held["about"])
    if held.keys() == {"record_type"} and asked.get("record_type") == held["record_type"]:
        return True
    return held == asked


def covers(held: Iterable[Row], asked: Row) -> bool:
    """True when every name in `asked`, on its selection, is reached by some held row."""
    held = list(held)
    if any("everything" in h.permissions for h in held):
        return True
    for name in asked.permissions:
        if not any(name in h.permissions and _selection_covers(h.sel, asked.sel) for h in held):
            return False
    return True


def new_id() -> str:
    return str(uuid.uuid4())
