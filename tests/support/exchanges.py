"""Hand-made exchanges for the judges' tests (no tests here): `x(i, method, path, …)` is exchange
#i as the inspector records it, answered at `status` (None: no answer came)."""

from __future__ import annotations

from typing import Any

from decoy_lab.conformance.rulebook import Exchange


def x(i: int, method: str, path: str, status: int | None = 200, request: Any = None, response: Any = None,
      rows=(), start: float | None = None, done: float | None = -1.0) -> Exchange:  # fmt: skip
    t = float(i) if start is None else start
    end = t + 0.1 if done == -1.0 else done
    ended = "answered" if status is not None else "no answer"
    return Exchange(i, method, path, "", status, ended, t, end, request, response, {}, list(rows), "t1")
