"""What the benchmarks share in one run: sizes, keys, the rows, the sandbox and the figures
that later targets are measured against (the machine's limit, the Node peer)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .data import Dataset, Sizes


@dataclass
class Context:
    sizes: Sizes
    workers: int
    quick: bool = False
    dataset: Dataset | None = None
    served: list[dict] = field(default_factory=list)  # the rows as GET /memories served them
    served_from: str = "served by the sandbox"  # or "built offline" when no sandbox could be started
    sandbox: Any = None
    conn: Any = None  # the decoy_lab Connection that owns the rows
    token: str | None = None  # its bearer token, for raw HTTP timings
    setup_error: str | None = None  # why the sandbox or the connection is unavailable
    limit_rate: float | None = None  # (a) rows/s over all cores
    node_rate: float | None = None  # (c) rows/s
    vault: Any = None  # the last Vault load() returned
    extra: dict = field(default_factory=dict)  # figures one benchmark hands a later one
    say: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True)


def best_of(n: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run `fn` n times; return the fastest wall time and the last result."""
    best, out = float("inf"), None
    for _ in range(max(1, n)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out
