"""`open_blob` and `decoy-lab dump`: any pasted blob is annotated, and opened when a key fits."""

import subprocess
import sys

import pytest

from decoy_lab import crypto, sealing, wire
from decoy_lab.dump import open_blob
from decoy_lab.errors import WireFormatError


@pytest.fixture(scope="module")
def rsa_key():
    return crypto.AgentKey.generate()


def test_vault_opens_with_its_key_and_names_the_failing_step_when_altered():
    key = crypto.random_key()
    blob = sealing.seal_json(key, {"v": 2, "row_id": "r"})
    assert open_blob(wire.b64encode(blob), key=key).ok
    flipped = bytearray(blob)
    flipped[-1] ^= 0x01  # last byte of the GCM tag
    trace = open_blob(bytes(flipped), key=key)
    assert not trace.ok
    assert trace.failed.name == "AES-256-GCM open"
    assert "tag" in trace.failed.reason


def test_each_envelope_kind_opens_with_the_matching_private_key(rsa_key):
    key = crypto.random_key()
    agent = open_blob(sealing.wrap_to_agent(key, rsa_key.public_key_b64), private_key=rsa_key)
    owner = open_blob(sealing.wrap_to_owner(key, rsa_key.public_key_b64), private_key=rsa_key)
    assert agent.ok and owner.ok
    assert agent.steps[-1].output == key and owner.steps[-1].output == key


def test_missing_key_and_bad_base64_are_failing_steps_not_exceptions():
    key = crypto.random_key()
    no_key = open_blob(sealing.seal_vault(key, b"x"))
    assert not no_key.ok and "--key" in no_key.failed.reason
    bad = open_blob("AQE-")
    assert not bad.ok and "url-safe" in bad.failed.reason


def test_cli_dump_prints_fields_and_exits_nonzero_when_opening_fails(rsa_key, tmp_path):
    key = crypto.random_key()
    blob = wire.b64encode(sealing.seal_vault(key, b"hello"))
    ok = subprocess.run(
        [sys.executable, "-m", "decoy_lab.cli", "dump", blob, "--key", wire.b64encode(key)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "nonce" in ok.stdout and "AES-256-GCM open" in ok.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "decoy_lab.cli", "dump", blob, "--key", wire.b64encode(bytes(32))],
        capture_output=True,
        text=True,
    )
    assert wrong.returncode == 1 and "tag mismatch" in wrong.stdout
    garbage = subprocess.run([sys.executable, "-m", "decoy_lab.cli", "dump", "AQE"], capture_output=True, text=True)
    assert garbage.returncode == 2 and "padded" in garbage.stderr


def test_a_failed_parse_keeps_the_partial_layout_with_the_failure_marked():
    """A truncated envelope: the trace's parse step shows the fields read before the failure and
    marks the bytes from the failing offset, instead of no layout at all."""
    key, agent = crypto.random_key(), crypto.AgentKey.generate()
    env = sealing.wrap_to_agent(key, agent.public_key_b64)
    cut = env[:100]  # key_length says 256, only 98 bytes follow
    with pytest.raises(WireFormatError) as err:
        wire.parse(cut, "agent_envelope")
    assert [f.name for f in err.value.fields] == ["key_length", "✗ wrapped_key"]
    assert err.value.fields[-1].offset == 2 and err.value.fields[-1].length == 98
    for trace in (open_blob(cut), open_blob(cut, private_key=agent)):
        step = trace.failed
        assert step.name == "parse agent envelope"
        assert [f.name for f in step.fields] == ["key_length", "✗ wrapped_key"]
        assert "✗ wrapped_key" in trace.to_text() and "overruns" in step.reason
