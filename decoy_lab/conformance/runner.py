"""Scenarios side by side: each in its own sandbox, a bounded pool of them at once, results in the
order asked.

    runs, staging = run_scenarios(["clean", "lost-answers"], command, timeout=120)

A scenario mostly waits (the owner's delays, the phone's sharing, the agent's polls), so running
two or three at once cuts a check's wall time about in half even on two cores (`make bench`:
bench/check.py prints it). Every scenario still gets a sandbox, staging hop, inspector and clean
room of its own (scenarios.run_scenario); they share nothing but the check's owner key.

That key is the check's own throwaway (`Staging.owner_pem`), given to every scenario's sandbox so
a report can stage the same sandbox again (reproduce.replay): with the seed (the demo vault's ids
repeat for a seed) and the clock of each scenario, recorded here. It is never a user's key, yet a
report writes it only to a 0600 file beside itself, never inline.

Ctrl-C (or a notebook's interrupt) stops every scenario's agent: the running ones are cancelled
(`run_scenario(cancel=…)` kills the agent's process group) and the waiting ones never start.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from decoy_lab.conformance.rulebook import Run
from decoy_lab.conformance.scenarios import SCENARIOS, run_scenario
from decoy_lab.wire.crypto import AgentKey

# 3 at once: a full default check of the Python example agent, 74 s one after another, takes
# ~30 s (bench/check.py); 2 cores are the limit only for the agents' own start-up.
WORKERS = 3


class ScenarioError(RuntimeError):
    """A scenario could not run (its sandbox, hop or inspector did not start)."""


@dataclass
class Staging:
    """What stages a check's sandboxes again: the owner key (PEM) they all shared, and per
    scenario its seed and the epoch (time.time()) its sandbox's clock began at."""

    owner_pem: bytes = field(repr=False)
    seeds: dict[str, str] = field(default_factory=dict)
    clocks: dict[str, float] = field(default_factory=dict)

    @classmethod
    def fresh(cls) -> Staging:
        return cls(AgentKey.generate().to_pem().encode("ascii"))


def run_scenarios(
    names: Sequence[str],
    command: Sequence[str],
    *,
    timeout: float = 120.0,
    agent_key: bytes | None = None,
    pass_env: Sequence[str] = (),
    workers: int = WORKERS,
    on_start: Callable[[str], Any] | None = None,
    on_flow: Callable[[str, Any], Any] | None = None,
    on_done: Callable[[str, Run], Any] | None = None,
) -> tuple[list[Run], Staging]:
    """Run each scenario of `names` (at most `workers` at once); their runs in the order of
    `names`, and how their sandboxes were staged. `on_start(name)`, `on_flow(name, flow)` and
    `on_done(name, run)` are called from the scenario's thread as it goes. A scenario that could
    not run raises ScenarioError once the others have stopped."""
    staging = Staging.fresh()
    cancel = threading.Event()

    def one(name: str) -> Run:
        if cancel.is_set():
            raise KeyboardInterrupt("the check was cancelled")
        scenario = SCENARIOS[name]
        if on_start is not None:
            on_start(name)
        staging.seeds[name], staging.clocks[name] = scenario.seed, time.time()
        heard = None if on_flow is None else (lambda flow: on_flow(name, flow))
        try:
            run = run_scenario(
                scenario,
                command,
                timeout=timeout,
                agent_key=agent_key,
                on_flow=heard,
                pass_env=pass_env,
                owner_key=staging.owner_pem,
                cancel=cancel,
            )
        except (OSError, RuntimeError) as exc:
            raise ScenarioError(f"scenario {name} could not run: {exc}") from exc
        if on_done is not None:
            on_done(name, run)
        return run

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="decoy-check")
    futures: list[Future[Run]] = [pool.submit(one, name) for name in names]
    try:
        wait(futures, return_when=FIRST_EXCEPTION)  # one that could not run stops the others at once
        for f in futures:
            error = f.exception() if f.done() else None
            if error is not None:
                raise error
        runs = [f.result() for f in futures]
    except BaseException:
        cancel.set()  # Ctrl-C, or one scenario could not run: the others stop their agents too
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    staging.seeds = {n: staging.seeds[n] for n in names}  # in the order asked, not the order run
    staging.clocks = {n: staging.clocks[n] for n in names}
    return runs, staging
