"""No token in any traceback's locals, httpx's and httpcore's frames included. A request that fails
on a real socket leaves, in the frames of the library's exception, the request's header bytes
(`Authorization: Bearer …`) and the token form; the typed error a user sees carries no such frame,
own or chained, however it is shown: the standard library with every frame's locals, or IPython's
verbose traceback (`%xmode Verbose`). The standard: "Tokens, private keys and raw memory keys never
appear in a repr, a log, a traceback's locals or a notebook output"."""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from IPython.core.ultratb import VerboseTB

from decoy_lab.client.connection import Connection
from decoy_lab.errors import DecoyError, TransportError
from decoy_lab.transport.api import Api
from decoy_lab.transport.tokens import Tokens

from support.answers import AGENT, OWNER
from support.sockets import drip_head, refused_url, reset_mid_body, serving, silent, whole

ACCESS, REFRESH = "at-SOCKET-SECRET-4242", "rt-SOCKET-SECRET-4242"
FRESH = "at-NEW-SECRET-9898"  # in a token answer
FAULTS = {
    "connect refused": None,
    "read timeout": silent,
    "header drip": drip_head(0.05),
    "reset mid-body": reset_mid_body,
    "5xx until the retries run out": whole(500, {"code": "INTERNAL", "message": "boom"}),
}


def faulty(fault: Any) -> Any:
    """The grantees read answered soundly (so a save reaches its POST), every other call `fault`."""

    def answer(method: str, path: str, body: bytes) -> Any:
        if path == "/api/agent/context/memory-grantees":
            return whole(200, {"owner_public_key": OWNER.public_key_b64, "grantees": []})
        return fault

    return answer


def shown(err: BaseException) -> str:
    """The error as the standard library shows it with every frame's locals (the whole chain), and
    as IPython's verbose traceback does."""
    plain = "".join(traceback.TracebackException(type(err), err, err.__traceback__, capture_locals=True).format())
    verbose = VerboseTB(theme_name="nocolor", include_vars=True).text(type(err), err, err.__traceback__)
    return plain + verbose


def failing(url: str, call: str) -> DecoyError:
    conn = Connection(
        url,
        agent_key=AGENT,
        tokens=Tokens(ACCESS, REFRESH, "tok-1", access_version=1),
        timeout=0.4,
        retries=1,
        backoff=0,
        sleep=lambda s: None,
    )
    try:
        if call == "save":  # the access token in the Authorization header
            conn.save("Prefers tea.")
        else:  # the refresh token in the token form
            conn.session.api.refresh()
    except DecoyError as caught:
        return caught
    finally:
        conn.close()
    raise AssertionError("the call did not fail")


@pytest.mark.parametrize("call", ["save", "refresh"])
@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_a_failed_calls_traceback_holds_no_token_in_any_frames_locals(fault, call):
    """Every frame of the error and of its chain (`__cause__`, `__context__`) is shown with its
    locals: the tokens never appear, and what happened is still said."""
    if fault is None:
        err = failing(refused_url(), call)
    else:
        with serving(faulty(fault)) as url:
            err = failing(url, call)
    text = shown(err)
    assert "Secret(" in text or "Tokens(" in text, "the locals were captured"
    assert ACCESS not in text and REFRESH not in text
    assert str(err) in text, "what happened is said"


def test_what_the_library_said_is_kept_in_the_message():
    """Nothing a user needs is lost with the library's frames: the error's type and text stay."""
    err = failing(refused_url(), "refresh")
    assert "ConnectError" in str(err) and "refused" in str(err).lower()


def test_a_token_answer_cut_short_by_the_deadline_leaves_its_partial_body_in_no_frame():
    """A transport without sockets is checked between body chunks: the token answer that had begun
    to arrive (a new access token in it) when the deadline passed is in none of the error's locals."""

    def slow_token_answer(request: httpx.Request) -> httpx.Response:
        def body() -> Iterator[bytes]:
            yield f'{{"access_token": "{FRESH}", '.encode()
            time.sleep(0.3)
            yield b'"token_type": "Bearer"}'

        return httpx.Response(200, content=body())

    api = Api("http://decoy.invalid", transport=httpx.MockTransport(slow_token_answer), deadline=0.1)
    api.tokens = Tokens(ACCESS, REFRESH, "tok-1")
    with pytest.raises(TransportError, match="did not answer within 0.1 s") as caught:
        api.refresh()
    text = shown(caught.value)
    assert "Secret(" in text, "the locals were captured"
    assert FRESH not in text and ACCESS not in text and REFRESH not in text
