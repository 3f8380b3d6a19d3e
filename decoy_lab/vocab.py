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
    "REFRESH_GRANT",
    "SELECTION_KEYS",
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

ASKED_ALONE = frozenset({"account.create", "memory.save", "everything"})
"""Permissions that take no selection and are asked alone, one row each. 001 Access, Selections:
"`account.create`, `memory.save`, `everything` | none; each is asked alone"."""

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
"""The device grant's `grant_type` (RFC 8628). 001 Connect: "-d 'grant_type=urn:ietf:params:oauth:
grant-type:device_code&device_code=…'"."""

REFRESH_GRANT = "refresh_token"
"""The refresh grant's `grant_type`. 001 Connect: "`grant_type=refresh_token` renews the same
connection"."""
