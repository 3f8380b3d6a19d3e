"""The run's outcome: the agent finished its task (exit 0, in time) and no write of it was refused.

Rules about rows judge only the rows the server kept; this one judges what the others cannot: an
agent whose every write was refused (400 PLAINTEXT_REJECTED, exit 1) stored nothing, and must not
pass by having no rows to judge. A refusal that has its own recovery in the spec (401 refresh,
403 with a `permission_request`, 409 conflicts, 429) is a trigger the rules of that recovery
judge; every other refusal of a write is a write the spec's path would not have had refused.
"""

from __future__ import annotations

import re

from decoy_lab.conformance.rulebook import MEMORIES, Evidence, Exchange, Result, Rule, Run

WRITE_PATHS = frozenset({MEMORIES, f"{MEMORIES}/delete", "/api/agent/context/memory-wraps"})
# the account family's writes: an address (and its edits), an account, its credential and fields
ACCOUNT_WRITES = re.compile(
    r"/api/agent/(?:decoys(?:/(?!generate-email$)[^/]+(?:/edits)?)?"
    r"|accounts(?:/(?!public-key$)[^/]+(?:/credential|/fields(?:/[^/]+)?|/protect|/burn-decoy)?)?)"
)
# refusals with their own recovery (judged by the rules of that recovery)
RECOVERABLE = frozenset(
    {"REV_CONFLICT", "KID_CONFLICT", "HOLDERS_MISSING", "GRANT_ALREADY_REQUESTED", "RATE_LIMITED", "TOKEN_EXPIRED"}
)


def recoverable(x: Exchange) -> bool:
    body = x.response if isinstance(x.response, dict) else {}
    if x.status in (401, 429) or x.code in RECOVERABLE:
        return True
    return x.status == 403 and (
        isinstance(body.get("permission_request"), dict) or body.get("recovery") == "request_access"
    )


def refused_writes(run: Run) -> list[Exchange]:
    """The agent's writes (memories, and the account family's) the server refused for the request
    itself (a 4xx with no recovery)."""
    return [x for x in run.exchanges if is_write(x) and x.refused and not recoverable(x)]


def is_write(x: Exchange) -> bool:
    if x.path in WRITE_PATHS:
        return x.method in ("POST", "PUT")
    return x.method in ("POST", "PUT", "PATCH") and ACCOUNT_WRITES.fullmatch(x.path) is not None


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def finished(run: Run) -> Result:
    if run.exit_code is None and not run.exchanges and not run.timed_out:
        return Result.judge([], [])  # no agent ran: nothing to judge
    bad: list[str] = []
    for x in refused_writes(run):
        why = (x.response.get("message") or x.response.get("error") or "") if isinstance(x.response, dict) else ""
        bad.append(Evidence(f"{x.label()}: refused {x.status} {x.code or '(no code)'}: nothing was stored ({why})", x))
    if len(bad) > 3:
        bad = [*bad[:3], f"… and {len(bad) - 3} more refused writes"]
    tail = last_line(run.stderr) or last_line(run.stdout)
    if run.timed_out:
        bad.append(f"the agent did not finish: stopped at the time limit (last line: {tail!r})")
    elif run.exit_code is None:
        pass  # a live inspector's record (the pytest plugin): no agent process whose exit to judge
    elif run.exit_code != 0:
        bad.append(f"the agent exited with status {run.exit_code} (last line of its stderr: {tail!r})")
    if not bad and not run.exchanges:
        return Result.judge([], [])  # it exited 0 having sent nothing: nothing done to judge, never a pass
    exited = "the agent exited 0 and " if run.exit_code == 0 else ""
    good = [] if bad else [f"{exited}the server refused none of its writes ({len(run.exchanges)} exchanges)"]
    return Result.judge(bad, good)


RULES = [
    Rule(
        "outcome.finished",
        "The agent finishes its task: exit 0, and no write of it refused",
        "000",
        "Use memory during the task",
        "use or verify the documented path rather than reporting a plan as a save.",
        finished,
        scenarios=("clean",),
        bug="unpadded-base64",
        catches="sends its ciphertexts without base64 padding (400 INVALID_BASE64), stores nothing and exits 1",
    ),
]
