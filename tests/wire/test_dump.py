"""`open_blob` and `decoy-lab dump`: any pasted blob is annotated, and opened when a key fits."""

import re
import subprocess
import sys

import pytest

from decoy_lab.errors import WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.dump import open_blob
from decoy_lab.recipes.trace.wording import tone
from decoy_lab.wire import crypto
from decoy_lab.wire import layouts as wire


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


def test_without_a_key_the_trace_ends_on_the_layout_and_says_what_opens_it():
    """Issue 13: "`dump` without a key opens on the layout it found and says how sure it is"."""
    key = crypto.random_key()
    no_key = open_blob(wire.b64encode(sealing.seal_vault(key, b"x")))
    assert no_key.ok and [s.name for s in no_key.steps] == ["base64 decode", "parse vault"]
    assert no_key.steps[no_key.start].name == "parse vault"
    assert (
        no_key.verdict.startswith("looks like a VAULT blob: header 01 01") and "1 byte of ciphertext" in no_key.verdict
    )
    # Issue: it was headlined "open vault — ✓ all 2 steps passed", then said "Not opened". The
    # headline now says where it stopped, in the colour of an unfinished trace, never "all passed".
    assert no_key.stopped == "not opened: a VAULT blob opens with its 32-byte memory key (--key)"
    headline = no_key.to_dict()["headline"]
    assert headline == f"open vault — … 2 steps passed, {no_key.stopped}" and "all" not in headline
    assert no_key.to_text().splitlines()[0] == headline and "Not opened" not in no_key.to_text()
    assert tone(no_key) is None and 'color:#9a6700;margin-bottom:4px">open vault — …' in no_key.to_html()
    with_key = open_blob(wire.b64encode(sealing.seal_vault(key, b"x")), key=key)
    assert with_key.stopped == "" and tone(with_key) is True
    assert re.fullmatch(r"open vault — ✓ all \d+ steps passed", with_key.to_dict()["headline"])


def test_bad_base64_is_a_failing_step_not_an_exception():
    bad = open_blob("AQE-")
    assert not bad.ok and "url-safe" in bad.failed.reason


def test_an_envelope_is_identified_by_its_key_length(rsa_key):
    """ "looks like an agent envelope: key length 256 matches RSA-2048" """
    key = crypto.random_key()
    agent = open_blob(sealing.wrap_to_agent(key, rsa_key.public_key_b64))
    assert agent.verdict.startswith("looks like an agent envelope: key length 256 matches RSA-2048")
    assert agent.ok and agent.steps[agent.start].name == "parse agent envelope"
    owner = open_blob(sealing.wrap_to_owner(key, rsa_key.public_key_b64))
    assert owner.verdict.startswith("looks like an owner envelope: header 01 02, key length 256 matches RSA-2048")
    loose = open_blob(b"\x00\x28" + bytes(40) + bytes(12) + b"x" + bytes(16))  # key length 40
    assert "only loosely" in loose.verdict and "key length 40 is no RSA key size" in loose.verdict


def test_bytes_no_layout_fits_are_said_to_be_so_not_a_failed_envelope():
    """`%decoy dump aGVsbG8gd29ybGQ=` ("hello world") must not be reported as a failed agent envelope."""
    t = open_blob("aGVsbG8gd29ybGQ=")
    assert t.title == "dump 11 bytes" and "envelope" not in t.title
    assert [s.name for s in t.steps] == ["base64 decode", "identify the layout"]
    assert t.verdict.startswith("no known layout fits: ") and "'hello world'" in t.verdict
    assert "key length overruns" in t.verdict and "parse agent envelope" not in t.to_text()
    assert t.steps[t.start].data == b"hello world"  # the view opens on the bytes, with no layout


def test_cli_dump_prints_fields_and_exits_nonzero_when_opening_fails(rsa_key, tmp_path):
    key = crypto.random_key()
    blob = wire.b64encode(sealing.seal_vault(key, b"hello"))
    ok = subprocess.run(
        [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "dump", blob, "--key", wire.b64encode(key)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "nonce" in ok.stdout and "AES-256-GCM open" in ok.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "dump", blob, "--key", wire.b64encode(bytes(32))],
        capture_output=True,
        text=True,
    )
    assert wrong.returncode == 1 and "tag mismatch" in wrong.stdout
    garbage = subprocess.run(
        [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "dump", "AQE"], capture_output=True, text=True
    )
    assert garbage.returncode == 2 and "padded" in garbage.stderr
    hello = subprocess.run(
        [sys.executable, "-m", "decoy_lab.workbench.shell.cli", "dump", "aGVsbG8gd29ybGQ="],
        capture_output=True,
        text=True,
    )
    assert hello.returncode == 1 and hello.stdout.startswith("11 bytes: no known layout fits: ")
    assert "|hello world" in hello.stdout and "error" not in hello.stderr


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
        assert trace.verdict.startswith("looks like a damaged agent envelope: key length 256 matches RSA-2048, but")
        step = trace.failed
        assert step.name == "parse agent envelope"
        assert [f.name for f in step.fields] == ["key_length", "✗ wrapped_key"]
        assert "✗ wrapped_key" in trace.to_text() and "overruns" in step.reason
