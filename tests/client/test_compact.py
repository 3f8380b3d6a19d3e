"""What a load keeps, kept compact, behaves as the rows it was served: each served row's text
with its blobs as bytes, made again byte for byte (vault/served.py); a memory's DecodedRow made
again from its Memory exactly as the load read it (vault/decoded_rows.py); the cache file's body written
in pieces and read back as one vault (store/body.py). Against the sandbox over real HTTP, and on
crafted rows for the cases a server following the spec never sends."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import uuid

import httpx
import orjson
import pytest

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.store import body, cache
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.vault import frames
from decoy_lab.vault.decode import decoded
from decoy_lab.vault.decoded_rows import DecodedRows
from decoy_lab.vault.frames import DecodedRow
from decoy_lab.vault.read import build_vault
from decoy_lab.vault.served import Fingerprints, compact, expand, for_reading
from decoy_lab.wire.crypto import AgentKey

MEMORIES = "/api/agent/context/memories"


def connect(sb, **options) -> Connection:
    return Connection.pair(
        sb.url,
        name="Compact rows",
        permissions=["memory.read", "memory.save", "memory.edit"],
        agent_key=AgentKey.generate(),
        client_id=f"compact-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        backoff=0,
        **{"profile": None, **options},
    )


def raw_body(conn: Connection) -> bytes:
    token = conn.tokens.access_token.reveal()
    return httpx.get(conn.base_url + MEMORIES, headers={"Authorization": f"Bearer {token}"}).content


@pytest.fixture(scope="module")
def loaded(sb):
    conn = connect(sb)
    ids = [conn.save(f"Kept compact {i}.", topic=f"Compact {i % 2}", categories=["misc"][: i % 2]) for i in range(4)]
    vault = conn.load()
    yield conn, vault, ids
    conn.close()


def test_each_served_row_keeps_its_blobs_as_bytes_and_its_text_comes_back_byte_for_byte(loaded):
    conn, vault, _ids = loaded
    served, answer = vault.served, raw_body(conn)
    rows = orjson.loads(answer)["memories"]
    assert len(served) == len(rows) > 4
    for i, row in enumerate(rows):
        kept, text = served.entry(i), served.text(i)
        assert isinstance(kept, bytes) and len(kept) < 0.85 * len(text), "the base64 blobs are kept as their bytes"
        assert text.encode() in answer, "exactly the characters served"
        assert served[i] == row and orjson.loads(text) == row
        for blob in ("ciphertext", "wrapped_key"):
            assert base64.b64decode(row[blob]) in kept


def test_the_unseal_step_through_reads_the_row_exactly_as_served(loaded):
    conn, vault, ids = loaded
    row = next(r for r in orjson.loads(raw_body(conn))["memories"] if r["id"] == ids[2])
    assert vault.served_row(ids[2]) == row
    trace = conn.unseal(ids[2])
    assert trace.ok and trace.source is not None
    assert trace.source.inputs == {n: base64.b64decode(row[n]) for n in ("wrapped_key", "ciphertext")}


def test_a_memory_is_kept_as_its_model_and_its_decoded_row_is_made_again_as_the_load_read_it(loaded):
    _conn, vault, _ids = loaded
    rows = vault.decoded_rows
    assert isinstance(rows, DecodedRows)
    for i, result in enumerate(vault.results):
        assert rows[i] == decoded(vault.served[i], result), "the row as the full read makes it"
        kept = rows.kept(i)
        assert (type(kept) is memory.Memory) == isinstance(result, memory.Memory)
    assert rows.kinds() == [r.kind for r in rows] and rows.ids() == [r.id for r in rows]
    assert list(rows[1:3]) == [rows[1], rows[2]]
    made = frames.memories_frame(list(rows), vault.topic_list, vault.account_names)  # from DecodedRows only
    assert vault.memories.equals(made), "a memory read from its model fills the same cells, of the same dtypes"
    dtypes = {c: str(t) for c, t in vault.memories.dtypes.items()}
    assert dtypes["text"] == dtypes["topic"] == dtypes["id"] == "string" and dtypes["rev"] == "Int64"
    assert dtypes["created_at"] == dtypes["updated_at"] == "datetime64[ns, UTC]" and dtypes["categories"] == "object"


def test_a_row_whose_served_fields_differ_from_its_model_keeps_its_decoded_row(loaded, sb):
    conn, vault, _ids = loaded
    served = [dict(r) for r in vault.served]
    i = next(i for i, r in enumerate(vault.results) if isinstance(r, memory.Memory))
    del served[i]["mine"]  # the model says False, the DecodedRow shows what was served: nothing
    served[i]["author_kind"] = 7
    again = build_vault({"memories": served}, conn.agent_key, key_cache=memory.KeyCache())
    kept = again.decoded_rows.kept(i)
    assert type(kept) is DecodedRow and kept.mine is None and kept.author_kind is None
    assert again.decoded_rows[i] == decoded(served[i], again.results[i])
    assert again.memories.equals(
        vault.memories.assign(mine=again.memories["mine"], author_kind=again.memories["author_kind"])
    )


TEXT = '{"id":"r1","kid":"k1","ciphertext":"%s","wrapped_key":"%s","via":["self"],"note":"%s"}'
BLOB = base64.b64encode(bytes(range(200))).decode()  # 200 bytes: one "=" of padding


def noncanonical(b64: str) -> str:
    """The same bytes in other base64 (padding bits set): re-encoding them would not give it back."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    same = (b64[:-2] + c + "=" for c in alphabet)
    return next(v for v in same if v != b64 and base64.b64decode(v) == base64.b64decode(b64))


@pytest.mark.parametrize(
    "text",
    [
        TEXT % (BLOB, noncanonical(BLOB), "the second blob is not canonical base64"),
        TEXT % (BLOB, BLOB[:-1] + "A==", "the second is not base64 at all"),
        TEXT % (BLOB, BLOB, "the same blob twice"),
        TEXT % (BLOB.replace("/", "\\/"), BLOB, "an escaped slash"),
        TEXT % (BLOB, BLOB, "not ASCII: café"),
        TEXT % ("c2hvcnQ=", "c2hvcnQ=", "too short to cut"),
    ],
)
def test_compact_gives_back_the_very_text_whatever_the_row_holds(text):
    row = orjson.loads(text)
    kept = compact(text, row)
    assert (expand(kept) if isinstance(kept, bytes) else kept) == text
    if "ASCII" in text or "short" in text:
        assert kept == text, "kept as its text"
    else:
        assert isinstance(kept, bytes) and bytes(range(200)) in kept
    assert for_reading(kept) == {**row, **{n: base64.b64decode(row[n]) for n in cut_blobs(kept)}}


def cut_blobs(kept: str | bytes) -> list[str]:
    """The blob members `compact` cut out of a row (what `for_reading` gives as bytes)."""
    return [n for n, v in for_reading(kept).items() if isinstance(v, bytes)] if isinstance(kept, bytes) else []


@pytest.mark.parametrize(
    ("text", "cut", "why"),
    [
        ('{"id":"r1","note":"%s","ciphertext":"%s"}' % (BLOB, BLOB), ["ciphertext"], "the same string earlier"),
        (
            '{"id":"r1", "ciphertext" :\n "%s" , "self_wrap": "%s"}' % (BLOB, BLOB),
            ["ciphertext", "self_wrap"],
            "spaces",
        ),
        ('{"id":"r1","x":{"ciphertext":"%s"},"ciphertext":"%s"}' % (BLOB, BLOB), [], "a nested member first"),
        ('{"id":"r1","ciphertext":"%s","ciphertext":"%s"}' % (BLOB, BLOB), [], "a name served twice"),
        (
            '{"id":"r1","ciphertext":"%s","ciphertext":"%s"}' % ("QUJD" * 20, BLOB),
            ["ciphertext"],
            "twice, the last read",
        ),
    ],
)
def test_a_blob_is_cut_where_its_member_is_and_read_as_bytes_only_when_that_is_the_member_read(text, cut, why):
    """A reader takes a compact row's blobs as bytes only when the cut was the very member a
    parse of the row reads; anywhere else the row is the dict parsed from its text."""
    row = orjson.loads(text)
    kept = compact(text, row)
    assert (expand(kept) if isinstance(kept, bytes) else kept) == text, why
    assert cut_blobs(kept) == cut, why
    assert {
        k: (base64.b64encode(v).decode() if isinstance(v, bytes) else v) for k, v in for_reading(kept).items()
    } == row


def test_a_row_read_with_its_blobs_as_bytes_reads_as_the_row_served(loaded):
    """What a load opens (`for_reading`: no base64 decoded again) is what the served row reads as."""
    conn, vault, _ids = loaded
    for i in range(len(vault.served)):
        served, opened = vault.served[i], vault.served.for_reading(i)
        assert isinstance(opened["ciphertext"], bytes) and isinstance(opened["wrapped_key"], bytes)
        assert memory.read_row(opened, conn.agent_key) == memory.read_row(served, conn.agent_key)


def test_the_cache_body_written_in_pieces_reads_back_as_the_same_vault(sb, tmp_path, monkeypatch):
    monkeypatch.setattr(body, "PIECE", 2)  # several pieces of rows, and of keys
    store = ProfileStore(tmp_path / "cfg", use_keyring=False)
    conn = connect(sb, profile="p", store=store)
    for i in range(5):
        conn.save(f"In pieces {i}.", topic="Pieces")
    cold = conn.load()
    cache.settle()
    snap = conn.local_cache().read()
    assert snap is not None and snap.complete and len(snap.rows) == len(cold.served)
    assert snap.keys == dict(conn.session.key_cache)
    again = Connection.resume("p", store=store)
    vault = again.load()
    assert vault.read == 0 and list(vault.decoded_rows) == list(cold.decoded_rows)
    assert vault.memories.equals(cold.memories) and vault.topics.equals(cold.topics)
    again.close()
    conn.close()


def test_a_body_says_complete_only_when_every_row_is_kept(loaded):
    conn, vault, _ids = loaded
    assert body.complete(vault, {})
    rows = [dict(r) for r in vault.served]
    for broken in ({**rows[0], "kid": None}, rows[0]):  # a row that cannot be kept; an id served twice
        other = build_vault(
            {"memories": [broken, *rows[1:], *([rows[0]] if broken is rows[0] else [])]},
            conn.agent_key,
            key_cache=memory.KeyCache(),
        )
        kept = sum(len(p) for p in body.row_pieces(other, {}))
        assert not body.complete(other, {}) and kept < len(other.served)


def test_memories_share_their_equal_values_and_a_frame_holds_copies(loaded):
    _conn, vault, ids = loaded
    a, b = vault.memory(ids[1]), vault.memory(ids[3])  # the same topic, categories and via
    assert a is not None and b is not None
    assert a.categories == ["misc"] and a.categories is b.categories and a.via is b.via and a.topic is b.topic
    assert a.created_at is a.updated_at, "one datetime for a row served with the same two times"
    row = vault.memories.set_index("id").loc[ids[1]]
    assert row["categories"] == a.categories and row["categories"] is not a.categories, "a frame's cell is its own"


def test_fingerprints_are_kept_as_bytes_and_read_back_as_the_hex_they_were(loaded):
    _conn, vault, _ids = loaded
    hexes = [hashlib.sha256(bytes([i])).hexdigest() for i in range(5)]
    kept = Fingerprints.of([hexes[0], None, *hexes[1:]])
    assert isinstance(kept, Fingerprints) and list(kept) == [hexes[0], None, *hexes[1:]] and kept[-1] == hexes[-1]
    odd = [hexes[0].upper(), None]  # not what jsonstream makes: kept exactly as given
    assert Fingerprints.of(odd) is odd and Fingerprints.of(["not hex" * 9 + "x"]) == ["not hex" * 9 + "x"]
    fresh = dataclasses.replace(vault, fingerprints=[hexes[0]] * len(vault.served))  # the module's stays as loaded
    assert isinstance(fresh.fingerprints, Fingerprints) and fresh.fingerprints == [hexes[0]] * len(vault.served)
