"""DataFrames for the loaded vault: `Vault.memories`, `.topics`, `.links` and `.rows`, built
from rows already read (no crypto). Target: all four for 10,000 memories in ≤ 0.5 s."""

from __future__ import annotations

import dataclasses
import time

from .context import Context
from .report import Figure, within
from .stage import loaded_vault

BUDGET = 0.5
FRAMES = ("memories", "topics", "links", "rows")


def run(ctx: Context) -> list[Figure]:
    vault = loaded_vault(ctx)
    best_total, best_parts = float("inf"), {}
    for _ in range(max(ctx.sizes.repeats, 2)):
        fresh = dataclasses.replace(vault)  # a new Vault: its frames are cached per instance
        parts = {}
        for name in FRAMES:
            t0 = time.perf_counter()
            frame = getattr(fresh, name)
            parts[name] = time.perf_counter() - t0
            assert len(frame) > 0, f"Vault.{name} is empty"
        if sum(parts.values()) < best_total:
            best_total, best_parts = sum(parts.values()), parts
    memories = len(fresh.memories)
    split = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in best_parts.items())
    return [within(f"DataFrames ({memories:,} memories)", best_total, BUDGET, f"≤ {BUDGET} s", split)]
