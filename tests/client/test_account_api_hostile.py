"""The account family's calls meeting answers a broken or hostile server could give: each ends in a
DecoyError, or in a row reported unreadable with its reason — never a raw exception, never a
hang, never a write built on an answer that did not say what it was asked ("a hostile answer
ends in a `DecoyError`"). Real HTTP against the sandbox; the Meddler answers in its place.
`retries=0`: the planned answer is the only one read."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from decoy_lab.errors import DecoyError

from support.acctfamily_kit import sealed_to
from support.meddler import answer, scripted_pair

ACCOUNTS = "/api/agent/accounts"
DECOYS = "/api/agent/decoys"


def empty_200(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
    """A 200 with no body at all."""
    return httpx.Response(200, content=b"")


def changed(edit):
    """The server's real answer, changed by `edit` (its JSON in, JSON out)."""

    def step(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        real = inner.handle_request(request)
        real.read()
        body = edit(json.loads(real.content))
        return httpx.Response(real.status_code, content=json.dumps(body).encode())

    return step


@pytest.fixture(scope="module")
def paired(sb):
    conn, meddler = scripted_pair(sb, "hostile", permissions=["everything"], retries=0)
    made = conn.create_account("Acme", username="me@x.test")
    conn.add_field(made.account_id, "API key", "v1")
    yield conn, meddler, made.account_id, made.decoy_id
    conn.close()


def sent(meddler, method: str, path: str) -> int:
    return len(meddler.bodies(method, path))


# -- the account list -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "step", [empty_200, answer(200, {"accounts": "x"}), answer(200, [])], ids=["no body", "str", "list"]
)
def test_an_account_list_that_lists_nothing_readable_is_an_error_not_no_accounts(paired, step):
    conn, meddler, *_ = paired
    meddler.plan("GET", ACCOUNTS, step)
    with pytest.raises(DecoyError):
        conn.accounts()


def test_rows_of_the_list_that_are_not_accounts_are_left_out_and_the_rest_read(paired):
    conn, meddler, aid, _ = paired
    meddler.plan("GET", ACCOUNTS, changed(lambda b: {**b, "accounts": [1, None, "x", {"id": 5}, *b["accounts"]]}))
    assert list(conn.accounts()["id"]) == [aid]


def test_an_id_too_long_for_a_path_is_no_account(paired):
    """A 100 kB "id" would overflow the URL of every read of it (httpx's InvalidURL)."""
    conn, meddler, aid, _ = paired
    meddler.plan("GET", ACCOUNTS, changed(lambda b: {**b, "accounts": [{"id": "x" * 100_000}, *b["accounts"]]}))
    assert list(conn.accounts()["id"]) == [aid]


def test_a_row_with_garbage_members_is_read_with_what_it_says_why(paired):
    conn, meddler, aid, _ = paired

    def spoil(b):
        rows = [
            {**a, "rev": "abc", "fields_rev": "abc", "metadata_seal": "not base64!", "service_name": ["x"],
             "has_password": "yes", "decoy_id": 5}
            for a in b["accounts"]
        ]  # fmt: skip
        return {**b, "accounts": rows}

    meddler.plan("GET", ACCOUNTS, changed(spoil))
    row = conn.accounts().set_index("id").loc[aid]
    assert row["rev"] is None or str(row["rev"]) == "<NA>"
    assert "metadata_seal" in row["service_from"] or row["service"] == "Acme"


@pytest.mark.parametrize(
    "edit",
    [
        lambda b: {"fields": "x"},
        lambda b: {"fields": [{**f, "wrapped_key": "QUJD"} for f in b["fields"]]},  # 3 bytes, not an RSA wrap
        lambda b: {"fields": [{**f, "wrapped_key": 5, "kid": 7, "ciphertext": ["x"]} for f in b["fields"]]},
        lambda b: {**b, "preparing": 5, "failed": "x", "preparing_others": "x", "failed_others": [1]},
    ],
    ids=["fields str", "wrapped_key short", "members not text", "counts not counts"],
)
def test_fields_that_do_not_read_are_noted_on_the_row(paired, edit):
    conn, meddler, aid, _ = paired
    conn.account_book.fields_seen.clear()  # read the fields now, not as seen for this fields_rev
    meddler.plan("GET", f"{ACCOUNTS}/{aid}/fields", changed(edit))
    row = conn.accounts().set_index("id").loc[aid]
    assert row["fields_note"], "a field that did not read says so"


# -- a write is never built on an answer that did not say what it was asked -----------------------
@pytest.mark.parametrize(
    "step", [empty_200, answer(200, {"id": str(uuid.uuid4()), "rev": 1})], ids=["no body", "another row"]
)
def test_delete_account_sends_nothing_on_a_read_without_its_rev(paired, step):
    """`expected_rev` is what keeps a resend from deleting a version it never read."""
    conn, meddler, aid, _ = paired
    meddler.plan("GET", f"{ACCOUNTS}/{aid}", step)
    with pytest.raises(DecoyError):
        conn.delete_account(aid)
    assert sent(meddler, "DELETE", f"{ACCOUNTS}/{aid}") == 0


def test_update_account_sends_nothing_on_a_read_without_its_rev(paired):
    conn, meddler, aid, _ = paired
    meddler.plan("GET", f"{ACCOUNTS}/{aid}", empty_200)
    with pytest.raises(DecoyError):
        conn.update_account(aid, label="new")
    assert sent(meddler, "PATCH", f"{ACCOUNTS}/{aid}") == 0


def test_update_decoy_sends_nothing_on_a_read_without_its_rev(paired):
    conn, meddler, _, did = paired
    meddler.plan("GET", f"{DECOYS}/{did}", answer(200, {"id": did, "rev": "abc"}))
    with pytest.raises(DecoyError):
        conn.update_decoy(did, label="new")
    assert sent(meddler, "PATCH", f"{DECOYS}/{did}") == 0


def test_burn_account_decoy_sends_nothing_on_an_answer_about_another_account(paired):
    conn, meddler, aid, _ = paired
    meddler.plan("GET", f"{ACCOUNTS}/{aid}", answer(200, {"id": str(uuid.uuid4()), "decoy_id": str(uuid.uuid4())}))
    with pytest.raises(DecoyError):
        conn.burn_account_decoy(aid)
    assert sent(meddler, "POST", f"{ACCOUNTS}/{aid}/burn-decoy") == 0


@pytest.mark.parametrize("step", [empty_200, answer(200, {"wrapped_vault_key": 5})], ids=["no body", "not text"])
def test_import_sends_nothing_without_a_vault_key(paired, step):
    conn, meddler, *_ = paired
    conn.account_book.vault_key = None
    meddler.plan("GET", "/api/agent/vault-key", step)
    with pytest.raises(DecoyError):
        conn.import_accounts([{"name": "Imported"}])
    assert sent(meddler, "POST", f"{ACCOUNTS}/batch") == 0


# -- addresses and saved logins -------------------------------------------------------------------
def test_an_address_list_with_no_body_is_an_error(paired):
    conn, meddler, *_ = paired
    meddler.plan("GET", DECOYS, empty_200)
    with pytest.raises(DecoyError):
        conn.decoys()


def test_address_rows_without_an_id_are_left_out(paired):
    conn, meddler, _, did = paired
    meddler.plan("GET", DECOYS, changed(lambda b: {**b, "decoys": [1, None, {"id": 5}, *b["decoys"]]}))
    assert list(conn.decoys()["id"]) == [did]


def test_saved_logins_with_no_body_is_an_error(paired):
    conn, meddler, *_ = paired
    meddler.plan("GET", "/api/agent/sealed-secrets", empty_200)
    with pytest.raises(DecoyError):
        conn.saved_logins()


def test_a_saved_login_that_does_not_open_is_a_row_that_says_so(paired):
    conn, meddler, aid, _ = paired
    items = [1, None, {"kind": "account", "target_id": aid, "sealed_envelope": 5}]
    meddler.plan("GET", "/api/agent/sealed-secrets", answer(200, {"items": items}))
    frame = conn.saved_logins()
    assert list(frame["state"]) == ["unopenable"]


# -- unlock ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [[1], {"id": 5}, {"status": "pending"}],
    ids=["list", "id not text", "no id"],
)
def test_an_unlock_answer_without_a_request_is_an_error(paired, body):
    conn, meddler, aid, _ = paired
    meddler.plan("POST", "/api/agent/unlock", answer(200, body))
    with pytest.raises(DecoyError):
        conn.unlock(aid, datatypes=["basic-auth"])


@pytest.mark.parametrize(
    "poll",
    [
        {"status": "ready", "items": [{"sealed_envelope": 5}]},
        {"status": "ready", "items": [{"sealed_envelope": "QUJD"}]},
        {"status": "ready", "items": "x"},
    ],
    ids=["envelope a number", "envelope garbage", "items str"],
)
def test_a_ready_poll_that_cannot_be_opened_is_an_error(paired, poll):
    conn, meddler, aid, _ = paired
    rid = str(uuid.uuid4())
    meddler.plan("POST", "/api/agent/unlock", answer(200, {"id": rid, "status": "pending"}))
    meddler.plan("GET", f"/api/agent/unlock/{rid}", answer(200, poll))
    with pytest.raises(DecoyError):
        conn.unlock(aid, datatypes=["totp"])


@pytest.mark.parametrize("after", ["x", 1e308, -5], ids=repr)
def test_a_preparing_answer_with_a_strange_wait_ends_at_once(paired, after):
    """No hang: a retry_after that is not a usable number of seconds is not slept on."""
    conn, meddler, aid, _ = paired
    meddler.plan(
        "POST",
        "/api/agent/unlock",
        answer(200, {"available": False, "state": "preparing", "retry_after_seconds": after}),
    )
    got = conn.unlock(aid, datatypes=["note"], wait=1)
    assert got.status == "preparing"


# -- the answer to a write: an id that is no id proves nothing -----------------------------------
HUGE = "y" * 200_000


@pytest.mark.parametrize(
    "call, method, path, body",
    [
        (lambda c, a, d: c.create_account("Svc"), "POST", DECOYS, {"id": HUGE, "account_id": HUGE}),
        (lambda c, a, d: c.create_account("Svc"), "POST", DECOYS, {"id": 5, "account_id": None}),
        (lambda c, a, d: c.save_account("Svc"), "POST", ACCOUNTS, {"id": HUGE}),
        (lambda c, a, d: c.save_account("Svc"), "POST", ACCOUNTS, {"id": 5}),
        (lambda c, a, d: c.protect(a), "POST", "{A}/protect", {"decoy_id": HUGE}),
        (lambda c, a, d: c.update_account(a, label="x"), "PATCH", "{A}", {"id": HUGE}),
        (lambda c, a, d: c.rename_decoy(d, name="n"), "POST", "{D}/edits", {"edit_id": 5, "status": 5}),
    ],
    ids=["create huge", "create not text", "save huge", "save not text", "protect huge", "update huge", "rename"],
)
def test_a_write_answered_with_ids_that_are_no_ids_is_an_unknown_outcome(paired, call, method, path, body):
    """Kept as an id, 200 kB would overflow the URL of every later read of it (httpx's InvalidURL)."""
    conn, meddler, aid, did = paired
    meddler.plan(method, path.format(A=f"{ACCOUNTS}/{aid}", D=f"{DECOYS}/{did}"), answer(200, body))
    with pytest.raises(DecoyError):
        call(conn, aid, did)


@pytest.mark.parametrize("index", [999, -1, True, "0"], ids=repr)
def test_an_import_result_for_a_row_never_sent_is_not_taken(paired, index):
    """A result's `index` outside the chunk names no record sent: the row it left unreported says so."""
    conn, meddler, *_ = paired
    results = [{"index": index, "status": "created", "id": str(uuid.uuid4())}]
    meddler.plan("POST", f"{ACCOUNTS}/batch", answer(200, {"results": results}))
    done = conn.import_accounts([{"name": "Imported"}])
    assert done.created == {}
    assert done.failed == {0: "the answer did not report this row"}


def test_saved_logins_owed_that_are_not_lists_of_ids_are_left_out(paired):
    conn, meddler, aid, _ = paired
    meddler.plan("GET", "/api/agent/sealed-secrets", answer(200, {"items": [], "preparing": 5, "failed": [1, aid]}))
    frame = conn.saved_logins()
    assert list(frame["state"]) == ["failed"]


def test_an_unlock_whose_envelope_opens_to_odd_shapes_reads_what_it_can(paired):
    """The server knows this connection's public key: it can seal anything to it."""
    conn, meddler, aid, _ = paired
    rid = str(uuid.uuid4())
    odd = {"custom-fields": 5, "basic-auth": {"username": ["x"], "password": 7}, "record": {"username": 9}}
    envelope = sealed_to(conn.agent_key.public_key_b64, odd)
    meddler.plan("POST", "/api/agent/unlock", answer(200, {"id": rid, "status": "pending"}))
    meddler.plan(
        "GET", f"/api/agent/unlock/{rid}", answer(200, {"status": "ready", "items": [{"sealed_envelope": envelope}]})
    )
    got = conn.unlock(aid, datatypes=["custom-fields"])
    assert got.status == "ready"
    assert (got.fields, got.password, got.username) == ({}, None, None)


@pytest.mark.parametrize(
    "body",
    [
        {"succeeded": [], "failed": 5},
        {"succeeded": [[1], {"a": 1}, 5], "failed": [{"id": ["x"]}, {"id": {"a": 1}}, 1]},
        {"succeeded": [str(uuid.uuid4())], "failed": [{"id": str(uuid.uuid4()), "error": "Not permitted"}]},
    ],
    ids=["failed a number", "ids not text", "ids never sent"],
)
@pytest.mark.parametrize("call, path", [("burn_decoys", "burn"), ("pause_decoys", "pause")])
def test_a_batch_answer_says_nothing_of_ids_never_sent(paired, call, path, body):
    """Only the ids sent have an outcome; the answer's odd entries are no outcome of any."""
    conn, meddler, _, did = paired
    meddler.plan("POST", f"{DECOYS}/batch/{path}", answer(200, body))
    got = getattr(conn, call)([did])
    assert list(got) == [did]
