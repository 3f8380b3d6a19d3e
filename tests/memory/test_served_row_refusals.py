"""A hostile or broken server's row is refused with the row's id and the reason in words, and a read
keeps what the server said of a row: "It throws for an unreadable row: one this connection's key
does not open, or one that opens and is not bound to its id or has a field of the wrong type", and
GET serves "memories with id, kid, rev, ciphertext, wrapped_key, via, mine, author_kind and
timestamps". A user reading the refusal must learn which row and why; an attacker's near-valid row
must not slip past as a memory."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import UnreadableRow
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.vocab import MAX_CIPHERTEXT
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.memory_cast import craft, plain_memory


def _refused(served, reader) -> UnreadableRow:
    with pytest.raises(UnreadableRow) as err:
        M.read_row(served, reader)
    return err.value


def _without(row: dict, *names: str) -> dict:
    return {k: v for k, v in row.items() if k not in names}


# -- each refusal names the row and says why ----------------------------------------------------------
@pytest.mark.parametrize(
    "change,reason",
    [
        (lambda r: _without(r, "kid"), "the served row has no kid"),
        (lambda r: dict(r, kid=7), "the served row has no kid"),
        (lambda r: _without(r, "wrapped_key"), "the served row carries no wrapped_key for this connection"),
        (lambda r: dict(r, wrapped_key=""), "the served row carries no wrapped_key for this connection"),
        (lambda r: dict(r, wrapped_key=5), "the served row carries no wrapped_key for this connection"),
        (lambda r: _without(r, "ciphertext"), "the served row has no ciphertext"),
        (lambda r: dict(r, ciphertext=""), "the served row has no ciphertext"),
        (lambda r: dict(r, ciphertext=12), "the served row has no ciphertext"),
        (lambda r: dict(r, rev=True), "the served rev must be an integer, got bool"),
        (lambda r: dict(r, rev="3"), "the served rev must be an integer, got str"),
        (
            lambda r: dict(r, created_at="last Tuesday"),
            "the served created_at 'last Tuesday' is not an ISO 8601 date-time",
        ),
        (lambda r: dict(r, created_at=True), "the served created_at True is not an ISO 8601 date-time"),
        (lambda r: dict(r, updated_at="soon"), "the served updated_at 'soon' is not an ISO 8601 date-time"),
        (lambda r: dict(r, via="all"), "via must be a list of strings, got str"),
        (lambda r: dict(r, via=[1]), "via must be a list of strings, got list"),
    ],
)
def test_a_refused_served_row_names_its_id_and_the_field_at_fault(c, change, reason):
    served = change(craft(plain_memory(), c.agent, row_id="r1"))
    err = _refused(served, c.agent)
    assert err.row_id == "r1" and err.reason == reason
    assert M.summarize_rows([served], c.agent).unreadable_reasons == {"r1": err.reason}


def test_the_kid_check_names_both_kids_and_the_row(c):
    """ "Check `kid` against it": the refusal says which kid the row claims and which the key has."""
    key = random_key()
    served = craft(plain_memory(), c.agent, row_id="r1", key=key, kid="ab" * 8)
    err = _refused(served, c.agent)
    assert err.row_id == "r1"
    assert err.reason == (
        f"kid check failed: the row says {'ab' * 8} but the unwrapped key's kid is {wire.kid(key)}; "
        "the wrap and the ciphertext do not belong to the same key"
    )


def test_a_traced_read_shows_the_kids_it_compared_and_a_cached_key(c):
    """The trace a user opens shows the served kid beside the unwrapped key's; a second read with
    the key cache says the kid was checked before and no RSA work was done."""
    key = random_key()
    served = craft(plain_memory(), c.agent, row_id="r1", key=key)
    cache = M.KeyCache()
    t = Trace("read")
    M.read_row(served, c.agent, trace=t, key_cache=cache)
    check = next(s for s in t.steps if s.name == "kid check")
    assert check.inputs == {"served kid": wire.kid(key)} and check.output == wire.kid(key)
    t = Trace("read again")
    M.read_row(served, c.agent, trace=t, key_cache=cache)
    hit = t.steps[0]
    assert hit.name == "key cache" and hit.inputs == {"kid": wire.kid(key)}
    assert hit.output == f"kid {wire.kid(key)} was unwrapped and checked on an earlier read: no RSA work"


def test_a_traced_read_of_a_row_as_built_can_be_run_again_on_an_edited_self_wrap(c, keys):
    """A row as built carries `self_wrap`, not `wrapped_key`: that is the input a view edits."""
    row = M.new_memory_row(keys, "offline")
    t = Trace("read")
    M.read_memory_row(row, c.agent, trace=t)
    unwrap = next(s for s in t.steps if s.data is not None and t.editable(s) == "self_wrap")
    bad = t.rerun({"self_wrap": bytes(len(unwrap.data))})
    assert not bad.ok and bad.failed.name == "parse agent envelope"
    assert t.rerun({"self_wrap": wire.b64decode(row["self_wrap"])}).ok


def test_a_ciphertext_that_does_not_open_names_the_row(c):
    served = craft(plain_memory(), c.agent, row_id="r1")
    served["ciphertext"] = wire.b64encode(sealing.seal_json(random_key(), plain_memory()))
    err = _refused(served, c.agent)
    assert err.row_id == "r1" and err.reason.startswith("the ciphertext does not open under its key")


def test_a_plaintext_that_is_not_json_names_the_row(c):
    key = random_key()
    served = craft({}, c.agent, row_id="r1", key=key)
    served["ciphertext"] = wire.b64encode(sealing.seal_vault(key, b"{not json"))
    err = _refused(served, c.agent)
    assert err.row_id == "r1" and "plaintext is not JSON" in err.reason


def test_a_memory_about_no_one_is_refused(c):
    """ "Exactly one `about` value per memory: the user, one account or one topic" — none is as
    wrong as two."""
    err = _refused(craft(plain_memory(about=[]), c.agent, row_id="r1"), c.agent)
    assert err.row_id == "r1" and err.reason == (
        "the memory names 0 about values; the contract says exactly one "
        "(the user, one account or one topic), so whom it is about cannot be told"
    )


@pytest.mark.parametrize(
    "served,reason",
    [
        (None, "a served row is a JSON object, got null"),
        (["r1"], "a served row is a JSON object, got list"),
        ({"id": ""}, "the served row has no id"),
        ({"id": 5}, "the served row has no id"),
    ],
)
def test_a_row_without_an_id_is_refused_without_one(c, served, reason):
    err = _refused(served, c.agent)
    assert err.row_id is None and err.reason == reason


# -- the size limit, before any RSA work ---------------------------------------------------------------
def _sized(c, n: int, *, as_bytes: bool) -> dict:
    served = craft(plain_memory(), c.agent, row_id="r1")
    blob = bytes(n)
    served["ciphertext"] = blob if as_bytes else wire.b64encode(blob)
    return served


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize("extra", [1, 2, 3])  # three lengths: base64 with "==", "=" and no padding
def test_a_ciphertext_over_100_kib_is_refused_by_its_size(c, monkeypatch, as_bytes, extra):
    """ "Maximum decoded size 100 KiB" (the Agent API's ciphertext): a larger one was never stored through the API, so it
    is refused before the RSA unwrap, and the refusal says how large it is."""
    unwraps = []
    real = sealing.unwrap_as_agent
    monkeypatch.setattr(sealing, "unwrap_as_agent", lambda *a, **k: unwraps.append(1) or real(*a, **k))
    n = MAX_CIPHERTEXT + extra
    err = _refused(_sized(c, n, as_bytes=as_bytes), c.agent)
    assert err.row_id == "r1" and unwraps == []
    assert err.reason == (
        f"the ciphertext decodes to {n:,} bytes, over the 100 KiB ({MAX_CIPHERTEXT:,}-byte) maximum: "
        "no row this large was stored through the API"
    )


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize("short", [0, 1, 2])
def test_a_ciphertext_of_100_kib_or_less_is_opened(c, as_bytes, short):
    """At the limit or under it, the size is no reason: the row is unwrapped and opened (and these
    zero bytes then fail as a ciphertext, not as a size)."""
    err = _refused(_sized(c, MAX_CIPHERTEXT - short, as_bytes=as_bytes), c.agent)
    assert "over the 100 KiB" not in err.reason and "does not open under its key" in err.reason


# -- what the read keeps of the served fields ----------------------------------------------------------
def test_numeric_times_are_seconds_since_the_epoch_in_utc(c):
    served = dict(craft(plain_memory(), c.agent, row_id="r1"), created_at=1_790_000_000, updated_at=1_790_000_000)
    m = M.read_row(served, c.agent)
    assert m.created_at == datetime.fromtimestamp(1_790_000_000, tz=UTC) and m.created_at.tzinfo is UTC
    assert m.updated_at is m.created_at  # the same served time is one datetime, as for ISO text


def test_an_edited_row_keeps_its_own_update_time(c):
    served = dict(
        craft(plain_memory(), c.agent, row_id="r1"), created_at="2026-10-05T08:10:00Z", updated_at=1_790_000_000
    )
    m = M.read_row(served, c.agent)
    assert m.created_at == datetime(2026, 10, 5, 8, 10, tzinfo=UTC)
    assert m.updated_at == datetime.fromtimestamp(1_790_000_000, tz=UTC)
    later = dict(served, updated_at="2026-10-06T09:00:00Z")
    assert M.read_row(later, c.agent).updated_at == datetime(2026, 10, 6, 9, 0, tzinfo=UTC)


def test_a_time_out_of_range_leaves_the_cell_empty(c):
    served = dict(craft(plain_memory(), c.agent, row_id="r1"), created_at=1e20, updated_at=None)
    m = M.read_row(served, c.agent)
    assert m.created_at is None and m.updated_at is None


def test_a_served_row_without_via_or_mine_is_not_taken_for_ours(c):
    """Only a row as this helper built it (a self_wrap, no wrapped_key) reads as ours when the
    server says nothing; a served row carrying both wraps is still the server's word: not ours."""
    served = _without(craft(plain_memory(), c.agent, row_id="r1"), "via", "mine")
    m = M.read_row(served, c.agent)
    assert (m.via, m.mine) == ([], False)
    both = dict(served, self_wrap=served["wrapped_key"])
    m = M.read_row(both, c.agent)
    assert (m.via, m.mine) == ([], False)
    built = _without(both, "wrapped_key")
    m = M.read_row(built, c.agent)
    assert (m.via, m.mine) == (["self"], True)


def test_an_author_kind_that_is_no_string_does_not_break_the_read(c):
    served = dict(craft(plain_memory(), c.agent, row_id="r1"), author_kind=7)
    assert M.read_row(served, c.agent).author_kind == 7
    assert M.read_row(dict(served, author_kind=None), c.agent).author_kind is None


def test_served_fields_are_checked_as_a_read_checks_them(c):
    served = dict(craft(plain_memory(), c.agent, row_id="r1"), rev=4, via=["category:travel"], author_kind="user")
    f = M.served_fields(served)
    assert (f.rev, f.kid, f.via, f.mine, f.author_kind) == (4, served["kid"], ["category:travel"], True, "user")
    with pytest.raises(UnreadableRow) as err:
        M.served_fields(dict(served, rev=1.5))
    assert err.value.row_id == "r1" and "the served rev must be an integer, got float" in err.value.reason
    with pytest.raises(UnreadableRow, match="the served row has no id"):
        M.served_fields(_without(served, "id"))


# -- what the read keeps of the plaintext ------------------------------------------------------------
def test_empty_texts_stay_empty(c):
    """A memory, topic or link whose text fields are empty reads them empty, never as a stand-in."""
    m = M.read_row(craft(plain_memory(observation={"content": ""}), c.agent, row_id="r1"), c.agent)
    assert (m.text, m.entity_name) == ("", None)
    topic = M.read_row(craft({"v": 2, "row_id": "e1", "entity": {"name": ""}}, c.agent, row_id="e1"), c.agent)
    assert (topic.id, topic.topic_id, topic.name, topic.type) == ("e1", "topic:e1", "", "")
    link = M.read_row(
        craft({"v": 2, "row_id": "l1", "relation": {"from": "", "to": "", "relationType": ""}}, c.agent, row_id="l1"),
        c.agent,
    )
    assert (link.id, link.from_, link.to, link.relation_type) == ("l1", "", "", "")


def test_a_memory_filed_under_a_topic_without_a_name_keeps_an_empty_name(c):
    m = M.read_row(craft(plain_memory(observation={"content": "x"}, about=["topic:t1"]), c.agent, row_id="r1"), c.agent)
    assert m.topic == {"id": "topic:t1", "name": ""}


def test_a_memory_keeps_its_metadata_and_about_hint(c):
    obj = plain_memory(metadata={"source": "chat", "n": 2}, about_hint="the user's sister")
    m = M.read_row(craft(obj, c.agent, row_id="r1"), c.agent)
    assert m.metadata == {"source": "chat", "n": 2} and m.about_hint == "the user's sister"


def test_graph_rows_carry_the_served_fields(c):
    topic = craft({"v": 2, "row_id": "e1", "entity": {"name": "Lisbon"}}, c.agent, row_id="e1")
    link = craft(
        {"v": 2, "row_id": "l1", "relation": {"from": "a", "to": "b", "relationType": "r"}}, c.agent, row_id="l1"
    )
    for served in (dict(topic, rev=3), dict(link, rev=3)):
        row = M.read_row(served, c.agent)
        assert (row.rev, row.kid, row.via, row.mine, row.author_kind) == (3, served["kid"], ["self"], True, "agent")
    assert M.read_row(link, c.agent).id == "l1"


# -- the key cache shows kids only -------------------------------------------------------------------
def test_the_key_cache_shows_at_most_eight_kids():
    cache = M.KeyCache({f"{i:016x}": bytes(32) for i in range(8)})
    assert repr(cache) == f"<KeyCache 8 keys: {', '.join(f'{i:016x}' for i in range(8))}>"
    cache[f"{8:016x}"] = bytes(32)
    assert repr(cache) == f"<KeyCache 9 keys: {', '.join(f'{i:016x}' for i in range(8))} …>"
    assert str(cache) == repr(cache)
