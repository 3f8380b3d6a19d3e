"""`decoy-lab check`'s judging at scale: every rule over a recorded run of a big vault.

A synthetic run (no agent, no server): 20 reads each serving every row of a 10,000-row vault
(a topic every 10 rows), 200 posts, 1,000 device-code polls, and the owner's view of every row.
The figure is the time to judge all the rules over it once; target ≤ 2 s, so a scorecard never
waits on its rules however much the agent read. `python -m bench.check` runs it alone; the
bench runner takes it as `run(ctx)`.
"""

from __future__ import annotations

import time
from typing import Any

from .report import Figure

ROWS, READS, POSTS, POLLS = 10_000, 20, 200, 1_000
TARGET_S = 2.0


def synthetic_run() -> Any:
    from decoy_lab.conformance.model import MEMORIES, Exchange, Run
    from decoy_lab.inspector.model import Row

    ids = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(ROWS)]
    view = [{"id": rid, "kind": "topic" if i % 10 == 0 else "memory", "name": f"Topic {i}", "text": f"memory {i}"}
            for i, rid in enumerate(ids)]  # fmt: skip
    served = {"memories": [{"id": rid, "kid": "0" * 16} for rid in ids]}
    xs: list[Exchange] = []

    def add(method: str, path: str, request: Any, response: Any, form: dict | None = None, status: int = 200, rows: list | None = None) -> None:  # fmt: skip
        n = len(xs) + 1
        xs.append(Exchange(n, method, path, "", status, "answered", n * 0.01, n * 0.01 + 0.005, request, response, form or {}, rows or [], "sha256:0"))  # fmt: skip

    add("POST", "/oauth/device", {}, {"device_code": "sha256:11111111", "interval": 5})
    for _ in range(POLLS):
        add("POST", "/oauth/token", None, {"error": "authorization_pending"}, {"grant_type": "device_code", "device_code": "sha256:11111111"}, 400)  # fmt: skip
    for i in range(READS):
        add("GET", MEMORIES, None, served)
        for j in range(POSTS // READS):
            rid, name = f"new-{i}-{j}", f"New topic {i}-{j}"
            topic = Row(rid, "request.rows[0]", "readable", kind="topic", text=name, opened_by="owner key", plaintext={"kind": "topic", "name": name})  # fmt: skip
            add("POST", MEMORIES, {"rows": [{"id": rid, "ciphertext": "AQE="}]}, {"ok": True}, status=201, rows=[topic])
    return Run("bench", xs, view)


def measure() -> float:
    from decoy_lab.conformance.report import score
    from decoy_lab.conformance.rules import RULES

    run = synthetic_run()
    started = time.perf_counter()
    score(RULES, [run])
    return time.perf_counter() - started


def run(ctx: Any = None) -> list[Figure]:
    seconds = measure()
    return [
        Figure(
            f"check: all rules over {ROWS:,} rows × {READS} reads",
            round(seconds, 3),
            "s",
            f"≤ {TARGET_S:g} s",
            f"{seconds / TARGET_S:.2f} of the target",
            seconds <= TARGET_S,
        )
    ]


if __name__ == "__main__":
    for f in run():
        print(f"{f.name}: {f.value} {f.unit} (target {f.target}) {f.verdict}")
