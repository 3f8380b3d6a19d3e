"""A hostile `GET /memories` cannot make the streaming reader eat memory or the stack: nesting
deeper than any row ends the load in `AnswerRefused` (a DecoyError), asked once — the same answer
would come again, so it is not retried; one row over the cap is that row unreadable, asked once."""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import AnswerRefused
from decoy_lab.transport.jsonstream import MAX_ELEMENT
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, MEMORIES


def _load(body: bytes, refused: bool = True) -> tuple[object, list[str]]:
    asked: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == MEMORIES:
            asked.append(request.url.path)
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        return httpx.Response(200, json={"spaces": []})

    conn = Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=Tokens(access_token="t"),
        transport=httpx.MockTransport(handle),
        retries=3,
        backoff=0.0,
        sleep=lambda s: None,
    )
    if not refused:
        return conn.load(), asked
    with pytest.raises(AnswerRefused) as info:
        conn.load()
    return info.value, asked


def test_a_row_over_the_cap_is_unreadable_and_asked_once():
    """Spec: "Maximum decoded size 100 KiB" for a ciphertext — no served row comes near 1 MiB. The
    answer came in one piece (no socket): the row is parsed whole, and still unreadable by size."""
    body = b'{"memories": [{"id": "a", "ciphertext": "' + b"A" * (MAX_ELEMENT + 1) + b'"}]}'
    vault, asked = _load(body, refused=False)
    assert "over the 1,048,576-character cap" in vault.unreadable()["a"]  # type: ignore[attr-defined]
    assert asked == [MEMORIES]


def test_deep_nesting_is_refused_by_name():
    body = b'{"memories": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    err, asked = _load(body)
    assert "nested too deeply" in str(err)
    assert asked == [MEMORIES]
