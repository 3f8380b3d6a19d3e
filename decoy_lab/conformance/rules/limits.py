"""Rules on rate limits: after a `429` the request is sent again, and not before `retry_after_seconds`."""

from __future__ import annotations

from decoy_lab.conformance.rulebook import Evidence, Result, Rule, Run

SLACK = 0.5


def retry_after(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for i, x in enumerate(run.exchanges):
        if x.status != 429:
            continue
        body = x.response if isinstance(x.response, dict) else {}
        wait = float(body.get("retry_after_seconds") or 0)
        again = next((y for y in run.exchanges[i + 1 :] if (y.method, y.path) == (x.method, x.path)), None)
        if again is None:
            bad.append(Evidence(f"{x.label()}: 429 {x.code} (retry_after_seconds {wait:g}); never sent again: "
                                "what it asked for was never done", x))  # fmt: skip
            continue
        gap = again.start - (x.done or x.start)
        if gap < wait - SLACK:
            bad.append(
                Evidence(
                    f"{again.label()}: sent again {gap:.1f} s after the 429 of #{x.id}; it said {wait:g} s", again, x
                )
            )
        else:
            good.append(
                Evidence(f"{again.label()}: sent again {gap:.1f} s after the 429 of #{x.id} ({wait:g} s)", again)
            )
    return Result.judge(bad[:3], good[:3])


RULES = [
    Rule(
        "limits.retry-after",
        "After a 429 the request is sent again, after retry_after_seconds",
        "001",
        "Access: named permissions › The loop",
        "`429`: wait `retry_after_seconds`.",
        retry_after,
        scenarios=("rate-limit",),
        bug="ignore-rate-limit",
        catches="sends again 0.1 s after a 429, whatever retry_after_seconds says",
    ),
]
