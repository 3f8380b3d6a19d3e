"""`decoy-lab check` at work: a real agent judged in every default scenario, and the rules at scale.

1. The correct Node example agent (`examples/agents/check/node/agent.mjs`) through the default
   scenarios (`--quick`: `clean` only), as `decoy-lab check` runs it: side by side, `runner.WORKERS`
   at once (runner.py), a fresh sandbox, the staging hop and the inspector per scenario, then the
   scorecard. The check's wall time has a target: ≤ 37 s for the seven default scenarios, half of
   the 74 s they took one after another. The agent runs under `bench/timed.py`, so its own wall
   time is measured outside the workbench; what is left of each scenario's time (starting and
   stopping the sandbox, the hop and the inspector, settling the record) is the check's own share;
   target ≤ 20 % of the scenarios' time.
2. Rule evaluation over a synthetic run (no agent, no server): 20 reads each serving every row of
   a 10,000-row vault (a topic every 10 rows), 8,980 posts, 1,000 device-code polls (10,001
   exchanges), and the owner's view of every row; target ≤ 1 s, so a scorecard never waits on its
   rules however much the agent did.

`python -m bench.check` runs both; the bench runner takes them as `run(ctx)`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .report import Figure, check, info, missing

ROWS, READS, POLLS = 10_000, 20, 1_000
POSTS_PER_READ = 449  # with the reads and the polls: 10,001 recorded exchanges, the 10,000
TARGET_S = 1.0
OUTSIDE_SHARE = 0.20
FULL_CHECK_S = 37.0  # half of the 74 s the seven default scenarios took one after another
AGENT = Path(__file__).resolve().parents[1] / "examples" / "agents" / "check" / "node" / "agent.mjs"


def synthetic_run() -> Any:
    from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run
    from decoy_lab.inspector.flow_record import Row

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
        for j in range(POSTS_PER_READ):
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


def agent_figures(quick: bool) -> list[Figure]:
    """The correct Node agent through the default scenarios, side by side: the check's wall time,
    and the share of the scenarios' time spent outside the agent."""
    from decoy_lab.conformance.report import score
    from decoy_lab.conformance.rules import RULES
    from decoy_lab.conformance.runner import WORKERS, run_scenarios
    from decoy_lab.conformance.scenarios import DEFAULT

    names = ("clean",) if quick else DEFAULT
    label = f"check: correct Node agent, {len(names)} scenario{'s' if len(names) > 1 else ''}, {WORKERS} at once"
    node = shutil.which("node")
    if node is None:
        return [missing(label, f"≤ {FULL_CHECK_S:g} s", "node is not installed")]
    began: dict[str, float] = {}
    took: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        times = Path(tmp) / "agent-seconds"
        command = [sys.executable, "-m", "bench.timed", str(times), "--", node, str(AGENT)]
        started = time.perf_counter()
        runs, _ = run_scenarios(
            names,
            command,
            on_start=lambda n: began.__setitem__(n, time.perf_counter()),
            on_done=lambda n, r: took.__setitem__(n, time.perf_counter() - began[n]),
        )
        card = score(RULES, runs)
        total = time.perf_counter() - started
        agent = sum(float(line) for line in times.read_text(encoding="utf-8").split())
    failed = [v.rule.id for v in card.failed]
    scenarios = sum(took.values())
    share = (scenarios - agent) / scenarios
    note = (
        f"agent {agent:.1f} s of {scenarios:.1f} s in scenarios; wall {total:.1f} s; "
        f"rules failed: {', '.join(failed) or 'none'}"
    )
    wall = (
        info(label, round(total, 1), "s", note)
        if quick
        else check(
            label,
            round(total, 1),
            "s",
            total <= FULL_CHECK_S and not failed,
            f"≤ {FULL_CHECK_S:g} s (74 s one after another)",
            f"{total / FULL_CHECK_S:.2f} of the target",
            note,
        )
    )
    return [
        wall,
        check(
            "check: time outside the agent",
            round(share * 100, 1),
            "%",
            share <= OUTSIDE_SHARE and not failed,
            f"≤ {OUTSIDE_SHARE:.0%} of the scenarios' time",
            f"{share:.2f} (need ≤ {OUTSIDE_SHARE:g})",
            note,
        ),
    ]


def run(ctx: Any = None) -> list[Figure]:
    seconds = measure()
    quick = bool(getattr(ctx, "quick", False))
    judged = [
        Figure(
            f"check: all rules over 10,001 exchanges ({READS} reads of {ROWS:,} rows)",
            round(seconds, 3),
            "s",
            f"≤ {TARGET_S:g} s",
            f"{seconds / TARGET_S:.2f} of the target",
            seconds <= TARGET_S,
        )
    ]
    return [*agent_figures(quick), *judged]


if __name__ == "__main__":
    for f in run():
        print(f"{f.name}: {f.value} {f.unit} (target {f.target}) {f.verdict}")
