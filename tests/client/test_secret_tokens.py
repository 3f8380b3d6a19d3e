"""Tokens are held as `Secret`s: a failing request's traceback, even with every frame's locals,
and the reprs of Tokens and Connection show fingerprints, never a token."""

from __future__ import annotations

import traceback

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import DecoyError
from decoy_lab.secret import Secret, secret_fingerprint
from decoy_lab.transport.api import Tokens
from decoy_lab.wire.crypto import AgentKey

ACCESS, REFRESH = "at-SECRET-7777", "rt-SECRET-7777"


def connection(handler) -> Connection:
    return Connection(
        "http://api",
        agent_key=AgentKey.generate(),
        tokens=Tokens(ACCESS, REFRESH, "tok", access_version=1),
        transport=httpx.MockTransport(handler),
        sleep=lambda s: None,
        retries=0,
    )


def refused(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, json={"code": "INTERNAL", "message": "boom"})


def dropped(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("refused", request=request)


def expired_then_boom(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/oauth/token":
        return httpx.Response(500, json={"code": "INTERNAL"})
    return httpx.Response(401, json={"code": "TOKEN_EXPIRED", "recovery": "refresh"})


@pytest.mark.parametrize("handler", [refused, dropped, expired_then_boom])
def test_a_failing_requests_traceback_with_its_locals_holds_no_token(handler):
    """Secrets stay secret: "tokens never sit in traceback frame locals as plain strings"."""
    conn = connection(handler)
    try:
        conn.access()
    except DecoyError as caught:
        text = "".join(traceback.TracebackException.from_exception(caught, capture_locals=True).format())
    assert "conn" in text and "Secret(" in text  # the locals were captured, the tokens masked
    assert ACCESS not in text and REFRESH not in text
    conn.close()


def test_reprs_show_only_fingerprints():
    tokens = Tokens(ACCESS, REFRESH, "tok")
    conn = connection(refused)
    for shown in (
        repr(tokens),
        str(tokens),
        repr(conn),
        str(conn),
        repr(tokens.access_token),
        str(tokens.access_token),
    ):
        assert ACCESS not in shown and REFRESH not in shown
    assert secret_fingerprint(ACCESS) in repr(tokens) and secret_fingerprint(REFRESH) in repr(tokens)
    assert tokens.access_token.reveal() == ACCESS and Secret(ACCESS) == tokens.access_token
    conn.close()


def test_a_profile_that_cannot_be_written_is_a_typed_error_whose_locals_hold_no_secret(tmp_path, monkeypatch):
    """A full disk while saving: a ProfileError saying why, and no frame of it (nor any error it
    came from) keeps the tokens or the private key in the clear."""
    import os

    from decoy_lab.errors import ProfileError
    from decoy_lab.store.profiles import ProfileStore

    store = ProfileStore(tmp_path / "cfg", use_keyring=False)
    conn = Connection(
        "http://api",
        agent_key=AgentKey.generate(),
        tokens=Tokens(ACCESS, REFRESH, "tok"),
        profile="full",
        store=store,
        transport=httpx.MockTransport(refused),
    )

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ProfileError, match="cannot save profile 'full'.*No space left on device") as caught:
        conn.save_profile()
    text = "".join(traceback.TracebackException.from_exception(caught.value, capture_locals=True).format())
    assert "profile" in text, "the locals were captured"
    pem_line = conn.agent_key.to_pem().splitlines()[3]  # made after the locals were read
    assert ACCESS not in text and REFRESH not in text and pem_line not in text
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert not list((tmp_path / "cfg" / "profiles").glob("*.tmp")), "no half-written file is left"
    conn.close()
