"""A hostile `GET /memories` cannot make the streaming reader eat memory or the stack: one value
over the cap, or nesting deeper than any row, ends the load in `AnswerRefused` (a DecoyError),
asked once — the same answer would come again, so it is not retried."""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import AnswerRefused
from decoy_lab.transport.jsonstream import MAX_ELEMENT
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, MEMORIES


def _load(body: bytes) -> tuple[BaseException, list[str]]:
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
    with pytest.raises(AnswerRefused) as info:
        conn.load()
    return info.value, asked


def test_a_row_over_the_cap_is_refused_once_not_retried():
    """Spec: "Maximum decoded size 100 KiB" for a ciphertext — no served row comes near 1 MiB."""
    body = b'{"memories": [{"id": "a", "ciphertext": "' + b"A" * (MAX_ELEMENT + 1) + b'"}]}'
    err, asked = _load(body)
    assert "over 1,048,576 characters" in str(err)
    assert asked == [MEMORIES]


def test_deep_nesting_is_refused_by_name():
    body = b'{"memories": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    err, asked = _load(body)
    assert "nested too deeply" in str(err)
    assert asked == [MEMORIES]
