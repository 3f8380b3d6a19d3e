"""`Connection.load()` end to end from the sandbox: one GET of every row, every row read with
the connection's key, the Vault built (DataFrames are lazy and measured by bench/frames.py).

Each repeat builds a fresh `Connection` on the same key and token (an empty key cache) and drops
the answer the sandbox keeps between reads, loads once cold and once more on the unchanged rows
(which the sandbox then answers from what it kept, as nothing changed); the best of each counts.

Targets: the first load ≥ 75 % of (a) and ≥ 1.5× the Node peer; a reload of the unchanged
rows ≥ 10× faster than the first (keys cached by kid, so no RSA work). (a) and the Node peer are
each measured just before and just after the loads (the faster counts), as beside every other
figure set against them: this host's speed drifts by a third over minutes, so a rate from earlier
in the run would judge the host, not the load.
"""

from __future__ import annotations

import json
import subprocess
import time

from .context import Context
from .report import Figure, missing, relative
from .stage import same_pairing
from .unwrap import SAMPLE, node_peer, rsa_limit_around

FIRST, RELOAD = "load() first", "load() reload"


def node_rate(ctx: Context) -> float | None:
    """(c) on the bench's rows, once, now: rows/s, or None when the Node peer cannot run (its
    figure in unwrap.py says why)."""
    if ctx.node_rate is None:  # it did not run in unwrap.py either
        return None
    try:
        peer = node_peer(ctx.served, ctx.dataset.agent_key, ctx.workers, 1)
    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None
    return len(ctx.served) / peer["best_seconds"]


def run(ctx: Context) -> list[Figure]:
    if ctx.conn is None:
        why = ctx.setup_error or "no connection"
        return [missing(FIRST, "≥ 75 % of (a)", why), missing(RELOAD, "≥ 10× faster than first", why)]
    n, memories = len(ctx.served), len(ctx.dataset.memory_ids)

    ctx.say(f"load() of {n:,} rows: cold, then again on unchanged rows, {ctx.sizes.repeats}×")
    from decoy_lab.sandbox.checks import readcache

    def loads() -> tuple[float, float] | str:
        """The best first and best reload over the repeats, or what went wrong."""
        t_first = t_again = float("inf")
        for _ in range(ctx.sizes.repeats):
            conn = same_pairing(ctx.conn, profile=None)  # an empty key cache: the first load opens every key
            readcache.of(ctx.sandbox.state).clear()  # a first load meets a server that kept nothing for it
            try:
                t0 = time.perf_counter()
                vault = conn.load()
                t1 = time.perf_counter()
                again = conn.load()
                t2 = time.perf_counter()
            finally:
                conn.close()
            for v in (vault, again):
                got = v.counts()["memories"]
                if got != memories:
                    return f"load() read {got} memories, expected {memories}"
            t_first, t_again = min(t_first, t1 - t0), min(t_again, t2 - t1)
            ctx.vault = again
        return t_first, t_again

    def loads_beside_node() -> tuple[tuple[float, float] | str, float | None]:
        """The loads, with the Node peer run just before and just after them (the faster counts)."""
        before = node_rate(ctx)
        timed = loads()
        after = node_rate(ctx)
        return timed, max(before or 0, after or 0) or None

    (timed, node), limit, how = rsa_limit_around(
        ctx, ctx.served[:SAMPLE], ctx.conn.agent_key.private_key, loads_beside_node
    )
    if isinstance(timed, str):
        return [missing(FIRST, "≥ 75 % of (a)", timed)]
    t_first, t_again = timed

    rate = n / t_first
    figures = []
    note = f"{n:,} rows in {t_first:.2f} s, GET and Vault included, best of {ctx.sizes.repeats}; {how}"
    figures.append(relative(FIRST, rate, "rows/s", limit, 0.75, "≥ 75 % of (a)", note))
    if node:
        said = f"(c) run on the same rows just before and just after the loads: {node:,.0f} rows/s, the faster"
        figures.append(relative("load() first vs Node", rate, "rows/s", node, 1.5, "≥ 1.5× (c)", said))
    figures.append(
        relative(
            RELOAD,
            t_first / t_again,
            "× faster",
            1.0,
            10.0,
            "≥ 10× faster than first",
            f"{t_again:.3f} s for {n:,} unchanged rows",
        )
    )
    return figures
