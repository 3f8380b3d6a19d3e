"""No answer the server gives can crash the workbench, on any call: each endpoint in turn serves
arbitrary JSON (or arbitrary bytes) with a range of statuses while every other endpoint answers
soundly, and the call either returns or raises a typed DecoyError — never a TypeError,
AttributeError, KeyError, IndexError or ValueError from deep inside. What the command line
prints from the result is built too, since `decoy-lab status/memories/...` reads it next.

A write whose answer cannot be read has an unknown outcome: it is sent again with the same body,
exactly like a write whose answer was lost, and never reported as done or as refused.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, DecoyError, TransportError
from decoy_lab.recipes import sealing
from decoy_lab.transport.answers import is_unknown_outcome
from decoy_lab.transport.tokens import Tokens
from decoy_lab.wire import layouts as wire

from support.answers import AGENT, FAST, GOOD, MEMORIES, OWNER, SERVED_GOOD, json_values

FEW = settings(FAST, max_examples=int(os.environ.get("ROBUST_EXAMPLES", "100")))  # more for a deeper search
STATUSES = st.sampled_from([200, 201, 400, 401, 403, 404, 409, 410, 429, 500])

# -- a legacy space this agent holds the key of, with one sound row ---------------------------------
SPACE_KEY = bytes(range(32))
SPACE_ID, SPACE_ROW_ID = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
SPACE = {
    "id": SPACE_ID,
    "kind": "me",
    "account_id": None,
    "skid": wire.kid(SPACE_KEY),
    "wrapped_key": wire.b64encode(sealing.wrap_to_agent(SPACE_KEY, AGENT.public_key_b64)),
}
SPACE_ROW = {
    "id": SPACE_ROW_ID,
    "skid": SPACE["skid"],
    "rev": 1,
    "author_kind": "agent",
    "mine": True,
    "created_at": "2026-11-30T10:00:00.000Z",
    "updated_at": "2026-11-30T10:00:00.000Z",
    "ciphertext": wire.b64encode(
        sealing.seal_space_row(
            SPACE_KEY,
            {"observation": {"content": "a legacy row", "entityName": "default_user"}},
            space_id=SPACE_ID,
            row_id=SPACE_ROW_ID,
        )
    ),
}

TOKEN = {
    "access_token": "AT-2",
    "refresh_token": "RT-2",
    "token_type": "Bearer",
    "expires_in": 3600,
    "access_version": 1,
    "token_id": "tok-1",
}
POLICIES = {
    "access": {"version": 1, "summary": "Reads everything.", "memories": {"save": True, "read": {"all": True}}},
    "policies": [
        {
            "id": "p1",
            "expires_at": "2027-01-01T00:00:00Z",
            "permissions": [{"permissions": ["memory.read", "memory.save"], "named": True, "datatypes": ["food"]}],
        }
    ],
    "token": {"scopes": ["memory"], "key_registered": True},
}

# What a sound server answers, by (method, path): the answer every call gets unless it is the hostile one.
SOUND: dict[tuple[str, str], tuple[int, Any]] = {
    ("GET", "/api/agent/policies"): (200, POLICIES),
    ("GET", "/api/agent/context/memory-grantees"): (
        200,
        {
            "owner_public_key": OWNER.public_key_b64,
            "self": {"token_id": "tok-1", "selectors": {"all": True}},
            "grantees": [
                {
                    "token_id": "tok-2",
                    "public_key": OWNER.public_key_b64,
                    "connection_id": "c2",
                    "selectors": {"all": True},
                }
            ],
        },
    ),
    ("GET", MEMORIES): (
        200,
        {
            "memories": [SERVED_GOOD],
            "preparing": [str(uuid.UUID(int=3))],
            "failed": [],
            "preparing_others": 2,
            "failed_others": 1,
            "preparing_unknown": True,
            "failed_unknown": False,
            "retry_after_seconds": 30,
            "shared_complete": True,
            "shared_complete_at": "2026-11-30T10:00:00.000Z",
            "preparing_capped": True,
            "preparing_total": 3,
        },
    ),
    ("POST", MEMORIES): (201, {"created": [GOOD["id"]], "existing": [], "grantee_wraps": {}}),
    ("PUT", MEMORIES): (200, {"id": GOOD["id"], "rev": 2, "kid": GOOD["kid"]}),
    ("POST", f"{MEMORIES}/delete"): (200, {"deleted": [GOOD["id"]], "refused": [], "remediation": {}}),
    ("POST", "/api/agent/context/memory-wraps"): (200, {"added": 1}),
    ("GET", "/api/agent/context/spaces"): (200, {"spaces": [SPACE], "me_granted": True}),
    ("GET", "/api/agent/context/rows"): (200, {"space_id": SPACE_ID, "skid": SPACE["skid"], "rows": [SPACE_ROW]}),
    ("PUT", "/api/agent/context/rows"): (200, {"id": SPACE_ROW_ID, "rev": 2}),
    ("POST", "/api/agent/context/rows/delete"): (
        200,
        {"deleted": [SPACE_ROW_ID], "refused": [], "moving": [], "remediation": {}, "retry_after_seconds": 5},
    ),
    ("GET", "/api/agent/sync"): (
        200,
        {
            "state": "7",
            "hasMore": False,
            "changes": {"memories": {"created": [GOOD["id"]], "updated": [], "destroyed": []}},
        },
    ),
    ("GET", "/api/agent/sync/head"): (200, {"head": "7"}),
    ("POST", "/api/agent/grant-request"): (
        201,
        {
            "request_id": "req-1",
            "status": "pending",
            "permissions": ["memory.edit"],
            "renewal": False,
            "combined": False,
            "ends_at": None,
            "message": "asked",
        },
    ),
    ("GET", "/api/agent/grant-request"): (200, {"request_id": "req-1", "status": "approved"}),
    ("GET", "/.well-known/oauth-authorization-server"): (200, {"revocation_endpoint": "/oauth/revoke"}),
    ("POST", "/oauth/revoke"): (200, {}),
    ("POST", "/oauth/token"): (200, TOKEN),
    ("POST", "/oauth/par"): (201, {"request_uri": "urn:decoy:par:1", "expires_in": 600}),
    ("POST", "/oauth/device"): (
        200,
        {
            "device_code": "DEV",
            "user_code": "ABCD-EFGH",
            "expires_in": 600,
            "verification_uri": "https://sb/connect",
            "interval": 5,
            "verification_uri_complete": "https://sb/connect?code=ABCD-EFGH",
        },
    ),
}


def like(sound: Any) -> st.SearchStrategy:
    """Values shaped like `sound` — members kept, dropped or swapped, at any depth — or any JSON."""
    if isinstance(sound, dict) and sound:
        return st.one_of(json_values, st.fixed_dictionaries({}, optional={k: like(v) for k, v in sound.items()}))
    if isinstance(sound, list) and sound:
        return st.one_of(json_values, st.lists(st.one_of(*(like(v) for v in sound)), max_size=3))
    return st.one_of(st.just(sound), json_values)


def answers(route: tuple[str, str]) -> st.SearchStrategy:
    """A hostile answer for `route`: (status, body bytes), JSON shaped like the sound answer or raw bytes."""
    as_json = st.builds(lambda v: json.dumps(v).encode(), like(SOUND[route][1]))
    return st.tuples(st.one_of(st.just(200), STATUSES), st.one_of(as_json, as_json, st.binary(max_size=80)))


class Server:
    """Every route answers soundly but `hostile`, which serves the given status and bytes
    (`times` times, then soundly again; None: always)."""

    def __init__(
        self,
        hostile: tuple[str, str] | None = None,
        status: int = 200,
        body: bytes = b"",
        times: int | None = None,
        first: dict | None = None,
    ):
        self.hostile, self.status, self.body, self.times = hostile, status, body, times
        self.first = dict(first or {})  # route -> (status, JSON) answered once, before anything else
        self.sent: list[tuple[str, str, bytes]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        route = (request.method, request.url.path)
        self.sent.append((*route, request.content))
        if route in self.first:
            status, body = self.first.pop(route)
            return httpx.Response(status, json=body)
        if route == self.hostile and (self.times is None or self.times > 0):
            self.times = None if self.times is None else self.times - 1
            return httpx.Response(self.status, content=self.body, headers={"content-type": "application/json"})
        status, body = SOUND.get(route, (404, {"code": "NOT_FOUND"}))
        if route == ("POST", MEMORIES):  # a sound save answers for every row sent
            body = {**body, "created": [r.get("id") for r in json.loads(request.content).get("rows", [])]}
        return httpx.Response(status, json=body)


def connect(server: Server, **kw: Any) -> Connection:
    tokens = Tokens(access_token="AT-1", refresh_token="RT-1", token_id="tok-1", access_version=1)
    return Connection(
        "http://decoy.invalid",
        agent_key=AGENT,
        tokens=tokens,
        profile=None,
        transport=httpx.MockTransport(server),
        retries=1,
        backoff=0.0,
        sleep=lambda s: None,
        **kw,
    )


def returns_or_typed_error(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except DecoyError as exc:
        return exc


def check(route: tuple[str, str], answer: tuple[int, bytes], call: Callable[[Connection], Any], **server: Any) -> Any:
    """Serve `answer` on `route` and run `call`: its result, or the DecoyError it raised."""
    status, body = answer
    conn = connect(Server(route, status, body, **server))
    return returns_or_typed_error(lambda: call(conn))


GRANTEES = ("GET", "/api/agent/context/memory-grantees")
POLICY_ROUTE = ("GET", "/api/agent/policies")
SPACES = ("GET", "/api/agent/context/spaces")
ROWS = ("GET", "/api/agent/context/rows")
SYNC, HEAD = ("GET", "/api/agent/sync"), ("GET", "/api/agent/sync/head")
ASK, ASKED = ("POST", "/api/agent/grant-request"), ("GET", "/api/agent/grant-request")
SAVE, EDIT, DELETE = ("POST", MEMORIES), ("PUT", MEMORIES), ("POST", f"{MEMORIES}/delete")
WRAPS = ("POST", "/api/agent/context/memory-wraps")
ROW_EDIT, ROW_DELETE = ("PUT", "/api/agent/context/rows"), ("POST", "/api/agent/context/rows/delete")
TOKEN_ROUTE, METADATA, REVOKE = (
    ("POST", "/oauth/token"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("POST", "/oauth/revoke"),
)
PAR, DEVICE = ("POST", "/oauth/par"), ("POST", "/oauth/device")


# -- reads ------------------------------------------------------------------------------------------
def shown_access(conn: Connection) -> Any:
    acc = conn.access()
    return (
        acc.summary,
        str(acc),
        repr(acc),
        acc._repr_html_(),
        acc.can_save,
        acc.reaches("read"),
        acc.scopes,
        acc.key_registered,
        sorted(acc.names),
    )


def shown_vault(conn: Connection) -> Any:
    vault = conn.load()
    return str(vault), vault.rows, vault.memories, vault.topics, vault._repr_html_()


@FEW
@given(answers(POLICY_ROUTE))
def test_any_policies_answer_is_read_and_shown_or_raises_a_typed_error(answer):
    """`access()` and everything `decoy-lab status/access` prints from it survive any policies answer."""
    check(POLICY_ROUTE, answer, shown_access)


@FEW
@given(answers(GRANTEES))
def test_any_memory_grantees_answer_saves_or_raises_a_typed_error(answer):
    """`save` seals to whoever memory-grantees names: any answer there ends in an id or a typed error."""
    check(GRANTEES, answer, lambda conn: (repr(conn.keys()), conn.save("a memory", categories=["food"])))


@FEW
@given(answers(("GET", MEMORIES)))
def test_any_memories_answer_loads_and_is_shown_or_raises_a_typed_error(answer):
    """What `decoy-lab memories/rows` prints after a load — the waiting notes included — survives
    any memories answer (test_robust_answers covers the rows themselves)."""
    check(("GET", MEMORIES), answer, shown_vault)


@FEW
@given(answers(SPACES))
def test_any_spaces_answer_loads_or_raises_a_typed_error(answer):
    """A hostile spaces listing beside a sound memories answer still loads (or fails typed)."""
    check(SPACES, answer, shown_vault)


@FEW
@given(answers(ROWS))
def test_any_space_rows_answer_loads_or_raises_a_typed_error(answer):
    """A hostile rows answer for a sound space still loads (or fails typed)."""
    check(ROWS, answer, shown_vault)


@FEW
@given(answers(SYNC))
def test_any_sync_answer_syncs_or_raises_a_typed_error(answer):
    """Following the cursor survives any sync answer."""

    def sync(conn: Connection) -> Any:
        conn.cursor = "1"
        return str(conn.sync())

    check(SYNC, answer, sync)


@FEW
@given(answers(HEAD))
def test_any_sync_head_answer_anchors_or_raises_a_typed_error(answer):
    """The first sync anchors at sync/head: any answer there ends in a result or a typed error."""
    check(HEAD, answer, lambda conn: str(conn.sync()))


@FEW
@given(answers(ASK))
def test_any_grant_request_answer_is_a_request_or_a_typed_error(answer):
    """Asking for more access survives any grant-request answer, and the ask prints."""
    check(ASK, answer, lambda conn: str(conn.request_access(["memory.edit", "memory.save"], reason="to fix typos")))


@FEW
@given(answers(ASKED))
def test_any_grant_request_status_answer_is_waited_on_or_raises_a_typed_error(answer):
    """Waiting on an ask survives any status answer."""

    def wait(conn: Connection) -> Any:
        req = conn.request_access(["memory.edit"], reason="to fix typos")
        clock = iter(range(0, 10**6, 3))
        return str(req.wait(10, 3, sleep=lambda s: None, clock=lambda: next(clock)))

    check(ASKED, answer, wait)


# -- writes -----------------------------------------------------------------------------------------
@FEW
@given(answers(SAVE))
def test_any_save_answer_ends_in_an_id_or_a_typed_error(answer):
    """A save whose answer is anything ends in the new id or a typed error."""
    check(SAVE, answer, lambda conn: conn.save("a memory", topic="Lisbon trip"))


@FEW
@given(answers(EDIT))
def test_any_edit_answer_is_an_object_or_a_typed_error(answer):
    """An edit whose answer is anything returns an object (`decoy-lab edit` prints its id and rev)."""

    def edit(conn: Connection) -> Any:
        ans = conn.edit(GOOD["id"], text="new text")
        return f"edited {ans.get('id')}" + (f" (rev {ans['rev']})" if ans.get("rev") is not None else "")

    check(EDIT, answer, edit)


def shown_delete(conn: Connection, ids: list[str]) -> Any:
    res = conn.delete(ids)
    return [f"{rid} {res.why.get(rid)}" for rid in [*res.deleted, *res.refused]], json.dumps(res.remediation)


@FEW
@given(answers(DELETE))
def test_any_delete_answer_is_a_result_or_a_typed_error(answer):
    """Deleting memories survives any delete answer, and the result prints."""
    check(DELETE, answer, lambda conn: shown_delete(conn, [GOOD["id"]]))


@FEW
@given(answers(ROW_DELETE))
def test_any_rows_delete_answer_is_a_result_or_a_typed_error(answer):
    """Deleting legacy space rows survives any rows/delete answer."""
    check(ROW_DELETE, answer, lambda conn: shown_delete(conn, [SPACE_ROW_ID]))


@FEW
@given(answers(ROW_EDIT))
def test_any_space_row_edit_answer_is_an_object_or_a_typed_error(answer):
    """Editing a legacy space row survives any answer to its PUT."""
    check(ROW_EDIT, answer, lambda conn: conn.edit(SPACE_ROW_ID, text="new text"))


@FEW
@given(answers(WRAPS))
def test_any_memory_wraps_answer_is_a_count_or_a_typed_error(answer):
    """Sharing a memory's key survives any memory-wraps answer."""
    check(WRAPS, answer, lambda conn: conn.share(GOOD["id"]))


# -- tokens, pairing, revocation --------------------------------------------------------------------
EXPIRED = (401, {"code": "TOKEN_EXPIRED", "recovery": "refresh"})


@FEW
@given(answers(TOKEN_ROUTE))
def test_any_token_refresh_answer_refreshes_or_raises_a_typed_error(answer):
    """A 401 that asks for a refresh meets any token answer: the call goes on or fails typed."""
    check(TOKEN_ROUTE, answer, shown_access, first={POLICY_ROUTE: EXPIRED})


def pair(server: Server) -> Any:
    clock = [0.0]

    def wait(seconds: float) -> None:  # time passes while waiting, even when a hostile interval is 0
        clock[0] += max(seconds, 1.0)

    handle = Connection.start_pairing(
        "http://decoy.invalid",
        name="robust",
        transport=httpx.MockTransport(server),
        profile=None,
        agent_key=AGENT,
        wait=wait,
        clock=lambda: clock[0],
        timeout=60,
        retries=1,
    )
    return returns_or_typed_error(lambda: handle.result(20))


@FEW
@given(st.sampled_from([PAR, DEVICE, TOKEN_ROUTE]).flatmap(lambda r: st.tuples(st.just(r), answers(r))))
def test_any_pairing_answer_pairs_or_raises_a_typed_error(hostile):
    """Pairing survives any PAR, device or token answer: a Connection, or a typed error."""
    route, (status, body) = hostile
    out = pair(Server(route, status, body))
    if isinstance(out, Connection):
        out.close()


@FEW
@given(st.sampled_from([METADATA, REVOKE]).flatmap(lambda r: st.tuples(st.just(r), answers(r))))
def test_any_metadata_or_revoke_answer_unpairs_or_raises_a_typed_error(hostile):
    """Ending the connection survives any metadata or revocation answer."""
    route, answer = hostile
    check(route, answer, lambda conn: conn.unpair())


# -- the crashes found, kept as examples ------------------------------------------------------------
@pytest.mark.parametrize(
    "route, body, call, member",
    [
        (POLICY_ROUTE, [], shown_access, "not an object"),
        (POLICY_ROUTE, {"policies": True}, shown_access, "policies"),
        (POLICY_ROUTE, {"token": {"scopes": True}}, shown_access, "scopes"),
        (
            POLICY_ROUTE,
            {"policies": [{"permissions": [{"permissions": [["memory.read"]]}]}]},
            shown_access,
            "permissions",
        ),
        (GRANTEES, {"grantees": 5}, lambda conn: conn.save("a memory"), "grantees"),
        (SPACES, [], shown_vault, "not an object"),
        (ROWS, {"rows": {"id": "x"}}, shown_vault, "rows"),
        (HEAD, {"head": []}, lambda conn: conn.sync(), "head"),
        (ASK, {"permissions": True}, lambda conn: conn.request_access("memory.edit", reason="typos"), "permissions"),
        (DELETE, {"refused": [["x"]]}, lambda conn: conn.delete([GOOD["id"]]), "refused"),
        (
            ROW_DELETE,
            {"moving": [SPACE_ROW_ID], "retry_after_seconds": []},
            lambda conn: conn.delete([SPACE_ROW_ID]),
            "retry_after_seconds",
        ),
        (WRAPS, {"added": "1"}, lambda conn: conn.share(GOOD["id"]), "added"),
        (EDIT, [], lambda conn: conn.edit(GOOD["id"], text="new text"), "not an object"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_transport_error_naming_the_member(route, body, call, member):
    """Each of these once ended in a TypeError or AttributeError; now the error says which answer and
    which member is wrong, and that the outcome is unknown (so it is asked, or sent, again)."""
    out = check(route, (200, json.dumps(body).encode()), call)
    assert isinstance(out, TransportError) and route[1] in str(out) and member in str(out)


def test_a_sync_answer_that_has_more_without_moving_is_an_error_not_an_endless_loop():
    """`hasMore` with a state that does not move would be followed for ever; it is a TransportError."""
    conn = connect(Server(SYNC, 200, json.dumps({"state": "1", "hasMore": True}).encode()))
    conn.cursor = "1"
    with pytest.raises(TransportError, match="did not move"):
        conn.sync()


@pytest.mark.parametrize(
    "body",
    [
        {"code": {"nested": 1}},
        {"code": "HOLDERS_MISSING", "missing": 5},
        {"code": "REV_CONFLICT", "current_rev": "3", "message": ["x"]},
        {"code": "HOLDERS_MISSING", "missing": [{"token_id": "t", "public_key": "k", "via": 5}]},
    ],
)
def test_an_error_answer_of_the_wrong_shape_is_still_the_error_of_its_status(body):
    """Members of an error answer with the wrong type are left out of the typed error (they stay in
    `body`): a 409 stays a definite APIError, never a TypeError from building it."""
    out = check(EDIT, (409, json.dumps(body).encode()), lambda conn: conn.edit(GOOD["id"], text="new text"))
    assert isinstance(out, APIError) and out.status == 409 and out.body == body


def test_a_retry_after_too_large_for_a_number_waits_the_usual_backoff():
    """A 429 whose `retry_after_seconds` is infinite (JSON 1e400) cannot stall or crash the retry."""
    waits: list[float] = []
    conn = connect(Server(POLICY_ROUTE, 429, b'{"retry_after_seconds": 1e400}', times=1))
    conn.session.sleep = waits.append
    assert conn.access().policies and waits == [0.0]


@pytest.mark.parametrize(
    "route, body, status",
    [
        (PAR, [], 201),
        (DEVICE, {"device_code": "D", "interval": "5"}, 200),
        (TOKEN_ROUTE, {"error": {"x": 1}}, 400),
        (TOKEN_ROUTE, {"access_token": "AT", "expires_in": [1]}, 200),
    ],
)
def test_a_pairing_answer_of_the_wrong_shape_ends_the_pairing_with_a_typed_error(route, body, status):
    """A broken PAR, device or token answer ends the pairing with a DecoyError, never a TypeError."""
    assert isinstance(pair(Server(route, status, json.dumps(body).encode())), DecoyError)


# -- writes whose answer cannot be read ---------------------------------------------------------------
WRITES = [
    (SAVE, lambda conn: conn.save("a memory")),
    (EDIT, lambda conn: conn.edit(GOOD["id"], text="new text")),
    (DELETE, lambda conn: conn.delete([GOOD["id"]])),
    (ROW_EDIT, lambda conn: conn.edit(SPACE_ROW_ID, text="new text")),
    (ROW_DELETE, lambda conn: conn.delete([SPACE_ROW_ID])),
]
UNREADABLE = [b"<html>gateway</html>", b"[]", b'"done"', b'{"deleted": 1, "refused": {}, "rev": "2", "created": 3}']


def bodies_sent(server: Server, route: tuple[str, str]) -> list[bytes]:
    return [body for method, path, body in server.sent if (method, path) == route]


@pytest.mark.parametrize("route, write", WRITES)
@pytest.mark.parametrize("answer", UNREADABLE)
def test_a_write_whose_answer_cannot_be_read_is_sent_again_with_the_same_body(route, write, answer):
    """An unreadable success answer is a lost answer: the write is resent unchanged, and the sound
    answer to the resend is what the call reports."""
    server = Server(route, 200, answer, times=1)
    conn = connect(server)
    out = write(conn)
    sent = bodies_sent(server, route)
    assert not isinstance(out, DecoyError) and conn.resends >= 1
    assert len(sent) >= 2 and len(set(sent)) == 1, "the resend carries the very same body"


@pytest.mark.parametrize("route, write", WRITES)
def test_a_write_whose_answers_never_read_has_an_unknown_outcome(route, write):
    """When no answer can be read, the write ends in an unknown outcome — never success, never a
    definite refusal — after resending the same body `retries` times."""
    server = Server(route, 200, b'{"deleted": "all", "refused": "none", "rev": "2", "created": 1}')
    conn = connect(server)
    out = returns_or_typed_error(lambda: write(conn))
    sent = bodies_sent(server, route)
    assert isinstance(out, TransportError) and is_unknown_outcome(out) and not memory.is_definite_refusal(out)
    assert len(sent) == conn.retries + 1 and len(set(sent)) == 1


@FEW
@given(
    st.sampled_from([SPACES, ROWS]).flatmap(lambda r: st.tuples(st.just(r), answers(r))),
    st.sampled_from(["edit", "unseal"]),
)
def test_a_legacy_row_read_again_meets_any_answer_with_a_result_or_a_typed_error(hostile, step):
    """Editing or stepping through a loaded legacy row reads its space and rows again: whatever those
    answers are then, the call returns or fails typed."""
    route, (status, body) = hostile
    server = Server()
    conn = connect(server)
    conn.load()
    server.hostile, server.status, server.body = route, status, body
    if step == "edit":
        returns_or_typed_error(lambda: conn.edit(SPACE_ROW_ID, text="new text"))
    else:
        returns_or_typed_error(lambda: conn.unseal(SPACE_ROW_ID).to_text())


def test_an_id_the_delete_answer_leaves_out_is_settled_by_reading_again():
    """ "Missing or ineligible ids are refused": every id is answered for. An answer that names an id
    neither deleted nor refused is settled by reading what is served now; one still served is
    reported as not deleted, saying why — never dropped from the result."""
    out = check(
        DELETE, (200, json.dumps({"deleted": [], "refused": []}).encode()), lambda conn: conn.delete([GOOD["id"]])
    )
    assert not isinstance(out, DecoyError)
    assert out.deleted == [] and out.refused == [GOOD["id"]]
    assert "neither deleted nor refused" in out.why[GOOD["id"]]


@pytest.mark.parametrize(
    "body",
    [
        {"code": {"a": 1}},
        {"error": ["x"], "message": 5},
        {"code": "REV_CONFLICT", "current_rev": "3"},
        {"code": "HOLDERS_MISSING", "missing": 5},
        {"retry_after_seconds": "soon"},
        [1, 2],
        "text",
        None,
    ],
)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 429, 503])
def test_error_from_response_reads_any_body(status, body):
    """The one mapping from an error answer to a typed error takes any body as it is: wrong-typed
    members are left out of the typed fields and kept in `body`."""
    from decoy_lab.errors import error_from_response

    err = error_from_response(status, body)
    assert isinstance(err, APIError) and err.status == status
    assert err.code is None or isinstance(err.code, str)
    str(err), repr(err)
