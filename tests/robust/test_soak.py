"""Fault soak: 500 mixed writes through the sandbox while 30 % of writes commit and then lose
their answer (`drop_after_commit`) and 10 % of memory requests fail with a 503 before doing
anything (`error_5xx`). Afterwards the owner's app-view shows every intended memory exactly
once with its last text, nothing deleted survives, every topic exists once with its one link
and its memories (no orphan topics), and every row opens.

Spec: "If the outcome is unknown (a timeout, a dropped connection, a 5xx), POST the same
sealed rows again: the server stores each id once, lists repeats under `existing` … Never
build new rows for a retry; that makes a second topic." and "`409 REV_CONFLICT` means it changed
since you read it: re-read, re-apply, retry."

Every hundred writes an outage longer than the retry budget (every answer lost) ends three saves in
`OutcomeUnknown`; once the network heals, `conn.resend()` finishes them with the same rows: still 0
lost, 0 duplicated, 0 orphan topics, and nothing left pending.

The writes go through `Connection.save / edit / delete`, whose retry rules are under test
(resend the same rows; never new ones). When a call still ends in an unknown outcome, the test
repeats the same call, as a user would; if the client had given up on a write that in fact
committed, that repeat would create a duplicate, and the exactly-once check fails.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown, ServerError, TransportError
from decoy_lab.memory import CATEGORIES
from decoy_lab.sandbox import Sandbox

WRITES = 500
FAULTS = {"drop_after_commit": 0.3, "error_5xx": 0.1, "seed": 500}

pytestmark = pytest.mark.timeout(300)


@dataclass
class Intent:
    """What the vault must hold when the soak is over."""

    live: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (text, topic name)
    deleted: set[str] = field(default_factory=set)
    topics: dict[str, int] = field(default_factory=dict)  # name -> memories filed under it
    ops: Counter = field(default_factory=Counter)
    repeats: Counter = field(default_factory=Counter)  # calls that ended in an unknown outcome
    fired: Counter = field(default_factory=Counter)  # faults fired (reconfiguring resets the sandbox's counts)


def _again(intent: Intent, what: str, call):
    """Run a client call; repeat it while it ends in an unknown outcome (bounded)."""
    for _ in range(20):
        try:
            return call()
        except (TransportError, ServerError):
            intent.repeats[what] += 1
    raise AssertionError(f"{what}: 20 calls in a row ended in an unknown outcome")


def _outage(sb: Sandbox, conn: Connection, intent: Intent, i: int) -> None:
    """Three saves (one to a new topic) while every answer is lost, then resend once healed."""
    intent.fired.update(sb.state.faults.counts)
    sb.state.faults.configure({"drop_after_commit": 1.0})
    for k in range(3):
        name = f"Outage topic {i}" if k == 0 else None
        text = f"saved during the outage at write {i} ({k})"
        try:
            mid = conn.save(text, topic=name, topic_type="project" if name else "")
        except OutcomeUnknown as exc:
            mid = exc.ids[-1]  # the memory row is the last of the rows sent
            intent.ops["outage: unknown"] += 1
        intent.live[mid] = (text, name)
        if name:
            intent.topics[name] = 1
    sb.state.faults.configure({**FAULTS, "seed": i})  # the outage's own drops are not counted as fired
    done = _again(intent, "resend", conn.resend)
    assert all(d["outcome"] == "committed" for d in done), done


@pytest.fixture(scope="module")
def soak():
    with Sandbox.start(seed="none", faults=FAULTS) as sb:
        conn = Connection.pair(
            sb.url,
            name="soak",
            profile=None,
            on_link=lambda link, code: None,
            retries=12,
            backoff=0.0,
            sleep=lambda seconds: None,
        )
        rng = random.Random(500)
        intent = Intent()
        for i in range(WRITES):
            if i % 100 == 50:
                _outage(sb, conn, intent, i)
            roll = rng.random()
            user_ids = [k for k, (_, t) in intent.live.items() if t is None]
            if roll < 0.15 or not intent.topics:
                name = f"Soak topic {len(intent.topics)}"
                text = f"first memory of {name} (write {i})"
                mid = _again(intent, "save (new topic)", lambda: conn.save(text, topic=name, topic_type="project"))
                intent.topics[name] = 1
                intent.live[mid] = (text, name)
                intent.ops["save (new topic)"] += 1
            elif roll < 0.25:
                name = rng.choice(sorted(intent.topics))
                text = f"another memory of {name} (write {i})"
                mid = _again(intent, "save (topic)", lambda: conn.save(text, topic=name))
                intent.topics[name] += 1
                intent.live[mid] = (text, name)
                intent.ops["save (topic)"] += 1
            elif roll < 0.75 or len(intent.live) < 5:
                text = f"memory about the user (write {i})"
                cats = rng.sample(CATEGORIES, rng.randint(0, 2))
                mid = _again(intent, "save", lambda: conn.save(text, categories=cats))
                intent.live[mid] = (text, None)
                intent.ops["save"] += 1
            elif roll < 0.9:
                mid = rng.choice(sorted(intent.live))
                text, topic = intent.live[mid]
                new = f"{text.split(' [edit')[0]} [edit {i}]"
                _again(intent, "edit", lambda: conn.edit(mid, text=new))
                intent.live[mid] = (new, topic)
                intent.ops["edit"] += 1
            elif user_ids:
                mid = rng.choice(sorted(user_ids))
                result = _again(intent, "delete", lambda: conn.delete([mid]))
                assert mid in result.deleted, f"delete of own memory {mid} refused: {result}"
                intent.live.pop(mid)
                intent.deleted.add(mid)
                intent.ops["delete"] += 1
            else:
                intent.ops["skipped"] += 1
        fired = dict(intent.fired + Counter(sb.state.faults.counts))
        sb.state.faults.configure({})  # quiet, so the owner's view is read in peace
        view = sb.owner.app_view()
        yield {"intent": intent, "view": view, "fired": fired, "resends": conn.resends, "pending": conn.pending}
        conn.close()


def test_faults_really_fired(soak):
    """Guard against a soak that proves nothing: both faults fired many times and the client
    really had to resend."""
    assert soak["fired"]["drop_after_commit"] >= 100
    assert soak["fired"]["error_5xx"] >= 40
    assert soak["resends"] >= 100
    assert soak["intent"].ops["outage: unknown"] >= 12, "the outages outlasted the retry budget"
    assert soak["pending"] == [], "every pending write was settled"
    assert sum(v for k, v in soak["intent"].ops.items() if k != "skipped") >= WRITES - 10


def test_every_row_opens_for_the_owner(soak):
    bad = [r for r in soak["view"] if not r.get("readable")]
    assert not bad, f"{len(bad)} rows the owner's app cannot open, first: {bad[0]}"


def test_every_intended_memory_exactly_once_with_its_last_text(soak):
    intent = soak["intent"]
    memories = [r for r in soak["view"] if r.get("kind") == "memory"]
    ids = Counter(r["id"] for r in memories)
    assert set(ids) == set(intent.live), (
        f"missing {sorted(set(intent.live) - set(ids))[:3]}, unexpected {sorted(set(ids) - set(intent.live))[:3]}"
    )
    by_text = Counter(r["text"] for r in memories)
    dupes = [t for t, n in by_text.items() if n > 1]
    assert not dupes, f"{len(dupes)} memories saved twice, first: {dupes[0]!r}"
    for r in memories:
        text, topic = intent.live[r["id"]]
        assert r["text"] == text, f"lost edit on {r['id']}: reads {r['text']!r}, last write {text!r}"
        assert (r["topic"] or {}).get("name") == topic


def test_nothing_deleted_survives(soak):
    ids = {r["id"] for r in soak["view"]}
    assert not soak["intent"].deleted & ids


def test_every_topic_once_with_its_link_and_memories(soak):
    intent = soak["intent"]
    topics = [r for r in soak["view"] if r.get("kind") == "topic"]
    names = Counter(t["name"] for t in topics)
    assert names == Counter(dict.fromkeys(intent.topics, 1)), "a topic is missing or was created twice"
    for t in topics:
        assert not t["problems"], f"topic {t['name']!r}: {t['problems']}"  # orphan: no link or no memory
    links = [r for r in soak["view"] if r.get("kind") == "link"]
    assert Counter(link["to"] for link in links) == Counter(dict.fromkeys(intent.topics, 1))
    filed = Counter((r["topic"] or {}).get("name") for r in soak["view"] if r.get("kind") == "memory")
    for name, n in intent.topics.items():
        assert filed[name] == n, f"topic {name!r} holds {filed[name]} memories, {n} were filed"
