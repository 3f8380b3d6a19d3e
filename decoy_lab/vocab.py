"""The literals the spec gives, written once: both the client and the sandbox read them here.

A leaf: it imports nothing. Only values the spec spells out belong here, each with the place it
comes from (`000` is the memory contract, `001` the Agent API by operation, both in the spec
folder); the rules that use them stay apart, so the sandbox remains an independent check of the
client.
"""

from __future__ import annotations

__all__ = [
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
]

CATEGORIES = (
    "personal_details",
    "family",
    "professional_details",
    "sports",
    "travel",
    "food",
    "music",
    "health",
    "technology",
    "hobbies",
    "fashion",
    "entertainment",
    "milestones",
    "user_preferences",
    "misc",
)
"""mem0's categories, the only values `categories` (and a grant's `datatypes`) may hold.
001 context_rows_create: "`categories` (one or more of mem0's default categories: `personal_details`, …)"."""

ENTITY_TYPES = (
    "device",
    "document",
    "event",
    "goal",
    "hobby",
    "media",
    "organization",
    "person",
    "pet",
    "place",
    "product",
    "project",
    "team",
    "trip",
)
"""A topic's `entityType`, or "" when no type is given.
000 Exact formats, topic rows: "`entityType` is one of `device`, `document`, …, `trip`, or `""`"."""

USER_ENTITY = "default_user"
"""The entity name that means the user. 000 Exact formats: `"entityName":"default_user"`."""

USER_NAMES = frozenset({"default_user", "you", "user", "me"})
"""Names that mean the user, never a topic's. 000 Exact formats, topic rows: "`name` is … never
the user (`default_user`, `you`, `user`, `me`)"."""

MAX_CIPHERTEXT = 100 * 1024
"""Bytes a memory's decoded `ciphertext` may hold. 001 memories_save / memories_update:
"Maximum decoded size 100 KiB"."""

SELECTION_KEYS = ("account_id", "domain", "namespace_id", "record_type", "personal_id", "datatypes", "about")
"""The keys of a permission row's one selection, in the spec's order. 001 oauth_par: "`permissions`
plus at most one of `account_id`, `domain`, `namespace_id`, `record_type` / `personal_id`,
`datatypes` or `about`"."""

STATUSES = ("active", "inactive")
"""An account's or a Decoy address's `status`, as a write sets it and a list filters by it.
001 decoy_update: "`status: { type: string, enum: [active, inactive] }`"; account_list: "`status`
… `enum: [active, inactive]`"; decoy_burn: "Use `PATCH` with `status: inactive` for a reversible pause"."""

ASKED_ALONE = frozenset({"account.create", "memory.save", "everything"})
"""Permissions that take no selection and are asked alone, one row each. 001 Access, Selections:
"`account.create`, `memory.save`, `everything` | none; each is asked alone"."""

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
"""The device grant's `grant_type` (RFC 8628). 001 Connect: "-d 'grant_type=urn:ietf:params:oauth:
grant-type:device_code&device_code=…'"."""

REFRESH_GRANT = "refresh_token"
"""The refresh grant's `grant_type`. 001 Connect: "`grant_type=refresh_token` renews the same
connection"."""

PERMISSIONS = (
    ("account.create", "Add accounts to Decoy", ()),
    ("account.read", "Read details from all accounts", ()),
    ("account.edit", "Edit all accounts", ("account.read",)),
    ("account.delete", "Delete all accounts", ("account.edit",)),
    ("acctmail.read", "Read all accounts' email", ()),
    ("acctmail.mark", "Mark read or unread", ("acctmail.read",)),
    ("acctmail.send", "Send and reply from them", ("acctmail.read",)),
    ("acctmail.edit", "Edit their addresses", ("acctmail.read",)),
    ("acctmail.delete", "Delete emails", ("acctmail.read",)),
    ("acctmem.read", "Read memories about all accounts", ()),
    ("acctmem.edit", "Edit memories about all accounts", ("acctmem.read",)),
    ("acctmem.delete", "Delete memories about all accounts", ("acctmem.edit",)),
    ("alias.read", "Read email", ()),
    ("alias.mark", "Mark read or unread", ("alias.read",)),
    ("alias.send", "Send and reply", ("alias.read",)),
    ("alias.edit", "Edit your aliases", ("alias.read",)),
    ("alias.delete", "Delete emails", ("alias.read",)),
    ("alias.burn", "Burn alias addresses", ("alias.edit",)),
    ("personal.read", "Read all personal info", ()),
    ("personal.edit", "Edit all personal info", ("personal.read",)),
    ("personal.delete", "Delete all personal info", ("personal.edit",)),
    ("memory.read", "Read all memories", ()),
    ("memory.save", "Save new memories", ()),
    ("memory.edit", "Edit all memories", ("memory.read",)),
    ("memory.delete", "Delete all memories", ("memory.edit",)),
    ("everything", "Everything in your Decoy", ()),
)
"""Every named permission: (name, what the owner sees, its Needs). 001 Access, named permissions:
"| Name | The owner sees | Needs | Sensitive |" — and "**Needs** are added for you: ask for
`acctmail.send` and the answer's `permissions` lists `acctmail.read` too"."""

# name -> (what the owner sees, its Needs): PERMISSIONS as the consent card and Tab read it.
PERMISSION_WORDS: dict[str, tuple[str, tuple[str, ...]]] = {name: (sees, needs) for name, sees, needs in PERMISSIONS}
