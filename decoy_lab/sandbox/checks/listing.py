"""A list's query: `limit`, `cursor`, `order`, `sort_by`, and the plain filters of the account and
decoy lists ("Supports cursor pagination, sorting, and filters").

The sandbox's choices where 001 names the parameters but not their form: `limit` 1–100 (default
50), `order` asc|desc (default desc), an opaque `cursor` (the last row's sort key), date filters
as RFC 3339 text compared with `created_at`.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable

from starlette.requests import Request

from decoy_lab.sandbox.core import bad_request

DEFAULT_LIMIT, MAX_LIMIT = 50, 100
SortKey = Callable[[sqlite3.Row, str], list]


def bool_param(request: Request, name: str) -> bool | None:
    value = request.query_params.get(name)
    if value is None:
        return None
    if value.lower() not in ("true", "false", "1", "0"):
        raise bad_request("INVALID_REQUEST", f"{name} is true or false", name)
    return value.lower() in ("true", "1")


def int_param(request: Request, name: str, default: int, top: int) -> int:
    value = request.query_params.get(name)
    if value is None:
        return default
    if not value.isdigit() or not 1 <= int(value) <= top:
        raise bad_request("INVALID_REQUEST", f"{name} is an integer from 1 to {top}", name)
    return int(value)


def time_param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    if value is not None and (len(value) < 10 or value[4] != "-"):
        raise bad_request("INVALID_REQUEST", f"{name} is an RFC 3339 date-time", name)
    return value


def column_key(row: sqlite3.Row, sort_by: str) -> list:
    """Sort by a column, then by id (so a cursor is exact when times tie)."""
    return [row[sort_by], row["id"]]


def page(
    rows: list[sqlite3.Row], request: Request, sorts: tuple[str, ...], key: SortKey = column_key
) -> tuple[list[sqlite3.Row], str | None]:
    """`limit`, `cursor`, `order` and `sort_by` (one of `sorts`) over rows; (page, next cursor)."""
    sort_by = request.query_params.get("sort_by", "created_at")
    order = request.query_params.get("order", "desc")
    if sort_by not in sorts or order not in ("asc", "desc"):
        raise bad_request("INVALID_REQUEST", f"sort_by is one of {', '.join(sorts)}; order asc or desc")
    limit = int_param(request, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    rows = sorted(rows, key=lambda a: key(a, sort_by), reverse=order == "desc")
    cursor = request.query_params.get("cursor")
    if cursor:
        try:
            after = json.loads(base64.urlsafe_b64decode(cursor.encode()))
            assert isinstance(after, list) and len(after) == 2
        except Exception:
            raise bad_request("INVALID_CURSOR", "cursor is not one this list gave", "cursor") from None
        keys = [key(a, sort_by) for a in rows]
        rows = [a for a, k in zip(rows, keys) if (k < after if order == "desc" else k > after)]
    out = rows[:limit]
    if len(rows) <= limit:
        return out, None
    last = json.dumps(key(out[-1], sort_by)).encode()
    return out, base64.urlsafe_b64encode(last).decode()


def pagination(cursor: str | None) -> dict[str, bool | str | None]:
    """A list's `pagination` object for the next cursor `page` gave (None: the last page)."""
    return {"has_more": cursor is not None, "next_cursor": cursor}
