"""The streaming reader (decoy_lab/transport/jsonstream.py) on one large element: a `GET /memories` answer
whose only row holds a 1 MiB and then a 16 MiB string, fed in 64 KiB chunks as httpx hands them
out. Its cost per element must grow linearly (it grew 4× per doubling: 11.5 s for 16 MiB).
ijson's C backend (yajl2_c) is timed on the same bytes when it is installed, for comparison;
the reader kept is the faster one (see jsonstream.py).

Target: the 16 MiB element in ≤ 1 s (it took 11.5 s). The cost per MiB of both is printed: at
these sizes it is memory traffic, a few ms per MiB, not parsing again.
"""

from __future__ import annotations

import base64
import json
import os
import time

from .context import Context
from .report import Figure, check, info

CHUNK = 1 << 16
SIZES = {"1 MiB": 1 << 20, "16 MiB": 16 << 20}


def _answer(size: int) -> bytes:
    blob = base64.b64encode(os.urandom(size * 3 // 4)).decode("ascii")
    return json.dumps({"memories": [{"id": "x", "ciphertext": blob}], "preparing": []}).encode()


def _own(data: bytes) -> float:
    from decoy_lab.transport.jsonstream import ArrayStream

    t0 = time.perf_counter()
    parser = ArrayStream("memories", max_element=len(data))  # over the 1 MiB cap on purpose
    got = [e for i in range(0, len(data), CHUNK) for e in parser.feed(data[i : i + CHUNK])]
    parser.close()
    assert len(got) == 1
    return time.perf_counter() - t0


def _ijson(data: bytes) -> float | None:
    try:
        import ijson
    except ImportError:
        return None
    t0 = time.perf_counter()
    out = ijson.sendable_list()
    coro = ijson.items_coro(out, "memories.item")
    for i in range(0, len(data), CHUNK):
        coro.send(data[i : i + CHUNK])
    coro.close()
    assert len(out) == 1
    return time.perf_counter() - t0


def run(ctx: Context) -> list[Figure]:
    ctx.say("the streaming reader on one 1 MiB and one 16 MiB element")
    times, theirs = {}, {}
    for label, size in SIZES.items():
        data = _answer(size)
        times[label] = min(_own(data) for _ in range(2))
        theirs[label] = _ijson(data)
    small, big = times["1 MiB"], times["16 MiB"]
    ij = theirs["16 MiB"]
    note = f"ijson yajl2_c on the same bytes: {ij:.2f} s" if ij is not None else "ijson not installed"
    return [
        info("stream reader, one 1 MiB element", small, "s", f"{CHUNK // 1024} KiB chunks"),
        check(
            "stream reader, one 16 MiB element",
            big,
            "s",
            big <= 1.0,
            "≤ 1 s (was 11.5 s)",
            f"{big / 16 * 1000:.1f} ms per MiB (1 MiB: {small * 1000:.1f} ms)",
            note,
        ),
    ]
