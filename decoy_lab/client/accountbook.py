"""`AccountBook`: a connection's part for the account family — what it holds of accounts in this
process, and the calls that change it (protocol/accounts_write.py, accounts_unlock.py, accounts_list.py).

It keeps, in memory only (never on disk: these are an account's plain details):
- the records this connection sealed (it knows what it wrote) and those an unlock answered, by
  account id, so the accounts table can name what only the owner's key opens otherwise;
- each account's fields as read, by `fields_rev`, so a table is not a refetch of every field;
- the unlock asks still pending, by account and kind, so asking again polls the same request
  instead of asking the owner twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from decoy_lab.protocol import accounts_list, accounts_unlock, accounts_write
from decoy_lab.protocol.accounts_unlock import Unlocked
from decoy_lab.protocol.accounts_write import CreatedAccount, FieldWritten
from decoy_lab.protocol.session import Session
from decoy_lab.protocol.verify import Verified
from decoy_lab.recipes.trace import Trace
from decoy_lab.vault.account_list import AccountEntry, FieldsSeen, accounts_frame

__all__ = ["AccountBook"]


class AccountBook:
    """What a connection holds of the account family in this process (see the module docstring)."""

    def __init__(self, session: Session, *, clock: Callable[[], float] = time.monotonic):
        self.session = session
        self.clock = clock
        self.known: dict[str, tuple[dict[str, Any], str]] = {}  # account id → (record, where it came from)
        self.fields_seen: dict[tuple[str, int], FieldsSeen] = {}
        self.pending: dict[tuple[str, tuple[str, ...]], str] = {}  # (account, kinds) → unlock request id
        self.last: list[AccountEntry] = []  # the last listing

    def __repr__(self) -> str:  # never a record: they hold usernames
        return f"<AccountBook {len(self.last)} listed, {len(self.known)} records held, {len(self.pending)} unlocks pending>"

    # -- reading ---------------------------------------------------------------------------------
    def entries(self) -> list[AccountEntry]:
        """Every account this connection may see, read now."""
        self.last = accounts_list.list_accounts(self.session, known=self.known, fields_cache=self.fields_seen)
        return self.last

    def frame(self) -> pd.DataFrame:
        """The accounts as a DataFrame, with the memories of the last load filed about each."""
        vault = self.session.vault
        return accounts_frame(self.entries(), vault.memories if vault is not None else None)

    # -- writing ---------------------------------------------------------------------------------
    def create(self, service: str, **options: Any) -> CreatedAccount:
        made = accounts_write.create_account(self.session, service, **options)
        self.known[made.account_id] = (made.record, "the record this connection sealed (in this session)")
        return made

    def set_password(self, account_id: str, password: str, **options: Any) -> Verified:
        return accounts_write.set_password(self.session, account_id, password, **options)

    def add_field(self, account_id: str, label: str, value: str, **options: Any) -> FieldWritten:
        return accounts_write.add_field(self.session, account_id, label, value, **options)

    def set_field(self, account_id: str, field_id: str, value: str) -> FieldWritten:
        return accounts_write.set_field(self.session, account_id, field_id, value)

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
