"""The topic map of the loaded vault: `build_graph`, `draw`, and rendering the Figure to PNG (what
a notebook does to show it). Target: 500 topics / 10,000 memories in ≤ 3 s."""

from __future__ import annotations

import io
import time

from decoy_lab.views.topicmap import build_graph, draw

from .context import Context
from .report import Figure, within
from .stage import loaded_vault

BUDGET = 3.0


def run(ctx: Context) -> list[Figure]:
    vault = loaded_vault(ctx)
    _ = vault.memories, vault.topics, vault.links  # frames are measured by bench/frames.py, not here
    best, parts, topics = float("inf"), {}, 0
    for _ in range(max(ctx.sizes.repeats, 1)):
        t0 = time.perf_counter()
        G = build_graph(vault)
        t1 = time.perf_counter()
        fig = draw(G)
        t2 = time.perf_counter()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        t3 = time.perf_counter()
        assert buf.tell() > 0
        if t3 - t0 < best:
            best = t3 - t0
            parts = {"build_graph": t1 - t0, "draw": t2 - t1, "render PNG": t3 - t2}
        topics = sum(1 for _, d in G.nodes(data=True) if d.get("kind") == "topic")
    split = ", ".join(f"{k} {v:.2f} s" for k, v in parts.items())
    return [
        within(
            f"topic map ({topics} topics / {len(vault.memories):,} memories)", best, BUDGET, f"≤ {BUDGET:g} s", split
        )
    ]
