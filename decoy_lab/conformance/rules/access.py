"""Rules on missing access: ask with the refusal's own request, on the same connection; an ask of
the agent's own names permissions, one selection and a reason, never `resource_id`, `kind` or
`level`, and never what the connection holds; poll the ask every few seconds until the owner
answers; read the policies after an approval; a denial stands."""

from __future__ import annotations

from urllib.parse import parse_qs

from decoy_lab import vocab
from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run
from decoy_lab.conformance.rules.base import pairings

GRANT_REQUEST = "/api/agent/grant-request"
POLICIES = "/api/agent/policies"
# "every few seconds": a second apart at the least (less the recorded start's timing slack)
POLL_GAP, SLACK = 1.0, 0.25
APPROVED = frozenset({"approved", "resolved"})


def asks(run: Run) -> list[Exchange]:
    return [x for x in run.exchanges if x.method == "POST" and x.path == GRANT_REQUEST]


def polls(run: Run) -> dict[str, list[Exchange]]:
    """request id → the agent's polls of it (`GET /api/agent/grant-request?id=`), in order."""
    out: dict[str, list[Exchange]] = {}
    for x in run.exchanges:
        if x.method == "GET" and x.path == GRANT_REQUEST:
            for rid in parse_qs(x.query).get("id") or []:
                out.setdefault(rid, []).append(x)
    return out


def status_of(x: Exchange) -> str:
    return str(x.response.get("status") or "") if isinstance(x.response, dict) and x.answered else ""


def open_asks(run: Run) -> list[tuple[Exchange, str]]:
    """Each ask the owner was left to answer, with its request id: `201 pending` (a renewal's `200
    pending` too), or `409 GRANT_ALREADY_REQUESTED` naming the open request."""
    out = []
    for x in asks(run):
        body = x.response if isinstance(x.response, dict) else {}
        rid = body.get("request_id")
        if isinstance(rid, str) and (body.get("status") == "pending" or x.code == "GRANT_ALREADY_REQUESTED"):
            out.append((x, rid))
    return out


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


def poll_grant_request(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    by_id = polls(run)
    first: dict[str, Exchange] = {}
    for x, rid in open_asks(run):
        first.setdefault(rid, x)  # one case per request: asks that joined it wait on the same answer
    for rid, ask in first.items():
        mine = [p for p in by_id.get(rid, []) if p.start > ask.start]
        if not mine:
            bad.append(Evidence(f"{ask.label()}: request {rid[:8]}… pending; never polled "
                                f"({GRANT_REQUEST}?id=) for the owner's answer", ask))  # fmt: skip
            continue
        early = [
            (a, b) for a, b in zip([ask, *mine], mine, strict=False) if b.start - (a.done or a.start) < POLL_GAP - SLACK
        ]
        if early:
            a, b = early[0]
            gap = b.start - (a.done or a.start)
            bad.append(Evidence(f"{b.label()}: polled {gap:.2f} s after #{a.id} ({len(early)} polls under "
                                f"{POLL_GAP:g} s apart): not every few seconds", b, a))  # fmt: skip
        elif status_of(mine[-1]) == "pending" and not run.timed_out:
            bad.append(Evidence(f"{mine[-1].label()}: still pending, and the agent stopped polling: the request "
                                "stays open until the owner answers", mine[-1]))  # fmt: skip
        else:
            good.append(Evidence(f"{ask.label()}: polled {len(mine)} times, each a second or more apart, "
                                 f"until {status_of(mine[-1]) or 'the run ended'}", ask, mine[-1]))  # fmt: skip
    return Result.judge(bad, good[:3])


def read_policies(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for rid, mine in polls(run).items():
        yes = next((p for p in mine if status_of(p) in APPROVED), None)
        if yes is None:
            continue
        read = next(
            (x for x in run.exchanges if x.method == "GET" and x.path == POLICIES and x.start > yes.start), None
        )
        if read is None:
            bad.append(Evidence(f"{yes.label()}: request {rid[:8]}… {status_of(yes)}; {POLICIES} was never read "
                                "for what the owner granted", yes))  # fmt: skip
        else:
            good.append(
                Evidence(f"{read.label()}: read what it holds after {yes.label()} ({status_of(yes)})", read, yes)
            )
    return Result.judge(bad, good[:3])


def denial_stands(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for rid, mine in polls(run).items():
        no = next((p for p in mine if status_of(p) == "denied"), None)
        if no is None:
            continue
        again = next((x for x in [*asks(run), *pairings(run)] if x.start > no.start), None)
        if again is not None:
            what = "asked again" if again.path == GRANT_REQUEST else "paired again"
            bad.append(Evidence(f"{again.label()}: {what} after the owner denied request {rid[:8]}… "
                                f"({no.label()})", again, no))  # fmt: skip
        else:
            good.append(Evidence(f"{no.label()}: request {rid[:8]}… denied; not asked again", no))
    return Result.judge(bad, good[:3])


SELECTIONS = frozenset(vocab.SELECTION_KEYS)
OLD_KEYS = ("resource_id", "kind", "level")  # "Unknown keys are refused: never send them with `permissions`"


def _handed(run: Run, ask: Exchange) -> bool:
    """The ask is a refusal's `permission_request`, unchanged (access.grant-request-not-repair judges it)."""
    return any(
        isinstance(x.response, dict) and x.response.get("permission_request") == ask.request and x.start < ask.start
        for x in run.exchanges
        if x.status == 403
    )


def ask_with_reason(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for a in asks(run):
        body = a.request if isinstance(a.request, dict) else {}
        if _handed(run, a):
            good.append(Evidence(f"{a.label()}: a refusal's permission_request, unchanged", a))
            continue
        chosen = sorted(SELECTIONS & set(body))
        if not isinstance(body.get("permissions"), list) or not body["permissions"]:
            bad.append(Evidence(f"{a.label()}: names no permissions", a))
        elif len(chosen) > 1 and set(chosen) != {"record_type", "personal_id"}:
            bad.append(Evidence(f"{a.label()}: {len(chosen)} selections ({', '.join(chosen)}): one per ask", a))
        elif not isinstance(body.get("reason"), str) or not body["reason"].strip():
            bad.append(Evidence(f"{a.label()}: asks for {body['permissions']} with no reason for the owner", a))
        else:
            good.append(Evidence(f"{a.label()}: {body['permissions']}, one selection, and a reason", a))
    return Result.judge(bad, good[:3])


def ask_known_keys(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    rows: list[tuple[Exchange, dict]] = [(a, a.request) for a in asks(run) if isinstance(a.request, dict)]
    for x in run.exchanges:
        if x.method == "POST" and x.path in ("/oauth/device", "/oauth/par"):
            body = x.request if isinstance(x.request, dict) else {}
            rows += [(x, d) for d in body.get("authorization_details") or [] if isinstance(d, dict)]
    for x, row in rows:
        old = [k for k in OLD_KEYS if k in row]
        if old and "permissions" in row:
            bad.append(Evidence(f"{x.label()}: sends {', '.join(old)} with permissions {row.get('permissions')}", x))
        elif "permissions" in row and len(good) < 3:
            good.append(Evidence(f"{x.label()}: asks by permission name only", x))
    return Result.judge(bad, good)


def ask_held_never(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for a in asks(run):
        body = a.response if isinstance(a.response, dict) else {}
        if body.get("status") == "already_granted":
            bad.append(Evidence(f"{a.label()}: asked for {(a.request or {}).get('permissions')}, which the connection "
                                "already holds (200 already_granted)", a))  # fmt: skip
        elif a.answered and not a.refused:
            good.append(Evidence(f"{a.label()}: asked for what it did not hold ({a.status} {body.get('status')})", a))
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
    Rule(
        "access.poll-grant-request",
        "A pending ask is polled every few seconds until the owner answers",
        "001",
        "Access › The loop",
        "Poll `GET /api/agent/grant-request?id=` every few seconds for up to about ten minutes.",
        poll_grant_request,
        scenarios=("missing-permission",),
        bug="poll-grant-fast",
        catches="polls its pending grant request every 0.1 s",
    ),
    Rule(
        "access.read-policies",
        "After an approval the agent reads GET /api/agent/policies for what it holds",
        "001",
        "Access › The loop",
        "Read `GET /api/agent/policies` for what you now hold",
        read_policies,
        scenarios=("missing-permission",),
        bug="no-policies-read",
        catches="retries the refused call at once after the approval, never reading what the owner granted",
    ),
    Rule(
        "access.denial-stands",
        "A denied ask is not sent again, nor the connection paired again",
        "001",
        "Access › The loop",
        "A denial stands: do not ask again unless the person agrees.",
        denial_stands,
        scenarios=("owner-denies",),
        bug="ask-again-after-denial",
        catches="sends the same grant request again after the owner denied it",
    ),
    Rule(
        "access.ask-with-reason",
        "An ask of the agent's own names permissions, one selection and a reason",
        "001",
        "POST /api/agent/grant-request",
        "Send `permissions`, one selection, and a `reason`",
        ask_with_reason,
        scenarios=("missing-permission",),
        bug="ask-without-reason",
        catches="asks, of its own accord, for Read personal info (cards) with no reason",
    ),
    Rule(
        "access.ask-known-keys",
        "An ask never carries resource_id, kind or level beside permissions",
        "001",
        "Access: named permissions",
        "never send `resource_id`, `kind` or `level` with `permissions`.",
        ask_known_keys,
        scenarios=("clean",),
        bug="ask-with-level",
        catches="asks for Read personal info (cards) with `level: read` beside its permissions",
    ),
    Rule(
        "access.ask-held-never",
        "The agent never asks for access its connection already holds",
        "001",
        "POST /api/agent/grant-request",
        "Access this connection already holds is never asked again.",
        ask_held_never,
        scenarios=("missing-permission",),
        bug="ask-held",
        catches="asks again for Save memories, which its pairing already holds",
    ),
]
