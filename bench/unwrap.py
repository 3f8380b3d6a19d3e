"""Unwrap and open every row three ways, on the same rows, in one run:

(a) the machine's limit — a bare loop of RSA-OAEP-SHA256 unwrap + AES-GCM open (envelope and
    ciphertext) on one thread per core; pyca/cryptography releases the GIL in OpenSSL calls;
(b) decoy_lab's `read_memory_rows` (parallel by default);
(c) the Node peer (bench/node_peer.mjs, WebCrypto) doing the work (b) does.

Targets: (b) ≥ 85 % of (a) and ≥ 1.5 × (c).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from decoy_lab.memory import read_memory_rows
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import OAEP

from .context import Context, best_of
from .report import Figure, info, missing, relative

NODE_PEER = Path(__file__).with_name("node_peer.mjs")
SAMPLE = 4_000  # rows (a) is measured on beside a figure (rsa_limit)
T = TypeVar("T")
VAULT_BODY = len(wire.VAULT_HEADER) + wire.NONCE_LEN  # where a VAULT blob's ciphertext starts


def _raw_open(rows: list[dict], private_key) -> int:
    """The least work that opens a row: base64, RSA-OAEP unwrap, two AES-GCM opens. No checks
    beyond what the primitives do; this is the ceiling, not a reader."""
    opened = 0
    b64 = base64.b64decode
    for row in rows:
        env = b64(row["wrapped_key"])
        n = int.from_bytes(env[:2], "big")
        content_key = private_key.decrypt(env[2 : 2 + n], OAEP)
        key = AESGCM(content_key).decrypt(env[2 + n : 2 + n + wire.NONCE_LEN], env[2 + n + wire.NONCE_LEN :], None)
        blob = b64(row["ciphertext"])
        AESGCM(key).decrypt(blob[len(wire.VAULT_HEADER) : VAULT_BODY], blob[VAULT_BODY:], None)
        opened += 1
    return opened


def machine_limit(rows: list[dict], private_key, workers: int) -> int:
    """(a): the bare loop over `workers` threads, one contiguous share of the rows each."""
    if workers <= 1:
        return _raw_open(rows, private_key)
    shares = [rows[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(lambda s: _raw_open(s, private_key), shares))


def rsa_limit(ctx: Context, rows: list[dict], private_key: Any) -> tuple[float, str]:
    """(a) in rows/s, `machine_limit` on `rows`, measured now: a figure set
    beside it is measured next to it (this host's speed drifts by a third over minutes, so
    unwrap's figure from earlier in the run would judge the host, not the code)."""
    best, _ = best_of(2, lambda: machine_limit(rows, private_key, ctx.workers))
    said = f" (unwrap's, earlier in this run: {ctx.limit_rate:,.0f} rows/s)" if ctx.limit_rate else ""
    return len(rows) / best, f"(a) measured on {len(rows):,} of the rows, {ctx.workers} threads{said}"


def rsa_limit_around(ctx: Context, rows: list[dict], private_key: Any, run: Callable[[], T]) -> tuple[T, float, str]:
    """`run()`'s result, and (a) measured on `rows` just before and just after it: the faster of
    the two (the stricter target), with how it was measured."""
    before = rsa_limit(ctx, rows, private_key)
    out = run()
    after = rsa_limit(ctx, rows, private_key)
    rate, how = max(before, after)
    return out, rate, f"{how}, just before / after: {before[0]:,.0f} / {after[0]:,.0f} rows/s"


def node_peer(rows: list[dict], agent_key, workers: int, repeats: int) -> dict:
    """(c): run node_peer.mjs on the rows; the private key goes through a 0600 temp file that is
    removed straight after."""
    node = shutil.which("node")
    if not node:
        raise RuntimeError("node is not on PATH")
    pkcs8 = agent_key.private_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    payload = {
        "pkcs8_b64": base64.b64encode(pkcs8).decode("ascii"),
        "repeats": repeats,
        "in_flight": 64,
        "rows": [{k: r[k] for k in ("id", "kid", "ciphertext", "wrapped_key")} for r in rows],
    }
    fd, path = tempfile.mkstemp(prefix="decoy-bench-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        env = {**os.environ, "UV_THREADPOOL_SIZE": str(max(workers, 1))}
        out = subprocess.run([node, str(NODE_PEER), path], capture_output=True, text=True, env=env, timeout=600)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise RuntimeError(f"node_peer.mjs failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(ctx: Context) -> list[Figure]:
    rows, key = ctx.served, ctx.dataset.agent_key
    n, memories = len(rows), len(ctx.dataset.memory_ids)
    figures: list[Figure] = []

    ctx.say(f"(a) machine limit and (b) read_memory_rows, interleaved, on {n:,} rows, {ctx.workers} threads")
    machine_limit(rows[:200], key.private_key, ctx.workers)  # warm up: thread start, first-call costs
    read_memory_rows(rows[:200], key)
    t_one = t_all = t_rmr = float("inf")
    got: list = []
    for _ in range(max(ctx.sizes.repeats, 2)):  # alternate so background load hits both alike
        t, opened = best_of(1, lambda: machine_limit(rows, key.private_key, 1))
        t_one = min(t_one, t)
        t, opened = best_of(1, lambda: machine_limit(rows, key.private_key, ctx.workers))
        if opened != n:
            raise RuntimeError(f"the raw loop opened {opened} of {n} rows")
        t_all = min(t_all, t)
        t, got = best_of(1, lambda: read_memory_rows(rows, key))
        t_rmr = min(t_rmr, t)
    single = n / t_one
    ctx.limit_rate = n / t_all
    figures.append(info("(a) machine limit, 1 thread", single, "rows/s"))
    figures.append(
        info(
            f"(a) machine limit, {ctx.workers} threads",
            ctx.limit_rate,
            "rows/s",
            f"{n:,} rows in {t_all:.2f} s ({ctx.limit_rate / single:.2f}× one thread)",
        )
    )
    if len(got) != memories:
        figures.append(
            missing(
                "read_memory_rows",
                "≥ 85 % of (a)",
                f"returned {len(got)} memories, expected {memories}: figures would mislead",
            )
        )
        return figures
    rmr_rate = n / t_rmr
    figures.append(
        relative(
            "read_memory_rows",
            rmr_rate,
            "rows/s",
            ctx.limit_rate,
            0.85,
            "≥ 85 % of (a)",
            f"{n:,} rows in {t_rmr:.2f} s",
        )
    )

    ctx.say("(c) Node WebCrypto peer")
    try:
        peer = node_peer(rows, key, ctx.workers, ctx.sizes.repeats)
    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        figures.append(missing("(c) Node WebCrypto peer", "", str(exc)))
        figures.append(missing("read_memory_rows vs Node", "≥ 1.5× (c)", "the Node peer did not run"))
        return figures
    if peer.get("memories") != memories or peer.get("unreadable"):
        figures.append(
            missing(
                "(c) Node WebCrypto peer",
                "",
                f"the peer read {peer.get('memories')} memories and {peer.get('unreadable')} "
                f"unreadable rows; expected {memories} and 0",
            )
        )
        return figures
    ctx.node_rate = n / peer["best_seconds"]
    figures.append(
        info(
            "(c) Node WebCrypto peer",
            ctx.node_rate,
            "rows/s",
            f"{n:,} rows in {peer['best_seconds']:.2f} s, UV_THREADPOOL_SIZE={ctx.workers}, "
            f"{ctx.node_rate / ctx.limit_rate:.0%} of (a)",
        )
    )
    figures.append(relative("read_memory_rows vs Node", rmr_rate, "rows/s", ctx.node_rate, 1.5, "≥ 1.5× (c)"))
    return figures
