"""The pending-writes journal: writes whose outcome is not known yet, kept until they are settled.

A write is entered before its first send and removed once an answer proves it (or definitely
refuses it), so a write cut short — retries run out, the kernel killed mid-send — can be finished
by sending the SAME sealed rows again (`conn.resend()`, `%decoy resend`, `decoy-lab resend`, or
running the same save again), never new ones with new ids.

An entry holds only what goes over the wire anyway: ciphertext, wraps and ids, never a plaintext
or a key. Its `intent` is an HMAC of what was asked (keyed by the agent's private key), so the
same save run again finds its entry while the file says nothing about the text.

One file per profile, `<profile>.pending.json` next to it, 0600, written atomically under a file
lock shared by every process using the profile. A connection without a profile keeps its journal
in memory (`path` None): it survives retries, not a restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

from .errors import ProfileError

LOCK_TIMEOUT = 30.0  # seconds to wait for another process writing the same journal


class Journal:
    """Pending writes, by entry id. Each entry: `id`, `kind` (save / edit), `sends` (the
    requests, in order: method, path, body), `ids` (the row ids written), `topic_ids` (the topic
    rows among them), `intent`, `target` (the memory an edit changes), `at`, and `why` (the last
    unknown outcome, in words)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else None
        self._memory: dict[str, dict[str, Any]] = {}

    # -- the file -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        """The entries, to read or change; written back when changed (atomically, 0600)."""
        if self.path is None:
            yield self._memory
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT, mode=0o600):
            entries = self._read()
            before = json.dumps(entries, sort_keys=True)
            yield entries
            if json.dumps(entries, sort_keys=True) != before:
                self._write(entries)

    def _read(self) -> dict[str, dict[str, Any]]:
        assert self.path is not None
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"the pending-writes journal {self.path} cannot be read: {exc}") from None
        entries = data.get("pending") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ProfileError(f"the pending-writes journal {self.path} is not a journal (no pending list)")
        return {e["id"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        assert self.path is not None
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"pending": list(entries.values())}, fh, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # -- entries ------------------------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        """Every unsettled entry, oldest first."""
        with self._locked() as entries:
            return sorted((dict(e) for e in entries.values()), key=lambda e: e.get("at") or 0)

    def get(self, entry_id: str) -> dict[str, Any] | None:
        with self._locked() as entries:
            return entries.get(entry_id)

    def find(self, intent: str) -> dict[str, Any] | None:
        """The unsettled entry written for this same `intent` (None when there is none)."""
        return next((e for e in self.entries() if e.get("intent") == intent), None)

    def put(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Enter (or replace) an entry; returns it."""
        with self._locked() as entries:
            entries[entry["id"]] = entry
        return entry

    def note(self, entry_id: str, why: str) -> None:
        """Record the last unknown outcome of an entry, in words."""
        with self._locked() as entries:
            if entry_id in entries:
                entries[entry_id] = {**entries[entry_id], "why": why}

    def settle(self, entry_id: str) -> None:
        """Remove a settled entry (its outcome is known now)."""
        with self._locked() as entries:
            entries.pop(entry_id, None)

    def __len__(self) -> int:
        return len(self.entries())

    def __repr__(self) -> str:
        return f"<Journal {self.path or '(in memory)'}: {len(self)} pending>"


def new_entry(
    kind: str,
    sends: list[tuple[str, str, Any]],
    *,
    ids: list[str],
    topic_ids: list[str] = (),  # type: ignore[assignment]
    intent: str | None = None,
    target: str | None = None,
) -> dict[str, Any]:
    """An entry for `sends` (method, path, body), not yet in any journal."""
    return {
        "id": str(uuid.uuid4()),
        "kind": kind,
        "sends": [{"method": m, "path": p, "body": b} for m, p, b in sends],
        "ids": list(ids),
        "topic_ids": list(topic_ids),
        "intent": intent,
        "target": target,
        "at": time.time(),
        "why": "",
    }
