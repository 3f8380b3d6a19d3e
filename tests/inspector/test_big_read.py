"""A big read streams through untouched, is kept in the record up to the cap, and every row it
served is opened with the agent's key (the client's parallel reader), compressed or not."""

from __future__ import annotations

import gzip
import json

import pytest

from decoy_lab import memory
from decoy_lab.inspector import Inspector, flow_record

pytestmark = pytest.mark.timeout(120)
MEMORIES = "/api/agent/context/memories"
N = 200


def _answer(agent_key, owner) -> bytes:
    keys = memory.RecipientKeys(owner.public_key_b64, agent_key.public_key_b64)
    rows = []
    for i in range(N):
        r = memory.new_memory_row(keys, f"Memory number {i}.")
        rows.append(
            {
                "id": r["id"],
                "kid": r["kid"],
                "rev": 1,
                "ciphertext": r["ciphertext"],
                "wrapped_key": r["self_wrap"],
                "via": ["self"],
                "mine": True,
            }
        )
    return json.dumps({"memories": rows, "preparing": []}).encode()


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_big_read_passes_through_and_every_row_opens(upstream, agent_key, owner, client, compressed):
    url, app = upstream
    app.answer, app.gzip = _answer(agent_key, owner), compressed
    wire = gzip.compress(app.answer, mtime=0) if compressed else app.answer
    cap = 32 * 1024
    assert len(wire) > 2 * cap
    with Inspector.start(upstream=url, agent_key=agent_key, cap=cap) as insp:
        with client.stream("GET", f"{insp.url}{MEMORIES}") as got:
            raw = b"".join(got.iter_raw())
        assert raw == wire  # the bytes as sent
        insp.settle()
        (flow,) = insp.all_flows()
    body = flow.response_body
    assert (body.size, body.truncated, flow.ended) == (len(wire), True, flow_record.ANSWERED)
    assert len(body.data) <= cap and app.answer.startswith(body.data[:1000])  # kept decoded, up to the cap
    assert len(flow.rows) == N and flow.verdict == flow_record.READABLE  # every row, past the cap too
    assert [r.text for r in flow.rows] == [f"Memory number {i}." for i in range(N)]
    assert {r.opened_by for r in flow.rows} == {"agent key"}
    assert any("gzip-encoded" in n for n in flow.notes) == compressed
    assert flow.rows[0].recipe_trace().ok and flow.rows[-1].recipe_trace() is None  # past the cap: not kept
    # the rows whole in the kept bytes keep what a trace is made from, the others not (counted as the
    # answer streamed, or parsed again from the kept bytes where they were decoded for the record)
    n = sum(end < len(body.data) for end in _element_ends(app.answer))
    assert 0 < n < N and [r.rerun is not None for r in flow.rows] == [i < n for i in range(N)]
    assert f"rows past the first {n:,} were opened as they streamed" in " ".join(flow.notes)


def _element_ends(answer: bytes) -> list[int]:
    """Where each element of the answer's memories array ends (json's own parser, element by element)."""
    text, decoder, ends = answer.decode(), json.JSONDecoder(), []
    at = text.index("[") + 1
    while True:
        while text[at] in " ,":
            at += 1
        if text[at] == "]":
            return ends
        _, at = decoder.raw_decode(text, at)
        ends.append(at)
