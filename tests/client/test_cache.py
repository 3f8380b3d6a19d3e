"""cache.py: the sealed local cache of a profile's vault, against the sandbox over real HTTP.

Issue 15: "A row is taken from the cache only when its id, kid, rev and ciphertext hash match
what the server serves now; anything else is opened afresh. A corrupt, truncated or foreign
cache file is ignored with a warning (and rebuilt), never trusted and never a crash."
Spec (sync): "persist the returned `state` as the next cursor"; 410 "Cursor predates the pruned
floor — full-resync (re-list, re-anchor at /api/agent/sync/head)".
"""

from __future__ import annotations

import base64
import json
import os
import stat
import warnings
from typing import Any

import httpx
import pytest

from decoy_lab import Connection, Sandbox, memory
from decoy_lab.sandbox.stores import memstore
from decoy_lab.store import cache
from decoy_lab.store.cache import CacheIgnored, VaultCache
from decoy_lab.store.profiles import ProfileStore
from decoy_lab.vault.read import build_vault
from decoy_lab.wire.crypto import AgentKey

MEMORIES = "/api/agent/context/memories"


@pytest.fixture(scope="module")
def demo():
    with Sandbox.start() as sandbox:  # the demo vault: memories, topics, links, legacy space rows
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture
def store(tmp_path):
    return ProfileStore(tmp_path / "cfg", use_keyring=False)


@pytest.fixture
def paired(demo, store):
    """A connection saved under profile "p", the demo vault shared with it, loaded once (cold)."""
    conn = Connection.pair(demo.url, name="cache test", on_link=lambda *a: None, profile="p", store=store)
    demo.owner.share()
    cold = conn.load()
    cache.settle()  # the file is written after load() returns: these tests read its bytes
    yield conn, cold
    conn.close()


RSA: list[int] = [0]  # private-key operations since the last Counted.load (see the autouse fixture)


@pytest.fixture(autouse=True)
def count_rsa(monkeypatch):
    real = AgentKey.decrypt

    def counting(self, data: bytes) -> bytes:
        RSA[0] += 1
        return real(self, data)

    monkeypatch.setattr(AgentKey, "decrypt", counting)


class Counted:
    """A resumed connection whose requests and RSA operations are counted."""

    def __init__(self, store: ProfileStore, profile: str = "p"):
        self.paths: list[str] = []
        client = httpx.Client(event_hooks={"request": [lambda r: self.paths.append(r.url.path)]})
        self.conn = Connection.resume(profile, store=store, http=client)
        self.rsa = 0

    def load(self):
        self.paths.clear()
        RSA[0] = 0
        try:
            return self.conn.load()
        finally:
            self.rsa = RSA[0]
            cache.settle()


def same_vault(got, want) -> None:
    """Row by row: what every row reads as, the frames, the waiting members."""
    assert [r.id for r in got.decoded_rows] == [r.id for r in want.decoded_rows]
    for a, b in zip(got.decoded_rows, want.decoded_rows):
        assert a == b, a.id
    assert got.memories.equals(want.memories) and got.topics.equals(want.topics) and got.links.equals(want.links)
    assert got.answer == want.answer and got.summary == want.summary


def test_reopen_in_a_new_connection_equals_the_cold_load_with_no_rsa_and_no_rows_fetched(paired, store):
    conn, cold = paired
    path = store.cache_path("p")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.parent == store.profiles_dir
    again = Counted(store)
    vault = again.load()
    same_vault(vault, cold)
    assert vault.read == 0 and again.rsa == 0
    assert MEMORIES not in again.paths, "nothing changed: the sync feed said so, no rows were fetched"
    assert "/api/agent/sync" in again.paths
    mid = conn.save("Reads on the train.")
    later = again.load()  # the same process again: rows still matched against the cache file
    assert later.read == 1 and later.memory(mid).text == "Reads on the train."


def test_a_change_is_fetched_and_only_the_changed_rows_are_opened(paired, store):
    conn, _ = paired
    mid = conn.save("Prefers the window seat.", categories=["travel"])
    conn.load()  # the cache now holds the new memory too
    conn.edit(mid, text="Prefers the aisle seat.")
    again = Counted(store)
    vault = again.load()
    assert MEMORIES in again.paths
    assert vault.read == 1, "only the edited row is opened; the key is cached by kid, so no RSA either"
    assert again.rsa == 0 and vault.memory(mid).text == "Prefers the aisle seat."
    fresh = Connection.resume("p", store=store)
    cache.clear(store.cache_path("p"))
    same_vault(vault, fresh.load())


def test_a_pruned_cursor_falls_back_to_one_full_read(paired, store, demo):
    conn, _cold = paired
    conn.save("Keeps receipts in the blue folder.")
    with demo.state.store.tx() as con:  # the feed's floor moves past the saved cursor: 410
        memstore.prune(con, memstore.head(con) + 1)
    again = Counted(store)
    vault = again.load()
    assert again.paths.count(MEMORIES) == 1 and "/api/agent/sync/head" in again.paths
    assert vault.read == 1 and again.rsa == 1, "only the new row is opened"
    cache.clear(store.cache_path("p"))
    same_vault(vault, Connection.resume("p", store=store).load())


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "empty", "not a cache"])
def test_a_damaged_file_is_ignored_with_a_warning_read_afresh_and_rebuilt(paired, store, damage):
    _conn, cold = paired
    path = store.cache_path("p")
    blob = path.read_bytes()
    broken = {
        "truncated": blob[: len(blob) // 2],
        "flipped byte": blob[:100] + bytes([blob[100] ^ 0x01]) + blob[101:],
        "empty": b"",
        "not a cache": b'{"rows": []}',
    }[damage]
    path.write_bytes(broken)
    again = Counted(store)
    with pytest.warns(CacheIgnored, match="ignored and removed"):
        vault = again.load()
    same_vault(vault, cold)
    assert vault.read == len(cold.served), "every row opened afresh: nothing of the file was used"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Counted(store).load().read == 0, "the load rebuilt the cache"


def test_another_profiles_cache_does_not_open(paired, store):
    _conn, cold = paired
    other = Connection.resume("p", store=store)
    other.profile = "q"
    other.save_profile()  # profile q: the same connection, the same cache key
    store.cache_path("q").write_bytes(store.cache_path("p").read_bytes())
    again = Counted(store, "q")
    with pytest.warns(CacheIgnored):
        vault = again.load()
    assert vault.read == len(cold.served)


def test_a_changed_cache_key_or_agent_key_opens_afresh(paired, store, tmp_path):
    conn, _cold = paired
    path = store.cache_path("p")
    key = store.load("p").cache_key
    fingerprint = conn.agent_key.fingerprint
    args = {"profile": "p", "base_url": conn.base_url}
    assert VaultCache(path, key, agent_fingerprint=fingerprint, **args).read() is not None
    with pytest.warns(CacheIgnored):
        assert VaultCache(path, cache.new_cache_key(), agent_fingerprint=fingerprint, **args).read() is None
    assert not path.exists()
    conn.load()
    with pytest.warns(CacheIgnored):
        assert VaultCache(path, key, agent_fingerprint=AgentKey.generate().fingerprint, **args).read() is None


def test_pairing_again_under_the_profile_with_a_new_key_removes_the_cache(paired, store, demo):
    _conn, _ = paired
    assert store.cache_path("p").exists()
    Connection.pair(
        demo.url, name="again", on_link=lambda *a: None, profile="p", store=store, agent_key=AgentKey.generate()
    ).close()
    assert not store.cache_path("p").exists()


def test_unpair_leaves_no_cache_file(paired, store):
    conn, _ = paired
    assert store.cache_path("p").exists()
    conn.unpair()
    assert not store.cache_path("p").exists() and not store.exists("p")


def test_the_file_holds_no_plaintext_and_no_key_in_the_clear(paired, store):
    conn, cold = paired
    data = store.cache_path("p").read_bytes()
    secrets = [m.text for m in cold.models if isinstance(m, memory.Memory)]
    secrets += [t.name for t in cold.topic_list] + ["observation", "entityName", "categories"]
    keys = list(conn.session.key_cache.values())
    assert keys
    for raw in keys:
        assert raw not in data and base64.b64encode(raw) not in data and raw.hex().encode() not in data
    cache_key = base64.b64decode(store.load("p").cache_key)
    assert cache_key not in data and base64.b64encode(cache_key) not in data
    pem = conn.agent_key.to_pem().encode()
    assert pem[40:120] not in data
    for text in secrets:
        assert text.encode() not in data, text
    for row in cold.served[:20]:
        assert row["id"].encode() not in data, "not even the row ids are in the clear"


# -- the rule, offline: only the same id, kid, rev and ciphertext hash -------------------------------
def _written(rows: list[dict], agent: AgentKey, tmp_path) -> tuple[list[dict], Any, memory.KeyCache, VaultCache]:
    """`rows` served as the agent reads them (its self wrap as the wrapped key), read into a vault
    and written to a cache file: (served, vault, key cache, the cache)."""
    served = [
        {"id": r["id"], "kid": r["kid"], "ciphertext": r["ciphertext"], "wrapped_key": r["self_wrap"], "rev": 1}
        for r in rows
    ]
    keycache = memory.KeyCache()
    first = build_vault({"memories": served}, agent, key_cache=keycache)
    vc = VaultCache(tmp_path / "x.cache", cache.new_cache_key(), profile="x", base_url="", agent_fingerprint="f")
    vc.write(first, keycache, cursor="1", access_version=1)
    return served, first, keycache, vc


def test_only_a_row_with_the_same_id_kid_rev_and_ciphertext_is_taken(agent, tmp_path):
    owner = AgentKey.generate()
    keys = memory.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    rows = [memory.new_memory_row(keys, f"note {i}") for i in range(3)]
    served, first, keycache, vc = _written(rows, agent, tmp_path)
    snap = vc.read()
    assert snap is not None and snap.keys == dict(keycache)
    other = memory.new_memory_row(keys, "other")
    assert snap.reuse(served[0])[1] == first.results[0]
    assert snap.reuse({**served[0], "rev": 2}) is None
    assert snap.reuse({**served[0], "kid": other["kid"]}) is None
    assert snap.reuse({**served[0], "ciphertext": other["ciphertext"]}) is None
    assert snap.reuse({**served[0], "id": other["id"]}) is None
    body = json.dumps({"memories": served}).encode()
    assert body[:10] not in vc.path.read_bytes()


def test_equal_lists_and_dicts_are_kept_once_and_every_value_comes_back_as_it_was(agent, tmp_path):
    """The file keeps one copy of a `via`, a category list, a topic or an empty metadata that rows
    hold alike (marshal reads a repeat back as the same object); values merely equal in Python
    (1 and True, 0.0 and -0.0) are never taken for one another."""
    owner = AgentKey.generate()
    keys = memory.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    topic = {"id": "topic:6f1c2f34-5f1e-4a8e-9d55-0d3b8e3c1a10", "name": "Lisbon trip"}
    metadata: list = [{}, {}, {"n": 1}, {"n": True}, {"x": 0.0}, {"x": -0.0}, {"nested": ["a"]}, {"nested": ["a"]}]
    rows = [
        memory.new_memory_row(keys, f"note {i}", topic=topic, categories=["travel", "food"], metadata=m)
        for i, m in enumerate(metadata)
    ]
    vc = _written(rows, agent, tmp_path)[3]
    again = vc.read().vault([])
    got = {m.text: m for m in again.models}
    for i, m in enumerate(metadata):
        model = got[f"note {i}"]
        assert model.metadata == m and [type(v) for v in model.metadata.values()] == [type(v) for v in m.values()]
        assert model.categories == ["travel", "food"] and model.topic == topic
    assert str(got["note 5"].metadata["x"]) == "-0.0" and got["note 3"].metadata["n"] is True
    assert got["note 0"].categories is got["note 1"].categories, "one list for the rows that hold it alike"
    assert got["note 0"].topic is got["note 7"].topic and got["note 0"].metadata is got["note 1"].metadata
    assert got["note 6"].metadata is not got["note 7"].metadata  # nested values: each row's own


def test_a_narrowed_grant_is_never_answered_from_the_cache(paired, store, demo):
    """Spec: "Every via reason is rechecked against live grants." A revoked policy moves
    access_version, so a reopen reads in full instead of trusting the cache's rows."""
    conn, cold = paired
    policy = conn.access().policies[0]
    demo.owner.revoke(conn.token_id, policy["id"])
    again = Counted(store)
    vault = again.load()
    assert MEMORIES in again.paths, "read in full: the access changed"
    assert len(vault.served) < len(cold.served)
    cache.clear(store.cache_path("p"))
    same_vault(vault, Connection.resume("p", store=store).load())


# -- rows served byte for byte as kept are not even parsed -----------------------------------------
class CountingOrjson:
    """jsonstream's orjson, counting the rows it parses."""

    JSONDecodeError = __import__("orjson").JSONDecodeError

    def __init__(self):
        import orjson

        self.real, self.parsed = orjson, 0

    def loads(self, text):
        self.parsed += 1
        return self.real.loads(text)


def test_after_a_change_only_the_changed_row_is_parsed_the_rest_are_known_by_fingerprint(paired, store, monkeypatch):
    """Issue 15: "reopen after 1 % of rows changed" opens only what changed; a row whose JSON
    text is the same byte for byte as when it was kept is handed out as the cache's copy."""
    conn, _cold = paired
    mid = conn.save("Takes the late train.")
    conn.load()  # the cache now holds it too
    conn.edit(mid, text="Now takes the early train.")
    from decoy_lab.transport import jsonstream

    counting = CountingOrjson()
    monkeypatch.setattr(jsonstream, "orjson", counting)
    again = Counted(store)
    vault = again.load()
    assert MEMORIES in again.paths and vault.read == 1
    assert counting.parsed == 1, "the other rows were known by the SHA-256 of their text, not parsed"
    assert vault.memory(mid).text == "Now takes the early train."
    monkeypatch.undo()
    cache.clear(store.cache_path("p"))
    same_vault(vault, Connection.resume("p", store=store).load())


def test_a_sync_in_the_same_connection_parses_only_the_changed_row(paired, store, monkeypatch):
    """`sync()` after one edit: the rows served byte for byte as the load before served them are
    known by the SHA-256 of their text and taken as they read then, unparsed; the vault is the one
    a cold load reads, the duplicate of an unchanged row included."""
    conn, cold = paired
    mid = conn.save("Takes the late train.")
    conn.sync()
    conn.edit(mid, text="Now takes the early train.")
    from decoy_lab.transport import jsonstream

    counting = CountingOrjson()
    monkeypatch.setattr(jsonstream, "orjson", counting)
    result = conn.sync()
    vault = conn.session.vault
    assert result.updated == [mid] and vault.read == 1
    assert counting.parsed == 1, "the other rows were known by their text's fingerprint, not parsed"
    assert vault.memory(mid).text == "Now takes the early train."
    assert len(vault.served) == len(cold.served) + 1
    monkeypatch.undo()
    cache.clear(store.cache_path("p"))
    same_vault(vault, Connection.resume("p", store=store).load())


def test_a_row_known_by_its_text_but_served_twice_is_read_once_and_its_copy_reported(paired, store):
    """The same text twice in one answer (a faulty server): the first copy is taken as it read
    before, the second is reported as served more than once, as a load that knew nothing says."""
    _conn, cold = paired
    cache.clear(store.cache_path("p"))  # the first load below reads every row; the next knows their texts

    def real_answer(request: httpx.Request) -> httpx.Response:
        with httpx.Client() as real:
            answer = real.send(request)
        return httpx.Response(answer.status_code, content=answer.content, headers={"content-type": "application/json"})

    def doubled(request: httpx.Request) -> httpx.Response:
        answer = real_answer(request)
        if request.url.path != MEMORIES:
            return answer
        head, rest = answer.content.split(b'{"memories":[', 1)
        first = rest[: rest.index(b"}") + 1]  # the first row's text, byte for byte
        return httpx.Response(
            200, content=head + b'{"memories":[' + first + b"," + rest, headers={"content-type": "application/json"}
        )

    twice = [False]

    def maybe(request: httpx.Request) -> httpx.Response:
        return doubled(request) if twice[0] else real_answer(request)

    conn = Connection.resume("p", store=store, http=httpx.Client(transport=httpx.MockTransport(maybe)))
    conn.load()
    twice[0] = True
    again = conn.load()
    assert len(again.served) == len(cold.served) + 1 and again.read == 0
    copy = again.decoded_rows[1]
    assert copy.id == again.decoded_rows[0].id and copy.status == "unreadable" and "more than once" in copy.reason
    cache.clear(store.cache_path("p"))
    fresh = Connection.resume("p", store=store, http=httpx.Client(transport=httpx.MockTransport(doubled)))
    same_vault(again, fresh.load())


def test_a_row_served_in_other_bytes_is_still_matched_by_id_kid_rev_and_ciphertext(paired, store, demo):
    """Other spacing and member order (the same row, as another server might write it): the
    fingerprint differs, so the row is parsed, and taken from the cache by id, kid, rev and
    ciphertext hash: no RSA, the same vault."""
    conn, _cold = paired
    conn.save("Waters the ferns on Sundays.")  # a change, so the reopen reads the rows

    def respaced(request: httpx.Request) -> httpx.Response:
        with httpx.Client() as real:
            answer = real.send(request)
            body = answer.json()
        if request.url.path == MEMORIES:
            body["memories"] = [dict(reversed(list(r.items()))) for r in body["memories"]]
            return httpx.Response(answer.status_code, content=json.dumps(body, indent=1).encode())
        return httpx.Response(answer.status_code, json=body)

    client = httpx.Client(transport=httpx.MockTransport(respaced))
    reopened = Connection.resume("p", store=store, http=client)
    RSA[0] = 0
    vault = reopened.load()
    assert vault.read == 1 and RSA[0] == 1, "only the new memory is opened"
    cache.clear(store.cache_path("p"))
    same_vault(vault, Connection.resume("p", store=store).load())


def test_a_cache_written_by_another_python_is_rebuilt(paired, store, monkeypatch):
    """marshal's layout belongs to one Python version: a file whose head names another is
    ignored with a warning, never read."""
    conn, cold = paired
    monkeypatch.setattr(cache, "FORMAT", "marshal 4, Python 3.99")
    conn.load()  # written under the other name
    cache.settle()
    monkeypatch.undo()
    again = Counted(store)
    with pytest.warns(CacheIgnored, match="written as 'marshal 4, Python 3.99'"):
        vault = again.load()
    assert vault.read == len(cold.served)
    same_vault(vault, cold)


def test_load_returns_before_the_file_is_written_and_whatever_reads_it_waits(paired, store, monkeypatch):
    """The vault is handed back while its cache is sealed and written on a thread of its own;
    reading, describing or clearing the file waits for that write, so none meets it half made,
    and a clear is never undone by a write still in flight."""
    import threading

    conn, _cold = paired
    path = store.cache_path("p")
    release = threading.Event()
    real = VaultCache.write

    def slow(self, *a, **k):
        release.wait(10)
        return real(self, *a, **k)

    monkeypatch.setattr(VaultCache, "write", slow)
    before = path.read_bytes()
    conn.save("Keeps a spare key under the blue pot.")
    vault = conn.load()  # returns with the write still waiting
    assert any(m.text.startswith("Keeps a spare key") for m in vault.models if isinstance(m, memory.Memory))
    assert path.read_bytes() == before, "not written yet"
    threading.Timer(0.2, release.set).start()
    assert cache.describe(path).size != len(before) or path.read_bytes() != before, "describing it waited for the write"
    release.clear()
    conn.save("Walks the dog at seven.")
    conn.load()
    threading.Timer(0.2, release.set).start()
    assert cache.clear(path) and not path.exists(), "the clear waited, and no write came after it"
    cache.settle()
    assert not path.exists()


def test_a_memory_edited_right_after_a_reopen_is_edited_as_the_server_holds_it(paired, store):
    """A vault rebuilt from the cache holds no ciphertexts; an edit made from it still reads the
    row as served now and re-seals it with its cached key: the new text is what the next read
    (and a cold load) shows."""
    conn, _cold = paired
    mid = conn.save("Likes green tea.")
    conn.load()
    cache.settle()
    again = Counted(store)
    vault = again.load()
    assert MEMORIES not in again.paths and vault.memory(mid).text == "Likes green tea."
    trace = again.conn.unseal(mid)  # the step-through reads the row as served now: its bytes are there
    assert trace.ok and "RSA-OAEP-SHA256 unwrap" in [s.name for s in trace.steps]
    again.conn.edit(mid, text="Likes jasmine tea.")
    assert again.load().memory(mid).text == "Likes jasmine tea."
    cache.clear(store.cache_path("p"))
    assert Connection.resume("p", store=store).load().memory(mid).text == "Likes jasmine tea."


def _mapped(path) -> bool:
    """Whether this process maps `path` now (Linux: /proc/self/maps; elsewhere: never asked)."""
    return str(path) in open("/proc/self/maps").read()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps")
def test_a_reopen_reads_the_file_where_it_lies_and_lets_it_go(paired, store, monkeypatch):
    """The cache file is mapped, not copied (at 100,000 rows it is ~73 MB: a copy was as many fresh
    pages again, twice), and the mapping is closed once the rows are read — on a file system that
    will not replace a mapped file, the write that follows a load must still land."""
    _conn, cold = paired
    path = store.cache_path("p")
    seen: list[bool] = []
    real = VaultCache.read

    def read(self, blob=None):
        seen.append(type(blob).__name__ == "mmap" and _mapped(path))
        return real(self, blob)

    monkeypatch.setattr(VaultCache, "read", read)
    vault = Counted(store).load()
    assert seen == [True], "read from the file's mapping"
    assert vault.read == 0 and len(vault.served) == len(cold.served)
    assert not _mapped(path), "the mapping is closed once read"


def _sealed_body(pieces: list[bytes]) -> tuple[bytes, bytes, bytes, bytes]:
    """A body as the cache writes it (body.write_sealed): key, nonce, associated data, sealed bytes."""
    import io

    from decoy_lab.store import body

    key, nonce, aad = os.urandom(32), os.urandom(12), b"decoy-lab cache\0test"
    out = io.BytesIO()
    body.write_sealed(out, key, nonce, aad, iter(pieces))
    return key, nonce, aad, out.getvalue()


def test_a_body_of_many_chunks_opens_piece_by_piece_as_written():
    """A cache of 100,000 rows is ~70 MB: it is opened in two passes over the file's bytes (the tag
    checked first, then each piece decrypted and parsed in turn), never decrypted whole."""
    import marshal

    from decoy_lab.store import body

    rows = [[{"id": f"m{i}", "kid": f"k{i}", "rev": 1}, "memory", [f"{i:06d}" * 50], None, None] for i in range(12_000)]
    pieces = [marshal.dumps({"answer": {"waiting": 0}}), marshal.dumps({"keys": {"k1": b"\1" * 32}})]
    pieces += [marshal.dumps({"rows": rows[i : i + 2_000]}) for i in range(0, len(rows), 2_000)]
    key, nonce, aad, sealed = _sealed_body(pieces)
    assert len(sealed) > 3 * (1 << 20), "more than one of the checking pass's chunks"
    snap = body.open_sealed({"cursor": "c1"}, key, nonce, aad, memoryview(sealed))
    assert snap.rows == rows and snap.keys == {"k1": b"\1" * 32} and snap.answer == {"waiting": 0}
    assert snap.cursor == "c1"


@pytest.mark.parametrize("where", ["first byte", "last piece", "tag", "cut short"])
def test_nothing_of_a_body_is_parsed_unless_its_whole_tag_checks(monkeypatch, where):
    """A flipped byte anywhere — even in the last piece, megabytes after the first — fails the tag
    before marshal reads a single piece (only bytes this profile's key sealed are ever parsed)."""
    import marshal

    from cryptography.exceptions import InvalidTag

    from decoy_lab.store import body

    pieces = [
        marshal.dumps({"rows": [[{"id": f"m{i}"}, "memory", [f"{i:06d}" * 80], None, None] for i in range(3_000)]})
    ]
    key, nonce, aad, sealed = _sealed_body(pieces * 2)
    at = {"first byte": 0, "last piece": len(sealed) - 40, "tag": len(sealed) - 1}.get(where)
    damaged = sealed[:-1000] if at is None else sealed[:at] + bytes([sealed[at] ^ 0x80]) + sealed[at + 1 :]
    parsed: list[int] = []
    monkeypatch.setattr(body.marshal, "loads", lambda data: parsed.append(len(data)))
    with pytest.raises(InvalidTag):
        body.open_sealed({}, key, nonce, aad, memoryview(damaged))
    assert parsed == [], "no piece reached marshal"
