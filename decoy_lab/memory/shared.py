"""One copy of the values many rows hold alike: a vault of 100,000 memories holds a handful of
distinct `via` values, authors, categories and topics (and most have no metadata), and a string or dict object of each per
row is ~60-180 bytes, 100,000 times. The readers (read.py) take their values from here; the
models they make are read, never changed, so sharing them is safe.
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

_S = TypeVar("_S", str, "str | None")
_TOPICS: dict[tuple[str, str], dict[str, str]] = {}  # (id, name) → the one dict memories share
EMPTY: dict[str, Any] = {}  # the metadata of every memory that has none
_LISTS: dict[tuple[str, ...], list[str]] = {}  # values → the one list rows share (`via`, categories)
_MAX = 100_000  # each table bounded: a long-lived kernel reading many vaults starts afresh past it


def few(value: _S) -> _S:
    """One shared copy of a short value few rows differ in (a category, a topic's id and name)."""
    return sys.intern(value) if value is not None and len(value) <= 200 else value


def topic(about: str, name: str) -> dict[str, str]:
    """A memory's `topic`, `{"id": "topic:<id>", "name": …}`: one dict for every memory filed
    under the same topic and name."""
    got = _TOPICS.get((about, name))
    if got is None:
        if len(_TOPICS) >= _MAX:
            _TOPICS.clear()
        got = _TOPICS[(about, name)] = {"id": about, "name": name}
    return got


def strings(values: list[str]) -> list[str]:
    """One list for every row whose `via` (or categories) are these strings, in this order."""
    key = tuple(values)
    got = _LISTS.get(key)
    if got is None:
        if len(_LISTS) >= _MAX:
            _LISTS.clear()
        got = _LISTS[key] = [few(v) for v in values]
    return got
