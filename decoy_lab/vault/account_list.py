"""The accounts a connection may see, as data and as one pandas DataFrame.

An `AccountEntry` is one served account (`GET /api/agent/accounts`) read with what this
connection can open: its name from a copy sealed to this connection (the address's
`metadata_seal`), a name the server was given in plain text, or a record this connection sealed
or was answered by unlock in this session; otherwise the name is missing and `service_from` says
why (an account record sealed to the owner opens only with the owner's key). `accounts_frame`
makes the table `Connection.accounts()` shows, one row per account, with the memories of the last
load filed about it (`about: ["account:<id>"]`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["ACCOUNT_COLUMNS", "AccountEntry", "FieldsSeen", "accounts_frame", "entry_of"]

# Each column and its dtype, in order (pinned by tests/client/test_account_family.py).
ACCOUNT_COLUMNS: dict[str, str] = {
    "id": "string",
    "service": "string",
    "username": "string",
    "decoy_email": "string",
    "has_password": "boolean",
    "fields": "Int64",
    "field_labels": "object",
    "created_by": "string",
    "memories": "Int64",
    "service_from": "string",
    "fields_note": "string",
    "decoy_id": "string",
    "rev": "Int64",
    "status": "string",
}
THIS_CONNECTION, OTHER = "this connection", "the owner or another connection"


@dataclass(frozen=True)
class FieldsSeen:
    """An account's secret fields as this connection read them: the labels of those it opened
    (None: not read) and, in words, what it could not open or why it could not read them."""

    labels: tuple[str, ...] | None
    note: str = ""


@dataclass(frozen=True)
class AccountEntry:
    """One account as this connection sees it; the name and username only where it can open them."""

    id: str
    service: str | None
    service_from: str
    username: str | None
    decoy_id: str | None
    decoy_email: str | None
    has_password: bool
    fields: FieldsSeen
    created_here: bool
    rev: int | None
    status: str | None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def entry_of(
    served: Mapping[str, Any],
    *,
    details: Mapping[str, Any] | None = None,
    details_why: str = "",
    record: Mapping[str, Any] | None = None,
    record_from: str = "",
    fields: FieldsSeen | None = None,
) -> AccountEntry:
    """An account as served, with what was opened of it: `details` (its address's details, from a
    copy sealed to this connection), `record` (the account record, where this connection holds
    it: sealed here, or answered by unlock; `record_from` says which). The name is taken from
    the first that has one; when none has, `service_from` says why (`details_why`)."""
    plain = _text(served.get("service_name"))
    sealed_name = _text((details or {}).get("serviceName"))
    record_name = next(
        (_text((record or {}).get(k)) for k in ("name", "serviceName", "title") if _text((record or {}).get(k))), None
    )
    if sealed_name:
        service, source = sealed_name, "its address's details, sealed to this connection (metadata_seal)"
    elif plain:
        service, source = plain, "service_name, given to the server in plain text"
    elif record_name:
        service, source = record_name, record_from or "its record, held by this connection"
    else:
        why = details_why or "its record is sealed to the owner and this connection holds no copy of its name"
        service, source = None, f"no name: {why}"
    basic = (record or {}).get("basic-auth")
    username = _text((record or {}).get("username")) or (
        _text(basic.get("username")) if isinstance(basic, dict) else None
    )
    rev = served.get("rev")
    return AccountEntry(
        id=str(served.get("id")),
        service=service,
        service_from=source,
        username=username,
        decoy_id=_text(served.get("decoy_id")),
        decoy_email=_text(served.get("decoy_email")),
        has_password=served.get("has_password") is True,
        fields=fields or FieldsSeen(None, "not read"),
        created_here=served.get("created_by_this_connection") is True,
        rev=rev if isinstance(rev, int) and not isinstance(rev, bool) else None,
        status=_text(served.get("status")),
    )


def _memories_about(memories: pd.DataFrame | None) -> dict[str, int]:
    """How many memories of a load are filed about each account (`account` column: its id)."""
    if memories is None or memories.empty or "account" not in memories.columns:
        return {}
    counts = memories["account"].dropna().value_counts()
    return {str(k): int(v) for k, v in counts.items()}


def accounts_frame(entries: Iterable[AccountEntry], memories: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per account, ACCOUNT_COLUMNS in order; `memories` counts the rows of a load's
    memories frame filed about it (None when no load was made: the count is unknown)."""
    about = _memories_about(memories)
    rows = [
        {
            "id": e.id,
            "service": e.service,
            "username": e.username,
            "decoy_email": e.decoy_email,
            "has_password": e.has_password,
            "fields": None if e.fields.labels is None else len(e.fields.labels),
            "field_labels": None if e.fields.labels is None else list(e.fields.labels),
            "created_by": THIS_CONNECTION if e.created_here else OTHER,
            "memories": None if memories is None else about.get(e.id, 0),
            "service_from": e.service_from,
            "fields_note": e.fields.note,
            "decoy_id": e.decoy_id,
            "rev": e.rev,
            "status": e.status,
        }
        for e in entries
    ]
    data = {col: pd.Series([r[col] for r in rows], dtype=object) for col in ACCOUNT_COLUMNS}
    frame = pd.DataFrame(data, columns=list(ACCOUNT_COLUMNS))
    return frame.astype({c: t for c, t in ACCOUNT_COLUMNS.items() if t != "object"})
