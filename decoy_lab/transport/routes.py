"""Every path of Decoy's API this client calls, named once (the Agent API's operation list).

The sandbox keeps its own table on purpose: it is an independent check of the client, so the two
never share the rules, only the spec's words.
"""

from __future__ import annotations

from urllib.parse import quote

from decoy_lab.errors import MemoryModelError

METADATA = "/.well-known/oauth-authorization-server"

# Pairing: RFC 9126 PAR, then the RFC 8628 device grant; tokens and their refresh.
PAR = "/oauth/par"
DEVICE = "/oauth/device"
TOKEN = "/oauth/token"

# What the connection holds and what it has asked for.
POLICIES = "/api/agent/policies"
GRANT_REQUEST = "/api/agent/grant-request"
ACCOUNTS = "/api/agent/accounts"

# The account family: an account's record, password and secret fields, its Decoy address, unlock.
ACCOUNT_KEY = f"{ACCOUNTS}/public-key"  # the owner's key a password is sealed to
OWNER_KEY = "/api/agent/public-key"  # the owner's key sealed_details and patches are sealed to
DECOYS = "/api/agent/decoys"  # POST: an account with its Decoy address, in one call
UNLOCK = "/api/agent/unlock"


ID_MAX = 256  # Decoy's ids are UUIDs (36 characters); a longer one is no id, and would overflow a URL


def segment(value: object) -> str:
    """An id as one path segment. An id comes from someone's typing or a server's answer, and must
    name nothing but itself: one holding a slash or a control character, or that is empty or all
    dots, is refused (`A/../B` would reach account B; servers decode `%2F` back into a slash before
    routing, so quoting it is not enough); `?`, `#`, `%` and spaces are percent-encoded."""
    if not isinstance(value, str):  # None, 5 or b"…" would name "None", "5", "b'…'": a wrong row, or none
        raise MemoryModelError(f"an id is text (Decoy's ids are UUIDs), not {type(value).__name__}; nothing was sent")
    text = value
    if len(text) > ID_MAX or text.strip(".") == "" or any(c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise MemoryModelError(f"{text[:60]!r} is not an id (Decoy's ids are UUIDs); nothing was sent")
    return quote(text, safe="")


def _under(root: str, row_id: object, part: str, item: object) -> str:
    return (
        f"{root}/{segment(row_id)}" + (f"/{part}" if part else "") + (f"/{segment(item)}" if item is not None else "")
    )


def account(account_id: object, part: str = "", item: object = None) -> str:
    """`/api/agent/accounts/{id}` and its parts (`credential`, `fields`, `field-grantees`, …),
    `item` the id under the part (`fields/{fieldId}`)."""
    return _under(ACCOUNTS, account_id, part, item)


def decoy(decoy_id: object, part: str = "", item: object = None) -> str:
    """`/api/agent/decoys/{id}` and its parts (`edits`, `edits/{editId}` with `item`)."""
    return _under(DECOYS, decoy_id, part, item)


def unlock(request_id: object) -> str:
    """`/api/agent/unlock/{requestId}`: an unlock request polled."""
    return _under(UNLOCK, request_id, "", None)


# Memories, their wraps and who they may be wrapped to.
MEMORIES = "/api/agent/context/memories"
MEMORIES_DELETE = f"{MEMORIES}/delete"
WRAPS = "/api/agent/context/memory-wraps"
GRANTEES = "/api/agent/context/memory-grantees"

# Legacy space rows.
ROWS = "/api/agent/context/rows"
ROWS_DELETE = f"{ROWS}/delete"
SPACES = "/api/agent/context/spaces"

# The change feed.
SYNC = "/api/agent/sync"
SYNC_HEAD = "/api/agent/sync/head"
