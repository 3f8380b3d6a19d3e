"""Reopening a saved connection in a new process: the sealed local cache (decoy_lab/store/cache.py)
plus the sync feed, against the cold first load of the same rows.

Every figure is the median of three `Connection.resume(...).load()`s, each in a fresh Python
process (`python -m bench.reopen child …`), timed around `load()` only (the interpreter and
imports are not part of it), on a profile saved in a temporary directory (never the user's); the
range of the three is printed beside it:

- cold: no cache file, and a sandbox that kept nothing from earlier reads;
- reopen, nothing changed: the cache written by the cold load; the sync feed says nothing
  changed, so no row is fetched and no key unwrapped;
- reopen after 1 % changed: 1 % of the memories edited (new text, same key) since the cache was
  written; one full GET, only the edited rows opened.

`load()` hands its vault back before the cache file is sealed and written (on a thread of its
own); how long after that the file was on disk is printed beside each figure.

Targets: reopen ≥ 20× faster than cold and faster than the machine's RSA limit (a) would allow
for the same rows; after 1 % changed ≥ 10× faster than cold.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .context import Context
from .report import Figure, missing, relative
from .unwrap import SAMPLE, rsa_limit_around

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "bench"
COLD, REOPEN, CHANGED = "load() cold, new process", "reopen, nothing changed", "reopen after 1 % changed"


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> int:
    """The resident set now, in KiB, after resetting the kernel's high-water mark (Linux), so the
    peak read after the load is the load's own."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return _status_kib("VmRSS")
    except OSError:  # not Linux: the peak of the whole process
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_rss() -> int:
    try:
        return _status_kib("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def cpu_waited() -> float | None:
    """Seconds, machine-wide, during which some runnable task waited for a core (Linux pressure
    stall information, `some` total); None where the kernel does not keep it."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as fh:
            some = fh.readline().split()
        return int(some[-1].split("=")[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def usage() -> tuple[float, float, int]:
    """This process's CPU so far, every thread's: (user s, system s, minor page faults). On a
    virtual machine that backs memory only once it is touched, the system time of a load that
    grows past what was recently used is mostly the first touch of each fresh page."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime, used.ru_stime, used.ru_minflt


def usage_since(before: tuple[float, float, int]) -> dict[str, float]:
    """`usage()` now less `before`, by name: what a timed stretch of this process used."""
    user, system, faults = (now - then for now, then in zip(usage(), before))
    return {"user_seconds": user, "system_seconds": system, "page_faults": faults}


def child(directory: str, profile: str) -> dict[str, Any]:
    """In the new process: resume the profile and time one load."""
    import httpx

    from decoy_lab.client.connection import Connection
    from decoy_lab.store.profiles import ProfileStore

    paths: list[str] = []
    http = httpx.Client(timeout=60.0, event_hooks={"request": [lambda r: paths.append(r.url.path)]})
    # as a notebook reconnects: /policies is read first (outside the timed load)
    conn = Connection.resume(profile, store=ProfileStore(directory, use_keyring=False), http=http)
    paths.clear()
    base = _reset_peak_rss()
    used0 = usage()  # every thread of this process: the unwrap pool's work included
    waited0 = cpu_waited()
    t0 = time.perf_counter()
    if os.environ.get("DECOY_BENCH_PROFILE"):  # where a reopen's time goes, on stderr
        import cProfile
        import pstats

        with cProfile.Profile() as prof:
            vault = conn.load()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumtime").print_stats(40)
    else:
        vault = conn.load()
    seconds = time.perf_counter() - t0
    used = usage_since(used0)
    waited1 = cpu_waited()
    from decoy_lab.store import cache

    t1 = time.perf_counter()
    cache.settle()  # the file is sealed and written after load() returns: how much longer that took
    writing = time.perf_counter() - t1
    peak = _peak_rss()
    conn.close()
    return {
        "seconds": seconds,
        "cpu_seconds": used["user_seconds"] + used["system_seconds"],
        **used,
        # the share of the load's time in which some task on the machine waited for a core
        "cpu_pressure": (waited1 - waited0) / seconds if waited0 is not None and waited1 is not None else None,
        "written_after": writing,
        "read": vault.read,
        "rows": len(vault.served),
        "memories": vault.counts()["memories"],
        "fetched_rows": "/api/agent/context/memories" in paths,
        "rss_before_kib": base,
        "rss_peak_kib": peak,
    }


def in_new_process(
    directory: str, profile: str = PROFILE, *, module: str = "bench.reopen", timeout: float = 900, root: Path = ROOT
) -> dict[str, Any]:
    """`python -m MODULE child DIRECTORY PROFILE` in a new process, on the code of the tree at
    `root` (this one unless told); the JSON its last line prints."""
    env = {**os.environ, "DECOY_LAB_KEYRING": "0", "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-m", module, "child", directory, profile],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the {module} process failed: {out.stderr.strip()[-600:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def save_profile(conn: Any, directory: str, profile: str = PROFILE) -> Any:
    """The bench's connection saved under `profile` in `directory` (same key and token)."""
    from decoy_lab.store.profiles import ProfileStore

    from .stage import same_pairing

    store = ProfileStore(directory, use_keyring=False)
    saved = same_pairing(conn, profile=profile, store=store)
    saved.save_profile()
    return saved, store


def edit_some(conn: Any, api: Any, served: list[dict], memory_ids: list[str], share: float) -> int:
    """Edit `share` of the memories in place (new text, same key): PUT with expected_rev."""
    from decoy_lab import memory

    keys = conn.keys()
    by_id = {r["id"]: r for r in served}
    picked = memory_ids[:: max(1, round(1 / share))]
    cache = memory.KeyCache()
    for mid in picked:
        row = by_id[mid]
        body = memory.edit_memory_row(row, {"text": f"edited {mid[:8]}"}, conn.agent_key, keys, key_cache=cache)
        api.request("PUT", "/api/agent/context/memories", json=body)
    return len(picked)


TRIALS = 3  # new processes per figure: the median is the figure, the range is printed beside it


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def _spread(runs: list[dict[str, Any]]) -> str:
    times = sorted(r["seconds"] * 1000 for r in runs)
    return f"median of {len(runs)} new processes, {times[0]:,.0f}–{times[-1]:,.0f} ms"


def run(ctx: Context) -> list[Figure]:
    if ctx.conn is None:
        why = ctx.setup_error or "no connection"
        return [missing(n, "", why) for n in (COLD, REOPEN, CHANGED)]
    from decoy_lab.sandbox.checks import readcache

    from .stage import api_of

    with tempfile.TemporaryDirectory(prefix="decoy-bench-") as directory:
        _saved, store = save_profile(ctx.conn, directory)
        ctx.say(f"load() in new processes, {TRIALS} of each: cold, reopened unchanged, reopened after 1 % changed")

        def cold_loads() -> list[dict[str, Any]]:
            out = []
            for _ in range(TRIALS):  # each with no cache file and a sandbox that kept nothing
                store.cache_path(PROFILE).unlink(missing_ok=True)
                readcache.of(ctx.sandbox.state).clear()
                out.append(in_new_process(directory))
            return out

        # (a) just before and after the cold loads, as beside every figure set against it
        colds, limit, how = rsa_limit_around(ctx, ctx.served[:SAMPLE], ctx.conn.agent_key.private_key, cold_loads)
        size = store.cache_path(PROFILE).stat().st_size
        agains = [in_new_process(directory) for _ in range(TRIALS)]
        changes = []
        for i in range(TRIALS):  # another 1 % each time (every 100th memory from offset i)
            edited = edit_some(ctx.conn, api_of(ctx.conn), ctx.served, ctx.dataset.memory_ids[i:], 0.01)
            changes.append(in_new_process(directory))
    cold, again, changed = _median(colds), _median(agains), _median(changes)
    spread = {name: _spread(runs) for name, runs in ((COLD, colds), (REOPEN, agains), (CHANGED, changes))}
    memories = len(ctx.dataset.memory_ids)
    for got in (*colds, *agains, *changes):
        if got["memories"] != memories:
            return [missing(COLD, "", f"a load read {got['memories']} memories, expected {memories}")]
    n = cold["rows"]
    per_10k = (cold["rss_peak_kib"] - cold["rss_before_kib"]) / 1024 / (n / 10_000)
    ctx.extra["cold_rss_per_10k_mib"] = per_10k
    figures = []
    cold_rate = n / cold["seconds"]
    note = (
        f"{spread[COLD]}; {n:,} rows in {cold['seconds']:.2f} s; the cache it wrote ({size / 1e6:.1f} MB) was on disk "
        f"{cold['written_after'] * 1000:.0f} ms after load() returned; "
        f"peak RSS {cold['rss_peak_kib'] / 1024:,.0f} MiB, {per_10k:.0f} MiB per 10,000 rows added by the load"
    )
    figures.append(relative(COLD, cold_rate, "rows/s", limit, 0.75, "≥ 75 % of (a)", f"{note}; {how}"))
    figures.append(
        relative(
            REOPEN,
            cold["seconds"] / again["seconds"],
            "× faster",
            1.0,
            20.0,
            "≥ 20× faster than cold",
            f"{spread[REOPEN]}; {again['seconds'] * 1000:.0f} ms for {n:,} rows, {again['read']} opened, "
            + ("the rows fetched" if again["fetched_rows"] else "no rows fetched"),
        )
    )
    rate = n / again["seconds"]
    figures.append(
        relative(
            "reopen vs the RSA limit",
            rate,
            "rows/s",
            limit,
            1.0,
            "faster than (a) allows",
            f"{rate / limit:.1f}× what (a) could open in that time",
        )
    )
    figures.append(
        relative(
            CHANGED,
            cold["seconds"] / changed["seconds"],
            "× faster",
            1.0,
            10.0,
            "≥ 10× faster than cold",
            f"{spread[CHANGED]}; {changed['seconds'] * 1000:.0f} ms; {edited} memories edited, "
            f"{changed['read']} rows opened; "
            f"the cache rewritten {changed['written_after'] * 1000:.0f} ms after load() returned",
        )
    )
    return figures


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        sys.exit("usage: python -m bench.reopen child DIRECTORY PROFILE")
