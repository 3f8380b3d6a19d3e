"""What every view of the Map shares: its node ids (You, `topic:<id>`, `account:<id>`), names
and colours, and reading a vault's frames (a Vault, a mapping of frames or a 3-tuple; their rows
as the column spellings they may use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

USER = "user"
YOU = "You"

# One colour per entity type (vocab.ENTITY_TYPES) (colour-blind-friendly tab20 picks); "" (no type) is grey.
TYPE_COLOURS: dict[str, str] = {
    "device": "#1f77b4",
    "document": "#aec7e8",
    "event": "#ff7f0e",
    "goal": "#ffbb78",
    "hobby": "#2ca02c",
    "media": "#98df8a",
    "organization": "#d62728",
    "person": "#ff9896",
    "pet": "#9467bd",
    "place": "#c5b0d5",
    "product": "#8c564b",
    "project": "#e377c2",
    "team": "#f7b6d2",
    "trip": "#17becf",
    "": "#bbbbbb",
}
USER_COLOUR = "#222222"
ACCOUNT_COLOUR = "#6e7781"  # an account is no topic and has no entity type
ACCOUNT = "account:"


def topic_node(topic_id: str) -> str:
    """The graph node for a topic id given as `topic:<id>` or a bare row id."""
    text = str(topic_id)
    return text if text.startswith("topic:") else f"topic:{text}"


def shorten(label: str, width: int = 24) -> str:
    """Cut a long label at a word boundary with an ellipsis, so the drawing stays readable."""
    text = " ".join(str(label).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def account_node(account_id: str) -> str:
    """The graph node for an account given as `account:<id>` or a bare id."""
    return f"{ACCOUNT}{str(account_id).removeprefix(ACCOUNT)}"


# ---------------------------------------------------------------------------------- frames
def frames_of(source: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(memories, topics, links) from a Vault, a mapping of frames or a 3-tuple."""
    if isinstance(source, Mapping):
        parts = [source.get(k) for k in ("memories", "topics", "links")]
    elif isinstance(source, tuple | list):
        parts = list(source) + [None] * (3 - len(source))
    else:
        parts = [getattr(source, k, None) for k in ("memories", "topics", "links")]
    return tuple(p if isinstance(p, pd.DataFrame) else pd.DataFrame() for p in parts[:3])


def row_value(row: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    """The first present, non-missing value among column spellings (frames may vary)."""
    for n in names:
        if n in row:
            v = row[n]
            if _missing(v):
                continue
            return v
    return default


def column_values(frame: pd.DataFrame, name: str) -> list:
    """A column's cells as plain Python values, a missing one (None, NaN, NA) as None, or all
    None when there is no such column: what `row_value` reads from a row, without making row dicts."""
    if name not in frame:
        return [None] * len(frame)
    values = frame[name]
    return [None if gone else v for v, gone in zip(values.astype(object).tolist(), values.isna().tolist())]


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA (typed frames use NA for absent strings and numbers)."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def as_list(value: Any) -> list:
    if isinstance(value, list | tuple | set):  # the usual cell, answered before pandas' NA test
        return list(value)
    if _missing(value):
        return []
    if isinstance(value, str):
        return [value]
    return list(value)
