"""The owner approves an ask for two categories as asked, or narrowed to one, over HTTP.

Spec 001, grant-request status: `approved`, or "resolved (answered with changes: the request is gone
and the owner's edited grant stands)". The sandbox's owner surface approves with `narrow` (the rows
it grants instead): the status reads `resolved` unless those rows equal what was asked.
"""

from __future__ import annotations

import pytest

from decoy_lab.sandbox import Sandbox

from support.sandbox_kit import LoopbackLab

FOOD_AND_TRAVEL = {"permissions": ["memory.read"], "datatypes": ["food", "travel"]}


@pytest.fixture(scope="module")
def lab():
    with Sandbox.start(approve="manual", seed="none") as running:
        yield LoopbackLab(running)


def asked(lab, name: str) -> tuple:
    peer = lab.pair(name, "memory.save")  # the pairing is approved through the owner surface
    rid = lab.ask(peer, FOOD_AND_TRAVEL)["request_id"]
    return peer, rid


def answer(lab, peer, rid: str, narrow: list[dict]) -> tuple[str, list[str]]:
    r = lab.client.post("/_sandbox/approve", json={"ref": rid, "narrow": narrow})
    assert r.status_code == 200, r.text
    status = peer.get("/api/agent/grant-request", params={"id": rid}).json()["status"]
    return status, peer.get("/api/agent/policies").json()["access"]["memories"]["read"]["categories"]


def test_narrowed_to_one_of_the_two_categories_reads_resolved(lab):
    peer, rid = asked(lab, "narrowed")
    assert answer(lab, peer, rid, [{"permissions": ["memory.read"], "datatypes": ["food"]}]) == ("resolved", ["food"])


def test_the_same_rows_in_another_order_read_approved(lab):
    peer, rid = asked(lab, "as asked")
    narrow = [{"permissions": ["memory.read"], "datatypes": ["travel", "food"]}]
    assert answer(lab, peer, rid, narrow) == ("approved", ["food", "travel"])
