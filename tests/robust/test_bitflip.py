"""Bit-flip sweep: flip every single bit of a VAULT blob, an agent envelope and an owner
envelope, one at a time, and open each result. Every flip must fail with a typed error
(WireFormatError or CryptoError) and a Trace whose failing step is the one that owns the
flipped byte: a header bit fails the parse, a wrapped-key bit fails the RSA unwrap, and an
IV, ciphertext or tag bit fails the AES-GCM open. Every position is counted and asserted.

Spec: "Check `kid` against it, open `ciphertext` …" — AES-256-GCM authenticates the whole
blob and RSA-OAEP checks its padding, so no altered bit may yield a key or a plaintext.
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

PARSE = {"vault": "parse vault", "agent_envelope": "parse agent envelope", "owner_envelope": "parse owner envelope"}
RSA_STEP = "RSA-OAEP-SHA256 unwrap"
GCM_VAULT = "AES-256-GCM open"
GCM_PAYLOAD = "AES-256-GCM open payload"


@dataclass(frozen=True)
class Outcome:
    """What one flipped blob did when opened."""

    bit: int
    error: type | None
    step: str | None  # the Trace's failing step
    error_step: str | None  # CryptoError.step
    field: str | None  # WireFormatError.field
    reason: str | None


@pytest.fixture(scope="module")
def keys() -> tuple[AgentKey, AgentKey]:
    return AgentKey.generate(), AgentKey.generate()


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(out)


def _sweep(blob: bytes, open_fn) -> list[Outcome]:
    """Open every single-bit variant of `blob` (threads: the RSA work releases the GIL)."""

    def one(bit: int) -> Outcome:
        trace = Trace()
        try:
            open_fn(_flip(blob, bit), trace)
        except (WireFormatError, CryptoError) as exc:
            failed = trace.failed
            return Outcome(
                bit,
                type(exc),
                failed.name if failed else None,
                getattr(exc, "step", None),
                getattr(exc, "field", None),
                failed.reason if failed else None,
            )
        except Exception as exc:  # an untyped error is a finding: record it so the test names it
            return Outcome(bit, type(exc), None, None, None, repr(exc))
        return Outcome(bit, None, None, None, None, None)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, range(len(blob) * 8)))


def _field_at(layout: wire.Layout, byte: int) -> str:
    return next(f.name for f in layout.fields if f.offset <= byte < f.end)


def _check_common(outcomes: list[Outcome], blob: bytes) -> None:
    assert len(outcomes) == len(blob) * 8, "every bit position is tried exactly once"
    assert [o.bit for o in outcomes] == list(range(len(blob) * 8))
    untyped = [o for o in outcomes if o.error not in (WireFormatError, CryptoError)]
    assert not untyped, f"{len(untyped)} flips did not fail with a typed error, first: {untyped[:3]}"
    for o in outcomes:
        assert o.step, f"bit {o.bit}: the trace names no failing step"
        assert o.reason, f"bit {o.bit}: the failing step gives no reason"


def _expect_envelope(layout: wire.Layout, o: Outcome, kind: str) -> tuple[type, str]:
    """The error and step a flip of bit `o.bit` must produce in an envelope."""
    byte = o.bit // 8
    name = _field_at(layout, byte)
    total = len(layout.data)
    if name in ("version", "mode"):
        return WireFormatError, PARSE[kind]
    if name == "key_length":
        new_len = int.from_bytes(_flip(layout.data, o.bit)[layout["key_length"].offset :][:2], "big")
        fixed = layout["key_length"].end + wire.NONCE_LEN + wire.TAG_LEN
        if new_len == 0 or fixed + new_len > total:
            return WireFormatError, PARSE[kind]
        return CryptoError, RSA_STEP  # still frames, but RSA sees a ciphertext of the wrong length
    if name == "wrapped_key":
        return CryptoError, RSA_STEP
    return CryptoError, GCM_PAYLOAD


def test_vault_blob_every_bit(keys):
    key = os.urandom(32)
    plain = sealing.json_bytes(
        {
            "v": 2,
            "row_id": "r-1",
            "observation": {"entityName": "default_user", "content": "Prefers short answers."},
            "about": ["user"],
        }
    )
    blob = sealing.seal_vault(key, plain)
    assert sealing.open_vault(key, blob) == plain  # the unflipped blob opens
    layout = wire.parse(blob, "vault")

    outcomes = _sweep(blob, lambda b, t: sealing.open_vault(key, b, trace=t))
    _check_common(outcomes, blob)
    per_step = Counter(o.step for o in outcomes)
    for o in outcomes:
        name = _field_at(layout, o.bit // 8)
        if name in ("version", "mode"):
            assert (o.error, o.step, o.field) == (WireFormatError, PARSE["vault"], name), o
        else:
            assert (o.error, o.step, o.error_step) == (CryptoError, GCM_VAULT, GCM_VAULT), o
    assert per_step == {PARSE["vault"]: 16, GCM_VAULT: (len(blob) - 2) * 8}
    assert sum(per_step.values()) == len(blob) * 8


@pytest.mark.parametrize("owner", [False, True], ids=["agent_envelope", "owner_envelope"])
def test_envelope_every_bit(keys, owner):
    agent, owner_key = keys
    key = os.urandom(32)
    if owner:
        kind, recipient = "owner_envelope", owner_key
        blob = sealing.wrap_to_owner(key, owner_key.public_key_b64)
        opener = lambda b, t: sealing.unwrap_as_owner(b, owner_key, trace=t)  # noqa: E731
    else:
        kind, recipient = "agent_envelope", agent
        blob = sealing.wrap_to_agent(key, agent.public_key_b64)
        opener = lambda b, t: sealing.unwrap_as_agent(b, agent, trace=t)  # noqa: E731
    assert opener(blob, Trace()) == key  # the unflipped envelope opens
    layout = wire.parse(blob, kind)
    assert layout["wrapped_key"].length * 8 == recipient.key_size

    outcomes = _sweep(blob, opener)
    _check_common(outcomes, blob)
    expected = Counter()
    for o in outcomes:
        err, step = _expect_envelope(layout, o, kind)
        expected[step] += 1
        assert (o.error, o.step) == (err, step), o
        if err is CryptoError:
            assert o.error_step in (RSA_STEP, GCM_VAULT), o
            assert (o.error_step == RSA_STEP) == (step == RSA_STEP), o
        else:
            assert o.field in wire.field_names(kind), o
    got = Counter(o.step for o in outcomes)
    assert got == expected
    # Every wrapped_key bit is caught by RSA-OAEP itself, every payload bit by the GCM tag.
    assert got[RSA_STEP] >= layout["wrapped_key"].length * 8
    payload_bits = (layout["iv"].length + layout["ciphertext"].length + layout["tag"].length) * 8
    assert got[GCM_PAYLOAD] == payload_bits
    assert sum(got.values()) == len(blob) * 8
