"""Who may do what with an account, a Decoy address and their secrets; the refusals when not.

Two gates, as the reference draws them ("A scope with no matching permission authorizes nothing:
scopes say which kind of thing a token may ever touch, permissions say which accounts, aliases
and records"):

- the operation's `x-scope` (`need_scope`): without it `403 SCOPE_MISSING` with `required_scope`,
  `required_permission` and `permission_request`, or `403 GRANT_EXPIRED` when a grant that ended
  held it ("After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`");
- the permission on the account (`holds`, `require`): an `account.*` / `acctmail.*` row on its
  `account_id`, a row with no selection, or `everything`; otherwise `403 INSUFFICIENT_GRANT` with
  the `permission_request` for that account (or `GRANT_EXPIRED`, grantstore.refusal).

"What you create is yours. An account or address this connection created, it reads, edits and
sends on without asking. Deleting it still needs `account.delete`" — `created` is that provenance
(`created_by_token_id`), and it stands in for `account.read`, `account.edit`, `acctmail.*` on that
account, never for `account.delete`. A `domain` selection names no account the sandbox can match
(it covers none); `acctmem.*` rows cover no account details ("An account's details do not bring
its email or its memories").

A Personal Alias is, in the sandbox, an address with no account of its own (`account_id` null),
made on the owner's surface; an account may link one (`accounts.decoy_id`). It is reached by
`alias.*` rows with no selection or `everything` (a `namespace_id` selection names a namespace the
sandbox does not have, so it covers none): "`alias.edit` for a Personal Alias address", "Burning a
Personal Alias address … needs `alias.burn`". An account's own Decoy email is never burned on its
own: "it goes only with its account (`403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`…)", a code with no ask.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.requests import Request

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.bodies import uuid_text
from decoy_lab.sandbox.core import HTTPProblem, bad_request
from decoy_lab.sandbox.stores import acctstore as acs

#: what creating an account stands in for on the account it made ("reads, edits and sends on")
CREATOR_HOLDS = frozenset(
    {"account.read", "account.edit", "acctmail.read", "acctmail.mark", "acctmail.send", "acctmail.edit"}
)


def has_everything(agent: Agent) -> bool:
    return any("everything" in r.permissions for r in agent.rows)


def created(agent: Agent, record: sqlite3.Row | None) -> bool:
    """Did this connection create the account (or address)?"""
    return record is not None and record["created_by_token_id"] == agent.token_id


def holds(agent: Agent, permission: str, account_id: str) -> bool:
    """Does a live grant of this connection give `permission` on this account?"""
    for row in agent.rows:
        if "everything" in row.permissions:
            return True
        if permission in row.permissions:
            sel = row.sel
            if not sel or sel.get("account_id") == account_id:
                return True
    return False


def may(agent: Agent, permission: str, account: sqlite3.Row) -> bool:
    """`holds`, or the creator's own rights on what it created."""
    return holds(agent, permission, account["id"]) or (permission in CREATOR_HOLDS and created(agent, account))


def covered(agent: Agent) -> tuple[bool, set[str]]:
    """(every account, the account ids named) that this connection's `account.*` rows cover."""
    every, named = False, set()
    for row in agent.rows:
        if "everything" in row.permissions:
            every = True
        elif any(p.startswith("account.") and p != "account.create" for p in row.permissions):
            if not row.sel:
                every = True
            elif isinstance(row.sel.get("account_id"), str):
                named.add(row.sel["account_id"])
    return every, named


def lists(agent: Agent, account: sqlite3.Row) -> bool:
    """Is the account on this connection's list? Covered by an `account.*` row, or its own."""
    every, named = covered(agent)
    return every or account["id"] in named or created(agent, account)


def need_scope(
    con: sqlite3.Connection,
    agent: Agent,
    now: float,
    scope: str,
    permission: str,
    *,
    alternatives: tuple[str, ...] = (),
    what: str = "this call",
) -> None:
    """The operation's `x-scope` gate (any of `alternatives` passes too)."""
    if scope in agent.scopes or any(s in agent.scopes for s in alternatives):
        return
    ended = scope in grants.scopes_for(grantstore.ended_rows(con, agent.token_id, now))
    raise grantstore.insufficient(
        permission,
        code="GRANT_EXPIRED" if ended else "SCOPE_MISSING",
        message=(
            f"The grant that allowed {what} ended. Send permission_request to ask again."
            if ended
            else f"{what[:1].upper()}{what[1:]} needs the {scope} scope, which comes with the {permission} "
            "permission. Send permission_request to POST /api/agent/grant-request, unchanged."
        ),
        required_scope=scope,
    )


def need_create(con: sqlite3.Connection, agent: Agent, now: float) -> None:
    """ "**Also needs `account.create`, live.** … Without it — never granted, or ended with the
    access that carried it — the call is refused with `403 SCOPE_MISSING` (`required_scope:
    decoy.write`, `recovery: request_access`) and nothing is created.\""""
    if any("account.create" in r.permissions or "everything" in r.permissions for r in agent.rows):
        return
    ended = any("account.create" in r.permissions for r in grantstore.ended_rows(con, agent.token_id, now))
    raise grantstore.insufficient(
        "account.create",
        code="GRANT_EXPIRED" if ended else "SCOPE_MISSING",
        message=(
            "Creating an account needs account.create, live"
            + (": the grant that carried it ended." if ended else ".")
            + " Send permission_request to POST /api/agent/grant-request, unchanged; nothing was created."
        ),
        required_scope="decoy.write",
    )


def require(con: sqlite3.Connection, agent: Agent, now: float, permission: str, account: sqlite3.Row) -> None:
    """403 INSUFFICIENT_GRANT (or GRANT_EXPIRED) unless this connection may `permission` the account."""
    if not may(agent, permission, account):
        raise grantstore.refusal(con, agent.token_id, now, permission, {"account_id": account["id"]})


def account_or_404(con: sqlite3.Connection, account_id: str) -> sqlite3.Row:
    """ "Returns 404 if not found or not owned by you." (a deleted account is gone from reads)"""
    row = acs.get_account(con, account_id)
    if row is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no account {account_id!r}")
    return row


def path_account(
    request: Request, con: sqlite3.Connection, agent: Agent, now: float, scope: str, permission: str, *, what: str
) -> sqlite3.Row:
    """The account named by the path (`{account_id}`), gated in this order: the operation's scope
    (403 SCOPE_MISSING or GRANT_EXPIRED), the account (404), the permission on it (403
    INSUFFICIENT_GRANT)."""
    need_scope(con, agent, now, scope, permission, what=what)
    account = account_or_404(con, request.path_params["account_id"])
    require(con, agent, now, permission, account)
    return account


def decoy_account(con: sqlite3.Connection, decoy: sqlite3.Row) -> sqlite3.Row | None:
    """The account an address belongs to (None for a Personal Alias, or once the account is gone)."""
    return acs.get_account(con, decoy["account_id"]) if decoy["account_id"] else None


def decoy_or_404(con: sqlite3.Connection, decoy_id: str, agent: Agent | None = None) -> sqlite3.Row:
    """The address by its id, or 404 NOT_FOUND; with `agent`, also 404 for an address that
    connection may not read ("isn't owned by you"). Without it, who may see it is the caller's check."""
    decoy = acs.get_decoy(con, decoy_id)
    if decoy is None or (agent is not None and not may_read_decoy(agent, decoy, decoy_account(con, decoy))):
        raise HTTPProblem(404, "NOT_FOUND", "no such decoy")
    return decoy


def is_alias(decoy: sqlite3.Row) -> bool:
    """A Personal Alias: an address with no account of its own."""
    return decoy["account_id"] is None


def holds_alias(agent: Agent, permission: str) -> bool:
    """`permission` (alias.read / alias.edit / alias.burn) on every Personal Alias."""
    return any("everything" in r.permissions or (permission in r.permissions and not r.sel) for r in agent.rows)


def decoy_permission(decoy: sqlite3.Row) -> str:
    """What changing an address needs: "`acctmail.edit` on the account whose address this is, or
    `alias.edit` on every Personal Alias for a Personal Alias row"."""
    return "alias.edit" if is_alias(decoy) else "acctmail.edit"


def may_edit_decoy(agent: Agent, decoy: sqlite3.Row, account: sqlite3.Row | None) -> bool:
    """ "Nothing when this connection created the decoy: it edits what it created." """
    if created(agent, decoy) or (account is not None and created(agent, account)):
        return True
    if is_alias(decoy):
        return holds_alias(agent, "alias.edit")
    return holds(agent, "acctmail.edit", decoy["account_id"])


def may_burn_decoy(agent: Agent, decoy: sqlite3.Row) -> bool:
    """A Personal Alias with `alias.burn` ("Deleting it still needs … `alias.burn`"); an account's
    own Decoy email never on its own."""
    return is_alias(decoy) and holds_alias(agent, "alias.burn")


def goes_with_account() -> HTTPProblem:
    """ "An account's own Decoy email is never burned, replaced or rotated by an agent: it goes only
    with its account" — nothing to ask for (`can_request: false`)."""
    return HTTPProblem(
        403,
        "ACCOUNT_EMAIL_GOES_WITH_ACCOUNT",
        "An account's Decoy email goes only with its account: delete the account (account.delete) instead.",
        can_request=False,
        recovery="delete_account",
    )


def may_read_decoy(agent: Agent, decoy: sqlite3.Row, account: sqlite3.Row | None) -> bool:
    """A connection that may read the address: its creator, `acctmail.*` on its account ("read its
    mail with `acctmail.read`"), or an account grant ("an account grant covers an account's own
    address")."""
    if may_edit_decoy(agent, decoy, account):
        return True
    if is_alias(decoy):
        return holds_alias(agent, "alias.read")
    aid = decoy["account_id"]
    return aid is not None and any(
        holds(agent, p, aid) for p in ("acctmail.read", "account.read", "account.edit", "account.delete")
    )


def refuse_decoy(
    con: sqlite3.Connection, agent: Agent, now: float, decoy: sqlite3.Row, permission: str | None = None
) -> HTTPProblem:
    """The refusal for an address: the permission on its account (`acctmail.edit` to change it)."""
    selection: dict[str, Any] | None = {"account_id": decoy["account_id"]} if decoy["account_id"] else None
    if is_alias(decoy) and permission is not None and permission.startswith("acctmail."):
        permission = "alias." + permission.split(".", 1)[1]  # the same ask, for a Personal Alias
    return grantstore.refusal(con, agent.token_id, now, permission or decoy_permission(decoy), selection)


def require_edit_decoy(
    con: sqlite3.Connection, agent: Agent, now: float, decoy: sqlite3.Row, account: sqlite3.Row | None
) -> None:
    """403 (refuse_decoy: `acctmail.edit`, or `alias.edit` for a Personal Alias) unless this
    connection may change the address."""
    if not may_edit_decoy(agent, decoy, account):
        raise refuse_decoy(con, agent, now, decoy)


def link_decoy(con: sqlite3.Connection, agent: Agent, now: float, decoy_id: Any) -> sqlite3.Row:
    """An existing active address to link to an account: "needs `acctmail.edit` or `alias.edit` on
    that address". Another account's own Decoy email is never moved (409 DECOY_ALREADY_LINKED)."""
    decoy = acs.get_decoy(con, uuid_text(decoy_id, "decoy_id"))
    if decoy is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no decoy {decoy_id!r}")
    if decoy["account_id"] and acs.get_account(con, decoy["account_id"]) is not None:
        raise HTTPProblem(409, "DECOY_ALREADY_LINKED", "this address is another account's Decoy email")
    if decoy["status"] != "active":
        raise bad_request("DECOY_NOT_ACTIVE", "link an active address (this one is paused)", "decoy_id")
    require_edit_decoy(con, agent, now, decoy, None)
    return decoy


#: "One connection creates at most 40 addresses in 10 minutes and 200 in 24 hours."
ADDRESS_LIMITS = ((600.0, 40), (86400.0, 200))


def limited(times: list[float], now: float, limits: tuple[tuple[float, int], ...]) -> int | None:
    """Seconds until one more is allowed, or None when it is allowed now (`times` oldest first)."""
    waits = [int(times[-n] + window - now) + 1 for window, n in limits if len(times) >= n and now - times[-n] < window]
    return max(waits) if waits else None


def need_address_room(con: sqlite3.Connection, agent: Agent, now: float) -> None:
    """429 RATE_LIMITED past the address limit; every address this connection mints counts
    (a create, a protect, a replacement)."""
    wait = limited(acs.decoys_created_since(con, agent.token_id, now - 86400.0), now, ADDRESS_LIMITS)
    if wait is not None:
        raise HTTPProblem(
            429, "RATE_LIMITED", "this connection created its limit of addresses", retry_after_seconds=wait
        )


def need_vault_key(con: sqlite3.Connection, agent: Agent, now: float) -> None:
    """A vault-key surface: "a connection that holds the **vault key** …, which it holds only while it
    holds `everything`. Any other agent gets `403 VAULT_KEY_REQUIRED` by design; a connection whose
    `everything` ended by its time limit gets `403 GRANT_EXPIRED` with `recovery: request_access`.\""""
    if has_everything(agent):
        return
    if any("everything" in r.permissions for r in grantstore.ended_rows(con, agent.token_id, now)):
        raise grantstore.insufficient(
            "everything",
            code="GRANT_EXPIRED",
            message="The vault key went with `everything`, which ended. Send permission_request to ask again.",
        )
    raise HTTPProblem(
        403,
        "VAULT_KEY_REQUIRED",
        "This is for the owner's own surfaces that hold the vault key (held only with `everything`).",
        required_permission="everything",
        can_request=False,
    )
