"""Rules on each sealed row an agent writes: its wraps, its kid, its plaintext, its sizes."""

from __future__ import annotations

from decoy_lab.conformance.rulebook import Evidence, Result, Rule, Run
from decoy_lab.conformance.rules.base import kind_of, opened_rows, plain, posts, row_label, sent_rows, writes
from decoy_lab.vocab import MAX_CIPHERTEXT

MAX_TOPIC_NAME, MAX_RELATION = 200, 100


def _about_problem(reason: str) -> bool:
    return "about value" in reason or reason.startswith("about ") or (" about " in reason and "is not user" in reason)


def self_wrap(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in posts(run, refused=True):  # a row sent without it broke the sentence, kept or refused
        for r in sent_rows(x):
            if isinstance(r.get("self_wrap"), str) and r["self_wrap"]:
                if not x.refused:
                    good.append(Evidence(row_label(x, r["id"]), x))
            else:
                refused = f" (refused {x.status} {x.code})" if x.refused else ""
                bad.append(
                    Evidence(
                        f"{row_label(x, r['id'])}: no self_wrap (the agent cannot read its own row back){refused}", x
                    )
                )
    return Result.judge(bad, good[:3])


def owner_opens(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict == "readable" or r.problem == "self_wrap":  # self_wrap: the owner opens it, the agent not
                if len(good) < 3:  # the three kept: a line per row of a big run is made for nothing
                    good.append(Evidence(row_label(x, r.id), x))
            elif r.problem != "kid_mismatch" and not _about_problem(r.reason) and r.verdict == "unreadable":
                why = (
                    r.reason
                    if r.reason.startswith("the owner's app cannot open")
                    else f"the owner's app cannot open it: {r.reason}"
                )
                bad.append(Evidence(f"{row_label(x, r.id)}: {why}", x))
    return Result.judge(bad, good[:3])


def kid_fingerprint(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        for r in opened_rows(x):
            if r.problem == "kid_mismatch":
                bad.append(Evidence(f"{row_label(x, r.id)}: {r.reason}", x))
            elif r.verdict == "readable" and r.opened_by == "owner key" and len(good) < 3:
                good.append(Evidence(f"{row_label(x, r.id)}: kid {r.kid} matches its key", x))
    return Result.judge(bad, good[:3])


def about_once(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        for r in opened_rows(x):
            if r.verdict != "readable" and _about_problem(r.reason):
                bad.append(Evidence(f"{row_label(x, r.id)}: {r.reason}", x))
            elif kind_of(r) == "memory" and r.opened_by == "owner key" and len(good) < 3:
                good.append(Evidence(f"{row_label(x, r.id)}: about {plain(r).get('about')}", x))
    return Result.judge(bad, good[:3])


def size_caps(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x in writes(run):
        for sent in sent_rows(x):
            if len(str(sent.get("ciphertext") or "")) * 3 // 4 > MAX_CIPHERTEXT:
                bad.append(Evidence(f"{row_label(x, sent['id'])}: the ciphertext is over {MAX_CIPHERTEXT:,} bytes", x))
        for r in opened_rows(x):
            p, kind = plain(r), kind_of(r)
            relation = str(p.get("relation") or p.get("relation_type") or "")
            if kind == "topic" and len(str(p.get("name") or "")) > MAX_TOPIC_NAME:
                bad.append(
                    Evidence(f"{row_label(x, r.id)}: the topic name is {len(p['name'])} characters; at most 200", x)
                )
            elif kind == "link" and len(relation) > MAX_RELATION:
                bad.append(
                    Evidence(f"{row_label(x, r.id)}: relationType is {len(relation)} characters; at most 100", x)
                )
            elif kind in ("topic", "link") and len(good) < 3:
                good.append(Evidence(f"{row_label(x, r.id)}: {kind} within its caps", x))
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "rows.self-wrap",
        "Every saved row carries a self_wrap",
        "000",
        "Direct HTTP contract › Exact formats",
        "Both wraps are required.",
        self_wrap,
        scenarios=("clean",),
        bug="no-self-wrap",
        catches="a row posted with owner_wrap only",
    ),
    Rule(
        "rows.owner-opens",
        "The owner's app opens every row the agent writes",
        "000",
        "Direct HTTP contract",
        "The server never decrypts, so it accepts a wrongly sealed row and the app silently can't read it.",
        owner_opens,
        scenarios=("clean",),
        bug="raw-owner-wrap",
        catches="owner_wrap sealing the raw key instead of its base64 text",
    ),
    Rule(
        "rows.kid-fingerprint",
        "kid is the fingerprint of the row's key",
        "000",
        "Direct HTTP contract › Exact formats",
        "`kid` = lowercase hex of the first 8 bytes of SHA-256(key).",
        kid_fingerprint,
        scenarios=("clean",),
        bug="bad-kid",
        catches="kid computed over the ciphertext, not the key",
    ),
    Rule(
        "rows.about-once",
        "A memory is about exactly one thing",
        "000",
        "Direct HTTP contract › Exact formats",
        "Exactly one `about` value per memory: the user, one account or one topic.",
        about_once,
        scenarios=("clean",),
        bug="two-about",
        catches='about: ["user", "topic:…"] on one memory',
    ),
    Rule(
        "rows.size-caps",
        "Topic names and relation types stay within their caps",
        "000",
        "Direct HTTP contract › Exact formats",
        "`relationType` is free text in active voice, at most 100 characters",
        size_caps,
        scenarios=("clean",),
        bug="long-relation",
        catches="a relationType of 150 characters",
    ),
]
