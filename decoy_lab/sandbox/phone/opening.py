"""Opening a stored row as the owner's app does, naming the step that fails.

`open_row` opens `owner_wrap` with the owner key exactly as the app does (the plaintext must be
the 44-character base64 text of the key), checks the key against `kid`, opens the ciphertext and
decodes the plaintext (`memory.decode_plaintext`: `v` 2, bound to its id, typed fields). Like
the app, it keeps the keys it has unwrapped: an owner_wrap opens to the same key every time, and
one RSA decryption per row per look made every owner action cost a pass over the whole vault.
A sharing pass looks at every row each time: `open_kept` hands back what the last pass opened for
a row whose stored bytes have not changed (an edit changes its ciphertext, so it is opened again).
The keys are kept for a large vault (`KEPT` rows): a bound below the vault's rows emptied itself on
every pass (the oldest dropped just before it was next needed), so each pass unwrapped every row.
`approval` decides which labels the phone shares by: "Only author- or owner-approved labels may
determine new sharing".
"""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey


@dataclass
class Opened:
    """A row the owner's app opened: its key and decoded plaintext."""

    key: bytes
    plain: memory.Plain


@dataclass
class Unopenable:
    """A row the owner's app cannot open, and why (`problem` is a short code, `reason` words)."""

    id: str
    problem: str
    reason: str
    author: str = ""

    def as_dict(self) -> dict:
        return {"id": self.id, "problem": self.problem, "reason": self.reason, "author": self.author}


PROBLEMS = {
    "owner_wrap": "the owner's app cannot open owner_wrap",
    "kid_mismatch": "the key in owner_wrap does not match the row's kid",
    "ciphertext": "the ciphertext does not open with the key in owner_wrap",
    "json": "the plaintext is not UTF-8 JSON",
    "version": "the plaintext's v is not 2",
    "binding": "the plaintext is bound to another row id",
    "fields": "a plaintext field has the wrong type",
}


KEPT = 150_000  # unwrapped keys kept, least recently used dropped first: 100,000 memories and more


class _Kept:
    """A bounded map, least recently used dropped first, keyed by digests (not the wraps' text:
    150,000 of those would hold ~60 MB)."""

    def __init__(self, bound: int = KEPT) -> None:
        self.bound = bound
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ref: tuple) -> Any:
        with self._lock:
            found = self._items.get(ref)
            if found is not None:
                self._items.move_to_end(ref)
            return found

    def put(self, ref: tuple, value: Any) -> None:
        with self._lock:
            self._items[ref] = value
            while len(self._items) > self.bound:
                self._items.popitem(last=False)


def _digest(*parts: str) -> bytes:
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=16).digest()


_keys = _Kept()


def _unwrap(owner_wrap: str, owner_key: AgentKey, trace: Any) -> bytes:
    """The key in owner_wrap; a traced open always does every step (nothing is skipped from view)."""
    if trace is not None:
        return sealing.unwrap_as_owner(owner_wrap, owner_key, trace=trace)
    ref = (_digest(owner_key.public_key_b64), _digest(owner_wrap))
    key = _keys.get(ref)
    if key is None:
        key = sealing.unwrap_as_owner(owner_wrap, owner_key)  # a failure raises and is never kept
        _keys.put(ref, key)
    return key


def open_kept(row: ms.MemoryRow, owner_key: AgentKey, before: dict, after: dict) -> Opened | Unopenable:
    """`open_row` for a pass over every row: what the last pass opened (`before`, by row id) is
    handed back for a row whose kid, owner_wrap and ciphertext are unchanged, under the same owner
    key; every row opened goes into `after`, the next pass's `before` (so what is kept is this
    vault, however large, and nothing of rows deleted since). Callers never change an Opened."""
    ref = (_digest(owner_key.public_key_b64), row.kid, _digest(row.owner_wrap, row.ciphertext))
    found = before.get(row.id)
    opened = found[1] if found is not None and found[0] == ref else open_row(row, owner_key)
    if isinstance(opened, Opened):  # a row that does not open is opened, and reported, afresh
        after[row.id] = (ref, opened)
    return opened


def open_row(row: ms.MemoryRow, owner_key: AgentKey, *, trace: Any = None) -> Opened | Unopenable:
    """Open one stored row as the owner's app does, step by step, naming the step that fails.
    With a `trace` (trace.Trace) every step is recorded for the step-through views."""
    try:
        key = _unwrap(row.owner_wrap, owner_key, trace)
    except (CryptoError, WireFormatError) as exc:
        return Unopenable(row.id, "owner_wrap", f"{PROBLEMS['owner_wrap']}: {exc}")
    if trace is not None:
        with trace.step(
            "kid check: SHA-256(key)[:8] == row kid", inputs={"row kid": row.kid, "key kid": wire.kid(key)}
        ) as st:
            st.output = "match" if wire.kid(key) == row.kid else "MISMATCH"
    if wire.kid(key) != row.kid:
        return Unopenable(
            row.id,
            "kid_mismatch",
            f"{PROBLEMS['kid_mismatch']}: owner_wrap holds key {wire.kid(key)}, the row says kid {row.kid}",
        )
    try:
        obj = sealing.open_json(key, row.ciphertext, row_id=row.id, trace=trace)
    except UnreadableRow as exc:
        return Unopenable(row.id, "json", f"{PROBLEMS['json']}: {exc.reason}")
    except (CryptoError, WireFormatError) as exc:
        return Unopenable(row.id, "ciphertext", f"{PROBLEMS['ciphertext']}: {exc}")
    try:
        plain = memory.decode_plaintext(obj, row.id, trace=trace)
    except UnreadableRow as exc:
        problem = "fields"
        if isinstance(obj, dict) and obj.get("v") != 2:
            problem = "version"
        elif isinstance(obj, dict) and obj.get("row_id") != row.id:
            problem = "binding"
        return Unopenable(row.id, problem, f"{PROBLEMS[problem]}: {exc.reason}")
    return Opened(key, plain)


def label_set(plain: memory.Plain) -> dict:
    """The labels that decide who reads a row, as the phone remembers them."""
    return {"categories": list(plain.categories), "about": list(plain.about), "endpoints": list(plain.endpoints)}


def approval(con: sqlite3.Connection, row: ms.MemoryRow, plain: memory.Plain) -> tuple[memory.Plain, str | None]:
    """The plaintext whose labels decide sharing, and a problem when they are not approved.

    "Only author- or owner-approved labels may determine new sharing": when another connection's
    edit (a Read & write grant corrects text only) changed the labels the phone last accepted, the
    phone keeps sharing by the accepted ones and says so.
    """
    if row.edited_by_author:
        return plain, None
    prev = ms.approved_labels(con, row.id)
    if prev is None or prev[1] == label_set(plain):
        return plain, None
    editor = connection_names(con).get(row.editor_connection or "", "another connection")
    old = prev[1]
    problem = (
        f"{editor}, which is not the author, changed the labels (now {_labels_text(label_set(plain))}, "
        f"approved {_labels_text(old)}): the app shares by the approved labels only"
    )
    return dataclasses.replace(
        plain, categories=old["categories"], about=old["about"], endpoints=old["endpoints"]
    ), problem


def _labels_text(labels: dict) -> str:
    parts = [f"category:{c}" for c in labels["categories"]] + [a for a in labels["about"] if a != "user"]
    parts += [e for e in labels["endpoints"] if e != "user"]
    return ", ".join(parts) or "no labels"


# ── names the app shows ────────────────────────────────────────────────────────────────────


def author_name(con: sqlite3.Connection, row: ms.MemoryRow | ss.SpaceRow) -> str:
    if row.author_kind == "owner":
        return "You (the owner)"
    tok = getattr(row, "author_token", None)
    try:
        r = con.execute("SELECT name FROM connections WHERE token_id = ?", (tok,)).fetchone()
    except Exception:  # pragma: no cover - connections table absent
        r = None
    return r[0] if r and r[0] else f"agent {str(tok)[:8]}"


def connection_names(con: sqlite3.Connection) -> dict[str, str]:
    try:
        return {r[0]: r[1] for r in con.execute("SELECT token_id, name FROM connections")}
    except Exception:  # pragma: no cover
        return {}
