"""Traces: every recipe records its steps; a failing one keeps the steps before it and names the
step that failed, with a reason a user can act on; secrets show only as fingerprints.

ARCHITECTURE.md: "A failing step keeps the steps before it (like a partial parse tree) and says
what went wrong in words a user can act on"."""

from __future__ import annotations

import pytest

from decoy_lab import memory as M
from decoy_lab import sealing, wire
from decoy_lab.crypto import random_key
from decoy_lab.errors import CryptoError, UnreadableRow, WireFormatError
from decoy_lab.trace import Trace


def names(t: Trace) -> list[tuple[str, bool | None]]:
    return [(s.name, s.ok) for s in t.steps]


def secret_forms(key: bytes) -> list[str]:
    """Ways a raw key could leak into a rendering."""
    text = wire.b64encode(key)
    return [key.hex(), key[:12].hex(" "), text, text.encode().hex(), text.encode()[:12].hex(" ")]


# -- failing opens -------------------------------------------------------------------------------
def test_failing_vault_open_keeps_earlier_steps_and_names_the_failing_one():
    blob = wire.b64encode(sealing.seal_vault(random_key(), b"Prefers short answers."))
    t = Trace("open")
    with pytest.raises(CryptoError):
        sealing.open_vault(random_key(), blob, trace=t)
    assert names(t) == [("base64 decode", True), ("parse vault", True), ("AES-256-GCM open", False)]
    assert not t.ok and t.failed is t.steps[-1]
    assert "GCM tag mismatch" in t.failed.reason
    assert t.failed.fields and t.failed.data == wire.b64decode(blob)  # the failing check's exact input
    text = t.to_text()
    assert "✗ failed at step 3 of 3: AES-256-GCM open" in text
    assert " 1. ✓ base64 decode" in text and " 2. ✓ parse vault" in text and " 3. ✗ AES-256-GCM open" in text


def test_failing_parse_names_the_field_in_the_reason():
    t = Trace()
    with pytest.raises(WireFormatError):
        sealing.open_vault(random_key(), wire.b64encode(b"\x01\x01" + bytes(20)), trace=t)
    assert names(t) == [("base64 decode", True), ("parse vault", False)]
    assert "field 'tag'" in t.failed.reason or "field 'ciphertext'" in t.failed.reason


def test_bad_base64_fails_the_first_step():
    t = Trace()
    with pytest.raises(WireFormatError):
        sealing.open_vault(random_key(), "AQE-" + "A" * 40, trace=t)
    assert names(t) == [("base64 decode", False)]
    assert "url-safe" in t.failed.reason and "offset 3" in t.failed.reason


def test_unwrap_with_the_wrong_key_fails_at_rsa_after_parsing(agent, owner):
    env = sealing.wrap_to_agent(random_key(), owner.public_key_b64)
    t = Trace()
    with pytest.raises(CryptoError):
        sealing.unwrap_as_agent(wire.b64encode(env), agent, trace=t)
    assert names(t)[:2] == [("base64 decode", True), ("parse agent envelope", True)]
    assert t.failed.name == "RSA-OAEP-SHA256 unwrap" and t.failed is t.steps[-1]


def test_owner_wrap_of_raw_bytes_fails_the_plaintext_check_after_opening(owner):
    """… whose plaintext is the ASCII base64 text (44 characters) of the key, not the raw bytes."""
    key = random_key()
    env = sealing.seal_envelope(key, owner.public_key_b64, owner=True)
    t = Trace()
    with pytest.raises(CryptoError):
        sealing.unwrap_as_owner(env, owner, trace=t)
    assert [ok for _, ok in names(t)] == [True] * (len(t) - 1) + [False]
    assert t.failed.name.startswith("owner plaintext check")
    assert "raw" in t.failed.reason and "44" in t.failed.reason
    assert "RSA-OAEP-SHA256 unwrap" in [s.name for s in t.steps]


def test_memory_read_trace_names_the_kid_check(agent, owner):
    keys = M.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    row = M.new_memory_row(keys, "Prefers short answers.")
    served = {
        "id": row["id"],
        "kid": "0" * 16,
        "rev": 1,
        "ciphertext": row["ciphertext"],
        "wrapped_key": row["self_wrap"],
    }
    t = Trace()
    with pytest.raises(UnreadableRow):
        M.read_memory_row(served, agent, trace=t)
    assert t.failed is not None and t.failed.name == "kid check" and t.failed is t.steps[-1]
    assert all(s.ok for s in t.steps[:-1]) and len(t) >= 3


# -- passing traces and secrets ------------------------------------------------------------------
def test_successful_unwrap_trace_passes_every_step(agent):
    key = random_key()
    t = Trace("unwrap")
    assert sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), agent, trace=t) == key
    assert t.ok and t.failed is None and all(s.ok for s in t.steps)
    assert any(s.secret_output for s in t.steps)
    assert "✓ all" in t.to_text()


@pytest.mark.parametrize("recipe", ["unwrap_as_agent", "unwrap_as_owner", "wrap_to_owner", "wrap_to_agent"])
def test_renderings_hide_raw_keys_unless_revealed(agent, owner, recipe):
    key = random_key()
    t = Trace(recipe)
    if recipe == "unwrap_as_agent":
        sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), agent, trace=t)
    elif recipe == "unwrap_as_owner":
        sealing.unwrap_as_owner(sealing.wrap_to_owner(key, owner.public_key_b64), owner, trace=t)
    elif recipe == "wrap_to_owner":
        sealing.wrap_to_owner(key, owner.public_key_b64, trace=t)
    else:
        sealing.wrap_to_agent(key, agent.public_key_b64, trace=t)
    for rendered in (t.to_text(), t._repr_html_(), str(t), repr(t)):
        for form in secret_forms(key):
            assert form not in rendered, (recipe, form)
    revealed = t.to_text(reveal=True) + t.to_html(reveal=True)
    assert any(form in revealed for form in secret_forms(key)), recipe


def test_trace_shows_fingerprints_for_secrets(agent):
    key = random_key()
    t = Trace()
    sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), agent, trace=t)
    assert wire.kid(key) in t.to_text()


def test_no_trace_records_nothing_and_changes_nothing():
    key = random_key()
    blob = sealing.seal_vault(key, b"x", trace=None)
    assert sealing.open_vault(key, blob, trace=None) == b"x"


def test_recipes_without_a_trace_keep_no_copy_of_the_key(agent):
    """Raw memory keys never linger where a user did not ask for them: with trace=None nothing is
    recorded, so no module-level object may still hold the key after the call."""
    import decoy_lab.trace as trace_module

    key = random_key()
    sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), agent)
    held = [
        name
        for name, v in vars(trace_module).items()
        if isinstance(v, trace_module.Step) and (v.output == key or v.data == key)
    ]
    assert held == []


# -- the Trace object itself ---------------------------------------------------------------------
def test_step_context_marks_an_exception_as_the_failed_step_and_reraises():
    t = Trace("manual")
    with t.step("first") as s:
        s.output = 1
    with pytest.raises(CryptoError), t.step("second"):
        raise CryptoError("bad tag", step="second")
    assert names(t) == [("first", True), ("second", False)]
    assert t.failed.reason == "bad tag"  # the step name is not repeated inside the reason
    assert not t.ok


def test_empty_trace_is_not_ok():
    t = Trace()
    assert not t.ok and t.failed is None and len(t) == 0
