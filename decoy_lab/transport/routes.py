"""Every path of Decoy's API this client calls, named once (the Agent API's operation list).

The sandbox keeps its own table on purpose: it is an independent check of the client, so the two
never share the rules, only the spec's words.
"""

from __future__ import annotations

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


def account(account_id: str, part: str = "") -> str:
    """`/api/agent/accounts/{id}` and its parts (`credential`, `fields`, `field-grantees`, …)."""
    return f"{ACCOUNTS}/{account_id}" + (f"/{part}" if part else "")


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
