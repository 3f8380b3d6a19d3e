"""The account family's calls given arguments a user could get wrong: each is refused with a
MemoryModelError naming what is wrong, before anything is sent — never a TypeError, an
AttributeError or a request for `/accounts/None`. ("Bad input gets a clear, typed error and loses
nothing.") Real HTTP against the sandbox, through a Meddler that records what left."""

from __future__ import annotations

import pytest

from decoy_lab.errors import MemoryModelError

from support.meddler import scripted_pair


@pytest.fixture(scope="module")
def paired(sb):
    conn, meddler = scripted_pair(sb, "bad-args", permissions=["everything"])
    made = conn.create_account("Acme", username="me@x.test")
    field = conn.add_field(made.account_id, "API key", "v1")
    yield conn, meddler, made.account_id, made.decoy_id, field.id
    conn.close()


def refused(paired, call, *, says: str) -> None:
    conn, meddler, *_ = paired
    before = len(meddler.seen)
    with pytest.raises(MemoryModelError, match=says):
        call(conn)
    sent = [(m, p) for m, p, _ in meddler.seen[before:] if not p.endswith("public-key")]
    assert sent == [], f"sent before refusing: {sent}"


IDS = [None, 5, b"abc", ["a"], 1.5]


@pytest.mark.parametrize("bad", IDS, ids=repr)
@pytest.mark.parametrize(
    "call",
    [
        lambda c, x, f: c.update_account(x, label="x"),
        lambda c, x, f: c.delete_account(x),
        lambda c, x, f: c.set_password(x, "pw"),
        lambda c, x, f: c.add_field(x, "L", "v"),
        lambda c, x, f: c.set_field(x, f, "v"),
        lambda c, x, f: c.delete_field(x, f),
        lambda c, x, f: c.protect(x),
        lambda c, x, f: c.unlock(x),
        lambda c, x, f: c.burn_account_decoy(x),
        lambda c, x, f: c.rename_decoy(x, name="n"),
        lambda c, x, f: c.update_decoy(x, label="x"),
        lambda c, x, f: c.burn_decoy(x),
    ],
    ids=[
        "update_account",
        "delete_account",
        "set_password",
        "add_field",
        "set_field",
        "delete_field",
        "protect",
        "unlock",
        "burn_account_decoy",
        "rename_decoy",
        "update_decoy",
        "burn_decoy",
    ],
)
def test_an_id_that_is_not_text_is_refused_before_sending(paired, call, bad):
    """An id is one path segment; `None` or `5` would ask for `/accounts/None`, a row no one meant."""
    *_, fid = paired
    refused(paired, lambda c: call(c, bad, fid), says="(is text|an id)")


@pytest.mark.parametrize("bad", [None, 5, b"abc", ["a"]], ids=repr)
def test_a_field_id_that_is_not_text_is_refused(paired, bad):
    _, _, aid, _, _ = paired
    if bad is not None:  # None: add_field makes the id
        refused(paired, lambda c: c.add_field(aid, "L", "v", field_id=bad), says="is text")
    refused(paired, lambda c: c.set_field(aid, bad, "v"), says="is text")
    refused(paired, lambda c: c.delete_field(aid, bad), says="is text")


@pytest.mark.parametrize("bad", [5, b"abc", ["a"], {"a": 1}, 1.5], ids=repr)
@pytest.mark.parametrize("which", ["url", "username", "label"])
def test_an_account_detail_that_is_not_text_is_refused(paired, which, bad):
    refused(paired, lambda c: c.create_account("Svc", **{which: bad}), says="is text")
    refused(paired, lambda c: c.save_account("Svc", **{which: bad}), says="is text")


def test_a_label_over_200_characters_is_refused(paired):
    """`agent_label: { type: string, maxLength: 200 }`."""
    _, _, aid, did, _ = paired
    long = "L" * 201
    refused(paired, lambda c: c.create_account("Svc", label=long), says="at most 200")
    refused(paired, lambda c: c.save_account("Svc", label=long), says="at most 200")
    refused(paired, lambda c: c.update_account(aid, label=long), says="at most 200")
    refused(paired, lambda c: c.update_decoy(did, label=long), says="at most 200")


@pytest.mark.parametrize(
    "change, says",
    [
        ({"status": "bogus"}, "active or inactive"),
        ({"status": b"active"}, "active or inactive"),
        ({"two_factor": "yes"}, "True or False"),
        ({"two_factor": 1}, "True or False"),
        ({"record": "Acme"}, "record is a dict"),
        ({"record": ["a"]}, "record is a dict"),
        ({"record": 5}, "record is a dict"),
    ],
    ids=repr,
)
def test_update_account_refuses_a_change_it_cannot_send(paired, change, says):
    _, _, aid, _, _ = paired
    refused(paired, lambda c: c.update_account(aid, **change), says=says)


@pytest.mark.parametrize(
    "options, says",
    [
        ({"reason": "r" * 201}, "at most 200"),  # "`reason` is plain text, at most 200 characters"
        ({"reason": 5}, "is text"),
        ({"reason": b"why"}, "is text"),
        ({"datatypes": ["bogus"]}, "datatypes are among"),
        ({"datatypes": [5]}, "datatypes are among"),
        ({"datatypes": 5}, "one kind per request"),
        ({"datatypes": "basic-auth"}, "one kind per request"),
        ({"datatypes": ["basic-auth", "totp"]}, "one kind per request"),
        ({"wait": -1}, "finite number of seconds"),
        ({"wait": float("nan")}, "finite number of seconds"),
        ({"wait": float("inf")}, "finite number of seconds"),
        ({"wait": "3"}, "finite number of seconds"),
        ({"wait": None}, "finite number of seconds"),
    ],
    ids=repr,
)
def test_unlock_refuses_what_the_spec_does_not_take(paired, options, says):
    """`datatypes` "enum: [basic-auth, custom-fields, totp, note, address, credit-card, passkey,
    email, phone, identity]"; a wait that never ends (NaN, infinity) would poll for ever."""
    _, _, aid, _, _ = paired
    refused(paired, lambda c: c.unlock(aid, **options), says=says)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "3", None], ids=repr)
def test_rename_decoy_refuses_a_wait_that_is_not_seconds_before_queueing(paired, bad):
    _, _, _, did, _ = paired
    refused(paired, lambda c: c.rename_decoy(did, name="n", wait=bad), says="finite number of seconds")


@pytest.mark.parametrize("bad", [None, 5, b"abc", "not-a-list", 1.5, {"a": 1}, [None], [5], [b"x"], []], ids=repr)
@pytest.mark.parametrize("call", ["burn_decoys", "pause_decoys"])
def test_a_batch_of_addresses_is_a_list_of_ids(paired, call, bad):
    refused(paired, lambda c: getattr(c, call)(bad), says="(list of ids|is text|at least one)")


@pytest.mark.parametrize("bad", [None, 5, "records", b"abc", {"name": "x"}, [5], ["a"], [None]], ids=repr)
def test_import_accounts_takes_a_list_of_records(paired, bad):
    refused(paired, lambda c: c.import_accounts(bad), says="(list of records|is a dict)")


@pytest.mark.parametrize("bad", [5, b"abc", ["a"]], ids=repr)
def test_the_address_list_filters_are_text(paired, bad):
    refused(paired, lambda c: c.decoys(search=bad), says="is text")
    refused(paired, lambda c: c.decoys(after=bad), says="is text")


@pytest.mark.parametrize("bad", [5, "yes", None], ids=repr)
def test_burn_account_decoy_replace_is_true_or_false(paired, bad):
    _, _, aid, _, _ = paired
    refused(paired, lambda c: c.burn_account_decoy(aid, replace=bad), says="True or False")


@pytest.mark.parametrize("bad", [5, b"abc", ["a"]], ids=repr)
def test_protect_takes_an_address_id_as_text(paired, bad):
    _, _, aid, _, _ = paired
    refused(paired, lambda c: c.protect(aid, bad), says="is text")


def test_the_calls_still_work_after_the_refusals(paired):
    """Nothing a refusal touched is lost: the account and its field read as before."""
    conn, _, aid, _, fid = paired
    frame = conn.accounts()
    assert aid in set(frame["id"])
    assert conn.set_field(aid, fid, "v2").id == fid


@pytest.mark.parametrize(
    "record",
    [{"name": b"Acme"}, {"name": "Acme", "tags": {"a", "b"}}, {"name": "Acme", "score": float("nan")}],
    ids=["bytes", "set", "nan"],
)
def test_a_record_that_is_not_json_is_refused_before_sending(paired, record):
    """It would fail in the sealing after the account was read (or, NaN, seal JSON no app parses)."""
    _, _, aid, _, _ = paired
    refused(paired, lambda c: c.update_account(aid, record=record), says="not JSON")
    refused(paired, lambda c: c.import_accounts([record]), says="not JSON")


@pytest.mark.parametrize("name", ["Acme\x00", "Acme\n", "\u202eemcA"], ids=["nul", "newline", "bidi override"])
def test_rename_decoy_refuses_a_name_the_owners_device_would_reject(paired, name):
    """ "`serviceName`: at most 200 characters, with no control or bidirectional-format characters"."""
    _, _, _, did, _ = paired
    refused(paired, lambda c: c.rename_decoy(did, name=name), says="control or bidirectional")
