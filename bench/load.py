"""`Connection.load()` end to end from the sandbox: one GET of every row, every row read with
the connection's key, the Vault built (DataFrames are lazy and measured by bench/frames.py).

Each repeat builds a fresh `Connection` on the same key and token (an empty key cache) and drops
the answer the sandbox keeps between reads, loads once cold and once more on the unchanged rows
(which the sandbox then answers from what it kept, as nothing changed); the best of each counts.

Targets: the first load ≥ 75 % of (a) and ≥ 1.5× the Node peer; a reload of the unchanged
rows ≥ 10× faster than the first (keys cached by kid, so no RSA work).
"""

from __future__ import annotations

import time

from .context import Context
from .report import Figure, info, missing, relative
from .stage import same_pairing

FIRST, RELOAD = "load() first", "load() reload"


def run(ctx: Context) -> list[Figure]:
    if ctx.conn is None:
        why = ctx.setup_error or "no connection"
        return [missing(FIRST, "≥ 75 % of (a)", why), missing(RELOAD, "≥ 10× faster than first", why)]
    n, memories = len(ctx.served), len(ctx.dataset.memory_ids)

    ctx.say(f"load() of {n:,} rows: cold, then again on unchanged rows, {ctx.sizes.repeats}×")
    t_first = t_again = float("inf")
    from decoy_lab.sandbox.rules import readcache

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
                return [missing(FIRST, "≥ 75 % of (a)", f"load() read {got} memories, expected {memories}")]
        t_first, t_again = min(t_first, t1 - t0), min(t_again, t2 - t1)
        ctx.vault = again

    rate = n / t_first
    figures = []
    note = f"{n:,} rows in {t_first:.2f} s, GET and Vault included"
    if ctx.limit_rate:
        figures.append(relative(FIRST, rate, "rows/s", ctx.limit_rate, 0.75, "≥ 75 % of (a)", note))
    else:
        figures.append(info(FIRST, rate, "rows/s", note + "; (a) not measured in this run"))
    if ctx.node_rate:
        figures.append(relative("load() first vs Node", rate, "rows/s", ctx.node_rate, 1.5, "≥ 1.5× (c)"))
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
