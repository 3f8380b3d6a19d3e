"""The pending-writes journal: writes whose outcome is not known yet, kept until they are settled.

A write is entered before its first send and removed once an answer proves it (or definitely
refuses it), so a write cut short — retries run out, the kernel killed mid-send — can be finished
by sending the SAME sealed rows again (`conn.resend()`, `%decoy resend`, `decoy-lab resend`, or
running the same save again), never new ones with new ids.

An entry holds only what goes over the wire anyway: ciphertext, wraps and ids, never a plaintext
or a key. The account family's writes are entries too (`family` "account": an account, its
address, password, fields, a queued address edit, a bulk import; protocol/accounts_pending.py): each
holds the sealed body sent, its `mode` — `same` (the route is safe to repeat, so the same bytes
are sent again) or `check` (it is not: whether it landed is read first) — and the `proof` that
tells a resent change that meets `REV_CONFLICT` whether it had landed. Its `intent` is an HMAC of what was asked (keyed by the agent's private key), so the
same save run again finds its entry while the file says nothing about the text.

One file per profile, `<profile>.pending.json` next to it, 0600, written atomically under a file
lock shared by every process using the profile. A connection without a profile keeps its journal
in memory (`path` None): it survives retries, not a restart.

Each entry is bound to the connection that wrote it: `bound` holds the server's base URL, the
profile name and the agent key's fingerprint. A journal made with a `binding` hands out (to
resend, or to the same save run again) only the entries bound to it; any other — written for
another server, profile or key (a journal left behind by an unpaired profile, or copied from
another), or by an older decoy-lab that bound nothing — is never sent: `foreign()` lists it with
the reason. Unpairing and pairing a profile anew remove its journal (`drop`), after saying what
was pending, and its lock file (`remove_lock`) unless a process holds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from decoy_lab.errors import ProfileError
from decoy_lab.store.profiles import check_private, make_private_dirs

LOCK_TIMEOUT = 30.0  # seconds to wait for another process writing the same journal
BOUND = ("base_url", "profile", "agent_fingerprint")  # what an entry is bound to


def binding(base_url: str, profile: str | None, agent_fingerprint: str) -> dict[str, str | None]:
    """What a connection's entries are bound to: its server, its profile and its key."""
    return {"base_url": base_url.rstrip("/"), "profile": profile, "agent_fingerprint": agent_fingerprint}


class Journal:
    """Pending writes, by entry id. Each entry: `id`, `kind` (save / edit, or an account write's:
    address, account, account edit, password, field, field edit, field delete, address edit,
    protect, pause, import), `sends` (the requests, in order: method, path, body), `ids` (the row
    ids written), `topic_ids` (the topic rows among them), `intent`, `target` (the memory an edit
    changes; the account or address an account write is for), `at`, `why` (the last unknown
    outcome, in words), and `bound` (see `binding`; stamped by `put`). An account write's entry
    also holds `family` ("account"), `mode` and `proof` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, binding: Mapping[str, str | None] | None = None):
        self.path = Path(path) if path is not None else None
        self.binding = dict(binding) if binding is not None else None
        self._memory: dict[str, dict[str, Any]] = {}

    # -- the file -----------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path | None:
        """The file every process using the journal locks to read or write it (None in memory)."""
        return self.path.with_name(f"{self.path.name}.lock") if self.path is not None else None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        """The entries, to read or change; written back when changed (atomically, 0600)."""
        if self.path is None or self.lock_path is None:
            yield self._memory
            return
        make_private_dirs(self.path.parent)
        with FileLock(str(self.lock_path), timeout=LOCK_TIMEOUT, mode=0o600):
            entries = self._read()
            before = json.dumps(entries, sort_keys=True)
            yield entries
            if json.dumps(entries, sort_keys=True) != before:
                self._write(entries)

    def _read(self) -> dict[str, dict[str, Any]]:
        assert self.path is not None
        if not self.path.is_file():
            return {}
        check_private(self.path, "pending-writes journal")  # another user's entries are never sent
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
    def everything(self) -> list[dict[str, Any]]:
        """Every unsettled entry in the file, this connection's or not, oldest first."""
        with self._locked() as entries:
            return sorted((dict(e) for e in entries.values()), key=lambda e: e.get("at") or 0)

    def entries(self) -> list[dict[str, Any]]:
        """Every unsettled entry this journal may send (bound to its `binding`), oldest first."""
        return [e for e in self.everything() if self.mismatch(e) is None]

    def foreign(self) -> list[tuple[dict[str, Any], str]]:
        """The entries this journal holds but may not send, each with the reason in words."""
        out = []
        for e in self.everything():
            why = self.mismatch(e)
            if why is not None:
                out.append((e, why))
        return out

    def mismatch(self, entry: Mapping[str, Any]) -> str | None:
        """Why `entry` is not this connection's to send (None when it is, or when the journal is
        bound to nothing)."""
        if self.binding is None:
            return None
        where = f" (remove {self.path} to drop it)" if self.path is not None else ""
        bound = entry.get("bound")
        if not isinstance(bound, dict) or not all(isinstance(bound.get(k), (str, type(None))) for k in BOUND):
            return (
                "not sent: the entry names no server, profile or key (it was written by an older decoy-lab), "
                f"so nothing shows it belongs to this connection to {self.binding['base_url']}{where}"
            )
        differ = [k for k in BOUND if bound.get(k) != self.binding[k]]
        if not differ:
            return None
        words = {"base_url": "server", "profile": "profile", "agent_fingerprint": "agent key"}
        said = "; ".join(f"{words[k]} {bound.get(k)!r}, not {self.binding[k]!r}" for k in differ)
        return f"not sent: the entry was written for another connection ({said}){where}"

    def get(self, entry_id: str) -> dict[str, Any] | None:
        with self._locked() as entries:
            entry = entries.get(entry_id)
        return entry if entry is not None and self.mismatch(entry) is None else None

    def drop(self) -> list[dict[str, Any]]:
        """Remove the whole journal (unpairing, or pairing the profile anew); returns every entry it
        held, so the caller can say what was pending."""
        with self._locked() as entries:
            held = sorted((dict(e) for e in entries.values()), key=lambda e: e.get("at") or 0)
            entries.clear()
        return held

    def remove_lock(self) -> bool:
        """Remove the journal's lock file once the journal holds nothing (after `drop`, so an
        unpaired profile leaves no file behind), unless a process holds it now: then it is left.
        True when it is gone. The next use of the journal makes it again."""
        if self.path is None or self.lock_path is None or not self.lock_path.exists():
            return True
        lock = FileLock(str(self.lock_path), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        try:
            if self.path.exists():  # entries were added meanwhile: the lock guards them
                return False
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
            return True
        finally:
            lock.release()

    def find(self, intent: str) -> dict[str, Any] | None:
        """The unsettled entry written for this same `intent` (None when there is none)."""
        return next((e for e in self.entries() if e.get("intent") == intent), None)

    def put(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Enter (or replace) an entry, bound to this journal's connection; returns it. An entry
        bound to another connection is refused (ProfileError), never re-bound."""
        if self.binding is not None:
            if "bound" not in entry:
                entry["bound"] = dict(self.binding)
            why = self.mismatch(entry)
            if why is not None:
                raise ProfileError(f"pending write {entry.get('id')}: {why}")
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
    family: str | None = None,
    mode: str | None = None,
    proof: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An entry for `sends` (method, path, body), not yet in any journal. `family`, `mode` and
    `proof`: an account write's (left out of a memory write's entry)."""
    extra: dict[str, Any] = {}
    if family is not None:
        extra = {"family": family, "mode": mode, "proof": dict(proof or {})}
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
        **extra,
    }
