"""`python -m bench [--quick] [--no-targets] [--only NAME,…] [--write-readme]`

Runs every benchmark in one process on one set of rows and prints each figure next to its
target. Exit status 0 when every benchmark ran (a MISS is a figure, not a failure); 2 when a
benchmark crashed (its figure then reads NOT MEASURED with the reason).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from . import (
    accounts,
    browse,
    check,
    frames,
    inspect,
    large,
    load,
    owner,
    recipe,
    reopen,
    responsive,
    sandbox,
    stage,
    steady,
    stream,
    topicmap,
    unwrap,
    widgets,
)
from .context import Context
from .data import FULL, QUICK
from .readme import write_readme
from .report import Figure, load_average, machine, missing, rsa_call, table

BENCHMARKS = {
    "unwrap": unwrap,
    "load": load,
    "reopen": reopen,
    "steady": steady,
    "stream": stream,
    "large": large,
    "accounts": accounts,
    "frames": frames,
    "topicmap": topicmap,
    "widgets": widgets,
    "browse": browse,
    "owner": owner,
    "sandbox": sandbox,
    "recipe": recipe,
    "inspect": inspect,
    "check": check,
    "responsive": responsive,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="scaled-down sizes (1,000 memories, 5 s of writers)")
    p.add_argument("--no-targets", action="store_true", help="print figures without PASS / MISS")
    p.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    p.add_argument("--offline", action="store_true", help="no sandbox: only the benchmarks that need none")
    p.add_argument("--write-readme", action="store_true", help="record the figures in bench/README.md")
    args = p.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()] or list(BENCHMARKS)
    unknown = set(only) - set(BENCHMARKS)
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    sizes = QUICK if args.quick else FULL
    from .report import cpu_count

    ctx = Context(sizes=sizes, workers=cpu_count(), quick=args.quick)
    started = time.perf_counter()
    load_before = load_average()
    rsa = rsa_call()  # before anything else runs
    crashed = False
    figures: list[Figure] = []
    try:
        stage.prepare(ctx, offline=args.offline)
        for name in only:
            ctx.say(f"— {name}")
            try:
                figures += BENCHMARKS[name].run(ctx)
            except Exception as exc:  # report and go on: one broken benchmark must not hide the rest
                crashed = True
                traceback.print_exc()
                figures.append(missing(name, "", f"crashed: {type(exc).__name__}: {exc}"))
    finally:
        stage.teardown(ctx)

    m = machine()
    m.extra["load"] = f"{load_before:.2f} / {load_average():.2f}"
    m.extra["rsa"] = rsa
    print(f"decoy_lab benchmarks — {sizes.label}{' (quick)' if args.quick else ''}, rows {ctx.served_from}")
    for line in m.lines():
        print(line)
    if ctx.setup_error:
        print(f"setup: {ctx.setup_error}")
    print()
    print(table(figures, judge=not args.no_targets))
    print(f"\n{time.perf_counter() - started:.1f} s in all")
    if args.write_readme:
        write_readme(figures, m, sizes, quick=args.quick, served_from=ctx.served_from)
    return 2 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
