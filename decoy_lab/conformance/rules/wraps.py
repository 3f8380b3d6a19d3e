"""Rules on where a row's key goes: each grantee wrap to a connection whose grant reaches the row by
its labels, under a `via` that names that reason, and (when the agent shares at once) to every such
connection. The server sees only the recipient's grant; the check opens the row and sees its labels,
so a wrap to a `category:food` reader of a travel memory (admitted: the reader holds food) shows.

The grantees are those `GET memory-grantees` listed to the agent before the write (`selectors`).
An edit that only adds labels keeps the key, and its author shares that key with the connections
the new labels newly reach (`POST memory-wraps`, `{row_id,kid,wraps}`, its own rows only).
"""

from __future__ import annotations

import bisect
from types import SimpleNamespace
from typing import Any

from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import kind_of, labels_of, opened_rows, plain, row_label, sent_rows, writes

GRANTEES = "/api/agent/context/memory-grantees"
SHARE = "/api/agent/context/memory-wraps"


def listings(run: Run) -> tuple[list[float], list[dict[str, dict]]]:
    """Every answered memory-grantees read, in the order sent: (their starts, token_id → selectors
    of each). Built once per rule: a write then finds its listing by bisection, never by a scan."""
    starts: list[float] = []
    listed: list[dict[str, dict]] = []
    reads = sorted(run.where("GET", GRANTEES), key=lambda g: g.start)
    for g in reads:
        if g.answered and isinstance(g.response, dict):
            starts.append(g.start)
            listed.append(
                {
                    str(e.get("token_id")): e.get("selectors") or {}
                    for e in g.response.get("grantees") or []
                    if isinstance(e, dict)
                }
            )
    return starts, listed


def grantees_before(
    run: Run, x: Exchange, index: tuple[list[float], list[dict[str, dict]]] | None = None
) -> dict[str, dict]:
    """token_id → selectors, from the latest memory-grantees answer before `x` (`index`: `listings(run)`)."""
    starts, listed = listings(run) if index is None else index
    i = bisect.bisect_left(starts, x.start)  # those that started strictly before x
    return listed[i - 1] if i else {}


def reasons(sel: dict, row: Any) -> set[str]:
    """The access reasons a grant (`selectors`) holds on an opened row, by its labels."""
    p, kind = plain(row), kind_of(row)
    labels = [str(x) for x in p.get("labels") or []]
    topics = {t if str(t).startswith("topic:") else f"topic:{t}" for t in sel.get("topics") or []}
    accounts = {str(a) for a in sel.get("account_ids") or []}

    def holds(label: str) -> bool:
        if label.startswith("category:"):
            return bool(sel.get("all")) or label[9:] in (sel.get("categories") or [])
        if label.startswith("topic:"):
            return bool(sel.get("all")) or label in topics
        if label.startswith("account:"):
            return bool(sel.get("account_wildcard")) or label[8:] in accounts
        return False

    about_account = any(lbl.startswith("account:") for lbl in labels)
    out = {"all"} if sel.get("all") and not about_account else set()
    if kind == "link":
        ends = [lbl for lbl in labels if lbl.startswith(("topic:", "account:"))]
        if ends and all(holds(e) for e in ends):
            out.add(ends[0] if len(ends) == 1 else "and:" + "+".join(ends))
        return out
    return out | {lbl for lbl in labels if holds(lbl)}


def _judged(run: Run) -> list[tuple[Exchange, dict, Any, dict[str, dict]]]:
    """(write, the row as sent, the row opened, the grantees listed) for each readable row written
    that either rule has something to judge in: a connection was listed, or the row carries wraps.
    Made once per record, for both rules."""

    def make() -> list[tuple[Exchange, dict, Any, dict[str, dict]]]:
        out = []
        index = listings(run)
        for x in writes(run):
            listed = grantees_before(run, x, index)
            rows = sent_rows(x)
            if not listed and not any(row.get("grantee_wraps") for row in rows):
                continue  # no connection listed, no wrap sent: no wrap that goes too far, no reader missed
            opened = {r.id: r for r in opened_rows(x) if r.verdict == "readable"}
            out += [(x, row, opened[row["id"]], listed) for row in rows if row["id"] in opened]
        return out

    return run.memoized("wraps judged", make)


def not_too_far(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, row, r, listed in _judged(run):
        for w in row.get("grantee_wraps") or []:
            if not isinstance(w, dict):
                continue
            tid, via = str(w.get("token_id")), [str(v) for v in w.get("via") or []]
            label = f"{row_label(x, row['id'])}: the wrap to {short(tid)} with via {via}"
            if tid not in listed:
                bad.append(Evidence(f"{label}: memory-grantees never listed that connection", x))
                continue
            held = reasons(listed[tid], r)
            wrong = [v for v in via if v not in held]
            if "self" in via:
                bad.append(Evidence(f"{label}: `self` names the agent's own access, never another connection's", x))
            elif not held:
                bad.append(Evidence(f"{label}: its grant ({_grant(listed[tid])}) reaches none of the row's labels "
                                    f"{plain(r).get('labels')}: the key goes too far", x))  # fmt: skip
            elif wrong or not via:
                bad.append(Evidence(f"{label}: {wrong or 'no reason'} is not a reason it holds on this row "
                                    f"(it holds {sorted(held)})", x))  # fmt: skip
            else:
                good.append(Evidence(f"{label}: a reason its grant holds on the row's labels", x))
    return Result.judge(bad[:4], good[:3])


def every_reader(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, row, r, listed in _judged(run):
        wraps = {str(w.get("token_id")) for w in row.get("grantee_wraps") or [] if isinstance(w, dict)}
        rotation = x.method == "PUT" and isinstance(row.get("kid"), str) and isinstance(row.get("owner_wrap"), str)
        if not wraps and not rotation:
            continue  # no wraps at all: the owner's phone shares the keys after the save
        reached = {tid for tid, sel in listed.items() if reasons(sel, r)}
        missing = sorted(reached - wraps)
        what = "the new key of a rotation" if rotation else "the row's key"
        if missing:
            bad.append(Evidence(f"{row_label(x, row['id'])}: {what} is wrapped to {len(wraps & reached)} of the "
                                f"{len(reached)} connections its labels {plain(r).get('labels')} reach; not to "
                                f"{', '.join(short(m) for m in missing)} ({_grant(listed[missing[0]])})", x))  # fmt: skip
        elif reached:
            good.append(Evidence(f"{row_label(x, row['id'])}: {what} wrapped to all {len(reached)} connections "
                                 "its labels reach", x))  # fmt: skip
    return Result.judge(bad[:4], good[:3])


def share_on_add(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    shares = [x for x in run.exchanges if x.method == "POST" and x.path == SHARE and not x.refused]
    labels: dict[str, list[str]] = {}  # row id → its labels as the agent last wrote them
    own: dict[str, float] = {}  # row id → when the agent first posted it (its author)
    index = listings(run)
    for x in writes(run):
        sent = {row["id"]: row for row in sent_rows(x)}
        for r in opened_rows(x):
            if r.verdict != "readable" or kind_of(r) != "memory":
                continue
            now = labels_of(r)
            before, labels[r.id] = labels.get(r.id), now
            if x.method == "POST":
                own.setdefault(r.id, x.start)
                continue
            added = [v for v in now if v not in (before or [])]
            if before is None or not added or any(v not in now for v in before):
                continue  # not its row, nothing added, or a label removed (a rotation: writes.rotat*)
            if isinstance(sent.get(r.id, {}).get("owner_wrap"), str):
                continue  # a new key after all: its own wraps go with it (wraps.every-reader)
            listed = grantees_before(run, x, index)
            was, new = (SimpleNamespace(plaintext={"kind": "memory", "labels": v}) for v in (before, now))
            newly = {tid for tid, sel in listed.items() if reasons(sel, new) and not reasons(sel, was)}
            if not newly:
                continue
            later = [s for s in shares if s.start > x.start and (s.request or {}).get("row_id") == r.id]
            got = {
                str(w.get("token_id"))
                for s in later
                for w in (s.request or {}).get("wraps") or []
                if isinstance(w, dict)
            }
            missing = sorted(newly - got)
            label = f"{row_label(x, r.id)}: added {added}"
            if missing:
                bad.append(Evidence(f"{label}; its key never went to {len(missing)} connection(s) the new labels "
                                    f"newly reach ({', '.join(short(m) for m in missing)}: {_grant(listed[missing[0]])}) "
                                    f"with POST {SHARE}", x))  # fmt: skip
            else:
                good.append(Evidence(f"{label}; {later[0].label()} shared its key with the {len(newly)} "
                                     "connection(s) they newly reach", x, later[0]))  # fmt: skip
    for s in shares:
        body = s.request if isinstance(s.request, dict) else {}
        rid = str(body.get("row_id") or "")
        if rid not in own or own[rid] > s.start:
            bad.append(Evidence(f"{s.label()}: shares the key of row {short(rid)}, which the agent did not write "
                                "(memory-wraps is for the author only)", s))  # fmt: skip
        elif set(body) - {"row_id", "kid", "wraps"}:
            bad.append(Evidence(f"{s.label()}: sends {sorted(set(body) - {'row_id', 'kid', 'wraps'})} besides "
                                "row_id, kid and wraps", s))  # fmt: skip
    return Result.judge(bad[:4], good[:3])


def _grant(sel: dict) -> str:
    parts = ["all" if sel.get("all") else ""]
    parts += [f"category:{c}" for c in sel.get("categories") or []]
    parts += [str(t) for t in sel.get("topics") or []]
    parts += [f"account:{a}" for a in sel.get("account_ids") or []]
    return ", ".join(p for p in parts if p) or "nothing"


RULES = [
    Rule(
        "wraps.not-too-far",
        "A grantee wrap goes only to a connection whose grant reaches the row, under that reason",
        "000",
        "Direct HTTP contract › Editing",
        "It accepts other-recipient wraps only for reasons that recipient holds; `self` cannot be used for another connection.",
        not_too_far,
        scenarios=("other-connections",),
        bug="wrap-too-far",
        catches="wraps each row to every listed connection, under that connection's own first grant",
    ),
    Rule(
        "wraps.every-reader",
        "Wraps sent at once (and every rotation's) reach every connection the labels reach",
        "000",
        "Direct HTTP contract › Editing",
        "a new key and `kid`, with `owner_wrap`, `self_wrap` and `grantee_wraps` for every connection the "
        "remaining labels still reach.",
        every_reader,
        scenarios=("other-connections",),
        bug="wrap-one-reader",
        catches="wraps each row to the first connection its labels reach, not to the others",
    ),
    Rule(
        "wraps.share-on-add",
        "An edit that only adds labels keeps the key, and shares it with the connections newly reached",
        "001",
        "POST /api/agent/context/memories",
        "An edit that only adds labels (moving from `user` to a topic counts as adding) keeps the key; the writer "
        "wraps it to the newly eligible connections with `POST /api/agent/context/memory-wraps`.",
        share_on_add,
        scenarios=("other-connections",),
        bug="no-share-on-add",
        catches="adds the label `food` to its reminder and never wraps the key to the Food reader it now reaches",
    ),
]
