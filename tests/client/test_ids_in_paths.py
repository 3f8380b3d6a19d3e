"""An id put into a request's path names nothing but itself, against the sandbox over real HTTP.

Ids reach paths from a user's typing (`decoy-lab account-delete ID`) and from a server's answers
(an account's `decoy_id`). An id `A/../B` once deleted account B: httpx resolves the dot segment
before sending, and a server decodes `%2F` back into a slash before routing, so quoting is not
enough. A slash, a control character or an id of dots alone is refused before anything is sent;
`?`, `#`, `%` and spaces are percent-encoded and stay in the one segment. (001 gives every path id
`format: uuid`.)
"""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.errors import MemoryModelError, NotFound
from decoy_lab.transport import routes

from support.meddler import scripted_pair
from support.shell_runs import run, shell_sandbox


@pytest.fixture(scope="module")
def paired(sb):
    conn, meddler = scripted_pair(sb, "Ids in paths", permissions=["everything"])
    first = conn.save_account("First Service", username="one@example.test")
    second = conn.save_account("Second Service", username="two@example.test")
    return conn, meddler, first, second


def listed(conn) -> set[str]:
    return {a["id"] for a in conn.session.get(routes.ACCOUNTS, accounts=list)["accounts"]}


@pytest.mark.parametrize("shape", ["{a}/../{b}", "{a}/fields/../../{b}", "..", ".", "", "{b}\x1b", "{a}\\..\\{b}"])
def test_an_id_that_would_reach_another_path_is_refused_before_sending(paired, shape):
    conn, meddler, first, second = paired
    before = len(meddler.seen)
    with pytest.raises(MemoryModelError, match="is not an id; nothing was sent|is not an id \\("):
        conn.delete_account(shape.format(a=first, b=second))
    assert len(meddler.seen) == before  # not one request
    assert {first, second} <= listed(conn)  # both still there


def test_query_and_fragment_characters_stay_in_the_one_segment(paired):
    conn, _, first, _ = paired
    for odd in (f"{first}?x=1", f"{first}#frag", f"{first} x", "100%"):
        with pytest.raises(NotFound):
            conn.session.get(routes.account(odd))
        # unquoted, `?x=1` would be a query and `#frag` dropped: account `first` itself, 200
    assert routes.account(first, "fields", "a?b#c") == f"/api/agent/accounts/{first}/fields/a%3Fb%23c"


def test_a_servers_decoy_id_that_would_reach_another_path_is_not_followed(sb, paired):
    """A hostile or broken answer: an account whose `decoy_id` climbs out of /decoys. No request
    goes to the path it names; with no name of its own known, the frame says why."""
    conn, meddler, _, second = paired
    conn.account_book.known.clear()  # as a new session: no record sealed here to name them

    def hostile(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        real = inner.handle_request(request)
        real.read()
        body = real.json()
        for a in body.get("accounts") or []:
            a.pop("metadata_seal", None)
            a["decoy_id"] = f"../accounts/{second}"
        return httpx.Response(200, json=body)

    meddler.plan("GET", routes.ACCOUNTS, hostile)
    before = len(meddler.seen)
    frame = conn.accounts()
    sent = [path for _, path, _ in meddler.seen[before:]]
    assert not any(path.startswith("/api/agent/decoys") or path.endswith(second) for path in sent), sent
    assert all("is not an id" in why for why in frame["service_from"] if why), list(frame["service_from"])


def test_the_shell_says_error_and_exits_2(tmp_path, monkeypatch):
    from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING

    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    monkeypatch.setenv(ENV_KEYRING, "0")
    with shell_sandbox(("--name", "CLI ids", "--permission", "everything")) as sandbox:
        code, out, err = run("account-save", "Kept Service")
        assert code == 0, err
        kept = out.strip()
        code, out, err = run("account-delete", f"{kept}/../{kept}")
        assert code == 2 and err.startswith("error: "), (code, err)
        assert "Traceback" not in err
        code, out, err = run("accounts", "--json")
        assert code == 0 and kept in out, err
    assert sandbox is not None
