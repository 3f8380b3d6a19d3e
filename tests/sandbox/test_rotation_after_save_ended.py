"""An author that no longer holds "Save memories" rotates its memory's key, over HTTP.

Spec 001, PUT memories: "The caller's own wrap keeps the reasons it reads the memory by, plus any
in `self_via` it holds." Without memory.save it holds no `self` ("what it saved is its own to read
and edit while it holds it"), so `self` in its `self_via` — as decoy_lab.memory sends it — is left
out, and stays out once Save memories is granted again: a reason is live only when the wrap
records it (memwrites.py).
"""

from __future__ import annotations

import pytest

from support.memories_kit import PUT, rotation
from support.sandbox_kit import LoopbackLab, saved

TRAVEL_EDIT = {"permissions": ["memory.edit"], "datatypes": ["travel"]}


@pytest.fixture(scope="module")
def lab(sb):
    return LoopbackLab(sb)


def test_self_via_naming_self_without_save_keeps_only_what_it_reads_by(lab):
    author = lab.pair("lapsed author", "memory.save")
    lab.ask(author, TRAVEL_EDIT)  # a grant of its own, kept when Save memories is revoked
    row = saved(author, categories=["travel"])
    assert author.served(row["id"])["via"] == ["self", "category:travel"]
    [save_policy] = [
        p
        for p in author.get("/api/agent/policies").json()["policies"]
        if p["permissions"][0]["permissions"] == ["memory.save"]
    ]
    lab.owner.revoke(author.token_id, save_policy["id"])
    assert author.served(row["id"])["via"] == ["category:travel"]
    body, _ = rotation(author, row["id"], lab, self_via=["self", "category:travel"])
    r = author.put(PUT, body)
    assert r.status_code == 200, r.text
    assert author.served(row["id"])["via"] == ["category:travel"]
    assert author.read(row["id"]).text == "Lisbon: Fridays only."
    lab.ask(author, {"permissions": ["memory.save"]})  # granted again (auto-approved)
    assert author.served(row["id"])["via"] == ["category:travel"]
