"""Two faults of a streamed `GET /memories`, served by a real socket: one element far over any row's
size costs the load that row only (it is unreadable, with its reason, and the others are read),
and a body that keeps the connection busy without sending rows — whitespace dripped, or one row
trickled — ends once no new row comes within the timeout, not after the whole body's deadline
(ten times it)."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import TransportError
from decoy_lab.transport.jsonstream import MAX_ELEMENT
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, MEMORIES, SERVED_GOOD
from support.sockets import serving, whole

TIMEOUT = 1.0
# docs/internals.md: "Every call has an overall deadline (the `timeout`)": a load ends within it.
# MARGIN is what two busy cores may add (thread switches, the connect, loopback reads); still far
# less than the 10 s a body may take, so a load that waited for the whole body fails.
MARGIN = 3.0
BIG_ID = "9b0c2a4e-0000-4000-8000-00000000b16e"


def tokens() -> Tokens:
    return Tokens(access_token="AT", refresh_token="RT", token_id="tok-1", access_version=1)


def answering(memories: Any) -> Any:
    """`memories` (an Answer) for the rows, sound empty answers for the rest of a load."""

    def answer(method: str, path: str, body: bytes) -> Any:
        if path == MEMORIES:
            return memories
        if path == "/api/agent/context/spaces":
            return whole(200, {"spaces": []})
        return whole(404, {"code": "NOT_FOUND"})

    return answer


def streamed(parts: list[tuple[bytes, float]]) -> Any:
    """A 200 whose body is `parts`, each sent after its pause (no length: the close ends it)."""

    def send(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        for data, pause in parts:
            if stop.is_set():
                return
            time.sleep(pause)
            conn.sendall(data)

    return send


def dripping(prefix: bytes, drip: bytes, every: float) -> Any:
    """`prefix`, then `drip` every `every` s for 60 s: the socket is never idle as long as a read waits."""
    return streamed([(prefix, 0.0)] + [(drip, every)] * int(60 / every))


def load(url: str, retries: int = 0) -> tuple[Any, float]:
    conn = Connection(url, agent_key=AGENT, tokens=tokens(), timeout=TIMEOUT, retries=retries, backoff=0.0)
    started = time.monotonic()
    try:
        return conn.load(), time.monotonic() - started
    except TransportError as exc:
        return exc, time.monotonic() - started


# -- one element over the cap ------------------------------------------------------------------------
@pytest.mark.parametrize("id_first", [True, False], ids=["id before the ciphertext", "id after it"])
def test_a_10_mb_ciphertext_makes_its_row_unreadable_and_the_others_are_read(id_first):
    """Spec (the row's ciphertext): "Maximum decoded size 100 KiB" — a 10 MB one is no row this client
    can open, and must not cost the load the rows around it."""
    cipher = "A" * (10 << 20)
    big = {"id": BIG_ID, "ciphertext": cipher} if id_first else {"ciphertext": cipher, "id": BIG_ID}
    rows = [SERVED_GOOD, {**big, "kid": SERVED_GOOD["kid"], "rev": 1}, {**SERVED_GOOD, "id": "second-copy-id"}]
    with serving(answering(whole(200, {"memories": rows}))) as url:
        vault, _ = load(url)
    assert not isinstance(vault, BaseException), vault
    assert len(vault) == 3 and vault.counts()["memories"] == 1
    reason = vault.unreadable()[BIG_ID]
    size = len(json.dumps(rows[1]))
    assert f"row {BIG_ID}, element 2 " in reason
    assert f"is {size:,} characters, over the {MAX_ELEMENT:,}-character cap" in reason
    assert "at character " in reason and "skipped unread" in reason
    assert vault.memory(SERVED_GOOD["id"]) is not None, "the sound row before it is read"
    assert "second-copy-id" in vault.unreadable(), "the row after it is read too (its id does not match its seal)"
    assert "1 memory" in vault.summary and "2 unreadable" in vault.summary


def test_an_oversized_element_with_no_id_in_its_ends_is_named_by_its_place():
    """An element whose id is buried past the kept ends is still counted, by its place in the array."""
    big = {"a": "E" * 8192, "id": BIG_ID, "ciphertext": "B" * (3 << 20), "zz": "D" * 8192}
    with serving(answering(whole(200, {"memories": [big, SERVED_GOOD]}))) as url:
        vault, _ = load(url)
    assert not isinstance(vault, BaseException), vault
    assert vault.counts() | {"memories": 1, "unreadable": 1} == vault.counts()
    ((rid, reason),) = vault.unreadable().items()
    assert rid == "element 1 (id not read)" and reason.startswith("a row whose id could not be read cheaply")


# -- whitespace is not progress ----------------------------------------------------------------------
def test_whitespace_dripped_into_the_body_ends_the_load_within_the_timeout():
    """Before: each read got a byte, so only the body's deadline (10× the timeout) ended it."""
    with serving(answering(dripping(b'{"memories": [', b" ", 0.05))) as url:
        err, took = load(url)
    assert isinstance(err, TransportError), err
    assert f"no new row came within {TIMEOUT:g} s (0 so far)" in str(err) and "ask again" in str(err)
    assert took < TIMEOUT + MARGIN, f"{took:.2f} s"


def test_after_sound_rows_a_trickle_of_one_row_is_no_progress_either():
    row = json.dumps(SERVED_GOOD).encode()
    with serving(answering(dripping(b'{"memories": [' + row + b", " + row[:40], b"A", 0.05))) as url:
        err, took = load(url)
    assert isinstance(err, TransportError) and "(1 so far)" in str(err), err
    assert took < TIMEOUT + MARGIN, f"{took:.2f} s"


def test_each_retry_is_bounded_by_progress_too():
    """The issue's case: 40 s for `timeout=2` with one retry; now each attempt ends after one timeout."""
    with serving(answering(dripping(b'{"memories": [', b"\n", 0.05))) as url:
        err, took = load(url, retries=1)
    assert isinstance(err, TransportError), err
    assert took < 2 * TIMEOUT + 2 * MARGIN, f"{took:.2f} s"


def test_a_slow_answer_that_keeps_sending_rows_is_read_whole():
    """Progress, not speed: a row every 0.4 s takes 2.4 s in all — over the timeout, never stalled."""
    row = json.dumps(SERVED_GOOD).encode()
    parts = [(b'{"memories": [' + row, 0.0)] + [(b", " + row, 0.4)] * 5 + [(b'], "preparing": []}', 0.4)]
    with serving(answering(streamed(parts))) as url:
        vault, took = load(url)
    assert not isinstance(vault, BaseException), vault
    assert len(vault) == 6 and took > 2 * TIMEOUT
