"""`decoy-lab check`'s contents.* rules (conformance/rules/contents.py) on hand-made records of what
the owner's key opened and what the body carried: a secret in the text, plaintext beside the
ciphertext, a correction posted as a new memory, a key or nonce used twice, a topic in metadata, an
account named, a copy made to relabel, the spec's example bytes. Each record breaks (or keeps) one
sentence of 000 (and 001 for the fixtures):

"Keep booking references, passwords and keys out of the text; they belong on the account." "Never put
`text`, `categories` or account names in the HTTP body outside ciphertext." "The person chooses a
flight: update the same memory by id, do not add another." "Each memory has its own random 32-byte
key." "`metadata` (an object of free notes; it files nothing, so a topic never goes there)" "(never the
account's name)" "Do not copy a memory to relabel it." "Do not submit these fixture wraps for a real user."
"""

from __future__ import annotations

import base64
import re
from types import SimpleNamespace
from typing import Any

import pytest

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.conformance.rules.contents import FIXTURE_KID, FIXTURES
from decoy_lab.inspector.flow_record import Row

M = MEMORIES
ACCOUNT = "account:5d09cdae-1b84-45f8-bbcd-a96a32475078"


def x(i: int, method: str, path: str = M, status: int = 201, request: Any = None, response: Any = None, rows=()):
    return Exchange(i, method, path, "", status, "answered", float(i), i + 0.1, request, response, {}, list(rows), "t1")


def memory(rid: str, verdict: str = "readable", **plain: Any) -> Row:
    return Row(rid, "request.rows[0]", verdict, plaintext={"kind": "memory", **plain})


def write(i: int, *rows: Row, method: str = "POST", status: int = 201, body: dict | None = None) -> Exchange:
    """A write of opened rows; its body the rows' ids and ciphertext (plus `body`'s fields on the first row)."""
    sent = [{"id": r.id, "kid": f"k-{r.id}", "ciphertext": "AQE…"} for r in rows]
    if sent and body:
        sent[0].update(body)
    request = sent[0] if method == "PUT" else {"rows": sent}
    return x(i, method, M, status, request, {"created": [r.id for r in rows]}, rows)


def delete(i: int, *ids: str) -> Exchange:
    return x(i, "POST", f"{M}/delete", 200, {"ids": list(ids)}, {"deleted": list(ids), "refused": []})


def judge(rule: str, *exchanges: Exchange) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("clean", list(exchanges)))
    for e in result.evidence:  # a line links the exchange it is about (the report's reproducer), and only ones it names
        named = [int(n) for n in re.findall(r"#(\d+)", e)]
        assert named[0] in e.exchanges and set(e.exchanges) <= set(named), e
    return result.status, [str(e) for e in result.evidence]


# -- contents.no-secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "what", "shown"),
    [
        ("Gym: login password: hunter22", "a password", "login password: hu…(8 chars)"),
        ("the door PIN is 4711", "a password", "PIN is 47…(4 chars)"),
        ("Hotel booking ref: XK42PQ9", "a booking reference", "booking ref: XK…(7 chars)"),
        ("Flight PNR ABC123, seat 4A", "a booking reference", "PNR ABC123…"),
        ("-----BEGIN RSA PRIVATE KEY----- MIIE", "a private key", "-----BEGIN R…"),
        ("stripe sk_live_abcdefghijklmnop", "an API key", "sk_live_abcd…"),
        ("github ghp_" + "a" * 36, "an API key", "ghp_aaaaaaaa…"),
        ("aws AKIAABCDEFGHIJKLMNOP", "an API key", "AKIAABCDEFGH…"),
        ("slack xoxb-1234567890-abc", "an API key", "xoxb-1234567…"),
        ("openai sk-" + "b" * 24, "an API key", "sk-bbbbbbbbb…"),
        ("access token = abcdefgh1234", "a key or token", "access token = ab…(12 chars)"),
    ],
)
def test_a_secret_in_a_memorys_text_fails_and_is_shown_masked(text, what, shown):
    status, evidence = judge("contents.no-secrets", write(1, memory("r1", text=text)))
    assert status == FAILED
    assert evidence == [f"POST {M} #1, row r1: its text holds {what}: {shown!r}"]


def test_a_text_without_secrets_passes_and_other_rows_are_not_read():
    status, evidence = judge("contents.no-secrets", write(1, memory("r1", text="Pick up the dry cleaning on Friday")))
    assert status == PASSED
    assert evidence == [f"POST {M} #1, row r1: no password, booking reference or key in its text"]
    topic = Row("t1", "request.rows[0]", "readable", plaintext={"kind": "topic", "text": "password: hunter22"})
    sealed = memory("r2", verdict="layout only", text="password: hunter22")
    assert judge("contents.no-secrets", write(1, topic, sealed))[0] == NOT_EXERCISED
    for harmless in ("my password manager", "PNR", "booking is confirmed", "a token of thanks"):
        assert judge("contents.no-secrets", write(1, memory("r1", text=harmless)))[0] == PASSED, harmless
    assert len(judge("contents.no-secrets", write(1, *(memory(f"r{i}", text="fine text") for i in range(5))))[1]) == 3
    assert len(judge("contents.no-secrets", write(1, *(memory(f"r{i}", text="pwd: abcdef") for i in range(5))))[1]) == 5


# -- contents.outside-ciphertext -------------------------------------------------------------------


def test_the_text_beside_the_ciphertext_fails():
    row = memory("r1", text="Pick up the dry cleaning\nok")
    status, evidence = judge(
        "contents.outside-ciphertext", write(1, row, body={"preview": "pick up the dry cleaning!"})
    )
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1: its text ('Pick up the dry cleaning') in the body at rows[0].preview, outside ciphertext"
    ]


@pytest.mark.parametrize(
    ("plain", "body", "said"),
    [
        ({"categories": ["travel"]}, {"labels": ["Travel"]}, "a category ('travel') in the body at rows[0].labels[0]"),
        ({"categories": ["travel"]}, {"note": "travel plans"}, "a category ('travel') in the body at rows[0].note"),
        ({"name": "Trips"}, {"title": "Trips"}, "a topic name ('Trips') in the body at rows[0].title"),
        ({"entity_name": "Ana"}, {"meta": {"who": "Ana"}}, "a topic name ('Ana') in the body at rows[0].meta.who"),
        ({"topic": {"name": "Lisbon"}}, {"t": "Lisbon"}, "a topic name ('Lisbon') in the body at rows[0].t"),
        ({"account": {"name": "Acme"}}, {"svc": "Acme"}, "an account name ('Acme') in the body at rows[0].svc"),
    ],
)
def test_a_category_topic_or_account_name_in_the_body_fails(plain, body, said):
    status, evidence = judge("contents.outside-ciphertext", write(1, memory("r1", **plain), body=body))
    assert status == FAILED and evidence == [f"POST {M} #1: {said}, outside ciphertext"]


def test_binary_and_opaque_fields_and_short_words_are_not_plaintext():
    row = memory("r1", text="Pick up the dry cleaning", categories=["travel", "ok"], name="default_user")
    body = {"ciphertext": "Pick up the dry cleaning", "id": "travel-1", "via": ["category:travel"], "x": "ok"}
    body |= {"grantee_wraps": [{"token_id": "travel", "wrapped_key": "travel", "via": ["travel"]}], "n": 3}
    status, evidence = judge("contents.outside-ciphertext", write(1, row, body=body))
    assert status == PASSED and evidence == [f"POST {M} #1: nothing of the plaintext outside ciphertext"]
    for key in ("owner_wrap", "self_wrap", "kid", "row_id", "expected_rev", "ids", "self_via", "removed_reasons"):
        assert judge("contents.outside-ciphertext", write(1, row, body={key: "travel"}))[0] == PASSED, key
    shorts = memory("r1", text="short\n  tiny  ", name="ab", entity_name=7)
    assert judge("contents.outside-ciphertext", write(1, shorts, body={"a": "short tiny ab"}))[0] == NOT_EXERCISED
    exactly = memory("r1", text="12345678")  # eight characters is long enough to look for
    assert judge("contents.outside-ciphertext", write(1, exactly, body={"a": "12345678"}))[0] == FAILED
    three = memory("r1", categories=["abc"], name="Xyz")
    assert judge("contents.outside-ciphertext", write(1, three, body={"a": "abc"}))[0] == FAILED
    assert judge("contents.outside-ciphertext", write(1, three, body={"a": "Xyz"}))[0] == FAILED


def test_bytes_sent_count_whatever_the_answer_and_passes_are_kept_short():
    refused = write(
        1, memory("r1", text="Pick up the dry cleaning"), status=400, body={"p": "Pick up the dry cleaning"}
    )
    assert judge("contents.outside-ciphertext", refused)[0] == FAILED
    put = write(1, memory("r1", text="Pick up the dry cleaning"), method="PUT", body={"p": "Pick up the dry cleaning"})
    status, evidence = judge("contents.outside-ciphertext", put)
    assert status == FAILED and "at p," in evidence[0]
    many = [write(i, memory(f"r{i}", text="Pick up the dry cleaning")) for i in range(1, 6)]
    assert len(judge("contents.outside-ciphertext", *many)[1]) == 3
    leaky = [
        write(i, memory(f"r{i}", text="Pick up the dry cleaning"), body={"p": "Pick up the dry cleaning"})
        for i in range(1, 6)
    ]
    assert len(judge("contents.outside-ciphertext", *leaky)[1]) == 5
    other = x(
        1,
        "POST",
        "/api/agent/context/memory-wraps",
        200,
        {"p": "Pick up the dry cleaning"},
        {},
        [memory("r1", text="Pick up the dry cleaning")],
    )
    assert judge("contents.outside-ciphertext", other)[0] == NOT_EXERCISED


# -- contents.correct-by-id ------------------------------------------------------------------------

FIRST = "Flight to Lisbon\nTAP 123 at 09:10"
SECOND = "Flight  to LISBON\nTAP 456 at 11:00"


def test_a_correction_posted_as_a_new_memory_fails():
    one, two = (
        write(1, memory("m1", text=FIRST, about="topic:t1")),
        write(2, memory("m2", text=SECOND, about="topic:t1")),
    )
    status, evidence = judge("contents.correct-by-id", one, two)
    assert status == FAILED
    assert evidence == [
        f"POST {M} #2, row m2: a new memory ('flight to lisbon') for memory m1 of POST {M} #1, which it "
        "corrects: not a PUT of the same id"
    ]
    assert BY_ID["contents.correct-by-id"].evaluate(Run("clean", [one, two])).evidence[0].exchanges == (2, 1)


def test_a_correction_by_id_passes():
    one = write(1, memory("m1", text=FIRST, about="topic:t1"))
    status, evidence = judge(
        "contents.correct-by-id", one, write(2, memory("m1", text=SECOND, about="topic:t1"), method="PUT")
    )
    assert status == PASSED and evidence == [f"PUT {M} #2, row m1: corrected in place, by id"]


def test_what_is_no_correction_as_a_new_memory():
    one = write(1, memory("m1", text=FIRST, about="topic:t1"))
    cases = {
        "the same text again (a resend)": write(2, memory("m2", text=FIRST, about="topic:t1")),
        "filed elsewhere": write(2, memory("m2", text=SECOND, about="topic:t2")),
        "another first line": write(2, memory("m2", text="Hotel in Lisbon", about="topic:t1")),
        "the same row again": write(2, memory("m1", text=SECOND, about="topic:t1")),
        "refused": write(2, memory("m2", text=SECOND, about="topic:t1"), status=400),
        "not a memory": write(
            2, Row("m2", "request", "readable", plaintext={"kind": "topic", "text": SECOND, "about": "topic:t1"})
        ),
        "not opened": write(2, memory("m2", verdict="layout only", text=SECOND, about="topic:t1")),
    }
    for why, second in cases.items():
        assert judge("contents.correct-by-id", one, second)[0] == NOT_EXERCISED, why
    assert (
        judge("contents.correct-by-id", one, delete(2, "m1"), write(3, memory("m2", text=SECOND, about="topic:t1")))[0]
        == NOT_EXERCISED
    )
    blank = write(1, memory("m1", text="  \n", about="topic:t1"))
    assert (
        judge("contents.correct-by-id", blank, write(2, memory("m2", text=" \n\n", about="topic:t1")))[0]
        == NOT_EXERCISED
    )
    # a PUT of another id is no correction in place, nor a new memory
    assert (
        judge("contents.correct-by-id", one, write(2, memory("m2", text=SECOND, about="topic:t1"), method="PUT"))[0]
        == NOT_EXERCISED
    )
    # the first row with the line is the one a later one corrects
    three = write(3, memory("m3", text=SECOND + "!", about="topic:t1"))
    status, evidence = judge(
        "contents.correct-by-id", one, write(2, memory("m1", text=SECOND, about="topic:t1"), method="PUT"), three
    )
    assert status == FAILED and "for memory m1 of POST" in evidence[0]
    many = [one] + [write(i, memory("m1", text=f"{FIRST}{i}", about="topic:t1"), method="PUT") for i in range(2, 7)]
    assert len(judge("contents.correct-by-id", *many)[1]) == 3
    bad = [one] + [write(i, memory(f"m{i}", text=f"{FIRST}{i}", about="topic:t1")) for i in range(2, 7)]
    assert len(judge("contents.correct-by-id", *bad)[1]) == 5


# -- contents.fresh-keys ---------------------------------------------------------------------------


def sealed(nonce: bytes, body: bytes = b"\x00" * 40) -> str:
    return base64.b64encode(b"\x01\x01" + nonce + body).decode()


def rows(i: int, *sent: dict) -> Exchange:
    return x(i, "POST", M, 201, {"rows": list(sent)}, {"created": [r["id"] for r in sent]})


def test_a_key_of_its_own_and_a_nonce_of_its_own_pass():
    status, evidence = judge("contents.fresh-keys", rows(1, {"id": "r1", "kid": "k1", "ciphertext": sealed(b"A" * 12)}))
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: a key and a nonce of its own"]


def test_one_key_for_two_memories_fails():
    status, evidence = judge(
        "contents.fresh-keys", rows(1, {"id": "r1", "kid": "k1"}), rows(2, {"id": "r2", "kid": "k1"})
    )
    assert status == FAILED
    assert evidence == [f"POST {M} #2, row r2: kid k1 is the key of row r1 (POST {M} #1): one key for two memories"]


def test_one_nonce_for_two_ciphertexts_fails_and_a_resend_does_not():
    first = {"id": "r1", "kid": "k1", "ciphertext": sealed(b"N" * 12)}
    again = {"id": "r2", "kid": "k2", "ciphertext": sealed(b"N" * 12, b"\x07" * 40)}
    status, evidence = judge("contents.fresh-keys", rows(1, first), rows(2, again))
    assert status == FAILED
    assert evidence == [
        f"POST {M} #2, row r2: its ciphertext's nonce {(b'N' * 12).hex()} was already used (row r1, POST {M} #1)"
    ]
    status, evidence = judge("contents.fresh-keys", rows(1, first), rows(2, dict(first)))
    assert status == PASSED and len(evidence) == 2  # the same ciphertext sent again is a resend


def test_what_fresh_keys_cannot_read_and_the_evidence_caps():
    no_kid = {"id": "r1", "ciphertext": sealed(b"N" * 12)}
    assert (
        judge("contents.fresh-keys", rows(1, no_kid), rows(2, {"id": "r2", "ciphertext": sealed(b"M" * 12)}))[0]
        == NOT_EXERCISED
    )
    odd = [
        {"id": "r1", "kid": "k1", "ciphertext": "not base64"},
        {"id": "r2", "kid": "k2", "ciphertext": "not base64!"},
        {
            "id": "r3",
            "kid": "k3",
            "ciphertext": base64.b64encode(b"\x01\x02" + b"N" * 40).decode(),
        },  # an owner wrap's header
        {"id": "r4", "kid": "k4", "ciphertext": base64.b64encode(b"\x01\x02" + b"N" * 40).decode()},
        {
            "id": "r5",
            "kid": "k5",
            "ciphertext": base64.b64encode(b"\x01\x01" + b"N" * 28).decode(),
        },  # too short to hold a nonce
        {"id": "r6", "kid": "k6", "ciphertext": base64.b64encode(b"\x01\x01" + b"N" * 29).decode()},
    ]
    status, evidence = judge("contents.fresh-keys", rows(1, *odd[:2]), rows(2, *odd[2:]))
    assert status == PASSED and len(evidence) == 3
    long_enough = [
        {"id": f"r{i}", "kid": f"k{i}", "ciphertext": base64.b64encode(b"\x01\x01" + b"N" * 28 + bytes([i])).decode()}
        for i in (1, 2)
    ]
    assert judge("contents.fresh-keys", rows(1, *long_enough))[0] == FAILED  # 31 bytes hold a nonce
    shared = [rows(i, {"id": f"r{i}", "kid": "k1"}) for i in range(1, 8)]
    assert len(judge("contents.fresh-keys", *shared)[1]) == 4
    refused = x(2, "POST", M, 400, {"rows": [{"id": "r2", "kid": "k1"}]}, {"code": "X"})
    assert judge("contents.fresh-keys", rows(1, {"id": "r1", "kid": "k1"}), refused)[0] == PASSED  # stored nothing


# -- contents.metadata-files-nothing ---------------------------------------------------------------


def test_a_topic_named_in_metadata_fails():
    status, evidence = judge(
        "contents.metadata-files-nothing", write(1, memory("r1", metadata={"topic": "Trips", "topics": ["x"], "n": 1}))
    )
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1, row r1: its metadata names a topic (metadata.topic, metadata.topics = 'Trips'): it files nothing"
    ]
    status, evidence = judge(
        "contents.metadata-files-nothing", write(1, memory("r1", metadata={"topic_name": "Trips"}))
    )
    assert status == FAILED and "(metadata.topic_name = 'Trips')" in evidence[0]


def test_free_notes_in_metadata_pass():
    status, evidence = judge("contents.metadata-files-nothing", write(1, memory("r1", metadata={"mood": "topic"})))
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: no topic in its metadata"]
    assert judge("contents.metadata-files-nothing", write(1, memory("r1", metadata=["topic"])))[0] == PASSED
    assert len(judge("contents.metadata-files-nothing", write(1, *(memory(f"r{i}") for i in range(5))))[1]) == 3
    assert (
        len(
            judge(
                "contents.metadata-files-nothing",
                write(1, *(memory(f"r{i}", metadata={"topic": "t"}) for i in range(5))),
            )[1]
        )
        == 5
    )


# -- contents.account-by-id ------------------------------------------------------------------------


def test_a_memory_about_an_account_by_its_id_passes():
    status, evidence = judge("contents.account-by-id", write(1, memory("r1", about=ACCOUNT)))
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: about {ACCOUNT}, by id only"]
    assert judge("contents.account-by-id", write(1, memory("r1", about="topic:t1")))[0] == NOT_EXERCISED
    many = write(1, *(memory(f"r{i}", about=ACCOUNT) for i in range(5)))
    assert len(judge("contents.account-by-id", many)[1]) == 3


def test_a_memory_that_names_the_account_or_files_it_otherwise_fails():
    status, evidence = judge(
        "contents.account-by-id", write(1, memory("r1", about=ACCOUNT, entity_name="Acme Tickets"))
    )
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1, row r1: a memory about {ACCOUNT} names it ('Acme Tickets' as observation.entityName): "
        "never the account's name"
    ]
    status, evidence = judge("contents.account-by-id", write(1, memory("r1", about="account:acme")))
    assert status == FAILED and evidence == [
        f"POST {M} #1, row r1: about 'account:acme': not account:<the account's uuid>"
    ]
    status, evidence = judge("contents.account-by-id", write(1, memory("r1", account={"id": "a"})))
    assert status == FAILED and evidence[0].endswith("about '': not account:<the account's uuid>")
    assert judge("contents.account-by-id", write(1, memory("r1", about=ACCOUNT + "0")))[0] == FAILED
    assert judge("contents.account-by-id", write(1, memory("r1", about="x" + ACCOUNT)))[0] == NOT_EXERCISED
    assert (
        len(judge("contents.account-by-id", write(1, *(memory(f"r{i}", about="account:a") for i in range(5))))[1]) == 5
    )


# -- contents.no-copy-to-relabel -------------------------------------------------------------------

TEXT = "Renew the passport before June"


def test_a_copy_under_other_labels_fails():
    one = write(1, memory("m1", text=TEXT, labels=["category:home"]))
    two = write(2, memory("m2", text=TEXT, labels=["category:home", "category:travel"]))
    status, evidence = judge("contents.no-copy-to-relabel", one, two)
    assert status == FAILED
    assert evidence == [
        f"POST {M} #2, row m2: a copy of memory m1 (POST {M} #1) with labels ['category:home', 'category:travel'] "
        "for ['category:home']: relabel it by id instead"
    ]


def test_relabelling_by_id_passes():
    one = write(1, memory("m1", text=TEXT, labels=["category:home"]))
    put = write(2, memory("m1", text=TEXT, labels=["category:travel"]), method="PUT")
    status, evidence = judge("contents.no-copy-to-relabel", one, put)
    assert status == PASSED and evidence == [f"PUT {M} #2, row m1: relabelled in place, by id"]


def test_what_is_no_copy_to_relabel():
    one = write(1, memory("m1", text=TEXT, labels=["category:home"]))
    moved = [one, delete(2, "m1"), write(3, memory("m2", text=TEXT, labels=["category:travel"]))]
    assert judge("contents.no-copy-to-relabel", *moved)[0] == NOT_EXERCISED  # the old one deleted first
    late = [one, write(2, memory("m2", text=TEXT, labels=["category:travel"])), delete(3, "m1")]
    assert judge("contents.no-copy-to-relabel", *late)[0] == FAILED  # deleted after the copy was made
    same = write(2, memory("m2", text=TEXT, labels=["category:home"]))  # same labels: no relabel
    assert judge("contents.no-copy-to-relabel", one, same)[0] == NOT_EXERCISED
    other = write(2, memory("m2", text=TEXT + ".", labels=["category:travel"]))
    assert judge("contents.no-copy-to-relabel", one, other)[0] == NOT_EXERCISED
    edited = write(2, memory("m1", text="Renewed", labels=["category:home"]), method="PUT")  # the text, not the labels
    later = write(3, memory("m2", text=TEXT, labels=["category:travel"]))
    assert judge("contents.no-copy-to-relabel", one, edited, later)[0] == NOT_EXERCISED  # m1 no longer holds TEXT
    again = write(2, memory("m1", text=TEXT, labels=["category:travel"]))  # the same id posted again
    assert judge("contents.no-copy-to-relabel", one, again)[0] == NOT_EXERCISED
    empty = [write(1, memory("m1", text="", labels=["a"])), write(2, memory("m2", text="", labels=["b"]))]
    assert judge("contents.no-copy-to-relabel", *empty)[0] == NOT_EXERCISED
    topic = Row("m2", "request", "readable", plaintext={"kind": "topic", "text": TEXT, "labels": ["b"]})
    assert judge("contents.no-copy-to-relabel", one, write(2, topic))[0] == NOT_EXERCISED
    unread = write(2, memory("m2", verdict="layout only", text=TEXT, labels=["b"]))
    assert judge("contents.no-copy-to-relabel", one, unread)[0] == NOT_EXERCISED
    many = [write(i, memory(f"m{i}", text=TEXT, labels=[f"category:c{i}"])) for i in range(1, 8)]
    assert len(judge("contents.no-copy-to-relabel", *many)[1]) == 4
    puts = [one] + [write(i, memory("m1", text=TEXT, labels=[f"category:c{i}"]), method="PUT") for i in range(2, 7)]
    assert len(judge("contents.no-copy-to-relabel", *puts)[1]) == 3


def test_the_copy_found_is_one_that_still_holds_the_text():
    one = write(1, memory("m1", text=TEXT, labels=["category:home"]))
    two = write(2, memory("m2", text=TEXT, labels=["category:work"]))
    three = write(3, memory("m3", text=TEXT, labels=["category:work"]))  # a copy of m1, the same labels as m2
    status, evidence = judge("contents.no-copy-to-relabel", one, delete(0, "m9"), two, three)
    assert status == FAILED and "#3, row m3: a copy of memory m1" in evidence[1]


# -- contents.no-fixture-wraps ---------------------------------------------------------------------


def test_the_specs_example_bytes_fail():
    row = {
        "id": "r1",
        "kid": FIXTURE_KID,
        "ciphertext": FIXTURES["ciphertext"] + "AAAA",
        "owner_wrap": FIXTURES["owner_wrap"],
    }
    row |= {"self_wrap": "own", "grantee_wraps": [{"wrapped_key": FIXTURES["self_wrap"] + "x"}, "junk"]}
    status, evidence = judge("contents.no-fixture-wraps", rows(1, row))
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1, row r1: ciphertext, owner_wrap, grantee_wraps[].wrapped_key, kid: the spec's example bytes, "
        "for a discarded test key"
    ]
    for key in ("self_wrap",):
        assert judge("contents.no-fixture-wraps", rows(1, {"id": "r1", key: FIXTURES[key]}))[0] == FAILED
    refused = x(1, "POST", M, 400, {"rows": [{"id": "r1", "kid": FIXTURE_KID}]}, {"code": "X"})
    assert judge("contents.no-fixture-wraps", refused)[1][0].startswith(f"POST {M} #1, row r1: kid: ")


def test_own_bytes_pass_and_the_evidence_is_kept_short():
    status, evidence = judge(
        "contents.no-fixture-wraps", rows(1, {"id": "r1", "kid": "k", "ciphertext": "AQE", "grantee_wraps": [{}]})
    )
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: its own keys and wraps"]
    assert len(judge("contents.no-fixture-wraps", rows(1, *({"id": f"r{i}"} for i in range(5))))[1]) == 3
    assert (
        len(judge("contents.no-fixture-wraps", rows(1, *({"id": f"r{i}", "kid": FIXTURE_KID} for i in range(6))))[1])
        == 4
    )


# -- what the first run left alive: each a record a user could send --------------------------------


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def links(rule: str, *exchanges: Exchange) -> list[tuple[int, ...]]:
    """The exchanges each evidence line links, in order: their reproducers in the report."""
    return [e.exchanges for e in BY_ID[rule].evaluate(Run("clean", list(exchanges))).evidence]


def test_a_topic_given_as_a_string_and_the_default_user_are_not_names():
    row = memory("r1", text="short", topic="topic:t1", name="default_user")
    assert judge("contents.outside-ciphertext", write(1, row, body={"about": "default_user"}))[0] == NOT_EXERCISED
    leaky = [
        write(1, memory("r0", text="tiny")),
        write(2, memory("r1", text="Pick up the dry cleaning"), body={"p": "Pick up the dry cleaning"}),
    ]
    assert judge("contents.outside-ciphertext", *leaky)[0] == FAILED  # a write with nothing to look for first
    needle = "Pick up the dry cleaning before the shop closes"
    status, evidence = judge("contents.outside-ciphertext", write(1, memory("r1", text=needle), body={"p": needle}))
    assert status == FAILED and f"its text ({needle[:40]!r})" in evidence[0]


def test_a_ciphertext_not_in_strict_base64_is_not_read_for_a_nonce():
    good = base64.b64encode(b"\x01\x01" + b"N" * 12 + b"\x00" * 40).decode()
    loose = [
        {"id": "r1", "kid": "k1", "ciphertext": good[:8] + "!" + good[8:]},
        {"id": "r2", "kid": "k2", "ciphertext": good[:9] + "!" + good[9:]},
    ]
    assert judge("contents.fresh-keys", rows(1, *loose))[0] == PASSED


def test_fresh_keys_names_both_rows_and_every_reuse():
    first = rows(1, {"id": "r1", "kid": "k1", "ciphertext": sealed(b"N" * 12)})
    reuse = rows(2, {"id": "r2", "kid": "k1"}, {"id": "r3", "kid": "k3", "ciphertext": sealed(b"N" * 12, b"\x07" * 40)})
    status, evidence = judge("contents.fresh-keys", first, reuse)
    assert status == FAILED and len(evidence) == 2
    assert links("contents.fresh-keys", first, reuse) == [(2, 1), (2, 1)]


def test_a_long_value_is_quoted_up_to_its_limit():
    value = "Lisbon trip in June with the whole family"
    _, evidence = judge("contents.metadata-files-nothing", write(1, memory("r1", metadata={"topic": value})))
    assert f"= {value[:40]!r})" in evidence[0]
    name = "Acme Tickets and Events International Ltd."
    _, evidence = judge("contents.account-by-id", write(1, memory("r1", about=ACCOUNT, entity_name=name)))
    assert f"({name[:40]!r} as observation.entityName)" in evidence[0]
    about = "account:" + "acme-tickets-and-events-international-limited-company-of-lisbon"
    _, evidence = judge("contents.account-by-id", write(1, memory("r1", about=about)))
    assert f"about {about[:60]!r}: not" in evidence[0]
    line = "Flight to Lisbon on the ninth of June with TAP, seat 4A"
    one = write(1, memory("m1", text=line + "\nA", about="t"))
    two = write(2, memory("m2", text=line + "\nB", about="t"))
    _, evidence = judge("contents.correct-by-id", one, two)
    assert f"a new memory ({line.lower()[:50]!r})" in evidence[0]


def test_account_by_id_reads_every_memory_of_a_write():
    both = write(1, memory("r0", about="topic:t1"), memory("r1", about="account:acme"))
    assert judge("contents.account-by-id", both)[0] == FAILED


def test_correct_by_id_reads_every_row_past_the_ones_skipped():
    one = write(1, memory("m1", text=FIRST, about="topic:t1"))
    rows_ = [
        memory("m0", verdict="layout only", text=SECOND, about="topic:t1"),
        memory("m5", text="  ", about="topic:t1"),
        Row("t9", "request", "readable", plaintext={"kind": "topic", "text": SECOND}),
        memory("m2", text=SECOND, about="topic:t1"),
    ]
    assert judge("contents.correct-by-id", delete(0, "m9"), one, write(2, *rows_))[0] == FAILED
    two_deletions = [one, delete(2, "m1"), delete(3, "m8"), write(4, memory("m2", text=SECOND, about="topic:t1"))]
    assert judge("contents.correct-by-id", *two_deletions)[0] == NOT_EXERCISED  # m1 stays deleted
    textless = [write(1, memory("m1", about="topic:t1")), write(2, memory("m1", about="topic:t1"), method="PUT")]
    assert judge("contents.correct-by-id", *textless)[0] == NOT_EXERCISED


def test_no_copy_to_relabel_reads_objects_and_every_row():
    def obj(rid: str, labels: list[str], **text: str) -> Row:
        return Row(rid, "request.rows[0]", "readable", kind="memory", plaintext=SimpleNamespace(labels=labels, **text))

    status, evidence = judge(
        "contents.no-copy-to-relabel", write(1, obj("m1", ["a"], text=TEXT)), write(2, obj("m2", ["b"], text=TEXT))
    )
    assert status == FAILED and "a copy of memory m1" in evidence[0]
    assert (
        judge("contents.no-copy-to-relabel", write(1, obj("m1", ["a"])), write(2, obj("m2", ["b"])))[0] == NOT_EXERCISED
    )
    one = write(1, memory("m1", text=TEXT, labels=["category:home"]))
    copy = write(
        2,
        memory("m0", verdict="layout only", text=TEXT, labels=["x"]),
        memory("m2", text=TEXT, labels=["category:travel"]),
    )
    assert judge("contents.no-copy-to-relabel", one, copy)[0] == FAILED
    alongside = at(delete(2, "m1"), 3.0)  # deleted as the new row was sent: a move, not a copy
    assert (
        judge("contents.no-copy-to-relabel", one, alongside, write(3, memory("m2", text=TEXT, labels=["b"])))[0]
        == NOT_EXERCISED
    )
    mail = x(2, "POST", "/api/agent/inbox/delete", 200, {"ids": ["m1"]}, {"deleted": ["m1"]})
    assert judge("contents.no-copy-to-relabel", one, mail, write(3, memory("m2", text=TEXT, labels=["b"])))[0] == FAILED
    assert links("contents.no-copy-to-relabel", one, write(2, memory("m2", text=TEXT, labels=["b"]))) == [(2, 1)]


def test_correct_by_id_reads_past_a_read_and_a_refused_write():
    one, two = (
        write(1, memory("m1", text=FIRST, about="topic:t1")),
        write(3, memory("m2", text=SECOND, about="topic:t1")),
    )
    read = x(0, "GET", M, 200, None, {"memories": []})
    refused = write(2, memory("m9", text="x", about="topic:t1"), status=400)
    assert judge("contents.correct-by-id", read, one, refused, two)[0] == FAILED
