"""The kid check compares the whole kid: a served row whose `kid` agrees with the unwrapped key's
kid on a prefix (or on all but one hex digit) is refused, and leaves nothing in the key cache for
that kid. A server that could pass a near-miss kid could pair a wrap with another key's rows."""

from __future__ import annotations

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import UnreadableRow
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.memory_cast import craft, plain_memory


def _flip(digit: str) -> str:
    return "0" if digit != "0" else "1"


def _near_misses(kid: str) -> list[str]:
    return [
        kid[:8] + "".join(_flip(d) for d in kid[8:]),  # the first 8 hex digits agree
        kid[:-1] + _flip(kid[-1]),  # all but the last
        _flip(kid[0]) + kid[1:],  # all but the first
        kid[:8],  # only the prefix, served short
        kid + "00",  # the kid with more after it
    ]


@pytest.mark.parametrize("which", range(5))
def test_a_kid_that_agrees_only_in_part_is_refused(c, which):
    key = random_key()
    kid = wire.kid(key)
    assert len(kid) == 16
    served = craft(plain_memory("r1"), c.agent, row_id="r1", key=key, kid=_near_misses(kid)[which])
    cache: dict[str, bytes] = {}
    with pytest.raises(UnreadableRow, match="kid check failed"):
        M.read_memory_row(served, c.agent, key_cache=cache)
    assert cache == {}
    right = craft(plain_memory("r1"), c.agent, row_id="r1", key=key)  # the same row under its own kid: read
    assert M.read_memory_row(right, c.agent, key_cache=cache).id == "r1"
    assert set(cache) == {kid}
