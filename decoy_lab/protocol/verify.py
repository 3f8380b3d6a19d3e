"""Verify the result: read a saved or edited memory back and check it reads as intended.

The memory contract's "Verify the result": "After saving, retain the returned memory ID and fetch
that row through Decoy. Decrypt it and confirm its text, categories and associations match the
intended save", and "After a correction, read the same ID and verify the new content". Against the
sandbox (a loopback server) the owner's-eye check is asked too (`GET /_sandbox/app-view?id=`):
Decoy stores rows it cannot decrypt, so a row this connection reads may still be one the owner's
app cannot open. Each finding is logged as a warning and kept on the session (`last_verify`); the
write itself already succeeded, so nothing is raised.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from decoy_lab import memory
from decoy_lab.errors import DecoyError

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class Verified:
    """What reading a write back found: `ok` when it reads as intended (and, against the sandbox,
    the owner's app opens it); `problems` says what does not, in words."""

    id: str
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    owner_view: dict | None = None  # the sandbox's owner's-eye entry, when asked

    def add(self, problem: str) -> None:
        self.ok = False
        self.problems.append(problem)


def _topic_of(expected: Any) -> str | None:
    if expected is None:
        return None
    return expected.get("id") if isinstance(expected, Mapping) else str(expected)


def check(s: Session, memory_id: str, expected: Mapping[str, Any]) -> Verified:
    """Read `memory_id` back and compare what `expected` names (`text`, `categories`, `topic`
    as {"id", …} or None for the user, `account`)."""
    out = Verified(memory_id)
    try:
        mem = memory.read_memory_row(s.served_row(memory_id), s.agent_key, key_cache=s.key_cache)
    except DecoyError as exc:
        out.add(f"reading it back failed: {exc}")
        mem = None
    if mem is not None:
        if "text" in expected and mem.text != expected["text"]:
            out.add(f"its text reads {mem.text!r}, not {expected['text']!r}")
        if "categories" in expected and sorted(mem.categories) != sorted(set(expected["categories"] or ())):
            out.add(f"its categories read {sorted(mem.categories)}, not {sorted(set(expected['categories']))}")
        filed = (mem.topic or {}).get("id")
        if "topic" in expected and filed != _topic_of(expected["topic"]):
            out.add(f"it is filed under {filed or 'the user'}, not the intended topic")
        if expected.get("account") and mem.account != expected["account"]:
            out.add(f"it is about account {mem.account}, not {expected['account']}")
    _ask_owner_view(s, out)
    for problem in out.problems:
        log.warning("memory %s: %s", memory_id, problem)
    s.last_verify = out
    return out


def _ask_owner_view(s: Session, out: Verified) -> None:
    """Against the sandbox only: would the owner's app open this row?"""
    base = getattr(s.api, "base_url", "") or ""
    if urlsplit(base).hostname not in LOOPBACK:
        return
    try:
        entry = s.api.request("GET", "/_sandbox/app-view", params={"id": out.id})
    except DecoyError:
        return  # not a sandbox, or its owner surface is not reachable: nothing to ask
    rows = entry.get("rows") if isinstance(entry, Mapping) else None
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], Mapping):
        return
    out.owner_view = dict(rows[0])
    if out.owner_view.get("readable") is False:
        out.add(f"the owner's app would not open it: {out.owner_view.get('reason')}")
