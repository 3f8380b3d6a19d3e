"""`Connection.accounts()` reads several accounts at once and still shows each its own fields, in
the list's order, over real HTTP against the sandbox.

001, `account_fields_list`: one call per account ("The encrypted secret fields on this account that
this connection may open"), and "`fields_rev` changes whenever any field on the account changes:
compare it to skip a refetch." The accounts are read side by side (accounts_list.list_accounts);
these pin that what each thread read lands on its own account's row, and that only an account
whose `fields_rev` moved is read again.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from decoy_lab.sandbox import Sandbox

from support.connections import paired


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def _fields_reads(conn) -> list[str]:
    """A spy: the paths of the `GET …/fields` the connection sends from now on (each still sent)."""
    paths: list[str] = []
    api = conn.session.api
    real = api.request
    lock = threading.Lock()

    def request(method: str, path: str, **kw: Any) -> Any:
        if method == "GET" and path.endswith("/fields"):
            with lock:
                paths.append(path)
        return real(method, path, **kw)

    api.request = request
    return paths


def test_accounts_read_side_by_side_keep_their_own_fields_in_the_lists_order(sb):
    conn = paired(sb, ["account.create"], name="Many accounts")
    conn.workers = 3  # three accounts in flight at once
    made = []
    for i in range(7):
        account = conn.create_account(f"Service {i}")
        for j in range(i % 3):
            conn.add_field(account.account_id, f"key {i}.{j}", f"sk-{i}-{j}")
        made.append(account.account_id)
    listed = [a["id"] for a in conn.session.get("/api/agent/accounts", params={"limit": 100})["accounts"]]
    assert sorted(listed) == sorted(made)
    reads = _fields_reads(conn)
    frame = conn.accounts()
    assert list(frame["id"]) == listed, "rows in the order the list serves them"
    labels = {a: [f"key {i}.{j}" for j in range(i % 3)] for i, a in enumerate(made)}
    assert [list(x) for x in frame["field_labels"]] == [labels[a] for a in listed]
    assert list(frame["fields"]) == [len(labels[a]) for a in listed]
    assert sorted(reads) == sorted(f"/api/agent/accounts/{a}/fields" for a in made), "one read per account"

    conn.add_field(made[4], "key 4.new", "sk-new")  # (it reads the fields back itself)
    reads.clear()
    again = conn.accounts()
    assert reads == [f"/api/agent/accounts/{made[4]}/fields"], "only the account whose fields_rev moved"
    assert list(again.set_index("id").loc[made[4], "field_labels"]) == ["key 4.0", "key 4.new"]
    others = again.set_index("id").drop(index=made[4])["field_labels"].map(list).to_dict()
    assert others == {a: labels[a] for a in made if a != made[4]}
    conn.close()


def test_accounts_in_flight_that_meet_an_expired_token_refresh_it_once(clocked_sb, clock):
    """ "`401` … `recovery: refresh` (`TOKEN_EXPIRED`) → `POST /oauth/token`": the reads in flight
    meet the expired token; one refreshes, the others take the newer token (a refresh token is
    single-use), and every account is read."""
    conn = paired(clocked_sb, ["account.create"], name="Expiring")
    conn.workers = 4
    made = [conn.create_account(f"Site {i}").account_id for i in range(6)]
    for account_id in made:
        conn.add_field(account_id, "token", "tk")
    api, expired = conn.session.api, threading.Event()
    real = api.request

    def request(method: str, path: str, **kw: Any) -> Any:
        if path.endswith("/fields") and not expired.is_set():
            expired.set()  # the token expires after the list was read, as the reads are in flight
            clock.advance(clocked_sb.state.token_ttl + 1)
        return real(method, path, **kw)

    api.request = request
    frame = conn.accounts()
    assert sorted(frame["id"]) == sorted(made) and list(frame["fields"]) == [1] * 6
    assert conn.session.api.refreshes == 1
    conn.close()
