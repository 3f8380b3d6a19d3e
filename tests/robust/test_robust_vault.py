"""A hostile vault, served by the sandbox: `Connection.load()` keeps every good row and reports
each bad one with its reason.

Spec: "It throws for an unreadable row: one this connection's key does not open, or one that
opens and is not bound to its id or has a field of the wrong type." and "report a row as
unreadable only from `unreadable`".

How the hostile rows get in. The server never decrypts, so most of them go in through the
ordinary HTTP API exactly as a careless or malicious writer would send them: swapped row ids,
a wrong kid, `v` ≠ 2, wrong field types, a plaintext that is not UTF-8, and JSON nested far
deeper than any reader recurses all ride inside a well-formed VAULT blob with real wraps. Two
cannot, because the HTTP API refuses to store them, and the test proves that refusal first:
- a ciphertext of 100 KiB + 1 (`400 CIPHERTEXT_TOO_LARGE`) is inserted with the sandbox's own
  store functions (`memstore.insert_memory` / `put_wrap` inside `store.tx()`), as a server that
  failed to enforce its limit would hold it;
- duplicate ids cannot exist in the store (the id is its primary key; a resend lands under
  `existing`), so a proxy transport between the client and the sandbox adds a second copy of a
  good row to the GET answer, as a faulty server or cache would serve it.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from dataclasses import dataclass

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.memory import RecipientKeys, new_memory_row, new_topic_rows
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

MEMORIES = "/api/agent/context/memories"
LIMIT = 100 * 1024


@dataclass
class Case:
    """One hostile row: its id, what it is, and the words its reason must contain."""

    name: str
    row_id: str
    reason: str  # a regular expression, matched case-insensitively


def _sealed(keys: RecipientKeys, plaintext: bytes, row_id: str, *, kid: str | None = None) -> dict:
    """A POST-ready row whose VAULT blob holds exactly `plaintext`, with real owner and self wraps."""
    key = random_key()
    return {
        "id": row_id,
        "kid": kid or wire.kid(key),
        "ciphertext": wire.b64encode(sealing.seal_vault(key, plaintext)),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, keys.owner_public_key)),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, keys.agent_public_key)),
    }


def _memory(row_id: str, **changes) -> dict:
    obj = {
        "v": 2,
        "row_id": row_id,
        "observation": {"entityName": "default_user", "content": "hostile"},
        "about": ["user"],
    }
    obj.update(changes)
    return obj


class DuplicatingTransport(httpx.BaseTransport):
    """Forwards to the sandbox; appends `extra` rows to every GET /memories answer."""

    def __init__(self, extra: list[dict]):
        self.inner = httpx.HTTPTransport()
        self.extra = extra

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        if request.method == "GET" and request.url.path == MEMORIES:
            resp.read()
            body = json.loads(resp.content)
            body["memories"] = [*body["memories"], *self.extra]
            return httpx.Response(200, json=body)
        return resp

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def world():
    """One sandbox, the main connection, and an authenticated raw HTTP client for it."""
    with Sandbox.start(seed="none") as sb:
        conn = Connection.pair(sb.url, name="hostile vault", profile=None, on_link=lambda link, code: None)
        http = httpx.Client(base_url=sb.url, headers={"Authorization": f"Bearer {conn.tokens.access_token.reveal()}"})
        yield {"sb": sb, "conn": conn, "http": http, "keys": conn.keys()}
        http.close()
        conn.close()


def _good_rows(keys: RecipientKeys) -> tuple[list[dict], dict[str, str], object, str]:
    """Three memories about the user, a topic with its relation and one memory in it."""
    texts = [f"good memory {i}" for i in range(3)]
    good = [new_memory_row(keys, t, categories=["misc"]) for t in texts]
    topic = new_topic_rows(keys, "Hostile fixtures", type="project")
    in_topic = new_memory_row(keys, "good memory in a topic", topic=topic.topic)
    good_texts = {r["id"]: t for r, t in zip([*good, in_topic], [*texts, "good memory in a topic"])}
    return [*good, *topic.rows, in_topic], good_texts, topic, in_topic["id"]


@pytest.fixture(scope="module")
def hostile(world):
    """Good rows, then every hostile row the HTTP API stores; one load through the client."""
    keys, http, conn = world["keys"], world["http"], world["conn"]

    def post(rows: list[dict]) -> httpx.Response:
        return http.post(MEMORIES, json={"rows": rows})

    posted, good_texts, topic, in_topic = _good_rows(keys)
    assert post(posted).status_code == 201

    cases: list[Case] = []
    rows: list[dict] = []

    def add(name: str, row: dict, reason: str) -> None:
        rows.append(row)
        cases.append(Case(name, row["id"], reason))

    # Swapped ids: two sound rows, each sent under the other's id.
    a, b = new_memory_row(keys, "swap a"), new_memory_row(keys, "swap b")
    add("swapped id (a under b)", {**a, "id": b["id"]}, r"bound to row_id")
    add("swapped id (b under a)", {**b, "id": a["id"]}, r"bound to row_id")
    # A kid that is not the key's.
    add("wrong kid", {**new_memory_row(keys, "wrong kid"), "kid": wire.kid(random_key())}, r"kid")
    # v ≠ 2, and v of the wrong type.
    rid = str(uuid.uuid4())
    add("v = 1", _sealed(keys, sealing.json_bytes(_memory(rid, v=1)), rid), r"\bv\b.*not 2")
    rid = str(uuid.uuid4())
    add("v = '2' (text)", _sealed(keys, sealing.json_bytes(_memory(rid, v="2")), rid), r"\bv\b.*not 2")
    # Wrong field types.
    rid = str(uuid.uuid4())
    add(
        "content is a number",
        _sealed(keys, sealing.json_bytes(_memory(rid, observation={"entityName": "default_user", "content": 42})), rid),
        r"content must be str",
    )
    rid = str(uuid.uuid4())
    add(
        "categories is text",
        _sealed(keys, sealing.json_bytes(_memory(rid, categories="travel")), rid),
        r"categories must be a list",
    )
    rid = str(uuid.uuid4())
    add("about is text", _sealed(keys, sealing.json_bytes(_memory(rid, about="user")), rid), r"about must be a list")
    rid = str(uuid.uuid4())
    add(
        "topic name is null",
        _sealed(
            keys,
            sealing.json_bytes({"v": 2, "row_id": rid, "entity": {"name": None, "entityType": ""}, "about": []}),
            rid,
        ),
        r"entity\.name",
    )
    rid = str(uuid.uuid4())
    add("plaintext is a list", _sealed(keys, sealing.json_bytes([2, rid]), rid), r"not a JSON object")
    # Invalid UTF-8 inside an otherwise JSON-looking plaintext.
    rid = str(uuid.uuid4())
    raw = sealing.json_bytes(_memory(rid)).replace(b"hostile", b"host\xff\xfeile")
    add("invalid UTF-8", _sealed(keys, raw, rid), r"UTF-8")
    # JSON nested 20,000 deep (well under 100 KiB).
    rid = str(uuid.uuid4())
    deep = sealing.json_bytes(_memory(rid)).replace(
        b'"about"', b'"metadata":{"n":' + b"[" * 20000 + b"]" * 20000 + b'},"about"', 1
    )
    assert len(deep) < LIMIT
    add("JSON nested 20,000 deep", _sealed(keys, deep, rid), r"JSON|nest|depth|recursion")

    answer = post(rows)
    assert answer.status_code == 201, answer.text
    assert sorted(answer.json()["created"]) == sorted(r["id"] for r in rows)
    vault = conn.load()
    return {
        "vault": vault,
        "cases": cases,
        "good": good_texts,
        "topic": topic,
        "in_topic": in_topic,
        "served": len(posted) + len(rows),
    }


def _reason_rows(vault, row_id: str):
    rows = vault.rows
    return rows[(rows["id"] == row_id) & (rows["status"] != "readable")]


def test_every_good_row_is_kept(hostile):
    vault = hostile["vault"]
    memories = vault.memories
    assert len(memories) == len(hostile["good"])
    for rid, text in hostile["good"].items():
        found = memories[memories["id"] == rid]
        assert len(found) == 1, f"good memory {rid} appears {len(found)} times"
        assert found.iloc[0]["text"] == text
    placed = memories[memories["id"] == hostile["in_topic"]].iloc[0]
    assert placed["topic_id"] == hostile["topic"].topic_id and placed["topic"] == "Hostile fixtures"
    assert list(vault.topics["id"]) == [hostile["topic"].topic_id]
    assert len(vault.links) == 1


def test_every_served_row_is_readable_or_has_a_reason(hostile):
    rows = hostile["vault"].rows
    assert len(rows) == hostile["served"]
    bad = rows[rows["status"] != "readable"]
    assert set(bad["id"]) == {c.row_id for c in hostile["cases"]}
    assert bad["reason"].map(bool).all()


N_CASES = 12


@pytest.mark.parametrize("index", range(N_CASES), ids=lambda i: f"case{i}")
def test_each_bad_row_is_reported_with_its_reason(hostile, index):
    case = hostile["cases"][index]
    reported = _reason_rows(hostile["vault"], case.row_id)
    assert len(reported) == 1, f"{case.name}: reported {len(reported)} times"
    reason = reported.iloc[0]["reason"]
    assert re.search(case.reason, reason, re.I), f"{case.name}: reason {reason!r} does not say /{case.reason}/"


def test_case_count_matches_parametrization(hostile):
    """The parametrized reason test covers every hostile row built above, no more, no fewer."""
    assert len(hostile["cases"]) == N_CASES
    assert len({c.row_id for c in hostile["cases"]}) == N_CASES


def test_summary_counts_each_bad_row_once(hostile):
    vault = hostile["vault"]
    assert vault.counts()["unreadable"] == N_CASES
    assert vault.summary.startswith(f"{len(hostile['good'])} memories, 1 topic, 1 link, {N_CASES} unreadable")


def test_oversized_ciphertext_is_reported(world):
    """Spec: "Maximum decoded size 100 KiB". The HTTP API refuses 100 KiB + 1 (checked first), so
    the row goes into the store directly, for a second connection; its good row stays readable."""
    sb, http = world["sb"], world["http"]
    conn = Connection.pair(sb.url, name="oversized", profile=None, on_link=lambda link, code: None)
    try:
        keys = conn.keys()
        good = new_memory_row(keys, "good next to a big one")
        rid = str(uuid.uuid4())
        pad = LIMIT + 1 - len(sealing.seal_vault(random_key(), sealing.json_bytes(_memory(rid, metadata={"pad": ""}))))
        big = _sealed(keys, sealing.json_bytes(_memory(rid, metadata={"pad": "x" * pad})), rid)
        assert len(wire.b64decode(big["ciphertext"])) == LIMIT + 1
        auth = {"Authorization": f"Bearer {conn.tokens.access_token.reveal()}"}
        assert http.post(MEMORIES, json={"rows": [good]}, headers=auth).status_code == 201
        refused = http.post(MEMORIES, json={"rows": [big]}, headers=auth)
        assert refused.status_code == 400 and refused.json()["code"] == "CIPHERTEXT_TOO_LARGE"
        state = sb.state
        now = state.clock()
        with state.store.tx() as con:
            ms.insert_memory(
                con,
                ms.MemoryRow(
                    rid,
                    big["kid"],
                    1,
                    big["ciphertext"],
                    big["owner_wrap"],
                    "agent",
                    conn.token_id,
                    conn.token_id,
                    now,
                    now,
                    now,
                ),
            )
            ms.put_wrap(
                con,
                ms.Wrap(
                    rid, conn.token_id, ms.key_fp(keys.agent_public_key), big["kid"], big["self_wrap"], ["self"], now
                ),
            )
        vault = conn.load()
        assert list(vault.memories["id"]) == [good["id"]]
        reported = _reason_rows(vault, rid)
        assert len(reported) == 1
        assert re.search(r"100 KiB|too large|larger|maximum", reported.iloc[0]["reason"], re.I)
    finally:
        conn.close()


def test_duplicate_id_keeps_the_first_and_reports_the_copies(world, hostile):
    """A faulty server that serves one id twice — an exact copy, and a copy carrying another
    row's sound ciphertext and wrap — is put between client and sandbox by a proxy transport:
    the memory is listed once with its own text; each further copy is reported as unreadable,
    saying it was served more than once."""
    sb, conn, http = world["sb"], world["conn"], world["http"]
    served = {r["id"]: r for r in http.get(MEMORIES).json()["memories"]}
    ids = list(hostile["good"])
    victim, other = served[ids[0]], served[ids[1]]
    extra = [copy.deepcopy(victim), {**copy.deepcopy(other), "id": victim["id"]}]
    proxy = httpx.Client(transport=DuplicatingTransport(extra))
    try:
        vault = Connection(sb.url, agent_key=conn.agent_key, tokens=conn.tokens, http=proxy).load()
    finally:
        proxy.close()
    rid = victim["id"]
    found = vault.memories[vault.memories["id"] == rid]
    assert len(found) == 1 and found.iloc[0]["text"] == hostile["good"][rid]
    copies = _reason_rows(vault, rid)
    assert len(copies) == 2
    assert copies["reason"].str.contains(r"more than once|duplicate|twice", case=False, regex=True).all()


def test_ids_of_other_json_types_are_reported_and_reload_reuses_nothing_wrongly(world, hostile):
    """ "Wrong field types" reaches the served `id` itself: a faulty server that serves ids as a
    list, an object, a number or not at all must not stop the load (an unhashable id once did) —
    each such row is reported, every good row kept, and a reload of the same answer agrees."""
    sb, conn = world["sb"], world["conn"]
    extra = [
        {"id": [1, 2], "kid": "0" * 16, "ciphertext": "AAAA", "wrapped_key": "AAAA"},
        {"id": {"a": 1}, "kid": "0" * 16},
        {"id": 7},
        {"kid": "0" * 16, "ciphertext": "AAAA"},
    ]
    proxy = httpx.Client(transport=DuplicatingTransport(extra))
    try:
        c = Connection(sb.url, agent_key=conn.agent_key, tokens=conn.tokens, http=proxy)
        first, again = c.load(), c.load()
    finally:
        proxy.close()
    for vault in (first, again):
        texts = dict(zip(vault.memories["id"], vault.memories["text"]))
        assert all(texts.get(i) == t for i, t in hostile["good"].items())
        assert vault.summary == first.summary
        bad = vault.rows[vault.rows["status"] == "unreadable"]
        assert bad["reason"].str.contains("no id").sum() == len(extra)
    assert again.read == len(extra), "rows without a usable id are read again, never matched to an earlier one"
