"""`Connection`: pair with Decoy, keep the connection, read and write memories by the spec's rules.

    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="My notebook")
        vault = conn.load()            # one GET, every row read; vault.memories is a DataFrame
        mid = conn.save("Prefers aisle seats.", topic="Lisbon trip", categories=["travel"])
        conn.edit(mid, text="Prefers window seats.")
        conn.delete([mid])
        made = conn.create_account("Acme", username="me@acme.test")  # with its Decoy address
        conn.set_password(made.account_id, "…")  # sealed to the owner; read back by conn.unlock
        conn.accounts()                # a DataFrame: name, address, password set, fields, memories

The rules it follows, so a user can trust what it shows and copy what it does:
- an unknown outcome (network error, timeout, 5xx) resends the SAME sealed rows, never new ones,
  up to `conn.retries` times with backoff; a definite refusal is never retried; `REV_CONFLICT`
  re-reads, re-applies and retries; a 429 waits `retry_after_seconds`; `HOLDERS_MISSING` wraps the
  new key to the listed holders and sends again;
- topic rows written for a change that is then definitely refused are deleted (best effort), and
  kept after an unknown outcome, which may have committed;
- `/policies` is read at the start of a session and again whenever `access_version` changes.

`Connection` composes typed parts, each owning its state: `session` (protocol/session.py: the api
with its tokens and refresh, the retry policy, the journal, the last vault — what every rule of
reading and writing talks through), `saved` (client/saved.py: the profile, its cache and journal,
the token store the api refreshes through), `grants` (client/grants.py: what `/policies` says it
holds, and asking for more), `loader` (client/loader.py: a load), `account_book` (client/accountbook.py:
what it holds of the account family in this process). How a connection is made (pair,
sandbox, resume) is client/connect.py; the rules themselves live in protocol/ (session, pairing,
access, syncfeed, accounts, writes, legacy, unseal), the store in store/, what a load holds in vault/.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx
import pandas as pd

from decoy_lab import memory
from decoy_lab.client import connect, saved
from decoy_lab.client.accountbook import AccountBook
from decoy_lab.client.connect import DEFAULT_CLIENT_ID
from decoy_lab.client.grants import Grants
from decoy_lab.client.loader import Loader
from decoy_lab.client.saved import Saved
from decoy_lab.protocol import account_names, accounts_decoys, accounts_list, accounts_write, syncfeed, unseal, writes
from decoy_lab.protocol.access import Access, GrantRequest
from decoy_lab.protocol.accounts_decoys import AddressEdit, Imported, Protected
from decoy_lab.protocol.accounts_unlock import Unlocked
from decoy_lab.protocol.accounts_write import CreatedAccount, FieldWritten
from decoy_lab.protocol.pairing import PairingHandle
from decoy_lab.protocol.session import Session
from decoy_lab.protocol.syncfeed import SyncResult
from decoy_lab.protocol.verify import Verified
from decoy_lab.protocol.writes import DeleteResult
from decoy_lab.recipes.trace import Trace
from decoy_lab.store import cache
from decoy_lab.store.profiles import Profile, ProfileStore
from decoy_lab.transport.api import Api, Tokens
from decoy_lab.vault.frames import AccountNames
from decoy_lab.vault.read import Vault
from decoy_lab.wire.crypto import AgentKey

__all__ = ["Connection", "SyncResult"]


class Connection:
    """One paired agent connection to a Decoy server (or the sandbox).

    Made by `pair` / `start_pairing` / `sandbox` / `resume`, rarely by hand. `retries` bounds how
    often a write with an unknown outcome is sent again (waiting `backoff` s, doubling; `sleep`
    is injectable), `workers` how many threads read rows (default: one per core) and accounts
    (default: two per core, as each waits on its own request), and `http` /
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
        cache_key: str | None = None,
    ):
        if not isinstance(agent_key, AgentKey):
            raise TypeError("agent_key must be a decoy_lab.wire.crypto.AgentKey")
        api = api or Api(base_url, http=http, transport=transport, timeout=timeout, client_id=client_id)
        api.client_id = client_id
        if tokens is not None:
            api.tokens = tokens
        self.saved = Saved(
            api, agent_key, profile=profile, store=store, name=name, client_id=client_id, cursor=cursor, cache_key=cache_key
        )  # fmt: skip
        self.session = Session(
            api, agent_key, retries=retries, backoff=backoff, sleep=sleep, load=self.load, on_change=self.save_profile,
            journal=self.saved.journal(),
        )  # fmt: skip
        self.grants = Grants(self.session, on_version=self.save_profile)
        self.loader = Loader(self.session, self.saved, self.grants, workers)
        self.account_book = AccountBook(self.session)
        self.account_book.workers = workers
        api.keep_tokens(self.saved, self.grants.tokens_changed)
        # the pending writes an unpair or a new pairing of this profile removed (see `unpair`)
        self.dropped_pending: list[dict] = []
        self.sandbox_handle: Any = None  # the sandbox this connection was paired with, if any
        self._owns_sandbox = False  # stopped by close(): set by own_sandbox()

    # -- what is saved, kept in `saved` ------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.saved.name

    @name.setter
    def name(self, value: str) -> None:
        self.saved.name = value

    @property
    def client_id(self) -> str:
        return self.saved.client_id

    @property
    def profile(self) -> str | None:
        return self.saved.profile

    @profile.setter
    def profile(self, value: str | None) -> None:
        self.saved.profile = value

    @property
    def cursor(self) -> str | None:
        """The sync feed's cursor: where the next `sync` follows changes from."""
        return self.saved.cursor

    @cursor.setter
    def cursor(self, value: str | None) -> None:
        self.saved.cursor = value

    @property
    def workers(self) -> int | None:
        """How many threads read rows and accounts (None: rows one per core, accounts
        `accounts_list.IN_FLIGHT` per core)."""
        return self.loader.workers

    @workers.setter
    def workers(self, value: int | None) -> None:
        self.loader.workers = value
        self.account_book.workers = value  # the accounts frame reads accounts on as many threads

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
        return self.session.api.base_url

    @property
    def agent_key(self) -> AgentKey:
        return self.session.agent_key

    @property
    def tokens(self) -> Tokens | None:
        return self.session.api.tokens

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
            f"token_id={self.token_id} key={self.agent_key.fingerprint} "
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
        return connect.start_pairing(
            cls, base_url, name=name, permissions=permissions, client_id=client_id, profile=profile,
            on_link=on_link, on_status=on_status, timeout=timeout, retries=retries, agent_key=agent_key,
            http=http, transport=transport, store=store, use_par=use_par, poll_interval=poll_interval,
            wait=wait, clock=clock, force=force, options=options,
        )  # fmt: skip

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
        return connect.pair(
            cls, base_url, name=name, permissions=permissions, client_id=client_id, profile=profile,
            on_link=on_link, timeout=timeout, retries=retries, force=force, options=options,
        )  # fmt: skip

    @classmethod
    def sandbox(cls, **opts: Any) -> Connection:
        """Start the embedded sandbox and pair with it. Sandbox options (`owner_key`, `approve`,
        `seed`, `db`, `faults`, `clock`) go to `Sandbox.start`, the rest to `pair`. With
        `approve="manual"` the link is printed: approve it on the sandbox's owner page. The
        connection is not saved to a profile unless `profile=` is given; `close()` stops the
        sandbox it started (`conn.sandbox_handle`)."""
        return connect.sandbox(cls, opts)

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
        return connect.resume(cls, profile, store=store, http=http, transport=transport, check=check, options=options)

    def to_profile(self) -> Profile:
        return self.saved.to_profile()

    def save_profile(self) -> None:
        """Write this connection to its profile (no-op when it has none)."""
        self.saved.save()

    def local_cache(self) -> cache.VaultCache | None:
        """The sealed vault cache of this connection's profile (cache.py); None without a profile.
        Its key is made on first use and kept in the profile store, beside the private key."""
        return self.saved.local_cache()

    def unpair(self) -> list[dict]:
        """End this connection at the server (RFC 7009 revocation: its tokens stop working, and
        pairing again makes a new connection that inherits nothing), then delete its saved profile
        and its pending-writes journal, with its entries' lock files — but one that a process holds
        to send its entry now is left to that process (`lock` "held", said as a warning). Returns
        the pending writes that were dropped with it (as `pending` lists them, plus `lock`; each is
        also logged as a warning): their outcome stays unknown.
        When the server cannot be reached the profile is kept, so the revocation can be tried again."""
        saved_here = self.saved.saved_tokens() is not None
        self.session.retry.run(self.session.api.revoke)
        self.grants.forget()
        if saved_here:
            why = f"unpairing profile {self.profile!r}"
            self.dropped_pending = saved.drop_journal(self.session.journal, why)
            self.saved.delete()
        return self.dropped_pending

    # -- access ---------------------------------------------------------------------------------
    def access(self, refresh: bool = True) -> Access:
        """What this connection holds now (`GET /api/agent/policies`): summary first, then names."""
        return self.grants.access(refresh)

    def send_grant_request(self, body: Mapping) -> GrantRequest:
        """POST one ask to grant-request unchanged (e.g. a refusal's `permission_request`)."""
        return self.grants.send(body)

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
        return self.grants.request(
            permissions, datatypes=datatypes, about=about, account_id=account_id, reason=reason,
            send=self.send_grant_request,
        )  # fmt: skip

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
        return self.loader.load(progress)

    def account_names(self) -> AccountNames:
        """Account id → name from the authorized account list (`GET /api/agent/accounts`, every
        page), which names `account:<id>` labels and link ends ("resolve its name from the
        authorized account list"). When the list cannot be read (not granted: `403 SCOPE_MISSING`;
        or any other failure) it is empty and `unavailable` says why: nothing is raised, a load goes on."""
        return account_names.account_names(self.session)

    # -- the account family (the rules live in protocol/accounts_*.py; the state in account_book) ----
    def accounts(self) -> pd.DataFrame:
        """The accounts this connection may see, one row each: `service` (opened from a copy sealed
        to this connection, a plain name, or a record it holds in this session — one it sealed with
        create_account, save_account, update_account(record=) or import_accounts, or an unlock
        answered; `service_from` says which, or why there is none), `username`, `decoy_email`, `has_password`, its secret fields
        (`fields`, `field_labels`: those it opens), `created_by`, and `memories` filed about it
        (`about: ["account:<id>"]`) in the last load (empty before a load)."""
        return self.account_book.frame()

    def create_account(
        self,
        service: str,
        *,
        url: str | None = None,
        username: str | None = None,
        label: str | None = None,
        idempotency_key: str | None = None,
        trace: Trace | None = None,
    ) -> CreatedAccount:
        """Create an account with its Decoy address in one call (`POST /api/agent/decoys`), the
        details sealed to the owner (and a copy to this connection), the record an owner ENVELOPE.
        An unknown outcome sends the same body again; the `idempotency_key` answers the original
        address to a repeat. Needs `account.create`."""
        return self.account_book.create(
            service, url=url, username=username, label=label, idempotency_key=idempotency_key, trace=trace
        )

    def set_password(self, account_id: str, password: str, *, trace: Trace | None = None) -> Verified:
        """Set the account's password: a headerless envelope to the owner's account key
        (`GET /api/agent/accounts/public-key`); read back (and, against the sandbox, opened by the
        owner's app). `verified.ok` is False, with the reason, when the owner could not open it."""
        return self.account_book.set_password(account_id, password, trace=trace)

    def add_field(
        self,
        account_id: str,
        label: str,
        value: str,
        *,
        field_type: str = "concealed-string",
        field_id: str | None = None,
        trace: Trace | None = None,
    ) -> FieldWritten:
        """Add a secret field (an API key, a recovery code): a fresh field key wrapped to the owner,
        to this connection and to each connection field-grantees lists; read back. `field_id`: the
        id a lost answer's error named ("Reuse the id until you get an answer"), made here if None."""
        return self.account_book.add_field(
            account_id, label, value, field_type=field_type, field_id=field_id, trace=trace
        )

    def set_field(self, account_id: str, field_id: str, value: str) -> FieldWritten:
        """Change a secret field's value with `expected_rev` (REV_CONFLICT: read again, re-apply)."""
        return self.account_book.set_field(account_id, field_id, value)

    def delete_field(self, account_id: str, field_id: str) -> dict:
        """Delete a secret field, only the version read now (`expected_rev`). A lost answer is
        journaled: `resend()` finishes it (done once the field is no longer served)."""
        return accounts_write.delete_field(self.session, account_id, field_id)

    def delete_account(self, account_id: str) -> dict:
        """Delete an account (`DELETE /api/agent/accounts/{id}`; needs `account.delete` on it, even
        for its creator): it disappears from reads, its fields with it, and its own Decoy email is
        burned (a Personal Alias linked to it only with `alias.burn`, else unlinked). The memories
        filed about it stay. Returns `account_id`, `deleted`, `burned_decoys`, `unlinked_decoys`. A
        lost answer is journaled: `resend()` deletes it only if it is still the version read now."""
        return self.account_book.delete(account_id)

    def save_account(
        self, service: str, *, url: str | None = None, username: str | None = None, label: str | None = None
    ) -> str:
        """Save an account without a Decoy address (`POST /api/agent/accounts`), its record sealed to
        the owner's key; returns its id. No idempotency key: a lost answer is journaled, never resent
        blindly — `resend()` reads the account list first. Needs `account.create`."""
        return self.account_book.save(service, url=url, username=username, label=label)

    def update_account(
        self,
        account_id: str,
        *,
        record: dict | None = None,
        label: Any = accounts_decoys.KEEP,
        status: str | None = None,
        two_factor: bool | None = None,
    ) -> dict:
        """Change an account with `expected_rev` (`record` re-sealed to the owner's key, its label —
        None clears it, as `update_decoy`'s — status, two-factor flag); REV_CONFLICT: read again,
        apply again. Returns the account."""
        return self.account_book.update(account_id, record=record, label=label, status=status, two_factor=two_factor)

    def unlock(
        self,
        account_id: str,
        *,
        datatypes: Sequence[str] | None = None,
        reason: str | None = None,
        wait: float = 0.0,
        trace: Trace | None = None,
    ) -> Unlocked:
        """Read an account's secrets back (`POST /api/agent/unlock`), following the answer for up to
        `wait` seconds: `ready` (the secrets, as Secrets), `pending` while the owner decides (call
        again to poll the same request), `preparing` while the owner's phone makes the copy (call
        again after `retry_after`)."""
        return self.account_book.unlock(account_id, datatypes=datatypes, reason=reason, wait=wait, trace=trace)

    def saved_logins(self) -> pd.DataFrame:
        """The saved passwords this connection is granted (`GET /api/agent/sealed-secrets`), one row
        each: `host`, `username`, `password` (a `Secret`: `reveal()` for the text) and `state` —
        `ready`, or `preparing` / `failed` while the owner's phone has not sealed a copy to this
        connection's key (saved, not missing: read again later)."""
        return self.account_book.logins_frame()

    def decoys(
        self,
        status: str = "active",
        *,
        search: str | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> pd.DataFrame:
        """The Decoy addresses this connection may read (`GET /api/agent/decoys`, every page), one row
        each: `email`, `name` (opened from the copy of its details sealed to this connection;
        `name_from` says so, or why there is none), `label`, `status`, `account_id`, `rev`.
        `status`: active (the default), inactive or all; the server's filters: `search` (in the
        label, "Search agent_label"), `after` / `before` (RFC 3339, on when each was created)."""
        return self.account_book.addresses_frame(status, search=search, date_after=after, date_before=before)

    def protect(self, account_id: str, decoy_id: str | None = None) -> Protected:
        """Give an account a Decoy address (`POST …/protect`): link `decoy_id`, or mint a fresh one
        (needs `account.create`). Idempotent: an account that has one keeps it (`already_protected`)."""
        return self.account_book.protect(account_id, decoy_id)

    def rename_decoy(
        self, decoy_id: str, *, name: str | None = None, avatar: str | None = None, wait: float = 0.0
    ) -> AddressEdit:
        """Rename an address (or change its avatar) without the vault key: a patch sealed to the
        owner's key, queued for the owner's devices (`POST …/decoys/{id}/edits`), its status followed
        for up to `wait` seconds (`pending`, `applied`, `rejected`, `expired`)."""
        return self.account_book.rename_address(decoy_id, name=name, avatar=avatar, wait=wait)

    def update_decoy(self, decoy_id: str, *, label: Any = accounts_decoys.KEEP, status: str | None = None) -> dict:
        """Change an address in place (`PATCH /api/agent/decoys/{id}`): its `label` (None clears it)
        and/or `status` (`inactive` pauses its mail, `active` resumes it), with the `rev` read now
        (REV_CONFLICT: read again, apply again). Its name and avatar are sealed: `rename_decoy`.
        Returns `decoy_id`, `updated`, `rev` (`updated` False when it held these already)."""
        return self.account_book.update_address(decoy_id, label=label, status=status)

    def burn_decoy(self, decoy_id: str) -> dict:
        """Burn an address for good (`DELETE /api/agent/decoys/{id}`, irreversible; a Personal Alias
        needs `alias.burn`). An account's own Decoy email goes only with its account
        (`403 ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`: `delete_account`). Returns `decoy_id`, `deleted`,
        `burned_at`; a lost answer is journaled, and done once the address is no longer served."""
        return self.account_book.burn_address(decoy_id)

    def burn_account_decoy(self, account_id: str, *, replace: bool = True) -> dict:
        """Burn the Personal Alias linked to an account (`POST …/accounts/{id}/burn-decoy`; needs
        `alias.burn`) and, with `replace` (the default; needs `account.create`), give the account a
        fresh address. Returns `account_id`, `burned_decoy_id`, `new_decoy_id`, `new_decoy_email`.
        A lost answer is journaled; `resend()` sends it again only while that address is linked."""
        return self.account_book.burn_linked(account_id, replace=replace)

    def decoy_edit(self, decoy_id: str, edit_id: str) -> AddressEdit:
        """What became of a queued edit of an address."""
        return self.account_book.address_edit(decoy_id, edit_id)

    def pause_decoys(self, decoy_ids: Sequence[str]) -> dict[str, str]:
        """Pause inbound mail on addresses (20 a call): id → "paused" or why not ("Not permitted")."""
        return self.account_book.pause_addresses(decoy_ids)

    def burn_decoys(self, decoy_ids: Sequence[str]) -> dict[str, str]:
        """Burn up to 20 addresses for good in one call (`POST /api/agent/decoys/batch/burn`,
        irreversible; a Personal Alias needs `alias.burn`): id → "burned" or why not ("Not
        permitted" — an account's own Decoy email goes only with its account — or "Not found").
        More than 20 is refused before anything is sent. A lost answer is journaled; `resend()`
        reads each address first (one no longer served was burned) and burns only the rest."""
        return self.account_book.burn_addresses(decoy_ids)

    def import_accounts(self, records: Sequence[dict[str, Any]]) -> Imported:
        """Save many accounts at once (a password manager's export: `name`, `username`, `password`,
        URLs, notes …), each sealed with the vault key (`everything` only) and sent 25 a call; each
        row's outcome is reported. A lost answer is never resent (a batch has no idempotency key)."""
        return self.account_book.import_accounts(records)

    def unseal_account(self, account_id: str, *, trace: Trace | None = None) -> Trace:
        """What this connection opens of one account, step by step (the copy of its address's
        details sealed to it, then each secret field: unwrap, kid, open, bind), as a Trace."""
        return accounts_list.unseal_account(self.session, account_id, trace)

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
        each with its `kind` (save / edit, or an account write's: address, account, account edit,
        password, field, field edit, field delete, address edit, protect, pause, import, account
        delete, address update, address burn, linked burn, batch burn), the row
        `ids`, the memory (or account, address) it is for (`target`), when
        it was first sent (`at`) and the last unknown outcome (`why`). Empty once all is settled.
        An entry of the journal that is not this connection's (another server, profile or key, or
        written by an older decoy-lab that bound it to nothing) is listed too, its `why` saying so."""
        return saved.pending(self.session.journal)

    def resend(self) -> list[dict]:
        """Send every pending write again, with the SAME sealed rows and bodies (never new ones),
        until each one's outcome is known. Returns one result per entry: `outcome` is "committed",
        or why it was refused (settled: the journal no longer holds it). An entry bound to another
        server, profile or agent key — or to none (an older decoy-lab's) — is never sent: its
        `outcome` is "not sent: …" with the reason, and it stays in the journal. A write that
        still gets no answer that proves it raises OutcomeUnknown and stays pending. An account write
        not safe to repeat (a save without an address, a bulk import, a batch burn) is read back
        first and only what did not land is sent (a batch burn's result also has `results`: id →
        "burned" or why not); `said` tells what proved each account write's outcome. No two
        processes send one account write at once: each holds the entry's lock while it reads and
        sends, and an entry another process settled meanwhile is left out of the results."""
        return saved.not_sent(self.session.journal) + writes.resend(self.session)

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
        return unseal.unseal(self.session, row_id, trace, self.load)

    def seal_preview(self, text: str, topic: Any = None, categories: Iterable[str] = ()) -> tuple[dict, Trace]:
        """Seal a memory exactly as `save` would, recording every step, and send nothing."""
        return unseal.seal_preview(self.session, text, topic, categories)

    # -- lifetime ---------------------------------------------------------------------------------
    def own_sandbox(self, sandbox: Any) -> None:
        """This connection was paired with `sandbox`, which it started: `close()` stops it."""
        self.sandbox_handle, self._owns_sandbox = sandbox, True

    def close(self) -> None:
        """Close the HTTP client (and stop the sandbox this connection started)."""
        self.session.api.close()
        if self._owns_sandbox and self.sandbox_handle is not None:
            self.sandbox_handle.stop()
            self._owns_sandbox = False

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
