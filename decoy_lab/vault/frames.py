"""Decoded rows → pandas DataFrames. Pure functions: no I/O, no keys, no network.

`DecodedRow` is what the client makes of one served row after opening it (or failing to):
its kind (memory, topic, link, space_row, unreadable), the server's metadata and the labels
from its plaintext. The frames give every column a fixed dtype so a notebook can filter and
group without surprises: strings are pandas `string`, `rev` is `Int64`, flags are `boolean`,
`created_at` / `updated_at` are `datetime64[ns, UTC]`, and list columns (`categories`, `via`,
`endpoints`, `ids`, `memory_ids`) hold Python lists. Names stay `string` (Python storage), not
`category` nor Arrow: such a column holds the models' own str objects, 8 bytes a row; measured at
20,400 memories, `category` for the six few-valued columns (topic, topic_id, about, entity_name,
author_kind, source) would save ~0.6 MiB (0.02× the served bytes) while `fillna("…")` on it
raises, and Arrow storage would copy every string the models already hold. A memory's `about` is its one value:
"user", "topic:<id>" or "account:<id>".

An account is named from the authorized account list (`AccountNames`), never from a row: "An
account end in a relation carries endpoint `account:<id>` with an empty name; resolve its name
from the authorized account list." Where the list gives no name, an account reads as its id with
the reason (`account:<id> (no name: …)`), so a missing name is never mistaken for one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

ACCOUNT_PREFIX = "account:"
NOT_LISTED = "not in the authorized account list"


class AccountNames(Mapping[str, str]):
    """Account id → name from the authorized account list (`GET /api/agent/accounts`), and why a
    name is missing: `unavailable` says why the list itself could not be read (None: it was);
    `reasons` why a listed account has no name; `absent` why an id is not among the names."""

    def __init__(
        self,
        names: Mapping[str, str] | None = None,
        *,
        unavailable: str | None = None,
        reasons: Mapping[str, str] | None = None,
        absent: str = NOT_LISTED,
    ):
        self._names = dict(names or {})
        self.unavailable = unavailable
        self.reasons = dict(reasons or {})
        self.absent = absent

    def __getitem__(self, account_id: str) -> str:
        return self._names[account_id.removeprefix(ACCOUNT_PREFIX)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        why = f", unavailable={self.unavailable!r}" if self.unavailable else ""
        return f"AccountNames({self._names!r}{why})"

    def name(self, account_id: str) -> str | None:
        """The account's name (given as `<id>` or `account:<id>`), None when the list gives none."""
        return self._names.get(account_id.removeprefix(ACCOUNT_PREFIX))

    def why_unnamed(self, account_id: str) -> str | None:
        """Why the account has no name here (None when it has one)."""
        if self.name(account_id) is not None:
            return None
        return self.unavailable or self.reasons.get(account_id.removeprefix(ACCOUNT_PREFIX), self.absent)

    def label(self, account_id: str) -> str:
        """What to show for an account: its name, else `account:<id> (no name: <why>)`."""
        named = self.name(account_id)
        if named is not None:
            return named
        return f"{ACCOUNT_PREFIX}{account_id.removeprefix(ACCOUNT_PREFIX)} (no name: {self.why_unnamed(account_id)})"


def unnamed_short(account_id: str) -> str:
    """An account with no name, where space is short (a table cell, a map label): its id cut
    short and marked, so it never passes for a name; `AccountNames.label` says why."""
    return f"{ACCOUNT_PREFIX}{account_id.removeprefix(ACCOUNT_PREFIX)[:8]}… (no name)"


def as_account_names(names: Mapping[str, str] | None) -> AccountNames:
    return names if isinstance(names, AccountNames) else AccountNames(names)


MEMORY, TOPIC, LINK, SPACE_ROW, UNREADABLE, OTHER = "memory", "topic", "link", "space_row", "unreadable", "other"
READABLE = "readable"


@dataclass(slots=True)  # 100,000 of them in a large vault: slots, not a 30-entry dict each
class DecodedRow:
    """One served row as the client read it. `plaintext` never reaches a frame."""

    id: str
    kind: str
    status: str = READABLE
    reason: str | None = None
    source: str = "memories"  # "memories" (per-memory store) or "space" (legacy space storage)
    kid: str | None = None
    rev: int | None = None
    via: list[str] = field(default_factory=list)
    mine: bool | None = None
    author_kind: str | None = None
    created_at: str | datetime | None = None  # ISO text or datetime; the frames make both UTC datetimes
    updated_at: str | datetime | None = None
    # a memory
    text: str | None = None
    about: list[str] = field(default_factory=list)
    entity_name: str | None = None
    topic_id: str | None = None
    account: str | None = None
    categories: list[str] = field(default_factory=list)
    metadata: dict | None = None
    # a topic
    name: str | None = None
    type: str | None = None
    # a link
    relation_type: str | None = None
    rel_from: str | None = None
    rel_to: str | None = None
    endpoints: list[str] = field(default_factory=list)
    # a legacy space row
    space_id: str | None = None
    space_kind: str | None = None
    row_type: str | None = None
    plaintext: Any = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """A short human description for tables of mixed rows."""
        if self.kind == MEMORY or (self.kind == SPACE_ROW and self.text):
            return self.text or ""
        if self.kind == TOPIC or (self.kind == SPACE_ROW and self.name):
            return f"{self.name} ({self.type})" if self.type else (self.name or "")
        if self.kind == LINK or (self.kind == SPACE_ROW and self.relation_type):
            return f"{self.rel_from} —{self.relation_type}→ {self.rel_to}"
        return self.reason or ""


# -- typed frame construction -----------------------------------------------------------------
_STR, _INT, _BOOL, _TIME, _OBJ = "string", "Int64", "boolean", "datetime", "object"

COMMON = {
    "kid": _STR,
    "rev": _INT,
    "via": _OBJ,
    "mine": _BOOL,
    "author_kind": _STR,
    "created_at": _TIME,
    "updated_at": _TIME,
    "source": _STR,
}
MEMORY_COLUMNS = {
    "id": _STR,
    "text": _STR,
    "topic": _STR,
    "topic_id": _STR,
    "entity_name": _STR,
    "about": _STR,
    "account": _STR,
    "account_name": _STR,
    "account_label": _STR,
    "categories": _OBJ,
    "metadata": _OBJ,
    **COMMON,
}
TOPIC_COLUMNS = {
    "id": _STR,
    "name": _STR,
    "type": _STR,
    "memories": _INT,
    "memory_ids": _OBJ,
    "ids": _OBJ,
    "row_id": _STR,
    "readable": _BOOL,
    **COMMON,
}
LINK_COLUMNS = {
    "id": _STR,
    "from": _STR,
    "to": _STR,
    "relation_type": _STR,
    "from_id": _STR,
    "to_id": _STR,
    "endpoints": _OBJ,
    **COMMON,
}
ROW_COLUMNS = {"id": _STR, "kind": _STR, "status": _STR, "reason": _STR, "label": _STR, "space_id": _STR, **COMMON}


def typed_frame(records: Sequence[dict], schema: dict[str, str]) -> pd.DataFrame:
    """A DataFrame with exactly `schema`'s columns and dtypes, also when `records` is empty."""
    return _typed({col: [r.get(col) for r in records] for col in schema}, schema)


def _typed(data: dict[str, list], schema: dict[str, str]) -> pd.DataFrame:
    out = {}
    for col, kind in schema.items():
        values = data[col]
        if kind == _TIME:  # a value that is no time (a number, an object) leaves its cell empty
            if not set(map(type, values)) <= _TIME_TYPES:  # (one pass in C for the usual cells)
                values = [v if v is None or isinstance(v, (str, datetime)) else None for v in values]
            out[col] = _utc_ns(
                pd.to_datetime(pd.Series(values, dtype=object), utc=True, errors="coerce", format="ISO8601")
            )
        elif kind == _OBJ:
            out[col] = pd.Series(values, dtype=object)
        else:
            out[col] = pd.Series(values, dtype=object).astype(kind)
    return pd.DataFrame(out, columns=list(schema))


_TIME_TYPES = {str, datetime, type(None)}
_NS_MIN, _NS_MAX = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")


def _utc_ns(times: pd.Series) -> pd.Series:
    """`datetime64[ns, UTC]`, whichever unit pandas parsed to (pandas 3 keeps microseconds): the
    dtype pandas 2 gives and users expect. A time outside that range leaves its cell empty."""
    if str(times.dtype) == "datetime64[ns, UTC]":
        return times
    inside = times.isna() | ((times >= _NS_MIN) & (times <= _NS_MAX))
    return times.where(inside).dt.as_unit("ns")


def _common(r: DecodedRow) -> dict:
    return {
        "kid": r.kid,
        "rev": r.rev,
        "via": list(r.via),
        "mine": r.mine,
        "author_kind": r.author_kind,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "source": r.source,
    }


def oldest_first(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with no time first, then by `created_at` and id (vectorised: no per-row parsing)."""
    if df.empty:
        return df
    order = _oldest_first(df)
    if order is None:
        return df.sort_values(["created_at", "id"], na_position="first", kind="stable").reset_index(drop=True)
    return df.take(order).reset_index(drop=True)


def _oldest_first(df: pd.DataFrame) -> np.ndarray | None:
    """The positions in `oldest_first`'s order, by numpy's stable sort on (time, id): what pandas'
    sort gives (a missing time is the smallest there too, ids compare by code point), in a quarter
    of its time at 100,000 rows. None where numpy could compare otherwise: an id that is no text,
    or one holding a NUL (numpy's fixed-width text drops trailing NULs)."""
    times = df["created_at"]
    if not pd.api.types.is_datetime64_any_dtype(times):
        return None
    ids = df["id"].astype(object).tolist()
    if not set(map(type, ids)) <= {str} or "\0" in "".join(ids):  # (a NUL anywhere: pandas' sort)
        return None
    return np.lexsort((np.array(ids, dtype=str), times.array.asi8))


# -- the frames -------------------------------------------------------------------------------
def memories_frame(
    rows: Iterable[Any], topics: Sequence[Any] = (), account_names: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Every readable memory, oldest first (space observations included, `source` = "space").
    `topic` is the listed topic's name (`topics`, as `memory.build_topics` lists them: the oldest
    copy's name for every same-name copy), so one topic reads the same on every row; the name the
    memory itself carries (its writer's spelling) is kept in `entity_name`. `account_name` is the
    account's name from the authorized account list (`account_names`), <NA> when it gives none;
    `account_label` is what to show: that name, or `account:<id> (no name: <why>)`.

    `rows` are DecodedRows, or a memory's model where the vault keeps that instead (vault/decoded_rows.py:
    its DecodedRow would say the same): both give the same cells. Built column by column (one
    pass over the rows per column, the two kinds told apart only where they differ), with no
    record made per row."""
    names = as_account_names(account_names)
    listed = {i: t.name for t in topics for i in [t.id, *(getattr(t, "ids", None) or [])]}
    mems = [
        r for r in rows if type(r) is not DecodedRow or r.kind == MEMORY or (r.kind == SPACE_ROW and r.text is not None)
    ]
    model = [type(r) is not DecodedRow for r in mems]  # a Memory, as vault/decoded_rows.py keeps it
    tids = [(r.topic["id"] if r.topic else None) if m else r.topic_id for r, m in zip(mems, model)]
    entities = [r.entity_name for r in mems]
    accounts = [r.account for r in mems]
    columns = {
        "id": [r.id for r in mems],
        "text": [r.text for r in mems],
        "topic": [listed.get(t, e) if t else None for t, e in zip(tids, entities)],
        "topic_id": tids,
        "entity_name": entities,
        "about": [r.about if m else r.about[0] if r.about else None for r, m in zip(mems, model)],
        "account": accounts,
        "account_name": [names.name(a) if a else None for a in accounts],
        "account_label": [names.label(a) if a else None for a in accounts],
        "categories": [list(r.categories) for r in mems],
        "metadata": [(r.metadata or None) if m else r.metadata for r, m in zip(mems, model)],
        "kid": [r.kid for r in mems],
        "rev": [r.rev for r in mems],
        "via": [list(r.via) for r in mems],
        "mine": [r.mine for r in mems],
        "author_kind": [r.author_kind for r in mems],
        "created_at": [r.created_at for r in mems],
        "updated_at": [r.updated_at for r in mems],
        "source": ["memories" if m else r.source for r, m in zip(mems, model)],
    }
    return oldest_first(_typed(columns, MEMORY_COLUMNS))


def topics_frame(topics: Sequence[Any], rows: Iterable[DecodedRow] = ()) -> pd.DataFrame:
    """One row per listed topic (as `memory.build_topics` lists them: oldest first, same-name
    copies once under the oldest id). `ids` names every copy, `memory_ids` their memories;
    `readable` says whether the topic's own entity row was opened (else only a memory named it)."""
    by_id = {r.id: r for r in rows if r.kind == TOPIC}
    recs = []
    for t in topics:
        tid = t.id
        row_id = tid.split(":", 1)[1] if tid.startswith("topic:") else tid
        entity = by_id.get(row_id)
        common = (
            _common(entity)
            if entity
            else {
                "kid": None,
                "rev": None,
                "via": [],
                "mine": None,
                "author_kind": None,
                "created_at": getattr(t, "created_at", None),
                "updated_at": None,
                "source": "memories",
            }
        )
        mem_ids = list(getattr(t, "memories", []) or [])
        recs.append(
            {
                "id": tid,
                "name": getattr(t, "name", None),
                "type": getattr(t, "type", None),
                "memories": len(mem_ids),
                "memory_ids": mem_ids,
                "ids": list(getattr(t, "ids", []) or [tid]),
                "row_id": row_id,
                "readable": entity is not None,
                **common,
            }
        )
    return typed_frame(recs, TOPIC_COLUMNS)


def links_frame(rows: Iterable[DecodedRow], account_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every readable relation row: from → to with its relation type and endpoint ids. An account
    end (`account:<id>`, served with an empty name) is named from the authorized account list
    (`account_names`): its name, or `account:<id> (no name: <why>)`."""
    names = as_account_names(account_names)

    def end_name(ends: list[str], i: int, served: str | None) -> str | None:
        end = ends[i] if len(ends) > i else None
        return names.label(end) if isinstance(end, str) and end.startswith(ACCOUNT_PREFIX) else served

    recs = []
    for r in (r for r in rows if r.kind == LINK):
        ends = list(r.endpoints)
        recs.append(
            {
                "id": r.id,
                "from": end_name(ends, 0, r.rel_from),
                "to": end_name(ends, 1, r.rel_to),
                "relation_type": r.relation_type,
                "from_id": ends[0] if ends else None,
                "to_id": ends[1] if len(ends) > 1 else None,
                "endpoints": ends,
                **_common(r),
            }
        )
    return oldest_first(typed_frame(recs, LINK_COLUMNS))


def rows_frame(rows: Iterable[DecodedRow]) -> pd.DataFrame:
    """Every row served, readable or not, with its kind, status and the reason it failed."""
    recs = [
        {
            "id": r.id,
            "kind": r.kind,
            "status": r.status,
            "reason": r.reason,
            "label": r.label,
            "space_id": r.space_id,
            **_common(r),
        }
        for r in rows
    ]
    return typed_frame(recs, ROW_COLUMNS)
