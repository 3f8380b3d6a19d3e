"""Every rule `decoy-lab check` judges, as data, by area (each module's RULES, in this order):

base.py      what the rules share: rows written, topic names, pairings (rows served: model.Exchange)
rows.py      rows.*      each sealed row: wraps, kid, about, sizes
keys.py      rows.self-wrap-opens, writes.rotat*, deletes.*: a row's keys, rotations, deletions
topics.py    topics.*    find or create, one POST, never the user
writes.py    writes.*    unknown outcomes, revision conflicts
reading.py   reading.*   preparing rows, retry_after_seconds
access.py    access.*    permission_request, never re-pair
pairing.py   pairing.*   the device-code poll, slow_down, refresh, tokens out of URLs
outcome.py   outcome.*   the agent finished (exit 0) and no write of it was refused
contents.py  contents.*  what an opened row holds and the body carries; corrections by id; fresh keys
wraps.py     wraps.*     where grantee wraps go, and with which via
limits.py    limits.*    429: wait retry_after_seconds, then send again
accounts.py  accounts.*  the account family: the password, API keys, addresses, the owner's eye
"""

from __future__ import annotations

from decoy_lab.conformance.rulebook import Rule
from decoy_lab.conformance.rules import (
    access,
    accounts,
    contents,
    keys,
    limits,
    outcome,
    pairing,
    reading,
    rows,
    topics,
    wraps,
    writes,
)

RULES: list[Rule] = [
    *outcome.RULES,
    *rows.RULES,
    *keys.RULES,
    *topics.RULES,
    *writes.RULES,
    *reading.RULES,
    *access.RULES,
    *pairing.RULES,
    *contents.RULES,
    *wraps.RULES,
    *limits.RULES,
    *accounts.RULES,
]
BY_ID = {r.id: r for r in RULES}

__all__ = ["BY_ID", "RULES"]
