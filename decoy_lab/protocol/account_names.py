"""Account names from the authorized account list (`GET /api/agent/accounts`), page by page.

They name `account:<id>` labels and link ends ("resolve its name from the authorized account
list"). A list that cannot be read is no error: the names are empty and say why.
"""

from __future__ import annotations

import logging

from decoy_lab.errors import DecoyError, InsufficientGrant
from decoy_lab.protocol.session import Session
from decoy_lab.transport import routes
from decoy_lab.vault.frames import AccountNames

log = logging.getLogger(__name__)
ACCOUNT_PAGES = 20  # pages of the account list read for names; past that, an id says so


def account_names(session: Session) -> AccountNames:
    """Account id → name from every page of the authorized account list (at most ACCOUNT_PAGES).
    When the list cannot be read (not granted: `403 SCOPE_MISSING`; or any other failure) it is
    empty and `unavailable` says why: nothing is raised, a load goes on."""
    names: dict[str, str] = {}
    reasons: dict[str, str] = {}
    params: dict[str, str] = {}
    for _ in range(ACCOUNT_PAGES):
        try:
            body = session.get(routes.ACCOUNTS, params=params or None, accounts=list)
        except InsufficientGrant as exc:
            ask = exc.required_permission or "account.read"
            why = f"this connection may not list accounts ({exc.status} {exc.code}; that needs {ask})"
            log.info("account names: %s", why)
            return AccountNames(unavailable=why)
        except DecoyError as exc:
            why = f"the authorized account list could not be read ({exc})"
            log.warning("account names: %s", why)
            return AccountNames(unavailable=why)
        _name_page(body["accounts"], names, reasons)
        page = body.get("pagination")
        cursor = page.get("next_cursor") if isinstance(page, dict) and page.get("has_more") else None
        if not isinstance(cursor, str) or not cursor:
            return AccountNames(names, reasons=reasons)
        params = {"cursor": cursor}
    absent = f"not among the first {ACCOUNT_PAGES} pages of the authorized account list"
    return AccountNames(names, reasons=reasons, absent=absent)


def _name_page(accounts: list, names: dict[str, str], reasons: dict[str, str]) -> None:
    """Add one page's accounts: a name, or why there is none."""
    for a in accounts:
        if isinstance(a, dict) and isinstance(a.get("id"), str) and a["id"]:
            named = a.get("service_name")
            if isinstance(named, str) and named.strip():
                names[a["id"]] = named
            else:
                reasons[a["id"]] = "the authorized account list gives it no service_name"
