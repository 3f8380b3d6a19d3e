"""export.py: no served text ever becomes code in an exported script.

Issue 24 (finding 2): a served `kid` went into the script as `{kid!r}` inside an f-string, so a
kid such as `x" + str(__import__("os").system(...)) + "` ran a command when the user ran the
exported script — and a failing kid check is exactly the trace a user exports. Now the script's
code is fixed text, the same for every trace, and every value it reads is in one data block
(JSON, as base64). Each trace below carries hostile text in every served field the export
reads (a row's id and kid, a space row's space and row ids, the trace's title); its script runs
in a subprocess, writes no marker file, and prints exactly the recipe's steps.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import DecoyError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.dump import open_blob
from decoy_lab.recipes.export import script_code
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

# {m}: the marker file a payload that ran as code would write
PAYLOADS = [
    'x" + str(__import__("os").system("echo pwned > {m}")) + "',
    "x' + str(__import__('os').system('echo pwned > {m}')) + '",
    '\\" + str(open("{m}", "w").write("pwned")) + "\\',
    '"""\n__import__("os").system("echo pwned > {m}")\n"""',
    "'''\n__import__('os').system('echo pwned > {m}')\n'''",
    '{{__import__("os").system("echo pwned > {m}")}} {{kid}} {{}} {{0}}',
    "\n__import__('os').system('echo pwned > {m}')\n#",
    "\\\n__import__('os').system('echo pwned > {m}')  # \\n \\x00 \"\" '' \r\u2028",
    '@DATA@\n"))\n__import__("os").system("echo pwned > {m}")\n((("',
]


def run(script: str, tmp_path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-"],
        input=script.encode("utf-8"),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def assert_only_the_recipe_ran(t: Trace, script: str, tmp_path, marker, env=None) -> str:
    top, bottom = script_code()
    assert script.startswith(top) and script.endswith(bottom), "the code part is the fixed text"
    middle = script[len(top) : len(script) - len(bottom)]
    assert re.fullmatch(r'(    "[A-Za-z0-9+/=]{1,76}"\n)+', middle), "the data block is base64 in quotes, nothing else"
    done = run(script, tmp_path, env)
    out = done.stdout.decode("utf-8")
    assert not marker.exists(), "served text ran as code"
    assert done.returncode == (0 if t.ok else 1), done.stderr.decode()
    lines = out.split("\n")
    steps = next((lines[:i] for i, line in enumerate(lines) if line.startswith("result:")), lines[:-1])
    want = [(s.status, s.name) for s in t.steps if s.name != "base64 decode"]
    assert len(steps) == len(want) and all(line.startswith(f"{m} {n}") for line, (m, n) in zip(steps, want)), out
    assert (len(steps) < len(lines) - 1) == t.ok, "a result follows the steps exactly when every step passed"
    return out


@pytest.fixture(params=range(len(PAYLOADS)), ids=[f"payload{i}" for i in range(len(PAYLOADS))])
def hostile(request, tmp_path):
    marker = tmp_path / "ran"
    return PAYLOADS[request.param].replace("{m}", str(marker)), marker


def test_a_hostile_kid_or_row_id_stays_data_in_the_exported_read(hostile, agent, owner, tmp_path):
    text, marker = hostile
    keys = M.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    row = M.new_memory_row(keys, "Prefers window seats.")
    pem = tmp_path / "agent.pem"
    pem.write_text(agent.to_pem())
    good = {"id": row["id"], "kid": row["kid"], "ciphertext": row["ciphertext"], "wrapped_key": row["self_wrap"]}
    for served, fails_at in (({**good, "kid": text}, "kid check"), ({**good, "id": text}, "bind check")):
        t = Trace(f"unseal {text}")
        with pytest.raises(DecoyError):
            M.read_memory_row(served, agent, trace=t)
        assert t.failed.name.startswith(fails_at)
        for reveal, env in ((False, {"DECOY_PRIVATE_KEY": str(pem)}), (True, {})):
            out = assert_only_the_recipe_ran(t, t.to_python(reveal=reveal), tmp_path, marker, env)
            if fails_at == "kid check":
                assert f"the row says {text!r}" in out, "the served kid is printed as data, quoted"


def test_a_hostile_space_or_row_id_stays_data_in_the_exported_space_row(hostile, tmp_path):
    text, marker = hostile
    key = random_key()
    for space_id, row_id in ((text, "r1"), ("s1", text), (text, text)):
        t = Trace(text)
        blob = sealing.seal_json(key, {"space_id": "s1", "row_id": "r1", "v": text})
        with pytest.raises(DecoyError):
            sealing.open_space_row(blob, key, space_id=space_id, row_id=row_id, trace=t)
        assert_only_the_recipe_ran(t, t.to_python(reveal=True), tmp_path, marker)
    t = Trace(text)  # bound as served: it passes, and the plaintext (hostile too) is printed as data
    blob = sealing.seal_json(key, {"space_id": text, "row_id": text})
    sealing.open_space_row(blob, key, space_id=text, row_id=text, trace=t)
    out = assert_only_the_recipe_ran(t, t.to_python(reveal=True), tmp_path, marker)
    assert json.loads(out.split("\nresult: ", 1)[1]) == {"space_id": text, "row_id": text}


def test_a_hostile_title_stays_data_in_exported_vault_envelope_and_dump_traces(hostile, agent, owner, tmp_path):
    text, marker = hostile
    key = random_key()
    env = {"DECOY_KEY": wire.b64encode(key)}
    blob = sealing.seal_vault(key, text.encode())
    for t in (open_blob(blob, key=key), open_blob(blob[:-1] + bytes([blob[-1] ^ 1]), key=key), open_blob(blob)):
        t.title = text  # e.g. "unseal <the id as served>"
        out = assert_only_the_recipe_ran(t, t.to_python(), tmp_path, marker, env)
        assert text not in out or t.source.recipe == "open_vault", "only the opened plaintext is printed"
    wrap = Trace(text)
    sealing.unwrap_as_owner(sealing.wrap_to_owner(key, owner.public_key_b64), owner, trace=wrap)
    assert_only_the_recipe_ran(wrap, wrap.to_python(reveal=True), tmp_path, marker)
    env_trace = Trace(text)
    sealing.open_envelope(sealing.wrap_to_agent(key, agent.public_key_b64), agent, owner=False, trace=env_trace)
    assert_only_the_recipe_ran(env_trace, env_trace.to_python(reveal=True), tmp_path, marker)
    seal = Trace(text)  # a seal is exported as JSON only, whatever its title
    sealing.wrap_to_owner(key, owner.public_key_b64, trace=seal)
    with pytest.raises(DecoyError, match="JSON"):
        seal.to_python()


def test_the_code_part_is_the_same_for_every_trace_and_the_data_is_one_json_block(agent, owner):
    import base64

    key = random_key()
    plain, hostile = open_blob(sealing.seal_vault(key, b"hi"), key=key), Trace(PAYLOADS[0])
    sealing.open_vault(key, sealing.seal_vault(key, PAYLOADS[3].encode()), trace=hostile)
    top, bottom = script_code()
    for t in (plain, hostile):
        script = t.to_python(reveal=True)
        middle = script[len(top) : len(script) - len(bottom)]
        data = json.loads(base64.b64decode("".join(re.findall(r'"([^"]*)"', middle))))
        assert data["recipe"] == "open_vault" and base64.b64decode(data["memory_key"]) == key
        assert all(not isinstance(v, (dict, list)) for v in data.values()), "one level: every value at the top"
    assert json.loads(base64.b64decode("".join(re.findall(r'"([^"]*)"', middle))))["title"] == PAYLOADS[0]
    assert "@DATA@" not in top + bottom and "{" not in (top + bottom).split("DATA = json.loads(")[0].split('"""')[-1]
