"""The accounts frame names an account from the `metadata_seal` served on the account list itself,
with no read of its address, over real HTTP against the sandbox.

001, `metadata_seals`: "One entry: the same record sealed to THIS connection's own public key …
returned to this connection as `metadata_seal` on `GET /api/agent/decoys`, `GET
/api/agent/decoys/{decoyId}` and the account reads"; the Decoys tag: "one without [the vault key]
reads its own `metadata_seal` (served on the account)"; and "Every other connection that may read
the address reads `metadata_seal: null` with a `metadata_seal_state` until the owner's app has
sealed a copy to its key." So the list is enough: a `GET /api/agent/decoys/{decoyId}` per account is
sent only to a server whose account reads do not carry the member.
"""

from __future__ import annotations

import json

import httpx
import pandas as pd
import pytest

from decoy_lab.sandbox import Sandbox

from support.meddler import scripted_pair

ACCOUNTS = "/api/agent/accounts"
DECOYS = "/api/agent/decoys/"
SEALED_HERE = "its address's details, sealed to this connection (metadata_seal)"


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def _decoy_reads(meddler, since: int) -> list[str]:
    return [p for m, p, _ in meddler.seen[since:] if m == "GET" and p.startswith(DECOYS)]


def _row(frame, account_id: str):
    return frame.set_index("id").loc[account_id]


def test_the_creator_names_its_account_from_the_list_without_reading_the_address(sb):
    conn, meddler = scripted_pair(sb, "Names from the list", permissions=["account.create"])
    made = conn.create_account("Acme Cloud", url="https://acme.example")
    since = len(meddler.seen)
    row = _row(conn.accounts(), made.account_id)
    assert row["service"] == "Acme Cloud" and row["service_from"] == SEALED_HERE
    assert _decoy_reads(meddler, since) == [], "the account list carried the copy"
    conn.close()


def test_another_connection_waits_for_its_own_copy_and_reads_no_address_meanwhile(sb):
    maker, _ = scripted_pair(sb, "Maker", permissions=["account.create"])
    made = maker.create_account("Globex")
    reader, meddler = scripted_pair(
        sb, "Reader", permissions=[{"permissions": ["account.read"], "account_id": made.account_id}]
    )
    since = len(meddler.seen)
    waiting = _row(reader.accounts(), made.account_id)
    assert pd.isna(waiting["service"]), "the maker's copy is not this connection's"
    assert waiting["service_from"] == (
        "no name: the copy of its address's details for this connection is preparing (the owner's phone seals it)"
    )
    assert httpx.post(f"{sb.url}/_sandbox/keep", json={}).status_code == 200  # the phone seals it a copy
    named = _row(reader.accounts(), made.account_id)
    assert named["service"] == "Globex" and named["service_from"] == SEALED_HERE
    assert _decoy_reads(meddler, since) == []
    maker.close()
    reader.close()


def test_a_list_without_the_member_is_completed_from_the_address(sb):
    """A server whose account reads do not carry `metadata_seal`: the address's own read has it."""
    conn, meddler = scripted_pair(sb, "Older server", permissions=["account.create"])
    made = conn.create_account("Initech")

    def without_seals(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        response = inner.handle_request(request)
        body = json.loads(response.read())
        for a in body["accounts"]:
            for k in ("metadata_seal", "metadata_seal_state", "metadata_seal_code"):
                a.pop(k, None)
        return httpx.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})

    meddler.plan("GET", ACCOUNTS, without_seals)
    since = len(meddler.seen)
    row = _row(conn.accounts(), made.account_id)
    assert row["service"] == "Initech" and row["service_from"] == SEALED_HERE
    assert _decoy_reads(meddler, since) == [f"{DECOYS}{made.decoy_id}"]
    conn.close()
