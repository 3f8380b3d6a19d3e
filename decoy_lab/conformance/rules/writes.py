"""Rules on writes with an unknown outcome, on edits that meet a conflict, and on editing a memory
another wrote (its text only)."""

from __future__ import annotations

import math

from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import (
    kind_of,
    labels_of,
    opened_rows,
    posts,
    reads,
    row_label,
    sent_rows,
    writes,
)


def _texts(x: Exchange) -> dict[str, str]:
    """row id → its text (a memory) or name (a topic), as the owner's app opened it."""
    return {r.id: str(r.text) for r in opened_rows(x) if r.text}


def _why(x: Exchange) -> str:
    return f"status {x.status}" if x.ended == "answered" else x.ended


def same_rows_on_retry(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    sent = posts(run)
    for i, w in enumerate(sent):
        if not w.unknown:
            continue
        ids = {r["id"]: r.get("ciphertext") for r in sent_rows(w)}
        nxt = sent[i + 1] if i + 1 < len(sent) else None
        if nxt is None:
            if any(rd.start > w.start for rd in reads(run)):
                good.append(Evidence(f"{w.label()} ({_why(w)}): the agent read back to learn the outcome", w))
            else:
                bad.append(
                    Evidence(f"{w.label()} ({_why(w)}): the outcome was never learned: no resend, no read back", w)
                )
            continue
        again = {r["id"]: r.get("ciphertext") for r in sent_rows(nxt)}
        if ids and all(again.get(k) == v for k, v in ids.items()):
            good.append(Evidence(f"{nxt.label()} resent the {len(ids)} sealed rows of {w.label()} ({_why(w)})", nxt, w))
            continue
        before, after = _texts(w), _texts(nxt)
        rebuilt = [(rid, t) for rid, t in after.items() if rid not in ids and t in before.values()]
        if rebuilt:
            rid, text = rebuilt[0]
            bad.append(
                Evidence(
                    f"{nxt.label()}, row {short(rid)}: new rows for a retry of {w.label()} ({_why(w)}): "
                    f"{len(rebuilt)} rebuilt with new ids (e.g. {text[:40]!r})",
                    nxt,
                    w,
                )
            )
        else:
            good.append(
                Evidence(f"{nxt.label()} after {w.label()} ({_why(w)}) carries other rows, none rebuilt", nxt, w)
            )
    return Result.judge(bad, good[:3])


def rev_conflict_reread(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    puts = [x for x in writes(run, refused=True) if x.method == "PUT"]
    notes = [str(e.get("result") or "") for e in run.staged("before")]
    notes = [n for n in notes if not n.startswith("removed ")]  # a text the owner added (a relabel: keep-other-fields)
    for i, c in enumerate(puts):
        if c.status != 409 or c.code != "REV_CONFLICT":
            continue
        mid = str((c.request or {}).get("id") or "")
        retry = next((p for p in puts[i + 1 :] if (p.request or {}).get("id") == mid), None)
        reread = [rd for rd in reads(run) if rd.start > c.start and (retry is None or rd.start < retry.start)]
        if retry is None:
            (good if reread else bad).append(
                Evidence(
                    f"{c.label()}, row {short(mid)}: 409 REV_CONFLICT; "
                    + ("the agent read the current row and did not overwrite it" if reread else "never re-read"),
                    c,
                )
            )
            continue
        if not reread:
            bad.append(
                Evidence(
                    f"{retry.label()}, row {short(mid)}: sent again after 409 at #{c.id} without reading the current row",
                    retry,
                    c,
                )
            )
            continue
        text = next((str(r.text) for r in opened_rows(retry) if r.text), "")
        lost = [n for n in notes if n and text and n not in text]
        if lost:
            bad.append(
                Evidence(
                    f"{retry.label()}, row {short(mid)}: overwrote the owner's change ({lost[0][:50]!r} is gone)", retry
                )
            )
        else:
            good.append(
                Evidence(
                    f"{retry.label()}, row {short(mid)}: re-read after 409 at #{c.id} and kept the owner's change",
                    retry,
                    c,
                )
            )
    return Result.judge(bad, good[:3])


def read_back(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    saved = [(x, [r["id"] for r in sent_rows(x)]) for x in posts(run) if x.answered and (x.status or 0) < 300]
    wanted = {i for _, ids in saved for i in ids}
    last: dict[str, float] = {}  # saved row id → when the latest read that served it started
    for rd in reads(run):
        if rd.answered:
            for i in wanted.intersection(rd.served_ids):  # a big read's other rows never matter here
                if rd.start > last.get(i, -math.inf):
                    last[i] = rd.start
    for x, ids in saved:
        missing = [i for i in ids if not last.get(i, -math.inf) > x.start]
        if missing:
            bad.append(
                Evidence(
                    f"{x.label()}, row {short(missing[0])}: saved, and never fetched back "
                    f"({len(missing)} of {len(ids)} rows)",
                    x,
                )
            )
        elif ids:
            good.append(Evidence(f"{x.label()}: all {len(ids)} rows fetched back by a later read", x))
    return Result.judge(bad, good[:3])


def keep_other_fields(run: Run) -> Result:
    """An edit keeps what it does not change: never a label the owner removed since, never a field dropped."""
    bad: list[str] = []
    good: list[str] = []
    removed = [e for e in run.staged("before") if str(e.get("result") or "").startswith("removed ")]
    last: dict[str, dict] = {}  # row id → the plaintext the agent last sent for it (owner's view)
    first_put: dict[str, float] = {}  # the owner's staged edit lands just before the first PUT of its row
    for x in writes(run, refused=True):
        if x.method == "PUT" and isinstance(x.request, dict):
            first_put.setdefault(str(x.request.get("id")), x.start)
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict != "readable" or not isinstance(r.plaintext, dict):
                continue
            p, before = r.plaintext, last.get(r.id)
            last[r.id] = p
            if x.method != "PUT" or before is None:
                continue
            back = [
                str(e["result"]).split()[1]
                for e in removed
                if str(e["result"]).endswith(r.id) and x.start > first_put.get(r.id, x.start)
                and str(e["result"]).split()[1] in (p.get("labels") or [])
            ]  # fmt: skip
            dropped = [k for k in ("metadata", "about_hint") if before.get(k) and not p.get(k)]
            if back:
                bad.append(Evidence(f"{row_label(x, r.id)}: puts back the label {back[0]!r} the owner removed", x))
            elif dropped:
                bad.append(Evidence(f"{row_label(x, r.id)}: drops {dropped[0]!r} it did not change", x))
            else:
                good.append(Evidence(f"{row_label(x, r.id)}: kept every field it did not change", x))
    return Result.judge(bad, good[:3])


def others_text_only(run: Run) -> Result:
    """A PUT of a memory the agent did not write (one the owner's view held as it started) keeps its
    labels exactly: categories, topic or account, as they stood."""
    bad: list[str] = []
    good: list[str] = []
    known = {
        str(e["id"]): [str(v) for v in e.get("labels") or []] for e in run.app_view_before if e.get("kind") == "memory"
    }
    if not known:
        return Result.judge(bad, good)  # no memory another wrote was stored as the agent started
    own = {row["id"] for x in posts(run) for row in sent_rows(x)}
    for x in writes(run):
        if x.method != "PUT":
            continue
        for r in opened_rows(x):
            if r.id in own or r.id not in known or kind_of(r) != "memory" or r.verdict != "readable":
                continue
            now, was = labels_of(r), known[r.id]
            if now != was:
                bad.append(Evidence(f"{row_label(x, r.id)}: a memory another wrote, relabelled from {was} to {now}: "
                                    "Read & write corrects its text only", x))  # fmt: skip
            else:
                good.append(Evidence(f"{row_label(x, r.id)}: corrected a memory another wrote; its labels {was} "
                                     "unchanged", x))  # fmt: skip
            known[r.id] = now
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "writes.same-rows-on-retry",
        "After an unknown outcome the same sealed rows are sent again",
        "000",
        "Topics › Find or create",
        "Never build new rows for a retry; that makes a second topic.",
        same_rows_on_retry,
        scenarios=("lost-answers",),
        bug="new-rows-on-retry",
        catches="seals new rows (new ids) for each retry after a lost answer",
    ),
    Rule(
        "writes.rev-conflict-reread",
        "A 409 REV_CONFLICT is met by reading the current row and reconciling",
        "000",
        "Direct HTTP contract › Editing",
        "On `409 REV_CONFLICT`, read current content and reconcile rather than overwrite the owner's changes.",
        rev_conflict_reread,
        scenarios=("owner-edits",),
        bug="overwrite-on-conflict",
        catches="takes current_rev from the 409 and sends its own text again",
    ),
    Rule(
        "writes.read-back",
        "Every saved row is fetched back to confirm it",
        "000",
        "Verify the result",
        "After saving, retain the returned memory ID and fetch that row through Decoy.",
        read_back,
        scenarios=("clean",),
        bug="no-read-back",
        catches="saves and stops: never reads its rows back",
    ),
    Rule(
        "writes.keep-other-fields",
        "An edit keeps every field it does not change, and the owner's relabel",
        "000",
        "Direct HTTP contract › Editing",
        "Keep every other field, and the id.",
        keep_other_fields,
        scenarios=("owner-unlabels",),
        bug="stale-labels",
        catches="after a 409, re-reads the text but re-seals its own earlier labels, putting back the owner's removal",
    ),
    Rule(
        "writes.others-text-only",
        "A memory another wrote is corrected in its text only: its labels stay byte-identical",
        "000",
        "Topics › Attach, move or detach",
        "a connection editing someone else's memory with Read & write may correct its text, and must leave its "
        "labels byte-identical",
        others_text_only,
        scenarios=("read-write",),
        bug="relabel-others",
        catches="corrects a memory another wrote and adds the category `misc` to it",
    ),
]
