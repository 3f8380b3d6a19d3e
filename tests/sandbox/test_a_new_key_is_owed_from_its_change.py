"""A connection that reconnects with a new key is owed its own memories from the key change, over HTTP.

Spec 001, GET memories: "`preparing` is present when memories this connection may read have no key
for its CURRENT key yet: after a reconnect with a new key …" and "Decoy asks for 7 days from the
moment the newest thing owed to your connection came to be owed. After that the memory is listed
under `failed` (`recovery: "stopped_asking"`)". A memory saved days before the new key came to be
owed to that key when the key changed, not when it was saved.
"""

from __future__ import annotations

import pytest

from support.sandbox_kit import LoopbackLab, saved

DAY = 86400


@pytest.fixture(scope="module")
def lab(clocked_sb):
    return LoopbackLab(clocked_sb)  # the owner's phone shares only when asked: nothing is shared here


def waiting(peer) -> dict:
    body = peer.memories()
    return {k: body.get(k) for k in ("preparing", "failed", "recovery")}


def test_the_seven_days_run_from_the_key_change_not_from_the_save(lab, clock):
    author = lab.pair("rekeyed", "memory.save")
    row = saved(author)
    clock.advance(3 * DAY)
    # the same client_id paired again with another key: the same connection, a new key
    author = lab.pair("rekeyed", "memory.save", key_name="rekeyed, second key")
    assert waiting(author)["preparing"] == [row["id"]]
    clock.advance(6 * DAY)  # 9 days after the save, 6 after the key change: still asking
    for _ in range(2):  # (a read past the 7 days would ask once more, then say failed)
        assert waiting(author) == {"preparing": [row["id"]], "failed": None, "recovery": "read_again_later"}
    clock.advance(1.5 * DAY)  # 7.5 days after the key change: stopped asking
    assert waiting(author) == {"preparing": None, "failed": [row["id"]], "recovery": "stopped_asking"}
