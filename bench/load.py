"""`Connection.load()` end to end from the sandbox: one GET of every row, every row read with
the connection's key, the Vault built (DataFrames are lazy and measured by bench/frames.py).

Targets: the first load ≥ 70 % of (a) and ≥ 1.5× the Node peer; a reload of the unchanged
rows ≥ 10× faster than the first (keys cached by kid, so no RSA work).
"""
from __future__ import annotations

import time

from .context import Context, best_of
from .report import Figure, missing, relative

FIRST, RELOAD = "load() first", "load() reload"


def run(ctx: Context) -> list[Figure]:
    if ctx.conn is None:
        why = ctx.setup_error or "no connection"
        return [missing(FIRST, "≥ 70 % of (a)", why), missing(RELOAD, "≥ 10× faster than first", why)]
    n, memories = len(ctx.served), len(ctx.dataset.memory_ids)

    ctx.say(f"load() of {n:,} rows, cold key cache")
    t0 = time.perf_counter()
    vault = ctx.conn.load()
    t_first = time.perf_counter() - t0
    got = vault.counts()["memories"] if hasattr(vault, "counts") else len(vault.memories)
    if got != memories:
        return [missing(FIRST, "≥ 70 % of (a)", f"load() read {got} memories, expected {memories}")]
    ctx.say("load() again, unchanged rows")
    t_again, again = best_of(max(ctx.sizes.repeats, 3), ctx.conn.load)
    ctx.vault = again

    rate = n / t_first
    figures = []
    if ctx.limit_rate:
        figures.append(relative(FIRST, rate, "rows/s", ctx.limit_rate, 0.70, "≥ 70 % of (a)",
                                f"{n:,} rows in {t_first:.2f} s, GET and Vault included"))
    if ctx.node_rate:
        figures.append(relative("load() first vs Node", rate, "rows/s", ctx.node_rate, 1.5, "≥ 1.5× (c)"))
    figures.append(relative(RELOAD, t_first / t_again, "× faster", 1.0, 10.0, "≥ 10× faster than first",
                            f"{t_again:.3f} s for {n:,} unchanged rows"))
    return figures
