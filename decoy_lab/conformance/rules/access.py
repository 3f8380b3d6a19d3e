"""Rules on missing access: ask with the refusal's own request, on the same connection."""

from __future__ import annotations

from decoy_lab.conformance.rulebook import Evidence, Result, Rule, Run
from decoy_lab.conformance.rules.base import pairings


def grant_request(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    asks = [x for x in run.exchanges if x.method == "POST" and x.path == "/api/agent/grant-request"]
    refusals = [
        x
        for x in run.exchanges
        if x.status == 403 and isinstance(x.response, dict) and isinstance(x.response.get("permission_request"), dict)
    ]
    judged: list[dict] = []
    for r in refusals:
        if r.response["permission_request"] in judged:
            continue  # the same refusal again (before the owner answered): one case
        judged.append(r.response["permission_request"])
        wanted = r.response["permission_request"]
        repaired = [p for p in pairings(run) if p.start > r.start]
        ask = next((a for a in asks if a.start > r.start), None)
        if repaired and (ask is None or repaired[0].start < ask.start):
            bad.append(
                Evidence(
                    f"{repaired[0].label()}: paired again for access after {r.label()} ({r.code}) instead of asking",
                    repaired[0],
                )
            )
        elif ask is None:
            bad.append(Evidence(f"{r.label()} ({r.code}): no grant request was sent for its permission_request", r))
        elif ask.request != wanted:
            bad.append(
                Evidence(f"{ask.label()}: the grant request is not the permission_request of #{r.id} unchanged", ask)
            )
        else:
            retried = [x for x in run.exchanges if x.start > ask.start and (x.method, x.path) == (r.method, r.path)]
            good.append(
                Evidence(
                    f"{ask.label()}: sent the permission_request of {r.label()} unchanged"
                    + (f", then retried ({retried[0].label()}, {retried[0].status})" if retried else ""),
                    ask,
                )
            )
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "access.grant-request-not-repair",
        "A refusal's permission_request is sent unchanged; the agent never re-pairs for access",
        "001",
        "Access: named permissions › Refusals",
        "Send `permission_request` as the body of `grant-request`, unchanged, then retry the call.",
        grant_request,
        scenarios=("missing-permission",),
        bug="repair-for-access",
        catches="pairs again (a second connection) on 403 INSUFFICIENT_GRANT",
    ),
]
