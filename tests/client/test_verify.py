"""Verify the result, and key setup not finished, through Connection against the sandbox.

"After saving, retain the returned memory ID and fetch that row through Decoy. Decrypt it and
confirm its text, categories and associations match the intended save"; "After a correction,
read the same ID and verify the new content"."""

from __future__ import annotations

import logging
import uuid

import pytest

from decoy_lab import sealing
from decoy_lab.client import Connection
from decoy_lab.crypto import AgentKey
from decoy_lab.errors import DecoyError
from decoy_lab.sandbox import Sandbox


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def connect(sb) -> Connection:
    return Connection.pair(
        sb.url,
        name="Verifier",
        permissions=["memory.save", "memory.read", "memory.edit"],
        profile=None,
        agent_key=AgentKey.generate(),
        client_id=f"verify-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        backoff=0,
    )


def test_a_save_and_an_edit_are_read_back_and_verified(sb):
    conn = connect(sb)
    mid = conn.save("Window seats on long flights.", categories=["travel"])
    v = conn.session.last_verify
    assert v.id == mid and v.ok and v.problems == [] and v.owner_view["readable"] is True
    conn.edit(mid, text="Aisle seats on long flights.")
    assert conn.session.last_verify.id == mid and conn.session.last_verify.ok


def test_the_client_warns_when_the_owners_app_would_not_open_the_row(sb, monkeypatch, caplog):
    """Decoy stores a row it cannot decrypt; the sandbox's owner's-eye check finds it, and the
    verify step says so (the save itself succeeded: the id is returned)."""
    conn = connect(sb)
    raw_key_wrap = lambda key, pk, trace=None: sealing.seal_envelope(key, pk, owner=True)  # noqa: E731
    monkeypatch.setattr(sealing, "wrap_to_owner", raw_key_wrap)
    with caplog.at_level(logging.WARNING, logger="decoy_lab.client"):
        mid = conn.save("A memory the owner cannot open.")
    v = conn.session.last_verify
    assert v.id == mid and not v.ok
    assert any("owner's app would not open it" in p for p in v.problems)
    assert "owner's app would not open it" in caplog.text
    assert next(e for e in sb.owner.app_view() if e["id"] == mid)["problem"] == "owner_wrap"


def test_key_setup_not_finished_refuses_to_save_with_the_specs_words(sb):
    """ "`owner_public_key` … is null until the owner finishes key setup in the app (complete
    that setup before saving)"."""
    conn = connect(sb)
    before = len(sb.owner.rows())
    sb.owner.set_key_setup(False)
    try:
        with pytest.raises(DecoyError, match="complete that setup before saving"):
            conn.save("Too early.")
        assert len(sb.owner.rows()) == before, "nothing was stored meanwhile"
    finally:
        sb.owner.finish_key_setup()
    assert conn.save("Now it saves.")
