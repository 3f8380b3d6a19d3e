"""`decoy-lab check`'s topics.* rules (conformance/rules/topics.py) on hand-made records: a topic made
without reading first or beside one of the same name, a topic posted without its first memory and
link, a topic named for the user. Each record breaks (or keeps) one sentence of 000:

"An exact normalized match reuses the oldest topic (`findTopic`, which also takes a `topic:<id>`)."
"Write a new topic only in the same POST as its first memory." "the user is never a topic name."
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row

M = MEMORIES


def x(
    i: int, method: str, status: int = 201, request: Any = None, response: Any = None, rows=(), start=None, done=-1.0
):
    t = float(i) if start is None else start
    end = t + 0.1 if done == -1.0 else done
    return Exchange(i, method, M, "", status, "answered", t, end, request, response, {}, list(rows), "t1")


def topic(tid: str, name: str, verdict: str = "readable") -> Row:
    return Row(tid, "request.rows[0]", verdict, plaintext={"kind": "topic", "name": name})


def memory(mid: str, tid: str | None = None, name: str = "", verdict: str = "readable") -> Row:
    plain: dict[str, Any] = {"kind": "memory", "text": "x"}
    if tid:
        plain["topic"] = {"id": f"topic:{tid}", "name": name}
    return Row(mid, "request.rows[1]", verdict, plaintext=plain)


def link(lid: str, tid: str) -> Row:
    return Row(lid, "request.rows[2]", "readable", plaintext={"kind": "link", "endpoints": [f"topic:{tid}", "user"]})


def post(i: int, *rows: Row, **kw: Any) -> Exchange:
    return x(i, "POST", 201, {"rows": [{"id": r.id} for r in rows]}, {"created": [r.id for r in rows]}, rows, **kw)


def read(i: int, *ids: str, **kw: Any) -> Exchange:
    return x(i, "GET", 200, None, {"memories": [{"id": r} for r in ids]}, **kw)


VIEW = [
    {"id": "t-old", "kind": "topic", "name": "Lisbon Trip"},
    {"id": "m-old", "kind": "memory", "topic": {"id": "topic:t-mem", "name": "Work"}},
    {"id": "m-plain", "kind": "memory"},
]


def judge(rule: str, *exchanges: Exchange, view: list[dict] | None = None) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("clean", list(exchanges), app_view=VIEW if view is None else view))
    for e in result.evidence:  # a line links the exchange it names (the report's reproducer)
        assert e.exchanges == (int(re.findall(r"#(\d+)", e)[0]),), e
    return result.status, [str(e) for e in result.evidence]


# -- topics.reuse-before-create --------------------------------------------------------------------


def test_a_topic_created_without_reading_first_fails():
    status, evidence = judge("topics.reuse-before-create", post(1, topic("t1", "Lisbon trip")))
    assert status == FAILED
    assert evidence == [f"POST {M} #1, row t1: created topic 'Lisbon trip' without reading the topics first"]
    not_yet = read(2, "t-old", start=0.5, done=1.5)  # its answer came after the POST was sent
    assert judge("topics.reuse-before-create", not_yet, post(1, topic("t1", "Other")))[0] == FAILED
    unanswered = x(0, "GET", 502, None, None)
    assert judge("topics.reuse-before-create", unanswered, post(1, topic("t1", "Other")))[0] == FAILED
    running = read(0, done=None)  # never answered
    assert judge("topics.reuse-before-create", running, post(1, topic("t1", "Other")))[0] == FAILED


def test_a_topic_created_beside_a_readable_one_of_the_same_name_fails():
    status, evidence = judge("topics.reuse-before-create", read(0, "t-old"), post(1, topic("t1", "  lisbon   TRIP ")))
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1, row t1: created topic '  lisbon   TRIP '; the agent could read topic t-old of that name"
    ]
    # a memory filed under a topic shows that topic's name too
    status, evidence = judge("topics.reuse-before-create", read(0, "m-old"), post(1, topic("t1", "work")))
    assert status == FAILED and "could read topic t-mem of that name" in evidence[0]
    at_once = read(0, "t-old", start=0.0, done=1.0)  # answered just as the POST went out: it could be read
    assert judge("topics.reuse-before-create", at_once, post(1, topic("t1", "Lisbon Trip")))[0] == FAILED


def test_a_topic_created_after_reading_with_no_match_passes():
    status, evidence = judge(
        "topics.reuse-before-create", read(0, "t-old", "m-plain", "gone"), post(1, topic("t1", "Porto"))
    )
    assert status == PASSED
    assert evidence == [f"POST {M} #1, row t1: created topic 'Porto' after reading; no topic of that name was readable"]
    # reading its own topic back and posting it again is no second topic
    view = [*VIEW, {"id": "t1", "kind": "topic", "name": "Porto"}]
    assert judge("topics.reuse-before-create", read(0, "t1"), post(1, topic("t1", "Porto")), view=view)[0] == PASSED
    unnamed = [
        {"id": "t-x", "kind": "topic", "name": ""},
        {"id": "m-x", "kind": "memory", "topic": {"id": "topic:t-y"}},
    ]
    assert (
        judge("topics.reuse-before-create", read(0, "t-x", "m-x"), post(1, topic("t1", "")), view=unnamed)[0] == PASSED
    )
    topic_of_a_topic = [{"id": "t-z", "kind": "topic", "name": "Z", "topic": {"id": "topic:q", "name": "Porto"}}]
    assert (
        judge("topics.reuse-before-create", read(0, "t-z"), post(1, topic("t1", "Porto")), view=topic_of_a_topic)[0]
        == PASSED
    )


def test_the_oldest_readable_topic_of_a_name_is_the_one_named():
    view = [{"id": "t-a", "kind": "topic", "name": "Porto"}, {"id": "t-b", "kind": "topic", "name": "porto"}]
    status, evidence = judge(
        "topics.reuse-before-create", read(0, "t-a"), read(1, "t-b", "t-a"), post(2, topic("t1", "Porto")), view=view
    )
    assert status == FAILED and "could read topic t-a of that name" in evidence[0]
    late = [read(5, "t-a", start=0.0, done=0.5), read(6, "t-b", start=0.0, done=0.2)]  # in the order they answered
    status, evidence = judge("topics.reuse-before-create", *late, post(7, topic("t1", "Porto")), view=view)
    assert status == FAILED and "could read topic t-b of that name" in evidence[0]


def test_reusing_an_existing_topic_passes_and_the_evidence_is_kept_short():
    status, evidence = judge(
        "topics.reuse-before-create", post(1, memory("m1", "t-old", "Lisbon Trip"), memory("m2", "t-old", "x"))
    )
    assert status == PASSED and evidence == [f"POST {M} #1, row m1: reused the existing topic 'Lisbon Trip'"]
    mine = post(2, topic("t1", "Porto"), memory("m1", "t1", "Porto"))  # filed under the topic it just made: no reuse
    assert judge("topics.reuse-before-create", read(0), mine)[1] == [
        f"POST {M} #2, row t1: created topic 'Porto' after reading; no topic of that name was readable"
    ]
    plain = post(1, memory("m1"))
    assert judge("topics.reuse-before-create", plain)[0] == NOT_EXERCISED
    listed = Row("m1", "request.rows[0]", "readable", plaintext={"kind": "memory", "topic": "topic:t-old"})
    assert judge("topics.reuse-before-create", post(1, listed))[0] == NOT_EXERCISED
    many = [read(0)] + [post(i, topic(f"t{i}", f"T{i}")) for i in range(1, 7)]
    assert len(judge("topics.reuse-before-create", *many)[1]) == 4
    bad = [post(i, topic(f"t{i}", f"T{i}")) for i in range(1, 7)]
    assert len(judge("topics.reuse-before-create", *bad)[1]) == 6
    twice = [read(0), post(1, topic("t1", "Porto")), post(2, topic("t1", "Porto"))]  # the same topic sent again
    assert len(judge("topics.reuse-before-create", *twice)[1]) == 1
    refused = x(1, "POST", 400, {"rows": []}, {"code": "X"}, [topic("t1", "Porto")])
    assert judge("topics.reuse-before-create", refused)[0] == NOT_EXERCISED


# -- topics.one-post -------------------------------------------------------------------------------


def test_a_topic_with_its_link_and_first_memory_in_one_post_passes():
    status, evidence = judge("topics.one-post", post(1, topic("t1", "Porto"), memory("m1", "t1"), link("l1", "t1")))
    assert status == PASSED and evidence == [f"POST {M} #1, row t1: topic, its link and its first memory in one POST"]
    sealed = memory("m1", verdict="unreadable")  # the owner cannot open it: its filing is unknown, not missing
    assert judge("topics.one-post", post(1, topic("t1", "Porto"), sealed, link("l1", "t1")))[0] == PASSED


def test_a_topic_posted_alone_or_without_its_link_fails():
    status, evidence = judge("topics.one-post", post(1, topic("t1", "Porto")))
    assert status == FAILED
    assert evidence == [f"POST {M} #1, row t1: the topic was posted without its first memory and its relation row"]
    status, evidence = judge("topics.one-post", post(1, topic("t1", "Porto"), memory("m1", "t1")))
    assert status == FAILED and evidence[0].endswith("posted without its relation row")
    status, evidence = judge(
        "topics.one-post", post(1, topic("t1", "Porto"), link("l1", "t1"), memory("m1", "t9"), link("l2", "t9"))
    )
    assert status == FAILED and evidence[0].endswith("posted without its first memory")
    unfiled = Row("m1", "request.rows[1]", "readable", plaintext={"kind": "memory"})
    assert judge("topics.one-post", post(1, topic("t1", "Porto"), unfiled, link("l1", "t1")))[0] == FAILED
    wrong_end = Row("l1", "request", "readable", plaintext={"kind": "link", "endpoints": ["topic:t9"]})
    assert judge("topics.one-post", post(1, topic("t1", "Porto"), memory("m1", "t1"), wrong_end))[0] == FAILED
    endless = Row("l1", "request", "readable", plaintext={"kind": "link"})
    assert judge("topics.one-post", post(1, topic("t1", "Porto"), memory("m1", "t1"), endless))[0] == FAILED
    not_a_link = Row("l1", "request", "readable", plaintext={"kind": "memory", "endpoints": ["topic:t1"]})
    assert judge("topics.one-post", post(1, topic("t1", "Porto"), memory("m1", "t1"), not_a_link))[0] == FAILED
    many = [post(i, topic(f"t{i}", "T"), memory(f"m{i}", f"t{i}"), link(f"l{i}", f"t{i}")) for i in range(1, 6)]
    assert len(judge("topics.one-post", *many)[1]) == 3
    assert len(judge("topics.one-post", *(post(i, topic(f"t{i}", "T")) for i in range(1, 6)))[1]) == 5


def put(i: int, mid: str, tid: str, start: float | None = None) -> Exchange:
    row = Row(mid, "request", "readable", plaintext={"kind": "memory", "topic": {"id": f"topic:{tid}"}})
    return x(i, "PUT", 200, {"id": mid}, {}, [row], start=start)


def test_a_topic_and_link_then_an_existing_memory_moved_under_it_passes():
    made = post(1, topic("t1", "Porto"), link("l1", "t1"))
    status, evidence = judge("topics.one-post", made, put(2, "m-old", "t1"))
    assert status == PASSED
    assert evidence == [f"POST {M} #1, row t1: topic and link, then PUT {M} #2 filed a memory under it"]
    # a memory posted after the topic and then moved is a first memory in a second POST
    assert judge("topics.one-post", made, post(2, memory("m9")), put(3, "m9", "t1"))[0] == FAILED
    assert judge("topics.one-post", made, put(2, "m-old", "t9"))[0] == FAILED  # filed elsewhere
    assert judge("topics.one-post", put(0, "m-old", "t1"), made)[0] == FAILED  # before the topic
    assert judge("topics.one-post", made, put(2, "m-old", "t1", start=1.0))[0] == FAILED  # with it, not after
    alone = post(1, topic("t1", "Porto"))  # no link: moving a memory under it does not make up for it
    assert judge("topics.one-post", alone, put(2, "m-old", "t1"))[0] == FAILED
    same_time = post(2, memory("m9"), start=1.0)  # posted with the topic's POST: not an existing memory
    assert judge("topics.one-post", made, same_time, put(3, "m9", "t1"))[0] == FAILED


# -- topics.not-the-user ---------------------------------------------------------------------------


def test_a_topic_named_for_the_user_fails():
    for name in ("me", " User ", "YOU", "default_user"):
        status, evidence = judge("topics.not-the-user", post(1, topic("t1", name)))
        assert status == FAILED and evidence == [
            f"POST {M} #1, row t1: a topic named {name!r} (the user is never a topic)"
        ]


def test_a_topic_named_for_something_else_passes():
    status, evidence = judge("topics.not-the-user", post(1, topic("t1", "Meals")))
    assert status == PASSED and evidence == [f"POST {M} #1, row t1: topic 'Meals'"]
    assert judge("topics.not-the-user", post(1, memory("m1")))[0] == NOT_EXERCISED
    assert len(judge("topics.not-the-user", *(post(i, topic(f"t{i}", "T")) for i in range(1, 6)))[1]) == 3
    assert len(judge("topics.not-the-user", *(post(i, topic(f"t{i}", "me")) for i in range(1, 6)))[1]) == 5
    nameless = Row("t1", "request", "readable", plaintext={"kind": "topic"})
    assert judge("topics.not-the-user", post(1, nameless))[1] == [f"POST {M} #1, row t1: topic ''"]


# -- what the first run left alive: each a record a user could send --------------------------------


def test_every_read_answered_before_the_create_counts():
    status, evidence = judge(
        "topics.reuse-before-create", read(0, "m-plain"), read(1, "t-old"), post(2, topic("t1", "Lisbon Trip"))
    )
    assert status == FAILED and "could read topic t-old of that name" in evidence[0]
    at_once = read(0, "t-old", start=0.0, done=1.0)  # answered as the POST went out: it could be read
    status, evidence = judge("topics.reuse-before-create", at_once, post(1, topic("t1", "Lisbon Trip")))
    assert status == FAILED and "could read topic t-old of that name" in evidence[0]


def test_a_topic_name_shown_without_its_id_names_no_topic_to_reuse():
    view = [{"id": "m-x", "kind": "memory", "topic": {"name": "Porto"}}]
    assert judge("topics.reuse-before-create", read(0, "m-x"), post(1, topic("t1", "Porto")), view=view)[0] == PASSED
    nameless = Row("t1", "request.rows[0]", "readable", plaintext={"kind": "topic"})
    assert judge("topics.reuse-before-create", read(0), post(1, nameless))[1] == [
        f"POST {M} #1, row t1: created topic '' after reading; no topic of that name was readable"
    ]


def test_only_a_memory_filed_under_an_existing_topic_is_a_reuse():
    odd = Row(
        "t2",
        "request.rows[0]",
        "readable",
        plaintext={"kind": "topic", "name": "X", "topic": {"id": "topic:t-old", "name": "Lisbon Trip"}},
    )
    status, evidence = judge("topics.reuse-before-create", read(0), post(1, odd))
    assert status == PASSED and not any("reused" in e for e in evidence)
    made = (
        [read(0)]
        + [post(i, topic(f"t{i}", f"T{i}")) for i in range(1, 5)]
        + [post(5, memory("m1", "t-old", "Lisbon Trip"))]
    )
    assert len(judge("topics.reuse-before-create", *made)[1]) == 4  # four kept of five passes
