"""What a connection keeps between sessions: `Saved` holds its profile (name, key, tokens, cursor,
cache key) in a `ProfileStore`, opens its sealed cache and its pending-writes journal, and is the
`TokenStore` its `Api` refreshes through (the tokens another process may have refreshed, a lock
shared by every process using the profile). `pending` / `not_sent` / `drop_journal` read a
journal as `Connection.pending` and `resend` show it; `sweep_locks` removes the lock files of
entries a journal no longer holds (on opening it, and with `drop_journal`)."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.protocol import accounts_pending
from decoy_lab.store import cache
from decoy_lab.store.journal import Journal, binding
from decoy_lab.store.profiles import Profile, ProfileStore, profile_tokens, token_fields
from decoy_lab.transport.api import Api, Tokens
from decoy_lab.wire.crypto import AgentKey

log = logging.getLogger(__name__)


class Saved:
    """One connection's saved profile, or none (`profile` None, or no `store`): then nothing is
    written and every question about what is saved answers None."""

    def __init__(
        self,
        api: Api,
        agent_key: AgentKey,
        *,
        profile: str | None,
        store: ProfileStore | None,
        name: str,
        client_id: str,
        cursor: str | None = None,
        cache_key: str | None = None,
    ):
        self.api, self.agent_key = api, agent_key
        self.profile, self.store = profile, store
        self.name, self.client_id, self.cursor = name, client_id, cursor
        self.cache_key = cache_key  # the vault cache's key, made on first use and saved with the profile

    @property
    def kept(self) -> bool:
        """Whether this connection is saved anywhere."""
        return bool(self.profile) and self.store is not None

    def to_profile(self) -> Profile:
        return Profile(
            name=self.profile or "default",
            base_url=self.api.base_url,
            client_id=self.client_id,
            connection_name=self.name,
            **token_fields(self.api.tokens),
            private_key_pem=self.agent_key.to_pem(),
            cursor=self.cursor,
            cache_key=self.cache_key,
        )

    def save(self) -> None:
        """Write the profile (nothing without one)."""
        if self.profile and self.store is not None:
            self.store.save(self.to_profile())

    def delete(self) -> None:
        if self.profile and self.store is not None:
            self.store.delete(self.profile)

    def local_cache(self) -> cache.VaultCache | None:
        """The profile's sealed vault cache; its key is made on first use and saved with the profile."""
        if not self.profile or self.store is None:
            return None
        if self.cache_key is None:
            self.cache_key = cache.new_cache_key()
            self.save()
        return cache.VaultCache(
            self.store.cache_path(self.profile),
            self.cache_key,
            profile=self.profile,
            base_url=self.api.base_url,
            agent_fingerprint=self.agent_key.fingerprint,
        )

    def clear_cache(self) -> None:
        """A new pairing starts a new cache: the old one's key is gone."""
        if self.profile and self.store is not None:
            cache.clear(self.store.cache_path(self.profile))

    def journal(self) -> Journal:
        """The pending-writes journal, bound to this server, profile and key (in memory without a
        profile). Opening it sweeps the lock files of entries it no longer holds (`sweep_locks`)."""
        path = self.store.journal_path(self.profile) if self.profile and self.store is not None else None
        journal = Journal(path, binding=binding(self.api.base_url, self.profile, self.agent_key.fingerprint))
        sweep_locks(journal)
        return journal

    # -- the TokenStore the Api refreshes through --------------------------------------------------
    def saved_tokens(self) -> Tokens | None:
        """The tokens the saved profile holds now, when it still holds this connection: another
        process using the same profile may have refreshed them."""
        if not self.profile or self.store is None:
            return None
        try:
            p = self.store.load(self.profile)
        except DecoyError:
            return None
        held = self.api.tokens
        if not p.for_server(self.api.base_url) or p.token_id != (held.token_id if held else None) or not p.access_token:
            return None
        return profile_tokens(p)

    def save_tokens(self, tokens: Tokens) -> None:
        self.save()

    def lock(self) -> contextlib.AbstractContextManager[Any]:
        if self.profile and self.store is not None:
            return self.store.lock(self.profile)
        return contextlib.nullcontext()


def sweep_locks(journal: Journal) -> tuple[list[str], list[str]]:
    """Remove the lock files of entries `journal` no longer holds, nobody holding them
    (accounts_pending.sweep_entry_locks); (removed, held) entry ids. A journal that cannot be read
    is left as it is (and its lock files with it): whoever reads it next says why."""
    try:
        return accounts_pending.sweep_entry_locks(journal)
    except (DecoyError, OSError) as exc:
        log.debug("pending-writes journal %s: lock files not swept: %s", journal.path, exc)
        return [], []


def drop_journal(journal: Journal, why: str) -> list[dict]:
    """Remove a profile's pending-writes journal, its lock file and its entries' lock files, saying
    (a warning) what was pending. Each dropped entry's `lock` says what became of its lock file: "removed",
    "held" (a process is sending it now: left to that process, which removes it once done), or
    None (it had none). A lock file held for a send not journaled yet is left the same way."""
    if journal.path is None:
        return []
    dropped = [pending_view(e) for e in journal.drop()]
    removed, held = sweep_locks(journal)
    if not journal.remove_lock():
        log.debug("pending-writes journal %s: its lock is held now, so its lock file stays", journal.path)
    for e in dropped:
        e["lock"] = "removed" if e["entry"] in removed else "held" if e["entry"] in held else None
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"] or 0))
        log.warning(
            "%s: dropped the pending %s of %s (rows %s, for %s, first sent %s): its outcome stays unknown",
            why, e["kind"], e["target"], ", ".join(e["ids"]), e["server"] or "an unnamed server", when,
        )  # fmt: skip
    for entry_id in held:
        log.warning(
            "%s: the lock file of pending write %s is held by a process sending it now, so it was left in place "
            "(that process removes it once it is done; if it died, the next opening of the journal does)",
            why, entry_id,
        )  # fmt: skip
    return dropped


def pending_view(entry: dict, why: str | None = None) -> dict:
    """One journal entry as `pending` lists it (plus the server it is bound to)."""
    bound = entry["bound"] if isinstance(entry.get("bound"), dict) else {}
    return {
        "entry": entry.get("id"),
        "kind": entry.get("kind"),
        "ids": list(entry.get("ids") or []),
        "target": entry.get("target"),
        "at": entry.get("at"),
        "why": why or entry.get("why"),
        "server": bound.get("base_url"),
    }


def pending(journal: Journal) -> list[dict]:
    """`Connection.pending`: every entry, with why one is not this connection's."""
    return [
        {k: v for k, v in pending_view(e, journal.mismatch(e)).items() if k != "server"} for e in journal.everything()
    ]


def not_sent(journal: Journal) -> list[dict]:
    """The journal's entries bound to another server, profile or key (or none): never sent."""
    refused = [
        {"entry": e["id"], "kind": e.get("kind"), "ids": list(e.get("ids") or []), "target": e.get("target"), "outcome": why}
        for e, why in journal.foreign()
    ]  # fmt: skip
    for r in refused:
        log.warning("pending write %s: %s", r["entry"], r["outcome"])
    return refused
