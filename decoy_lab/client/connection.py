"""`Connection`: pair with Decoy, keep the connection, read and write memories by the spec's rules.

    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="My notebook")
        vault = conn.load()            # one GET, every row read; vault.memories is a DataFrame
        mid = conn.save("Prefers aisle seats.", topic="Lisbon trip", categories=["travel"])
        conn.edit(mid, text="Prefers window seats.")
        conn.delete([mid])

The rules it follows, so a user can trust what it shows and copy what it does:
- an unknown outcome (network error, timeout, 5xx) resends the SAME sealed rows, never new ones,
  up to `conn.retries` times with backoff; a definite refusal is never retried; `REV_CONFLICT`
  re-reads, re-applies and retries; a 429 waits `retry_after_seconds`; `HOLDERS_MISSING` wraps the
  new key to the listed holders and sends again;
- topic rows written for a change that is then definitely refused are deleted (best effort), and
  kept after an unknown outcome, which may have committed;
- `/policies` is read at the start of a session and again whenever `access_version` changes.

`Connection` is a facade. Pairing lives in pairing.py, the HTTP boundary in http.py, the narrow
session the rules talk through (api, retry policy, key cache, get/send, served rows) in
session.py, the write rules in writes.py, legacy space rows in legacy.py, what a load holds in
vault.py, access and grant requests in access.py, where a connection is saved in profiles.py.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx

from decoy_lab import memory
from decoy_lab.errors import (
    DecoyError,
    GrantAlreadyRequested,
    MemoryModelError,
    PairingError,
    ProfileError,
    UnreadableRow,
)
from decoy_lab.gcpause import gc_paused
from decoy_lab.recipes.trace import Trace
from decoy_lab.rules import accounts, legacy, syncfeed, writes
from decoy_lab.rules.access import ASKED, Access, GrantRequest, read_policies
from decoy_lab.rules.pairing import PairingHandle, authorization_details, selection_row
from decoy_lab.rules.session import Session
from decoy_lab.rules.syncfeed import SyncResult
from decoy_lab.rules.writes import MEMORIES, DeleteResult
from decoy_lab.store import cache, snapshot
from decoy_lab.store.journal import Journal, binding
from decoy_lab.store.profiles import Profile, ProfileStore, profile_tokens, token_fields
from decoy_lab.transport import routes
from decoy_lab.transport.api import Api, Tokens, expect_object
from decoy_lab.vault.frames import AccountNames
from decoy_lab.vault.read import WAITING_MEMBERS, Vault, read_vault
from decoy_lab.wire.crypto import AgentKey

log = logging.getLogger("decoy_lab.client.connection")

DEFAULT_CLIENT_ID = "decoy-lab"


def new_client_id() -> str:
    """A client id for a new connection. The server continues a live connection paired again
    with the same client id (a reconnect), so each new pairing gets its own, and a saved profile
    keeps it for the next reconnect."""
    return f"{DEFAULT_CLIENT_ID}-{uuid.uuid4().hex[:12]}"


SANDBOX_OPTIONS = ("owner_key", "approve", "seed", "db", "faults", "clock")


class Connection:
    """One paired agent connection to a Decoy server (or the sandbox).

    Made by `pair` / `start_pairing` / `sandbox` / `resume`, rarely by hand. `retries` bounds how
    often a write with an unknown outcome is sent again (waiting `backoff` s, doubling; `sleep`
    is injectable), `workers` how many threads read rows (default: one per core), and `http` /
    `transport` let tests run against an in-process app.
    """

    def __init__(
        self,
        base_url: str,
        *,
        agent_key: AgentKey,
        tokens: Tokens | None = None,
        client_id: str = DEFAULT_CLIENT_ID,
        name: str = "",
        profile: str | None = None,
        store: ProfileStore | None = None,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retries: int = 5,
        backoff: float = 0.25,
        sleep: Callable[[float], Any] = time.sleep,
        workers: int | None = None,
        cursor: str | None = None,
        api: Api | None = None,
    ):
        if not isinstance(agent_key, AgentKey):
            raise TypeError("agent_key must be a decoy_lab.wire.crypto.AgentKey")
        self._agent_key = agent_key
        self.name = name
        self.client_id = client_id
        self.profile = profile
        self._store = store
        self.workers = workers
        self.cursor = cursor
        self._cache_key: str | None = None  # the profile's vault cache key (profile store), made on first use
        self._api = api or Api(base_url, http=http, transport=transport, timeout=timeout, client_id=client_id)
        self._api.client_id = client_id
        if tokens is not None:
            self._api.tokens = tokens
        self._api.on_tokens = self._tokens_changed
        self._api.saved_tokens = self._saved_tokens
        self._api.persist = lambda tokens: self.save_profile()
        if profile and store is not None:
            self._api.shared_lock = lambda: store.lock(profile)
        self.session = Session(
            self._api,
            agent_key,
            retries=retries,
            backoff=backoff,
            sleep=sleep,
            load=self.load,
            on_change=self.save_profile,
            journal=Journal(
                store.journal_path(profile) if profile and store is not None else None,
                binding=binding(self._api.base_url, profile, agent_key.fingerprint),
            ),
        )
        self._access: Access | None = None
        # the pending writes an unpair or a new pairing of this profile removed (see `unpair`)
        self.dropped_pending: list[dict] = []
        self.sandbox_handle: Any = None
        self._owns_sandbox = False

    # -- the retry policy, kept in the session ---------------------------------------------------
    @property
    def retries(self) -> int:
        """How often a call with an unknown outcome is sent again."""
        return self.session.retries

    @retries.setter
    def retries(self, value: int) -> None:
        self.session.retries = value

    @property
    def backoff(self) -> float:
        """The first wait before a resend, in seconds (doubling each time)."""
        return self.session.backoff

    @backoff.setter
    def backoff(self, value: float) -> None:
        self.session.backoff = value

    @property
    def resends(self) -> int:
        """How many times a write was sent again after an unknown outcome."""
        return self.session.resends

    # -- identity -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return self._api.base_url

    @property
    def agent_key(self) -> AgentKey:
        return self._agent_key

    @property
    def tokens(self) -> Tokens | None:
        return self._api.tokens

    @property
    def token_id(self) -> str | None:
        return self.tokens.token_id if self.tokens else None

    @property
    def access_version(self) -> int | None:
        return self.tokens.access_version if self.tokens else None

    @property
    def vault(self) -> Vault | None:
        """The last load (None before the first)."""
        return self.session.vault

    def __repr__(self) -> str:
        return (
            f"<Connection {self.name or self.client_id!r} to {self.base_url or '(in-process)'} "
            f"token_id={self.token_id} key={self._agent_key.fingerprint} "
            f"access_version={self.access_version} profile={self.profile!r}>"
        )

    __str__ = __repr__

    # -- pairing --------------------------------------------------------------------------------
    @classmethod
    def start_pairing(
        cls,
        base_url: str,
        *,
        name: str,
        permissions: Iterable[str | dict] | None = None,
        client_id: str | None = None,
        profile: str | None = "default",
        on_link: Callable[[str, str], Any] | None = None,
        on_status: Callable[[PairingHandle], Any] | None = None,
        timeout: float = 600,
        retries: int = 5,
        agent_key: AgentKey | None = None,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        store: ProfileStore | None = None,
        use_par: bool = True,
        poll_interval: float | None = None,
        wait: Callable[[float], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        force: bool = False,
        **options: Any,
    ) -> PairingHandle:
        """Start pairing in a background thread and return its handle at once (for widgets).

        Asks for `permissions` (names or rows; default memory.read + memory.save), sends this
        agent's public key, polls as RFC 8628 says, and finishes only once `/policies` shows the
        grant. `handle.result()` is the Connection. Pairing again under a saved profile for the
        same server reuses its key and client id: a reconnect with the same key keeps its memories
        readable (a new key would leave them `preparing` until the owner's phone shares again).
        A saved profile of that name for another server or client is not replaced unless `force`:
        the connection it holds stays usable (and revocable) until then."""
        _check_base_url(base_url)
        rows = authorization_details(permissions)
        if store is None and profile:
            store = ProfileStore()
        if not force:
            cls._refuse_to_replace(store, profile, base_url, client_id)
        saved = cls._saved_identity(store, profile, base_url)
        if agent_key is None and saved is not None:  # a reconnect keeps its key, so its memories stay readable
            agent_key, client_id = saved[0], client_id or saved[1]
        key = agent_key or AgentKey.generate()
        client_id = client_id or new_client_id()
        api = Api(base_url, http=http, transport=transport, client_id=client_id)

        def finish(tokens: Tokens) -> Connection:
            conn = cls(
                base_url,
                agent_key=key,
                tokens=tokens,
                client_id=client_id,
                name=name,
                profile=profile,
                store=store,
                retries=retries,
                api=api,
                **options,
            )
            conn._await_grant(handle)
            if store is not None and profile:  # a new pairing starts a new cache: the old one's key is gone
                cache.clear(store.cache_path(profile))
                # and a new journal: what the profile's earlier connection left pending is not this one's to send
                conn.dropped_pending = conn._drop_journal(f"pairing profile {profile!r} anew")
            conn.save_profile()
            return conn

        handle = PairingHandle(
            api,
            name=name,
            client_id=client_id,
            rows=rows,
            agent_public_key=key.public_key_b64,
            finish=finish,
            on_link=on_link,
            on_status=on_status,
            use_par=use_par,
            poll_interval=poll_interval,
            wait=wait,
            clock=clock,
            timeout=timeout,
        )
        return handle.start()

    @staticmethod
    def _refuse_to_replace(
        store: ProfileStore | None, profile: str | None, base_url: str, client_id: str | None
    ) -> None:
        """A ProfileError when profile `profile` holds a connection to another server or client."""
        if store is None or not profile or not store.exists(profile):
            return
        p = store.load(profile)  # a profile that cannot be read is a ProfileError too: nothing is replaced
        other = p.base_url.rstrip("/") != base_url.rstrip("/") or bool(client_id and client_id != p.client_id)
        if other and p.access_token:
            raise ProfileError(
                f"profile {profile!r} holds the connection {p.connection_name or p.client_id!r} to {p.base_url}: "
                f"pairing {base_url} under the same name would replace it. Choose another profile name, or "
                "pass force=True (--force) to replace it; the old connection stays usable until then "
                f"(decoy-lab unpair --profile {profile} ends it)"
            )

    @staticmethod
    def _saved_identity(store: ProfileStore | None, profile: str | None, base_url: str) -> tuple[AgentKey, str] | None:
        """The key and client id a saved profile for this server holds (None when there is none)."""
        if store is None or not profile or not store.exists(profile):
            return None
        try:
            p = store.load(profile)
        except DecoyError:
            return None
        if p.base_url.rstrip("/") != base_url.rstrip("/") or not p.private_key_pem:
            return None
        return AgentKey.from_pem(p.private_key_pem), p.client_id

    @classmethod
    def pair(
        cls,
        base_url: str,
        *,
        name: str,
        permissions: Iterable[str | dict] | None = None,
        client_id: str | None = None,
        profile: str | None = "default",
        on_link: Callable[[str, str], Any] | None = None,
        timeout: float = 600,
        retries: int = 5,
        force: bool = False,
        **options: Any,
    ) -> Connection:
        """Pair and wait: hands the link and code to `on_link` (printed when none is given)."""
        if on_link is None:

            def on_link(link: str, code: str) -> None:
                print(f"Open {link} and approve in the Decoy app (code {code}).")

        handle = cls.start_pairing(
            base_url,
            name=name,
            permissions=permissions,
            client_id=client_id,
            profile=profile,
            on_link=on_link,
            timeout=timeout,
            retries=retries,
            force=force,
            **options,
        )
        try:
            return handle.result(timeout + 120)
        except KeyboardInterrupt:
            handle.cancel()
            raise

    def _await_grant(self, handle: PairingHandle | None = None, attempts: int = 10) -> Access:
        """Return once `/policies` shows a grant: an approved screen is not a working connection."""
        for i in range(attempts):
            acc = self.access()
            if acc.policies:
                return acc
            if i + 1 < attempts:
                if handle is not None:
                    handle._pause(0.2)
                else:
                    self.session.sleep(0.2)
        raise PairingError("the owner approved, but /policies shows no grant for this token", code="no_grant")

    @classmethod
    def sandbox(cls, **opts: Any) -> Connection:
        """Start the embedded sandbox and pair with it. Sandbox options (`owner_key`, `approve`,
        `seed`, `db`, `faults`, `clock`) go to `Sandbox.start`, the rest to `pair`. With
        `approve="manual"` the link is printed: approve it on the sandbox's owner page. The
        connection is not saved to a profile unless `profile=` is given; `close()` stops the
        sandbox it started (`conn.sandbox_handle`)."""
        from decoy_lab.sandbox import Sandbox

        sb = Sandbox.start(**{k: opts.pop(k) for k in SANDBOX_OPTIONS if k in opts})
        opts.setdefault("name", "decoy_lab notebook")
        opts.setdefault("profile", None)
        if sb.state.approve == "auto":
            opts.setdefault("on_link", lambda link, code: None)  # approved at once: nothing to show
        try:
            conn = cls.pair(sb.url, **opts)
        except BaseException:
            sb.stop()
            raise
        conn.sandbox_handle = sb
        conn._owns_sandbox = True
        return conn

    # -- profiles ---------------------------------------------------------------------------------
    @classmethod
    def resume(
        cls,
        profile: str = "default",
        *,
        store: ProfileStore | None = None,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        check: bool = True,
        **options: Any,
    ) -> Connection:
        """Restore a saved connection (same key, same token) and re-read what it holds now."""
        store = store or ProfileStore()
        p = store.load(profile)
        if not p.private_key_pem or not p.access_token:
            raise DecoyError(f"profile {profile!r} holds no key or token: pair again with Connection.pair(...)")
        tokens = profile_tokens(p)
        conn = cls(
            p.base_url,
            agent_key=AgentKey.from_pem(p.private_key_pem),
            tokens=tokens,
            client_id=p.client_id or DEFAULT_CLIENT_ID,
            name=p.connection_name,
            profile=profile,
            store=store,
            http=http,
            transport=transport,
            cursor=p.cursor,
            **options,
        )
        conn._cache_key = p.cache_key
        if check:
            conn.access()
        return conn

    def to_profile(self) -> Profile:
        return Profile(
            name=self.profile or "default",
            base_url=self.base_url,
            client_id=self.client_id,
            connection_name=self.name,
            **token_fields(self.tokens),
            private_key_pem=self._agent_key.to_pem(),
            cursor=self.cursor,
            cache_key=self._cache_key,
        )

    def save_profile(self) -> None:
        """Write this connection to its profile (no-op when it has none)."""
        if self.profile and self._store is not None:
            self._store.save(self.to_profile())

    def local_cache(self) -> cache.VaultCache | None:
        """The sealed vault cache of this connection's profile (cache.py); None without a profile.
        Its key is made on first use and kept in the profile store, beside the private key."""
        if not self.profile or self._store is None:
            return None
        if self._cache_key is None:
            self._cache_key = cache.new_cache_key()
            self.save_profile()
        return cache.VaultCache(
            self._store.cache_path(self.profile),
            self._cache_key,
            profile=self.profile,
            base_url=self.base_url,
            agent_fingerprint=self._agent_key.fingerprint,
        )

    def _tokens_changed(self, tokens: Tokens) -> None:
        held = self._access.version if self._access is not None else None
        if tokens.access_version is not None and held is not None and tokens.access_version != held:
            log.info("access_version %s → %s: reading /policies again", held, tokens.access_version)
            self._access = None
            try:
                self.access()
            except DecoyError:  # the call that triggered the refresh will report any real problem
                pass

    def _saved_tokens(self) -> Tokens | None:
        """The tokens this connection's saved profile holds now: another process using the same
        profile may have refreshed them (None without a profile, or when it holds another connection)."""
        if not self.profile or self._store is None:
            return None
        try:
            p = self._store.load(self.profile)
        except DecoyError:
            return None
        if p.base_url.rstrip("/") != self.base_url.rstrip("/") or p.token_id != self.token_id or not p.access_token:
            return None
        return profile_tokens(p)

    def unpair(self) -> list[dict]:
        """End this connection at the server (RFC 7009 revocation: its tokens stop working, and
        pairing again makes a new connection that inherits nothing), then delete its saved profile
        and its pending-writes journal. Returns the pending writes that were dropped with it (as
        `pending` lists them; each is also logged as a warning): their outcome stays unknown.
        When the server cannot be reached the profile is kept, so the revocation can be tried again."""
        saved_here = self._saved_tokens() is not None
        s = self.session
        s.retry.run(self._api.revoke)
        self._access = None
        if saved_here and self._store is not None and self.profile:
            self.dropped_pending = self._drop_journal(f"unpairing profile {self.profile!r}")
            self._store.delete(self.profile)
        return self.dropped_pending

    def _drop_journal(self, why: str) -> list[dict]:
        """Remove this profile's pending-writes journal, saying (a warning) what was pending."""
        journal = self.session.journal
        if journal is None or journal.path is None:
            return []
        dropped = [_pending_view(e) for e in journal.drop()]
        for e in dropped:
            log.warning(
                "%s: dropped the pending %s of %s (rows %s, for %s, first sent %s): its outcome stays unknown",
                why,
                e["kind"],
                e["target"],
                ", ".join(e["ids"]),
                e["server"] or "an unnamed server",
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"] or 0)),
            )
        return dropped

    # -- access ---------------------------------------------------------------------------------
    def access(self, refresh: bool = True) -> Access:
        """What this connection holds now (`GET /api/agent/policies`): summary first, then names."""
        if self._access is not None and not refresh:
            return self._access
        acc = Access(read_policies(self.session.get(routes.POLICIES)), topic_names=self._topic_names())
        self._access = acc
        t = self.tokens
        if t is not None and acc.version is not None and acc.version != t.access_version:
            t.access_version = acc.version
            self.save_profile()
        return acc

    def _topic_names(self) -> dict[str, str]:
        """`topic:<id>` -> name for every topic read so far (copies included); no extra request."""
        s = self.session
        topics = [*(s.vault.topic_list if s.vault is not None else []), *s.made_topics]
        names: dict[str, str] = {}
        for t in topics:
            for tid in [t.id, *getattr(t, "ids", [])]:
                tid = str(tid)
                names.setdefault(tid if tid.startswith("topic:") else f"topic:{tid}", t.name)
        return names

    def send_grant_request(self, body: Mapping) -> GrantRequest:
        """POST one ask to grant-request unchanged (e.g. a refusal's `permission_request`)."""
        body = dict(body)

        def send() -> dict:
            return expect_object(
                self._api.request("POST", routes.GRANT_REQUEST, json=body),
                "POST /api/agent/grant-request",
                **ASKED,
            )

        try:  # REVIEW_BUSY is sent again (bounded, with backoff) like an unknown outcome
            s = self.session
            ans = s.retry.run(send)
        except GrantAlreadyRequested as exc:  # also what a resend after a lost answer gets
            return GrantRequest(
                self.session,
                exc.request_id,
                "pending",
                bodies=[body],
                raw=exc.body,
                message="this exact ask is already open; waiting on it",
                on_done=self._reread_access,
            )
        return GrantRequest(
            self.session,
            ans.get("request_id"),
            ans.get("status", "pending"),
            permissions=list(ans.get("permissions") or body.get("permissions") or []),
            bodies=[body],
            renewal=bool(ans.get("renewal")),
            combined=bool(ans.get("combined")),
            ends_at=ans.get("ends_at"),
            message=ans.get("message"),
            raw=ans,
            on_done=self._reread_access,
        )

    def _reread_access(self) -> None:
        self._access = None
        self.access()

    def request_access(
        self,
        permissions: Sequence[str] | str,
        *,
        datatypes: Sequence[str] | None = None,
        about: Sequence[str] | str | None = None,
        account_id: str | None = None,
        reason: str,
    ) -> GrantRequest:
        """Ask the owner for more on this same connection (never re-pair to widen access).

        `about` takes topic ids or names of topics this connection can see. Names asked alone
        (`memory.save`, …) become asks of their own, joining the one open request."""
        if about is not None:
            about = [about] if isinstance(about, str) else list(about)
            about = [self._topic_id(a) for a in about]
        bodies = selection_row(permissions, datatypes=datatypes, about=about, account_id=account_id)
        result: GrantRequest | None = None
        for body in bodies:
            body["reason"] = reason
            got = self.send_grant_request(body)
            if result is None or got.status == "pending":
                if result is not None:
                    got.permissions = list(dict.fromkeys([*result.permissions, *got.permissions]))
                    got.bodies = [*result.bodies, *got.bodies]
                result = got
        assert result is not None
        return result

    def _topic_id(self, value: str) -> str:
        if value.startswith("topic:"):
            return value
        try:
            uuid.UUID(value)
            return f"topic:{value}"
        except ValueError:
            pass
        found = self.session.find_topic(value)
        if found is None:
            raise MemoryModelError(f"no topic named {value!r} is visible to this connection; pass its topic:<id>")
        return found.id

    # -- reading ----------------------------------------------------------------------------------
    def keys(self) -> memory.RecipientKeys:
        """Who a new key is wrapped to, from `GET /api/agent/context/memory-grantees`."""
        return self.session.keys()

    def load(self, *, progress: Callable[[int, int], None] | None = None) -> Vault:
        """One GET of every row this connection may read, every row read here (in parallel, as the
        answer arrives); plus legacy space rows. Unwrapped keys stay in memory by kid, and rows
        unchanged since the last load are not opened again, so a reload costs no RSA work. With a
        saved profile the keys and what the rows read as are also kept in its sealed local cache
        (cache.py): a new process follows the sync cursor and opens only what changed.
        `progress(1, total)` is called as each row is read (from worker threads)."""

        s = self.session

        def read(opening: cache.Opening | None = None) -> Vault:  # rows opened while the rest downloads
            with self._api.stream_array(MEMORIES, "memories", fingerprints=local is not None) as answer:
                snapshot = opening.snapshot() if opening is not None else None  # the cache, once rows come
                if snapshot is not None:
                    answer.parser.known = snapshot.by_fingerprint
                vault = read_vault(
                    answer,
                    self._agent_key,
                    rest=lambda: answer.rest,
                    key_cache=s.key_cache,
                    workers=self.workers,
                    previous=s.vault,
                    progress=progress,
                    cached=snapshot.reuse if snapshot is not None else None,
                )
            expect_object(vault.answer, f"GET {MEMORIES}", **WAITING_MEMBERS)  # counted and shown next
            vault.fingerprints = answer.fingerprints
            return vault

        def read_retried(opening: cache.Opening | None = None) -> Vault:
            return s.retry.run(lambda: read(opening))

        local = self.local_cache()
        with gc_paused():  # thousands of long-lived, cycle-free objects: collector scans only cost
            if local is None:
                vault = read_retried()
                vault.space_rows = legacy.load_spaces(s)
            else:  # cached rows + sync: a reopen opens only what changed (cache.py)
                vault = local.load(
                    first=s.vault is None or cache.rebuilt(s.vault),
                    changes_since=lambda cursor: syncfeed.changes_since(s.get, cursor),
                    anchor=lambda: syncfeed.anchor(s.get),
                    read=read_retried,
                    key_cache=s.key_cache,
                    space_rows=lambda: legacy.load_spaces(s),
                    # only what /policies said in this process counts: a saved version may be stale
                    access_version=self._access.version if self._access is not None else None,
                )
        vault.skipped_spaces = s.skipped_spaces
        if vault.accounts_named():  # names only when a memory or a link refers to an account
            vault.account_names = self.account_names()
        s.vault = vault
        s.forget_listed_topics()  # topics made since the last load are listed by the server now
        return vault

    def account_names(self) -> AccountNames:
        """Account id → name from the authorized account list (`GET /api/agent/accounts`, every
        page), which names `account:<id>` labels and link ends ("resolve its name from the
        authorized account list"). When the list cannot be read (not granted: `403 SCOPE_MISSING`;
        or any other failure) it is empty and `unavailable` says why: nothing is raised, a load goes on."""
        return accounts.account_names(self.session)

    # -- writing (the rules live in writes.py) ----------------------------------------------------
    def save(
        self,
        text: str,
        *,
        topic: Any = None,
        topic_type: str = "",
        link: Any = None,
        categories: Iterable[str] = (),
        account: str | None = None,
        metadata: Mapping | None = None,
    ) -> str:
        """Save one memory; returns its id. `topic` (a name, `topic:<id>` or {'id', 'name'}) is
        reused by normalized name, or created — with its relation (`link`: a relation type, or
        {'relation_type', 'topic': parent}) and this first memory — in one POST."""
        return writes.save(
            self.session,
            text,
            topic=topic,
            topic_type=topic_type,
            link=link,
            categories=categories,
            account=account,
            metadata=metadata,
        )

    def edit(
        self,
        memory_id: str,
        *,
        text: Any = writes.UNSET,
        topic: Any = writes.UNSET,
        categories: Any = writes.UNSET,
        topic_type: str = "",
        link: Any = None,
    ) -> dict:
        """Edit a memory in place with `expected_rev`; removing a label rotates its key.
        `topic=None` returns it to You; a new topic name creates the topic first (and removes
        it again if the edit is definitely refused). Returns the server's answer (id, rev, …)."""
        changes = {
            k: v for k, v in (("text", text), ("topic", topic), ("categories", categories)) if v is not writes.UNSET
        }
        return writes.edit(self.session, memory_id, changes, topic_type=topic_type, link=link)

    def delete(self, ids: str | Iterable[str]) -> DeleteResult:
        """Delete memories, topic rows or legacy space rows (mixed in one call); returns which ids
        were deleted and which refused, and why (writes.py, legacy.py)."""
        return writes.delete(self.session, ids)

    @property
    def pending(self) -> list[dict]:
        """The writes whose outcome is not known yet (the pending-writes journal), oldest first:
        each with its `kind` (save / edit), the row `ids`, the memory it is for (`target`), when
        it was first sent (`at`) and the last unknown outcome (`why`). Empty once all is settled.
        An entry of the journal that is not this connection's (another server, profile or key, or
        written by an older decoy-lab that bound it to nothing) is listed too, its `why` saying so."""
        journal = self.session.journal
        if journal is None:
            return []
        return [
            {k: v for k, v in _pending_view(e, journal.mismatch(e)).items() if k != "server"}
            for e in journal.everything()
        ]

    def resend(self) -> list[dict]:
        """Send every pending write again, with the SAME sealed rows and bodies (never new ones),
        until each one's outcome is known. Returns one result per entry: `outcome` is "committed",
        or why it was refused (settled: the journal no longer holds it). An entry bound to another
        server, profile or agent key — or to none (an older decoy-lab's) — is never sent: its
        `outcome` is "not sent: …" with the reason, and it stays in the journal. A write that
        still gets no answer that proves it raises OutcomeUnknown and stays pending."""
        journal = self.session.journal
        refused = [
            {
                "entry": e["id"],
                "kind": e.get("kind"),
                "ids": list(e.get("ids") or []),
                "target": e.get("target"),
                "outcome": why,
            }
            for e, why in (journal.foreign() if journal is not None else [])
        ]
        for r in refused:
            log.warning("pending write %s: %s", r["entry"], r["outcome"])
        return refused + writes.resend(self.session)

    def share(self, memory_id: str) -> int:
        """Wrap a memory's key to every connection whose grant reaches it (`memory-wraps`);
        returns how many wraps the server added."""
        return writes.share(self.session, memory_id)

    # -- sync -------------------------------------------------------------------------------------
    def _anchor(self) -> str | None:
        self._keep_cursor(syncfeed.head(self.session.get))
        return self.cursor

    def sync(self) -> SyncResult:
        """Follow the change cursor and reload only when something this connection sees changed
        (or keys were still on their way at the last load); a reload opens only the rows that
        changed. Without a cursor: load everything and anchor. A pruned cursor (410): reload
        everything and anchor again."""
        return syncfeed.sync(self.session, self.cursor, load=self.load, anchor=self._anchor, keep=self._keep_cursor)

    def _keep_cursor(self, cursor: str | None) -> None:
        self.cursor = cursor
        self.save_profile()

    # -- step-through -----------------------------------------------------------------------------
    def unseal(self, row_id: str, *, trace: Trace | None = None) -> Trace:
        """Re-run the read of one served row step by step (base64 decode, parse envelope,
        RSA-OAEP unwrap, kid check, AES-GCM open, bind check) and return the Trace."""
        trace = trace if trace is not None else Trace(f"unseal {row_id}")
        if row_id.startswith("topic:"):  # a topic's id as listed: `topic:<entity row id>`
            row_id = row_id.removeprefix("topic:")
        last = self.session.vault
        vault = last if last is not None and last.row(row_id) else self.load()
        served = vault.served_row(row_id)
        if served is not None and snapshot.DIGEST in served:  # rebuilt from the local cache: read it as served now
            served = self.session.served_row(row_id)
        if served is None:
            srow = next((r for r in vault.space_rows if r.id == row_id), None)
            if srow is not None:
                return legacy.unseal(self.session, srow, trace)
            waiting = vault.row(row_id)
            reason = (
                f"not served yet: {waiting.reason}"
                if waiting is not None
                else "this connection is not served a row with this id (it may be on its way, deleted, "
                "or outside this connection's grant)"
            )
            trace.add("find the served row", ok=False, inputs={"id": row_id}, reason=reason)
            return trace
        trace.add(
            "find the served row",
            inputs={"id": row_id, "kid": served.get("kid"), "rev": served.get("rev"), "via": served.get("via")},
            output="served",
        )
        try:
            memory.read_row(served, self._agent_key, trace=trace)
        except (UnreadableRow, DecoyError) as exc:
            if trace.failed is None:
                trace.add("read row", ok=False, reason=getattr(exc, "reason", None) or str(exc))
        return trace

    def seal_preview(self, text: str, topic: Any = None, categories: Iterable[str] = ()) -> tuple[dict, Trace]:
        """Seal a memory exactly as `save` would, recording every step, and send nothing."""
        trace = Trace("seal preview (not sent)")
        keys = self.keys()
        ref = None
        if topic is not None:
            found = self.session.find_topic(topic)
            if found is not None:
                ref = {"id": found.id, "name": found.name}
            else:
                made = memory.new_topic_rows(keys, topic if isinstance(topic, str) else str(topic))
                trace.add(
                    "new topic",
                    inputs={"name": made.topic["name"]},
                    output=made.topic_id,
                    note="save() would create this topic and its relation row in the same POST",
                )
                ref = made.topic
        row = memory.new_memory_row(keys, text, topic=ref, categories=categories, trace=trace)
        return row, trace

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP client (and stop the sandbox this connection started)."""
        self._api.close()
        if self._owns_sandbox and self.sandbox_handle is not None:
            self.sandbox_handle.stop()
            self._owns_sandbox = False

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _pending_view(entry: dict, why: str | None = None) -> dict:
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


def _check_base_url(base_url: str) -> None:
    """Refuse a server URL that is not http(s)://host before any thread starts, in plain words.
    An empty URL is allowed: the requests then go to an in-process transport."""
    if not base_url:
        return
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PairingError(
            f"{base_url!r} is not a server URL: give it as http://host:port or https://host", code="invalid_url"
        )
