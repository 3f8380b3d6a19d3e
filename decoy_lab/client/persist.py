"""What a `Connection` keeps between sessions, and how it is wired to it: its profile (tokens,
key, cursor), the tokens another process may have refreshed, its sealed cache, its pending-writes
journal, and unpairing (which ends all of them)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.rules.session import Session
from decoy_lab.store import cache
from decoy_lab.store.journal import Journal, binding
from decoy_lab.store.profiles import Profile, profile_tokens, token_fields
from decoy_lab.transport.api import Tokens

log = logging.getLogger(__name__)

Connection = Any  # client/connection.py imports this module, never the reverse


def attach(conn: Connection, tokens: Tokens | None) -> None:
    """Hand the api the connection's tokens and what it calls when they change or are needed."""
    api, profile, store = conn._api, conn.profile, conn._store
    api.client_id = conn.client_id
    if tokens is not None:
        api.tokens = tokens
    api.on_tokens = conn._tokens_changed
    api.saved_tokens = conn._saved_tokens
    api.persist = lambda tokens: conn.save_profile()
    if profile and store is not None:
        api.shared_lock = lambda: store.lock(profile)


def session(conn: Connection, *, retries: int, backoff: float, sleep: Callable[[float], Any]) -> Session:
    """The session the rules talk through, with this profile's journal (none without a profile)."""
    profile, store = conn.profile, conn._store
    path = store.journal_path(profile) if profile and store is not None else None
    journal = Journal(path, binding=binding(conn._api.base_url, profile, conn.agent_key.fingerprint))
    return Session(
        conn._api, conn.agent_key, retries=retries, backoff=backoff, sleep=sleep, load=conn.load, on_change=conn.save_profile, journal=journal
    )  # fmt: skip


def to_profile(conn: Connection) -> Profile:
    return Profile(
        name=conn.profile or "default",
        base_url=conn.base_url,
        client_id=conn.client_id,
        connection_name=conn.name,
        **token_fields(conn.tokens),
        private_key_pem=conn.agent_key.to_pem(),
        cursor=conn.cursor,
        cache_key=conn._cache_key,
    )


def save_profile(conn: Connection) -> None:
    if conn.profile and conn._store is not None:
        conn._store.save(conn.to_profile())


def local_cache(conn: Connection) -> cache.VaultCache | None:
    """The profile's sealed vault cache; its key is made on first use and saved with the profile."""
    if not conn.profile or conn._store is None:
        return None
    if conn._cache_key is None:
        conn._cache_key = cache.new_cache_key()
        conn.save_profile()
    path, fingerprint = conn._store.cache_path(conn.profile), conn.agent_key.fingerprint
    return cache.VaultCache(
        path, conn._cache_key, profile=conn.profile, base_url=conn.base_url, agent_fingerprint=fingerprint
    )


def tokens_changed(conn: Connection, tokens: Tokens) -> None:
    """A new access_version reads /policies again."""
    held = conn._access.version if conn._access is not None else None
    if tokens.access_version is not None and held is not None and tokens.access_version != held:
        log.info("access_version %s → %s: reading /policies again", held, tokens.access_version)
        conn._access = None
        try:
            conn.access()
        except DecoyError:  # the call that triggered the refresh will report any real problem
            pass


def saved_tokens(conn: Connection) -> Tokens | None:
    """The tokens the connection's saved profile holds now (see `Connection._saved_tokens`)."""
    if not conn.profile or conn._store is None:
        return None
    try:
        p = conn._store.load(conn.profile)
    except DecoyError:
        return None
    if not p.for_server(conn.base_url) or p.token_id != conn.token_id or not p.access_token:
        return None
    return profile_tokens(p)


def unpair(conn: Connection) -> list[dict]:
    """`Connection.unpair`: revoke, then drop the journal and the profile (when saved here)."""
    saved_here = conn._saved_tokens() is not None
    conn.session.retry.run(conn._api.revoke)
    conn._access = None
    if saved_here and conn._store is not None and conn.profile:
        conn.dropped_pending = drop_journal(conn, f"unpairing profile {conn.profile!r}")
        conn._store.delete(conn.profile)
    return conn.dropped_pending


def drop_journal(conn: Connection, why: str) -> list[dict]:
    """Remove this profile's pending-writes journal, saying (a warning) what was pending."""
    journal = conn.session.journal
    if journal is None or journal.path is None:
        return []
    dropped = [pending_view(e) for e in journal.drop()]
    for e in dropped:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"] or 0))
        log.warning(
            "%s: dropped the pending %s of %s (rows %s, for %s, first sent %s): its outcome stays unknown",
            why, e["kind"], e["target"], ", ".join(e["ids"]), e["server"] or "an unnamed server", when,
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


def pending(conn: Connection) -> list[dict]:
    journal = conn.session.journal
    if journal is None:
        return []
    return [
        {k: v for k, v in pending_view(e, journal.mismatch(e)).items() if k != "server"} for e in journal.everything()
    ]


def not_sent(conn: Connection) -> list[dict]:
    """The journal's entries bound to another server, profile or key (or none): never sent."""
    journal = conn.session.journal
    refused = [
        {"entry": e["id"], "kind": e.get("kind"), "ids": list(e.get("ids") or []), "target": e.get("target"), "outcome": why}
        for e, why in (journal.foreign() if journal is not None else [])
    ]  # fmt: skip
    for r in refused:
        log.warning("pending write %s: %s", r["entry"], r["outcome"])
    return refused
