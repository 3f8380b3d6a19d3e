"""Rules on topics: find before create, a new topic in one POST with its first memory, never the user."""

from __future__ import annotations

from typing import Any

from decoy_lab.conformance.rulebook import Evidence, Exchange, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import (
    kind_of,
    normalize,
    opened_rows,
    plain,
    posts,
    reads,
    row_label,
    sent_rows,
    topic_of,
    writes,
)
from decoy_lab.vocab import USER_NAMES


def _names_shown(run: Run, rid: str) -> list[tuple[str, str]]:
    """(normalized topic name, the topic's row id) that one served row shows (owner's view)."""
    entry = run.owner_row(rid) or {}
    names = []
    if entry.get("kind") == "topic" and entry.get("name"):
        names.append((normalize(entry["name"]), rid))
    topic = entry.get("topic") if entry.get("kind") == "memory" else None
    if isinstance(topic, dict) and topic.get("name"):
        names.append((normalize(topic["name"]), str(topic.get("id", "")).removeprefix("topic:")))
    return names


def created_topics(run: Run) -> list[tuple[Exchange, Any]]:
    """(exchange, opened topic row) for each topic row the agent wrote, first sending only (found
    once per record: three rules ask)."""

    def make() -> list[tuple[Exchange, Any]]:
        seen: set[str] = set()
        out = []
        for x in posts(run):
            for r in opened_rows(x):
                if kind_of(r) == "topic" and r.id not in seen:
                    seen.add(r.id)
                    out.append((x, r))
        return out

    return list(run.memoized("created topics", make))


def reuse_before_create(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    answered = sorted((rd for rd in reads(run) if rd.answered and rd.done is not None), key=lambda rd: rd.done or 0.0)
    visible: dict[str, str] = {}  # every topic name readable so far, over the reads answered so far
    shown: set[str] = set()  # the rows already read: a row shows the same names each time it is served
    taken = 0
    created = created_topics(run)
    for x, r in created:
        while taken < len(answered) and (answered[taken].done or 0.0) <= x.start:
            for rid in answered[taken].served_ids:
                if rid not in shown:
                    shown.add(rid)
                    for name, tid in _names_shown(run, rid):
                        visible.setdefault(name, tid)
            taken += 1
        name = str(plain(r).get("name") or "")
        if not taken:
            bad.append(Evidence(f"{row_label(x, r.id)}: created topic {name!r} without reading the topics first", x))
            continue
        match = visible.get(normalize(name))
        if match and match != r.id:
            bad.append(
                Evidence(
                    f"{row_label(x, r.id)}: created topic {name!r}; the agent could read topic {short(match)} "
                    "of that name",
                    x,
                )
            )
        elif len(good) < 4:  # the four kept
            good.append(
                Evidence(
                    f"{row_label(x, r.id)}: created topic {name!r} after reading; no topic of that name was readable",
                    x,
                )
            )
    created_ids = {t.id for _, t in created}
    for x in writes(run):
        for r in opened_rows(x):
            topic = plain(r).get("topic") if kind_of(r) == "memory" else None
            if isinstance(topic, dict) and str(topic.get("id", "")).removeprefix("topic:") not in created_ids:
                good.append(Evidence(f"{row_label(x, r.id)}: reused the existing topic {topic.get('name')!r}", x))
                break
    return Result.judge(bad, good[:4])


def one_post(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    later_puts = [x for x in writes(run) if x.method == "PUT"]
    for x, r in created_topics(run):
        tid = f"topic:{r.id}"
        same = [o for o in opened_rows(x) if o.id != r.id]
        memory = [o for o in same if kind_of(o) == "memory" and (plain(o).get("topic") or {}).get("id") == tid]
        memory += [o for o in same if o.verdict != "readable"]  # a row the owner cannot open: its filing is unknown
        link = [o for o in same if kind_of(o) == "link" and tid in (plain(o).get("endpoints") or [])]
        if memory and link:
            good.append(Evidence(f"{row_label(x, r.id)}: topic, its link and its first memory in one POST", x))
            continue
        filed = _filed_later(run, x, tid, later_puts) if link and later_puts else []
        if filed:
            good.append(
                Evidence(f"{row_label(x, r.id)}: topic and link, then {filed[0].label()} filed a memory under it", x)
            )
        else:
            missing = " and ".join(
                w for w, have in (("its first memory", memory), ("its relation row", link)) if not have
            )
            bad.append(Evidence(f"{row_label(x, r.id)}: the topic was posted without {missing}", x))
    return Result.judge(bad, good[:3])


def _filed_later(run: Run, x: Exchange, tid: str, later_puts: list[Exchange]) -> list[Exchange]:
    """The attach flow: PUTs after `x` that move an EXISTING memory (not one posted since) under `tid`."""
    posted_later = {row["id"] for p in posts(run) if p.start >= x.start for row in sent_rows(p)}
    return [
        p
        for p in later_puts
        if p.start > x.start
        and (p.request or {}).get("id") not in posted_later
        and any(topic_of(o) == tid for o in opened_rows(p))
    ]


def not_the_user(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    for x, r in created_topics(run):
        name = str(plain(r).get("name") or "")
        if normalize(name) in USER_NAMES:
            bad.append(Evidence(f"{row_label(x, r.id)}: a topic named {name!r} (the user is never a topic)", x))
        elif len(good) < 3:
            good.append(Evidence(f"{row_label(x, r.id)}: topic {name!r}", x))
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "topics.reuse-before-create",
        "An existing topic of the same name is reused, never created again",
        "000",
        "Topics › Find or create",
        "An exact normalized match reuses the oldest topic (`findTopic`, which also takes a `topic:<id>`).",
        reuse_before_create,
        scenarios=("clean",),
        bug="new-topic",
        catches="creates its topic without looking for the one it can read",
    ),
    Rule(
        "topics.one-post",
        "A new topic is written in the same POST as its first memory",
        "000",
        "Topics › Create a topic with its first memory",
        "Write a new topic only in the same POST as its first memory.",
        one_post,
        scenarios=("clean",),
        bug="topic-alone",
        catches="posts the topic rows, then the memory in a second POST",
    ),
    Rule(
        "topics.not-the-user",
        "The user is never a topic",
        "000",
        "Topics › Find or create",
        "the user is never a topic name.",
        not_the_user,
        scenarios=("clean",),
        bug="user-topic",
        catches='files the memory under a topic named "me"',
    ),
]
