"""Rules on reading: read before the first write; while the owner's phone still owes rows, wait, and never recreate them."""

from __future__ import annotations

from decoy_lab.conformance.rulebook import MEMORIES, Evidence, Result, Rule, Run, short
from decoy_lab.conformance.rules.base import normalize, pairings, preparing, reads, writes
from decoy_lab.conformance.rules.topics import created_topics

SLACK = 0.5  # seconds of timing slack (the recorded start of a request, not the agent's clock)


def _owed_topics(run: Run, seen: set[str], mine: set[str]) -> dict[str, str]:
    """normalized name → id of every stored topic the read did not serve and the agent did not write."""
    return {
        normalize(str(r.get("name") or "")): r["id"]
        for r in run.app_view
        if r.get("kind") == "topic" and r["id"] not in seen and r["id"] not in mine
    }


def read_first(run: Run) -> Result:
    """The task's first memory write (a save, an edit, a deletion) comes after a read the server answered."""
    first = next(
        (x for x in run.exchanges if x.method in ("POST", "PUT") and x.path in (MEMORIES, f"{MEMORIES}/delete")), None
    )
    if first is None:
        return Result.judge([], [])
    read = next((x for x in reads(run) if x.start < first.start and x.status is not None and x.status < 300), None)
    if read is None:
        return Result.judge([Evidence(f"{first.label()}: the task's first memory write, with no read of "
                                      f"{MEMORIES} answered before it", first)], [])  # fmt: skip
    return Result.judge([], [Evidence(f"{read.label()}: read before the first write ({first.label()})", read, first)])


def preparing_wait(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    waited = [x for x in reads(run) if x.answered and preparing(x)]
    made = created_topics(run) if waited else []  # only a read that said "preparing" needs them
    mine = {r.id for _, r in made}
    for rd in waited:
        owed = _owed_topics(run, set(rd.served_ids), mine)
        body = rd.response or {}
        count = len(body.get("preparing") or []) + int(body.get("preparing_others") or 0)
        for x, r in made:
            name = str(getattr(r, "text", "") or "")
            if x.start > rd.start and normalize(name) in owed:
                bad.append(
                    Evidence(
                        f"{x.label()}, row {short(r.id)}: created topic {name!r} while its copy "
                        f"{short(owed[normalize(name)])} was still preparing (read #{rd.id})",
                        x,
                    )
                )
        for p in pairings(run):
            if p.start > rd.start:
                bad.append(Evidence(f"{p.label()}: paired again after read #{rd.id} said rows were preparing", p))
        if not bad:
            good.append(
                Evidence(f"{rd.label()}: {count} rows preparing; nothing saved or recreated in their place", rd)
            )
    return Result.judge(bad, good[:3])


def retry_after(run: Run) -> Result:
    bad: list[str] = []
    good: list[str] = []
    all_reads = reads(run)
    for i, rd in enumerate(all_reads):
        if not (rd.answered and preparing(rd)):
            continue
        if i + 1 >= len(all_reads):
            if not any(rd.start < w.start for w in writes(run)):  # the agent stopped at a read still owed rows
                wait = (rd.response or {}).get("retry_after_seconds")
                bad.append(
                    Evidence(f"{rd.label()}: rows were preparing (retry_after_seconds {wait}); never read again", rd)
                )
            continue
        wait = float((rd.response or {}).get("retry_after_seconds") or 0)
        gap = all_reads[i + 1].start - (rd.done or rd.start)
        nxt = all_reads[i + 1]
        if any(rd.start < w.start < nxt.start for w in writes(run)):
            continue  # a write came between: the next read is a read-back, not a retry of the owed rows
        if wait and gap < wait - SLACK:
            bad.append(
                Evidence(f"{nxt.label()}: read again {gap:.1f} s after #{rd.id}; retry_after_seconds was {wait:g}", nxt)
            )
        else:
            good.append(
                Evidence(f"{nxt.label()}: read again {gap:.1f} s after #{rd.id} (retry_after_seconds {wait:g})", nxt)
            )
    if len(bad) > 1:
        ids = [i for b in bad[1:] if isinstance(b, Evidence) for i in b.exchanges]  # one each: the early read
        more = f"… and {len(bad) - 1} more reads as early (#{ids[0]} to #{ids[-1]})"
        bad = [bad[0], Evidence(more, ids[0], ids[-1])]
    return Result.judge(bad, good[:3])


RULES = [
    Rule(
        "reading.read-first",
        "The task reads the memories before its first write",
        "000",
        "Read first, write as you go",
        "Do the read in step 1 at the start of every new task",
        read_first,
        scenarios=("clean",),
        bug="write-first",
        catches="saves a note about the task before it has read anything",
    ),
    Rule(
        "reading.preparing-wait",
        "Rows still preparing are waited for, never saved or created again",
        "000",
        "Direct HTTP contract › Reading",
        "Keep memory and topic IDs, and do not save a memory or recreate a topic again because it is not listed.",
        preparing_wait,
        scenarios=("preparing",),
        bug="preparing-as-missing",
        catches="treats preparing rows as missing and creates their topic again",
    ),
    Rule(
        "reading.retry-after",
        "A preparing read is repeated only after retry_after_seconds",
        "000",
        "Direct HTTP contract › Reading",
        "Decoy asks the owner's phone in the background; read again after that many seconds.",
        retry_after,
        scenarios=("preparing",),
        bug="ignore-retry-after",
        catches="reads again every 0.2 s while rows are preparing",
    ),
]
