"""100,000 memories: the cold first load in a new process, its peak memory, and the cached
reopen. Staged on a sandbox of their own (sealed and POSTed like the main rows, in 1,000
topics), each load in a fresh process as in bench/reopen.py.

Memory must grow linearly with the rows: the peak RSS the load adds is printed per 10,000 rows,
next to the same figure for the main 10,000-memory run (bench/reopen.py's cold load), so the two
can be compared (linear growth makes them about equal).
"""

from __future__ import annotations

import dataclasses
import tempfile

from .context import Context
from .data import generate
from .reopen import PROFILE, in_new_process, save_profile
from .report import Figure, check, info, missing

COLD, RSS, REOPEN = "large vault: load() cold", "large vault: peak RSS per 10,000 rows", "large vault: reopen"


def run(ctx: Context) -> list[Figure]:
    from .stage import api_of, pair, start_sandbox, upload

    n = ctx.sizes.large
    label = f"{n:,} memories"
    if ctx.setup_error:
        return [missing(f"{COLD} ({label})", "", ctx.setup_error)]
    ctx.say(f"staging {label} on a sandbox of their own")
    sb = start_sandbox(seed="none")
    try:
        conn = pair(sb, "bench large")
        sizes = dataclasses.replace(ctx.sizes, memories=n, topics=max(10, n // 100))
        data = generate(conn.agent_key, conn.keys(), sizes, workers=ctx.workers)
        created = upload(api_of(conn), data.batches)
        if created != len(data):
            return [missing(f"{COLD} ({label})", "", f"the sandbox created {created} of {len(data)} rows")]
        with tempfile.TemporaryDirectory(prefix="decoy-bench-") as directory:
            save_profile(conn, directory)
            ctx.say(f"load() of {len(data):,} rows in new processes: cold, then reopened")
            cold = in_new_process(directory, PROFILE)
            again = in_new_process(directory, PROFILE)
        conn.close()
    finally:
        sb.stop()
    if cold["memories"] != n or again["memories"] != n:
        return [missing(f"{COLD} ({label})", "", f"read {cold['memories']} / {again['memories']} memories")]
    rows = cold["rows"]
    per_10k = (cold["rss_peak_kib"] - cold["rss_before_kib"]) / 1024 / (rows / 10_000)
    small = ctx.extra.get("cold_rss_per_10k_mib")
    linear = small is None or per_10k <= 1.5 * small
    return [
        info(f"{COLD} ({label})", cold["seconds"], "s", f"{rows:,} rows, {rows / cold['seconds']:,.0f} rows/s"),
        check(
            RSS,
            per_10k,
            "MiB",
            linear,
            "linear: ≤ 1.5× the 10,000-memory figure",
            f"{per_10k / small:.2f}× the 10,000-memory run's {small:.0f} MiB" if small else "",
            f"peak {cold['rss_peak_kib'] / 1024:,.0f} MiB for {rows:,} rows (the load adds "
            f"{(cold['rss_peak_kib'] - cold['rss_before_kib']) / 1024:,.0f} MiB)",
        ),
        info(
            f"{REOPEN} ({label})",
            again["seconds"],
            "s",
            f"{cold['seconds'] / again['seconds']:.0f}× faster than cold, {again['read']} rows opened",
        ),
    ]
