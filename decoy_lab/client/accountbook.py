"""`AccountBook`: a connection's part for the account family — what it holds of accounts in this
process, and the calls that change it (protocol/accounts_write.py, accounts_unlock.py, accounts_list.py,
accounts_decoys.py).

It keeps, in memory only (never on disk: these are an account's plain details):
- the records this connection sealed (it knows what it wrote) and those an unlock answered, by
  account id, so the accounts table can name what only the owner's key opens otherwise;
- each account's fields as read, by `fields_rev`, so a table is not a refetch of every field;
- the unlock asks still pending, by account and kind, so asking again polls the same request
  instead of asking the owner twice;
- the vault key, once a bulk import fetched it (`everything` only), so the address list can open
  VAULT details too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from decoy_lab.errors import DecoyError
from decoy_lab.protocol import accounts_decoys, accounts_list, accounts_unlock, accounts_write
from decoy_lab.protocol.accounts_decoys import AddressEdit, Imported, Protected
from decoy_lab.protocol.accounts_unlock import Unlocked
from decoy_lab.protocol.accounts_write import CreatedAccount, FieldWritten
from decoy_lab.protocol.session import Session
from decoy_lab.protocol.verify import Verified
from decoy_lab.recipes.trace import Trace
from decoy_lab.vault.account_list import AccountEntry, FieldsSeen, accounts_frame

log = logging.getLogger(__name__)

__all__ = ["ADDRESS_COLUMNS", "AccountBook"]

SEALED_HERE = "the record this connection sealed (in this session)"  # where a held record came from
#: the columns of `AccountBook.addresses_frame()` (a Decoy address a row)
ADDRESS_COLUMNS = ["id", "email", "name", "label", "status", "account_id", "rev", "name_from"]


class AccountBook:
    """What a connection holds of the account family in this process (see the module docstring)."""

    def __init__(self, session: Session, *, clock: Callable[[], float] = time.monotonic):
        self.session = session
        self.clock = clock
        self.known: dict[str, tuple[dict[str, Any], str]] = {}  # account id → (record, where it came from)
        self.fields_seen: dict[tuple[str, int], FieldsSeen] = {}
        self.pending: dict[tuple[str, tuple[str, ...]], str] = {}  # (account, kinds) → unlock request id
        self.last: list[AccountEntry] = []  # the last listing
        self.last_addresses: list[str] = []  # the ids of the last address listing (Tab offers them)
        self.vault_key: bytes | None = None  # fetched by a bulk import or to name one; this process only
        self._vault_key_asked = False  # GET /vault-key sent once at most (an `everything` grant has it)
        self._vault_key_lock = threading.Lock()  # the accounts are read on several threads
        self.workers: int | None = None  # accounts read side by side (None: accounts_list.reads_in_flight)

    def __repr__(self) -> str:  # never a record (they hold usernames), never the vault key
        return f"<AccountBook {len(self.last)} listed, {len(self.known)} records held, {len(self.pending)} unlocks pending>"

    # -- reading ---------------------------------------------------------------------------------
    def entries(self) -> list[AccountEntry]:
        """Every account this connection may see, read now."""
        self.last = accounts_list.list_accounts(
            self.session,
            known=self.known,
            fields_cache=self.fields_seen,
            workers=self.workers,
            vault_key=self._vault_key_if_held,
        )
        return self.last

    def _vault_key_if_held(self) -> bytes | None:
        """The vault key, asked for once in this process when a record sealed with it is met: a
        connection without `everything` is refused it, and the frame says so."""
        with self._vault_key_lock:
            if self.vault_key is None and not self._vault_key_asked:
                self._vault_key_asked = True
                try:
                    self.vault_key = accounts_decoys.vault_key(self.session)
                except DecoyError:
                    log.info(
                        "accounts: this connection does not hold the vault key; records sealed with it stay unnamed"
                    )
            return self.vault_key

    def frame(self) -> pd.DataFrame:
        """The accounts as a DataFrame, with the memories of the last load filed about each."""
        vault = self.session.vault
        return accounts_frame(self.entries(), vault.memories if vault is not None else None)

    def logins_frame(self) -> pd.DataFrame:
        """The saved logins this connection is granted (accounts_unlock.saved_logins), a row each."""
        columns = accounts_unlock.LOGIN_COLUMNS
        return pd.DataFrame(accounts_unlock.saved_logins(self.session), columns=columns)

    def addresses_frame(self, status: str = "active", **filters: str | None) -> pd.DataFrame:
        """The Decoy addresses this connection may read, one row each (ADDRESS_COLUMNS)."""
        listed = accounts_decoys.list_addresses(self.session, status=status, key=self.vault_key, **filters)
        self.last_addresses = [a.id for a in listed]
        return pd.DataFrame([[getattr(a, c) for c in ADDRESS_COLUMNS] for a in listed], columns=ADDRESS_COLUMNS)

    # -- writing ---------------------------------------------------------------------------------
    def create(self, service: str, **options: Any) -> CreatedAccount:
        made = accounts_write.create_account(self.session, service, **options)
        self.known[made.account_id] = (made.record, SEALED_HERE)
        return made

    def save(self, service: str, *, url: str | None = None, username: str | None = None, **options: Any) -> str:
        """Save an account without an address; its record is held, as for `create` (sealed here)."""
        account_id = accounts_write.save_account(self.session, service, url=url, username=username, **options)
        self.known[account_id] = (accounts_write.account_record(service, url=url, username=username), SEALED_HERE)
        return account_id

    def update(self, account_id: str, **change: Any) -> dict[str, Any]:
        """Change an account; a record re-sealed here is the one held for it from now on."""
        done = accounts_write.update_account(self.session, account_id, **change)
        if change.get("record") is not None:
            self.known[account_id] = (dict(change["record"]), SEALED_HERE)
        return done

    def set_password(self, account_id: str, password: str, **options: Any) -> Verified:
        return accounts_write.set_password(self.session, account_id, password, **options)

    def add_field(self, account_id: str, label: str, value: str, **options: Any) -> FieldWritten:
        return accounts_write.add_field(self.session, account_id, label, value, **options)

    def set_field(self, account_id: str, field_id: str, value: str) -> FieldWritten:
        return accounts_write.set_field(self.session, account_id, field_id, value)

    def delete(self, account_id: str) -> dict[str, Any]:
        """Delete the account; the record held for it goes too (it is gone from reads)."""
        done = accounts_write.delete_account(self.session, account_id)
        self.known.pop(account_id, None)
        return done

    # -- unlock ----------------------------------------------------------------------------------
    def unlock(
        self,
        account_id: str,
        *,
        datatypes: Sequence[str] | None = None,
        reason: str | None = None,
        wait: float = 0.0,
        trace: Trace | None = None,
    ) -> Unlocked:
        """Ask for the account's secrets, or poll the ask still pending for the same kinds."""
        accounts_unlock.check_ask(account_id, datatypes, reason, wait)  # before datatypes is a key
        key = (account_id, tuple(datatypes or ()))
        rid = self.pending.pop(key, None)
        if rid is not None:
            got = accounts_unlock.poll(self.session, account_id, rid, wait=wait, clock=self.clock, trace=trace)
        else:
            got = accounts_unlock.unlock(
                self.session, account_id, datatypes=datatypes, reason=reason, wait=wait, clock=self.clock, trace=trace
            )
        if got.status == "pending" and got.request_id:
            self.pending[key] = got.request_id
        if got.record is not None:
            record = {**got.record, "username": got.username} if got.username else got.record
            self.known[account_id] = (record, "the account's record, answered by unlock (in this session)")
        return got

    # -- addresses and bulk ----------------------------------------------------------------------
    def protect(self, account_id: str, decoy_id: str | None = None) -> Protected:
        return accounts_decoys.protect(self.session, account_id, decoy_id=decoy_id)

    def rename_address(
        self, decoy_id: str, *, name: str | None = None, avatar: str | None = None, wait: float = 0.0
    ) -> AddressEdit:
        return accounts_decoys.rename_address(
            self.session, decoy_id, name=name, avatar=avatar, wait=wait, clock=self.clock
        )

    def address_edit(self, decoy_id: str, edit_id: str) -> AddressEdit:
        return accounts_decoys.edit_status(self.session, decoy_id, edit_id)

    def update_address(self, decoy_id: str, **change: Any) -> dict[str, Any]:
        return accounts_decoys.update_address(self.session, decoy_id, **change)

    def burn_address(self, decoy_id: str) -> dict[str, Any]:
        return accounts_decoys.burn_address(self.session, decoy_id)

    def burn_linked(self, account_id: str, *, replace: bool = True) -> dict[str, Any]:
        return accounts_decoys.burn_linked_address(self.session, account_id, replace=replace)

    def pause_addresses(self, decoy_ids: Sequence[str]) -> dict[str, str]:
        return accounts_decoys.pause_addresses(self.session, decoy_ids)

    def burn_addresses(self, decoy_ids: Sequence[str]) -> dict[str, str]:
        return accounts_decoys.burn_addresses(self.session, decoy_ids)

    def import_accounts(self, records: Sequence[dict[str, Any]]) -> Imported:
        """Accounts in bulk, VAULT-sealed; each created one's record is held (this connection wrote it)."""
        records = accounts_decoys.import_rows(records)  # refused before the vault key is asked for
        if not records:
            return Imported()
        if self.vault_key is None:
            self.vault_key = accounts_decoys.vault_key(self.session)
        done = accounts_decoys.import_accounts(self.session, records, key=self.vault_key)
        for index, account_id in done.created.items():
            held = {k: v for k, v in records[index].items() if k != "password"}  # a password is never held
            self.known[account_id] = (held, SEALED_HERE)
        return done
