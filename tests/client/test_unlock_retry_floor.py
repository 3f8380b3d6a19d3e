"""A `preparing` unlock is asked again after `retry_after_seconds` (001 `unlock`: "send the same
request again after `retry_after_seconds`") — and never sooner than MIN_RETRY, whatever the
answer says: a server answering 0 would otherwise turn `wait` into a loop of requests."""

from __future__ import annotations

import time

from decoy_lab.protocol.accounts_unlock import MIN_RETRY
from decoy_lab.transport import routes

from support.meddler import Meddler, answer, scripted_pair

PREPARING = {"available": False, "kind": "account", "state": "preparing", "retry_after_seconds": 0}


def test_a_zero_retry_after_is_waited_at_least_the_floor(sb):
    meddler = Meddler()
    conn, _ = scripted_pair(sb, "Retry floor", meddler=meddler, permissions=["account.create"], sleep=time.sleep)
    account = conn.save_account("Floor Co")
    for _ in range(50):
        meddler.plan("POST", routes.UNLOCK, answer(200, PREPARING))
    got = conn.unlock(account, wait=2 * MIN_RETRY + 0.5)
    assert got.status == "preparing" and got.retry_after == MIN_RETRY
    asked = [p for m, p, _ in meddler.seen if (m, p) == ("POST", routes.UNLOCK)]
    assert 1 <= len(asked) <= 4, len(asked)  # about one ask per MIN_RETRY, not a loop
