"""`decoy-lab check`'s rules on a row's keys and its end (conformance/rules/keys.py), on hand-made
records with real wraps: a self_wrap of another key, a rotation without its wraps, a label removed
under the old key, a topic deleted while in use, a deletion never verified.

000 self_wrap: "headerless envelope to that connection's public key: `[2-byte BE key length]
[RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]`, whose plaintext
is the raw 32-byte memory key." "When the author removes a label (a category, its topic or account),
rotate the key so a connection that only had it through that label stops getting it" "A rotation
includes the new `kid`, `owner_wrap`, `self_wrap` and replacement grantee wraps atomically" "Do not
delete a topic that a committed memory may already use." "When the person requests deletion, inspect
both deleted and refused IDs, then verify the requested deletion."
"""

from __future__ import annotations

import re
import struct
from types import SimpleNamespace
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey, random_key

AGENT = AgentKey.generate()
BIG = AgentKey.generate(3072)  # another RSA size than the key paired
KEY, OTHER = random_key(), random_key()
DELETE = f"{MEMORIES}/delete"


def x(i: int, method: str, path: str, status: int = 200, request: Any = None, response: Any = None, rows=()):
    return Exchange(i, method, path, "", status, "answered", float(i), i + 0.1, request, response, {}, list(rows), "t1")


def self_wrap(key: bytes = KEY, agent: AgentKey = AGENT) -> str:
    return wire.b64encode(sealing.wrap_to_agent(key, agent.public_key_b64))


def envelope(block: int, sealed: int) -> str:
    """A headerless agent envelope's layout with a `block`-byte RSA part and `sealed` bytes of ciphertext + tag."""
    return wire.b64encode(struct.pack(">H", block) + b"\x01" * block + b"\x02" * 12 + b"\x03" * sealed)


def save(i: int, wrap: Any, kid: str = "", opened_kid: str | None = None) -> Exchange:
    row = {"id": f"r{i}", "kid": kid or wire.kid(KEY), "owner_wrap": "…", "self_wrap": wrap}
    rows = [] if opened_kid is None else [Row(f"r{i}", "request.rows[0]", "readable", kid=opened_kid)]
    return x(i, "POST", MEMORIES, 201, {"rows": [row]}, {"created": [f"r{i}"]}, rows)


def pairing(agent: AgentKey = AGENT) -> Exchange:
    return x(0, "POST", "/oauth/device", 200, {"agent_public_key": agent.public_key_b64, "client_id": "c"}, {})


def judge(rule: str, *exchanges: Exchange, key: bytes | None = None, events=()) -> tuple[str, list[str]]:
    run = Run("clean", list(exchanges), events=list(events), agent_key=key)
    result = BY_ID[rule].evaluate(run)
    for e in result.evidence:  # a line links the exchange it is about (the report's reproducer), and only ones it names
        named = [int(n) for n in re.findall(r"#(\d+)", e)]
        assert named[0] in e.exchanges and set(e.exchanges) <= set(named), e
    return result.status, [str(e) for e in result.evidence]


# -- rows.self-wrap-opens --------------------------------------------------------------------------

PEM = AGENT.to_pem().encode()


def test_with_the_agents_key_a_self_wrap_of_the_rows_key_passes():
    status, evidence = judge("rows.self-wrap-opens", save(1, self_wrap(), opened_kid=wire.kid(KEY)), key=PEM)
    assert status == PASSED
    assert evidence == [
        "POST /api/agent/context/memories #1, row r1: self_wrap opens with the agent's key to the key owner_wrap holds"
    ]


def test_with_the_agents_key_a_self_wrap_of_another_key_fails():
    status, evidence = judge("rows.self-wrap-opens", save(1, self_wrap(OTHER), opened_kid=wire.kid(KEY)), key=PEM)
    assert status == FAILED
    assert evidence == [
        f"POST /api/agent/context/memories #1, row r1: self_wrap holds another key (kid {wire.kid(OTHER)}), "
        f"not the one owner_wrap holds (kid {wire.kid(KEY)})"
    ]
    # the owner's app did not open the row: the kid the agent sent is the one owner_wrap claims
    status, evidence = judge("rows.self-wrap-opens", save(1, self_wrap(OTHER)), key=PEM)
    assert status == FAILED and f"(kid {wire.kid(KEY)})" in evidence[0]
    unread = save(1, self_wrap(OTHER), opened_kid=wire.kid(KEY))
    unread.rows[0] = Row("r1", "request.rows[0]", "unreadable", kid=wire.kid(KEY))
    assert judge("rows.self-wrap-opens", unread, key=PEM)[0] == FAILED
    other_row = save(1, self_wrap(OTHER), opened_kid=wire.kid(OTHER))
    other_row.rows[0] = Row("r9", "request.rows[0]", "readable", kid=wire.kid(OTHER))  # another row's kid
    assert judge("rows.self-wrap-opens", other_row, key=PEM)[0] == FAILED
    blank = save(1, self_wrap(OTHER), opened_kid="")  # opened, kid unknown: the sent kid again
    assert judge("rows.self-wrap-opens", blank, key=PEM)[0] == FAILED


def test_with_the_agents_key_a_self_wrap_that_does_not_open_fails():
    status, evidence = judge("rows.self-wrap-opens", save(1, self_wrap(agent=AgentKey.generate())), key=PEM)
    assert status == FAILED and evidence[0].startswith(
        "POST /api/agent/context/memories #1, row r1: self_wrap does not open with the agent's key: "
    )


def test_without_the_agents_key_the_layout_must_fit_the_key_paired():
    status, evidence = judge("rows.self-wrap-opens", pairing(), save(1, self_wrap(OTHER)))
    assert status == PASSED  # only the key can tell which key it wraps
    assert evidence == [
        "POST /api/agent/context/memories #1, row r1: self_wrap is an RSA-OAEP wrap that fits the paired key "
        "(to check that it opens to owner_wrap's key, give the agent's key: --agent-key PEM)"
    ]
    big = BIG
    status, evidence = judge("rows.self-wrap-opens", pairing(), save(1, self_wrap(agent=big)))
    assert status == FAILED
    assert evidence[0].endswith(
        "self_wrap's RSA-OAEP block is 384 bytes; the agent key registered at pairing gives 256"
    )
    # with no pairing seen, any RSA size is a size
    assert judge("rows.self-wrap-opens", save(1, self_wrap(agent=big)))[0] == PASSED
    both = [pairing(), pairing(big)]  # two keys registered: either fits
    assert judge("rows.self-wrap-opens", *both, save(1, self_wrap(agent=big)))[0] == PASSED


def test_without_the_agents_key_a_wrong_layout_fails_in_words():
    status, evidence = judge("rows.self-wrap-opens", save(1, envelope(100, 48)))
    assert status == FAILED and evidence[0].endswith("self_wrap's RSA-OAEP block is 100 bytes, no RSA key size")
    for size in (256, 384, 512):
        assert judge("rows.self-wrap-opens", save(1, envelope(size, 48)))[0] == PASSED, size
    status, evidence = judge("rows.self-wrap-opens", save(1, envelope(256, 60)))
    assert status == FAILED
    assert evidence[0].endswith("self_wrap seals 44 bytes; its plaintext is the raw 32-byte memory key")
    status, evidence = judge("rows.self-wrap-opens", save(1, "not base64!"))
    assert status == FAILED and "self_wrap is not a headerless agent envelope: " in evidence[0]
    bad_pairing = x(0, "POST", "/oauth/device", 200, {"agent_public_key": "????"}, {})  # no key in it: no size
    assert judge("rows.self-wrap-opens", bad_pairing, save(1, envelope(384, 48)))[0] == PASSED


def test_a_row_without_a_self_wrap_is_not_this_rules_and_evidence_is_kept_short():
    for missing in (None, "", 7):
        assert judge("rows.self-wrap-opens", save(1, missing))[0] == NOT_EXERCISED, missing
    fine = [save(i, envelope(256, 48)) for i in range(1, 6)]
    assert len(judge("rows.self-wrap-opens", *fine)[1]) == 3
    wrong = [save(i, envelope(100, 48)) for i in range(1, 6)]
    assert len(judge("rows.self-wrap-opens", *wrong)[1]) == 5  # every wrong row is named


# -- writes.rotation-wraps -------------------------------------------------------------------------


def served(i: int, kid: str, rid: str = "r1", status: int = 200) -> Exchange:
    return x(i, "GET", MEMORIES, status, None, {"memories": [{"id": rid, "kid": kid}]})


def edit(i: int, kid: str | None, *wraps: str, status: int = 200, rid: str = "r1", labels: Any = None) -> Exchange:
    body: dict[str, Any] = {"id": rid, "ciphertext": "…"}
    if kid is not None:
        body["kid"] = kid
    body |= dict.fromkeys(wraps, "…")
    code = {"code": "REV_CONFLICT"} if status == 409 else {"id": rid}
    rows = [] if labels is None else [Row(rid, "request", "readable", plaintext=labels)]
    return x(i, "PUT", MEMORIES, status, body, code, rows)


def test_a_rotation_with_both_wraps_passes():
    status, evidence = judge("writes.rotation-wraps", served(1, "k1"), edit(2, "k2", "owner_wrap", "self_wrap"))
    assert status == PASSED
    assert evidence == ["PUT /api/agent/context/memories #2, row r1: rotated to kid k2 with owner_wrap and self_wrap"]


def test_a_new_kid_without_its_wraps_fails_even_when_refused():
    status, evidence = judge("writes.rotation-wraps", served(1, "k1"), edit(2, "k2"))
    assert status == FAILED
    assert evidence == [
        "PUT /api/agent/context/memories #2, row r1: a new kid (k2, was k1) without owner_wrap and self_wrap"
    ]
    status, evidence = judge("writes.rotation-wraps", served(1, "k1"), edit(2, "k2", "owner_wrap"))
    assert status == FAILED and evidence[0].endswith("without self_wrap")
    status, evidence = judge("writes.rotation-wraps", served(1, "k1"), edit(2, "k2", "self_wrap", status=409))
    assert status == FAILED and evidence[0].endswith("without owner_wrap (refused 409 REV_CONFLICT)")
    # refused with both wraps: nothing stored, nothing wrong
    assert (
        judge("writes.rotation-wraps", served(1, "k1"), edit(2, "k2", "owner_wrap", "self_wrap", status=409))[0]
        == NOT_EXERCISED
    )


def test_the_old_kid_is_the_latest_known_before_the_edit():
    sent = x(1, "POST", MEMORIES, 201, {"rows": [{"id": "r1", "kid": "k1"}]}, {"created": ["r1"]})
    assert judge("writes.rotation-wraps", sent, edit(2, "k2"))[0] == FAILED  # the kid the agent posted
    assert judge("writes.rotation-wraps", served(1, "k1"), served(2, "k2"), edit(3, "k2"))[0] == NOT_EXERCISED
    assert judge("writes.rotation-wraps", edit(2, "k2"), served(3, "k1"))[0] == NOT_EXERCISED  # known only later
    assert judge("writes.rotation-wraps", served(1, "k1", status=500), edit(2, "k2"))[0] == NOT_EXERCISED
    assert judge("writes.rotation-wraps", served(1, "k1", status=304), edit(2, "k2"))[0] == NOT_EXERCISED
    assert judge("writes.rotation-wraps", served(1, "k1", rid="r2"), edit(2, "k2"))[0] == NOT_EXERCISED
    assert judge("writes.rotation-wraps", served(1, "k1"), edit(2, None))[0] == NOT_EXERCISED  # no kid sent
    many = [served(1, "k1"), *(edit(i, f"k{i}", "owner_wrap", "self_wrap") for i in range(2, 7))]
    assert len(judge("writes.rotation-wraps", *many)[1]) == 3


# -- writes.rotate-on-label-removal ----------------------------------------------------------------


def memory(categories: list[str], about: str | None = None) -> dict:
    return {"kind": "memory", "categories": categories, **({"about": about} if about else {})}


def saved(i: int, labels: Any, kid: str = "k1", rid: str = "r1") -> Exchange:
    row = Row(rid, "request.rows[0]", "readable", kind="memory", plaintext=labels)
    return x(i, "POST", MEMORIES, 201, {"rows": [{"id": rid, "kid": kid}]}, {"created": [rid]}, [row])


def test_removing_a_label_with_the_same_key_fails():
    status, evidence = judge(
        "writes.rotate-on-label-removal", saved(1, memory(["food", "travel"])), edit(2, "k1", labels=memory(["food"]))
    )
    assert status == FAILED
    assert evidence == [
        "PUT /api/agent/context/memories #2, row r1: removed the label 'travel' and kept the key (kid k1)"
    ]
    # no kid at all keeps the key too
    status, evidence = judge(
        "writes.rotate-on-label-removal", saved(1, memory(["food", "travel"])), edit(2, None, labels=memory(["food"]))
    )
    assert status == FAILED and evidence[0].endswith("kept the key (kid k1)")


def test_removing_a_label_with_a_new_key_passes():
    status, evidence = judge(
        "writes.rotate-on-label-removal", saved(1, memory(["food"], "topic:t1")), edit(2, "k2", labels=memory(["food"]))
    )
    assert status == PASSED
    assert evidence == ["PUT /api/agent/context/memories #2, row r1: removed 'topic:t1' with a new key (kid k2)"]
    many = [saved(1, memory(["a", "b"]), rid=f"r{i}") for i in range(5)]
    many += [edit(2 + i, "k9", rid=f"r{i}", labels=memory(["a"])) for i in range(5)]
    assert len(judge("writes.rotate-on-label-removal", *many)[1]) == 3


def test_labels_read_from_an_opened_plaintext_object_count_too():
    before = SimpleNamespace(categories=["food", "travel"], about_label="account:a1")
    after = SimpleNamespace(categories=["food", "travel"], about_label=None)
    status, evidence = judge("writes.rotate-on-label-removal", saved(1, before), edit(2, "k1", labels=after))
    assert status == FAILED and "removed the label 'account:a1'" in evidence[0]


def test_what_the_owner_removed_or_nothing_removed_is_not_judged():
    owner = [{"kind": "before", "result": "removed category:travel from r1"}]
    args = (saved(1, memory(["food", "travel"])), edit(2, "k1", labels=memory(["food"])))
    assert judge("writes.rotate-on-label-removal", *args, events=owner)[0] == NOT_EXERCISED
    elsewhere = [{"kind": "before", "result": "removed category:travel from r2"}]
    assert judge("writes.rotate-on-label-removal", *args, events=elsewhere)[0] == FAILED
    assert (
        judge(
            "writes.rotate-on-label-removal", saved(1, memory(["food"])), edit(2, "k1", labels=memory(["food", "x"]))
        )[0]
        == NOT_EXERCISED
    )
    assert (
        judge("writes.rotate-on-label-removal", edit(2, "k1", labels=memory(["food"])))[0] == NOT_EXERCISED
    )  # no before
    unread = edit(2, "k1", labels=memory(["food"]))
    unread.rows[0] = Row("r1", "request", "layout only")
    assert judge("writes.rotate-on-label-removal", saved(1, memory(["food", "travel"])), unread)[0] == NOT_EXERCISED
    refused = edit(2, "k1", status=409, labels=memory(["food"]))  # the server kept nothing
    assert judge("writes.rotate-on-label-removal", saved(1, memory(["food", "travel"])), refused)[0] == NOT_EXERCISED


# -- deletes.verified, deletes.keep-used-topics -----------------------------------------------------


def delete(i: int, ids: list[str], deleted: list[str] | None = None, status: int = 200) -> Exchange:
    return x(i, "POST", DELETE, status, {"ids": ids}, {"deleted": ids if deleted is None else deleted, "refused": []})


def listed(i: int, *ids: str, status: int = 200) -> Exchange:
    return x(i, "GET", MEMORIES, status, None, {"memories": [{"id": r} for r in ids]})


def test_a_deletion_read_back_passes_and_one_never_read_fails():
    status, evidence = judge("deletes.verified", delete(1, ["r1", "r2"]), listed(2, "r3"))
    assert status == PASSED
    assert evidence == [f"POST {DELETE} #1: verified by GET {MEMORIES} #2, which no longer lists the 2 deleted rows"]
    status, evidence = judge("deletes.verified", listed(0, "r1"), delete(1, ["r1"]))
    assert status == FAILED
    assert evidence == [f"POST {DELETE} #1, row r1: deleted, and never read again to verify it is gone"]
    status, evidence = judge("deletes.verified", delete(1, ["r1", "r2"]), listed(2, "r2"), listed(3, "r1", "r2"))
    assert status == FAILED
    assert evidence == [
        f"POST {DELETE} #1, row r1: deleted, and every later read still lists it (last: GET {MEMORIES} #3): "
        "the deletion was never verified"
    ]


def test_only_an_answered_read_verifies_and_an_empty_deletion_is_not_judged():
    assert judge("deletes.verified", delete(1, ["r1"]), listed(2, status=500))[0] == FAILED
    assert judge("deletes.verified", delete(1, ["r1"]), listed(2, status=304))[0] == FAILED
    assert judge("deletes.verified", delete(1, ["r1"], deleted=[]), listed(2))[0] == NOT_EXERCISED
    assert judge("deletes.verified", delete(1, [], deleted=["r1"]), listed(2))[0] == NOT_EXERCISED
    assert judge("deletes.verified", delete(1, ["r1"], status=500))[0] == NOT_EXERCISED  # outcome unknown
    many = [x for i in range(5) for x in (delete(2 * i + 1, [f"r{i}"]), listed(2 * i + 2))]
    assert len(judge("deletes.verified", *many)[1]) == 3


def filed(i: int, topic: str) -> Exchange:
    row = Row(f"m{i}", "request.rows[0]", "readable", plaintext={"kind": "memory", "topic": {"id": topic}})
    return x(i, "POST", MEMORIES, 201, {"rows": [{"id": f"m{i}"}]}, {"created": [f"m{i}"]}, [row])


def test_deleting_a_topic_a_memory_is_filed_under_fails():
    status, evidence = judge("deletes.keep-used-topics", filed(1, "topic:t1"), delete(2, ["m9", "t1"]))
    assert status == FAILED
    assert evidence == [f"POST {DELETE} #2, row t1: deletes a topic that a saved memory is filed under"]
    vault = Run("clean", [delete(2, ["t2"])], app_view=[{"id": "m0", "kind": "memory", "topic": {"id": "topic:t2"}}])
    assert BY_ID["deletes.keep-used-topics"].evaluate(vault).status == FAILED  # filed in the owner's view


def test_deleting_what_no_memory_uses_passes():
    status, evidence = judge("deletes.keep-used-topics", filed(1, "topic:t1"), delete(2, ["t2", "m1"]))
    assert status == PASSED
    assert evidence == [f"POST {DELETE} #2: none of its 2 ids is a topic a memory uses"]
    view = [{"id": "t2", "kind": "topic", "topic": {"id": "topic:t2"}}, {"id": "m0", "kind": "memory", "topic": "t2"}]
    assert BY_ID["deletes.keep-used-topics"].evaluate(Run("clean", [delete(2, ["t2"])], app_view=view)).status == PASSED
    assert judge("deletes.keep-used-topics", delete(2, []))[0] == NOT_EXERCISED
    many = [delete(i, [f"t{i}"]) for i in range(2, 7)]
    assert len(judge("deletes.keep-used-topics", *many)[1]) == 3


# -- what the first runs left alive: each a record a user could send ----------------------------------


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_the_owners_kid_is_the_key_the_owners_app_opened_not_the_kid_sent():
    wrong_kid = save(1, self_wrap(), kid="0000000000000000", opened_kid=wire.kid(KEY))
    assert judge("rows.self-wrap-opens", wrong_kid, key=PEM)[0] == PASSED  # the wrap holds the key the owner opened
    unknown = save(1, self_wrap(OTHER))
    unknown.request["rows"][0]["kid"] = None  # no kid sent, the row not opened: nothing to compare with
    assert judge("rows.self-wrap-opens", unknown, key=PEM)[0] == PASSED


def test_a_bad_self_wrap_is_named_as_the_field_it_is():
    status, evidence = judge("rows.self-wrap-opens", save(1, "not base64!"))
    assert status == FAILED and "(field 'self_wrap', offset 3)" in evidence[0]
    vault_like = wire.b64encode(b"\x01\x01" + b"\x05" * 60)  # a ciphertext's header where an envelope belongs
    status, evidence = judge("rows.self-wrap-opens", save(1, vault_like))
    assert status == FAILED and "self_wrap is not a headerless agent envelope" in evidence[0]


def test_every_row_and_pairing_is_read_past_the_ones_skipped():
    post = save(1, envelope(100, 48))
    post.request["rows"].insert(0, {"id": "r0", "kid": "k0"})  # no self_wrap: rows.self-wrap's, and the next is judged
    assert judge("rows.self-wrap-opens", post)[0] == FAILED
    bad_pairing = x(0, "POST", "/oauth/device", 200, {"agent_public_key": "????"}, {})
    big = BIG
    status, evidence = judge("rows.self-wrap-opens", bad_pairing, at(pairing(), 0.5), save(1, self_wrap(agent=big)))
    assert status == FAILED and "gives 256" in evidence[0]
    listed = x(0, "POST", "/oauth/device", 200, ["not", "an", "object"], {})
    assert judge("rows.self-wrap-opens", listed, save(1, envelope(384, 48)))[0] == PASSED
    elsewhere = x(0, "POST", "/api/agent/identity", 200, {"agent_public_key": big.public_key_b64}, {})
    status, evidence = judge("rows.self-wrap-opens", pairing(), elsewhere, save(1, self_wrap(agent=big)))
    assert status == FAILED and "gives 256" in evidence[0]  # only the key sent at pairing is registered


def test_kids_are_learned_from_answered_memory_reads_and_writes_only():
    other = x(0, "GET", "/api/agent/context/spaces/rows", 200, None, {"memories": [{"id": "r1", "kid": "k1"}]})
    assert judge("writes.rotation-wraps", other, edit(2, "k2"))[0] == NOT_EXERCISED
    for status in (300, 304):
        assert judge("writes.rotation-wraps", served(1, "k1", status=status), edit(2, "k2"))[0] == NOT_EXERCISED
    first = x(0, "POST", "/oauth/device", 200, {}, {})  # an exchange of no memory first: the rest still read
    assert judge("writes.rotation-wraps", first, served(1, "k1"), edit(2, "k2"))[0] == FAILED
    silent = x(1, "POST", MEMORIES, 201, {"rows": [{"id": "r1", "kid": "k1"}]}, None)  # an answer not JSON
    assert judge("writes.rotation-wraps", silent, edit(2, "k2"))[0] == FAILED
    kidless = x(1, "GET", MEMORIES, 200, None, {"memories": [{"id": "r1"}, "junk", {"id": "r2", "kid": "k9"}]})
    assert judge("writes.rotation-wraps", kidless, served(2, "k1"), edit(3, "k2"))[0] == FAILED
    status, evidence = judge(
        "writes.rotation-wraps", served(1, "k1"), edit(2, "k2", "owner_wrap", "self_wrap"), edit(3, "k3")
    )
    assert status == FAILED and "a new kid (k3, was k2)" in evidence[0]  # the kid its own rotation sent


def test_each_edit_is_judged_past_the_ones_skipped():
    kept = edit(2, "k1")  # the same kid: no rotation
    assert judge("writes.rotation-wraps", served(1, "k1"), kept, edit(3, "k2"))[0] == FAILED
    refused = edit(2, "k2", "owner_wrap", "self_wrap", status=409)
    assert judge("writes.rotation-wraps", served(1, "k1"), refused, edit(3, "k3"))[0] == FAILED
    lone = edit(2, "k2", status=409)  # refused, its kid never kept: no old kid to compare with
    assert judge("writes.rotation-wraps", lone)[0] == NOT_EXERCISED
    opaque = x(2, "PUT", MEMORIES, 200, None, {})  # a body that is not JSON names no row
    assert judge("writes.rotation-wraps", served(1, "k1"), opaque)[0] == NOT_EXERCISED
    assert judge("writes.rotate-on-label-removal", saved(1, memory(["a", "b"])), opaque)[0] == NOT_EXERCISED


def test_a_label_removal_is_judged_against_the_version_just_before():
    abc = saved(1, memory(["a", "b", "c"]))
    first = edit(2, "k2", labels=memory(["b", "c"]))  # a removed, new key
    second = edit(3, "k2", labels=memory(["b"]))  # c removed, the same key
    status, evidence = judge("writes.rotate-on-label-removal", abc, first, second)
    assert status == FAILED and evidence == [
        "PUT /api/agent/context/memories #3, row r1: removed the label 'c' and kept the key (kid k2)"
    ]
    unread = edit(2, "k1")
    unread.rows = [Row("r1", "request", "unreadable")]  # not opened: it says nothing of the labels
    assert judge("writes.rotate-on-label-removal", abc, unread, edit(3, "k1", labels=memory(["a"])))[0] == FAILED
    nothing = edit(2, "k1", labels=memory(["a", "b", "c"]))  # removes nothing: the next edit still judged
    assert judge("writes.rotate-on-label-removal", abc, nothing, edit(3, "k1", labels=memory(["a"])))[0] == FAILED
    another = edit(2, "k1", rid="r2", labels=memory(["x"]))  # another row, never seen: the next edit still judged
    assert judge("writes.rotate-on-label-removal", abc, another, edit(3, "k1", labels=memory(["a"])))[0] == FAILED
    rowless = edit(3, "k1")  # the edit's row was not opened at all
    assert judge("writes.rotate-on-label-removal", abc, rowless)[0] == NOT_EXERCISED
    no_kid = x(
        1,
        "POST",
        MEMORIES,
        201,
        {"rows": [{"id": "r1"}]},
        {},
        [Row("r1", "request.rows[0]", "readable", kind="memory", plaintext=memory(["a", "b"]))],
    )
    status, evidence = judge("writes.rotate-on-label-removal", no_kid, edit(2, None, labels=memory(["a"])))
    assert status == FAILED and evidence[0].endswith("kept the key (kid None)")


def test_labels_of_an_opened_plaintext_object_count_their_categories():
    before = SimpleNamespace(categories=["food", "travel"])  # no about_label at all
    after = SimpleNamespace(categories=["food"])
    status, evidence = judge("writes.rotate-on-label-removal", saved(1, before), edit(2, "k1", labels=after))
    assert status == FAILED and "removed the label 'travel'" in evidence[0]
    filed = SimpleNamespace(categories=["food"], about_label="topic:t1")  # an about added is no removal
    assert judge("writes.rotate-on-label-removal", saved(1, after), edit(2, "k1", labels=filed))[0] == NOT_EXERCISED


def test_the_owners_removal_is_read_in_both_forms_of_its_label():
    args = (saved(1, memory(["food"], "topic:t1")), edit(2, "k1", labels=memory(["food"])))
    owner = [{"kind": "before", "result": "removed topic:t1 from r1"}]
    assert judge("writes.rotate-on-label-removal", *args, events=owner)[0] == NOT_EXERCISED
    colon = (saved(1, memory(["food", "a:b"])), edit(2, "k1", labels=memory(["food"])))
    owner = [{"kind": "before", "result": "removed category:a:b from r1"}]
    assert judge("writes.rotate-on-label-removal", *colon, events=owner)[0] == NOT_EXERCISED
    bare = (saved(1, memory(["food", "urgent"])), edit(2, "k1", labels=memory(["food"])))
    owner = [{"kind": "before", "result": "removed urgent from r1"}, {"kind": "before"}]
    assert judge("writes.rotate-on-label-removal", *bare, events=owner)[0] == NOT_EXERCISED


def test_every_deletion_is_judged_past_the_ones_skipped():
    lost = x(1, "POST", DELETE, 502, {"ids": ["r0"]}, None)
    assert judge("deletes.verified", lost, delete(2, ["r1"]))[0] == FAILED
    empty = delete(1, ["r0"], deleted=[])
    assert judge("deletes.verified", empty, delete(2, ["r1"]))[0] == FAILED
    listed_body = x(1, "POST", DELETE, 200, ["r0"], {"deleted": ["r0"]})  # a body that is not an object asks nothing
    assert judge("deletes.verified", listed_body, listed(2))[0] == NOT_EXERCISED
    assert judge("deletes.keep-used-topics", filed(0, "topic:r0"), listed_body)[0] == NOT_EXERCISED
    alongside = at(listed(2), 1.0)  # sent with the deletion, not after it
    assert judge("deletes.verified", delete(1, ["r1"]), alongside)[0] == FAILED
    assert judge("deletes.verified", delete(1, ["r1"]), listed(2, status=300))[0] == FAILED


def test_deleting_mail_is_no_memory_deletion():
    mail = x(1, "POST", "/api/agent/inbox/delete", 200, {"ids": ["t1"]}, {"deleted": ["t1"], "refused": []})
    assert judge("deletes.verified", mail)[0] == NOT_EXERCISED
    assert judge("deletes.keep-used-topics", filed(0, "topic:t1"), mail)[0] == NOT_EXERCISED
    page = x(1, "GET", DELETE, 200, {"ids": ["t1"]}, {"deleted": ["t1"]})  # only a POST deletes
    assert judge("deletes.verified", page)[0] == NOT_EXERCISED
    assert judge("deletes.keep-used-topics", filed(0, "topic:t1"), page)[0] == NOT_EXERCISED


def test_a_deletion_line_links_the_read_that_judged_it():
    def linked(*exchanges: Exchange) -> list[tuple[int, ...]]:
        return [e.exchanges for e in BY_ID["deletes.verified"].evaluate(Run("clean", list(exchanges))).evidence]

    assert linked(delete(1, ["r1"]), listed(2)) == [(1, 2)]
    assert linked(delete(1, ["r1"]), listed(2, "r1"), listed(3, "r1")) == [(1, 3)]


def test_labels_of_an_object_without_categories_and_an_edit_of_a_row_never_seen():
    before = SimpleNamespace(about_label="account:a1")  # no categories at all
    status, evidence = judge(
        "writes.rotate-on-label-removal", saved(1, before), edit(2, "k1", labels=SimpleNamespace(about_label=None))
    )
    assert status == FAILED and "removed the label 'account:a1'" in evidence[0]
    assert judge("writes.rotate-on-label-removal", edit(2, "k1", rid="r9"))[0] == NOT_EXERCISED
