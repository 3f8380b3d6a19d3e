"""Traces: every recipe records its steps; a failing one keeps the steps before it and names the
step that failed, with a reason a user can act on; secrets show only as fingerprints.

ARCHITECTURE.md: "A failing step keeps the steps before it (like a partial parse tree) and says
what went wrong in words a user can act on"."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import CryptoError, DecoyError, UnreadableRow, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace, trace_html, trace_text, view
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.markup import parse_html

NONCE = bytes(range(0xA0, 0xAC))
TAG = bytes(range(0xF0, 0x100))


def vault_blob(ct_len: int) -> bytes:
    ct = bytes((i * 7 + 3) % 256 for i in range(ct_len))
    return wire.build("vault", nonce=NONCE, ciphertext=ct, tag=TAG)


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
    import decoy_lab.recipes.trace.record as trace_module

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


# -- text and HTML views ------------------------------------------------------------------------------------
def hand_trace() -> tuple[Trace, bytes, bytes]:
    key = bytes(range(32))
    blob = vault_blob(20)
    t = Trace("hand-made")
    t.add("parse vault", data=blob, fields=wire.parse(blob).fields, inputs={"bytes": len(blob)}, output="5 fields")
    t.add("unwrap", inputs={"wrapped": "x"}, output=key, secret_output=True)
    t.add("seal payload", data=key, secret_fields=frozenset({"payload"}), inputs={"payload bytes": 32})
    t.add("AES-256-GCM open", ok=False, reason="GCM tag mismatch: <altered>", inputs={"nonce": NONCE.hex()})
    return t, key, blob


def test_trace_text_lists_each_step_with_status_reason_inputs_output_and_dump():
    t, _key, _blob = hand_trace()
    text = trace_text(t)
    assert text.splitlines()[0] == "hand-made — ✗ failed at step 4 of 4: AES-256-GCM open"
    assert re.search(r"^\s*1\. ✓ parse vault$", text, re.M)
    assert re.search(r"^\s*4\. ✗ AES-256-GCM open$", text, re.M)
    assert "reason  GCM tag mismatch: <altered>" in text
    assert f"nonce: {NONCE.hex()}" in text
    assert "nonce[2:14]" in text  # the annotated dump of step 1


def test_trace_views_show_secrets_only_as_fingerprints_unless_revealed():
    t, key, _ = hand_trace()
    for render in (trace_text, trace_html):
        hidden = render(t)
        assert key.hex() not in hidden and key[:8].hex(" ") not in hidden, render.__name__
        assert wire.kid(key) in hidden
        assert key.hex() in render(t, reveal=True) or key[:16].hex(" ") in render(t, reveal=True)


def test_trace_html_marks_the_failing_step_and_opens_its_details():
    t, _key, blob = hand_trace()
    t.steps[-1].data = blob
    t.steps[-1].fields = wire.parse(blob).fields
    t.steps[-1].data = blob + b"!"  # a different dump, so it is shown, not referred to
    markup = trace_html(t)
    p = parse_html(markup)
    assert "script" not in {tag for tag, _ in p.tags}
    details = [attrs for tag, attrs in p.tags if tag == "details"]
    assert len(details) == 3 and [("open" in d) for d in details] == [False, False, True]
    text = "".join(p.text)
    assert "✗" in text and "GCM tag mismatch: <altered>" in text
    assert "<altered>" not in markup


def test_repeated_dump_is_referred_to_not_repeated():
    blob = vault_blob(20)
    t = Trace("two")
    fields = wire.parse(blob).fields
    t.add("a", data=blob, fields=fields)
    t.add("b", data=blob, fields=fields)
    text = trace_text(t)
    assert text.count("nonce[2:14]") == 1 and "the same 50 bytes as step 1" in text


def test_unfinished_and_empty_traces_render():
    t = Trace("")
    assert "no steps" in trace_text(t) and "no steps" in trace_html(t)
    t.add("pending", ok=None)
    assert "… pending" in trace_text(t) and "not finished" in trace_text(t)


def test_trace_html_opens_the_dump_nearest_a_failure_that_has_no_bytes_of_its_own():
    blob = vault_blob(20)
    fields = wire.parse(blob).fields
    t = Trace("x")
    t.add("base64 decode", data=b"\x00" * 8)
    t.add("parse", data=blob, fields=fields)
    t.add("open", data=blob, fields=fields)  # same dump as "parse": shown there, referred to here
    t.add("check", ok=False, reason="wrong")
    p = parse_html(trace_html(t))
    details = [attrs for tag, attrs in p.tags if tag == "details"]
    assert [("open" in d) for d in details] == [False, True]
    assert "the same 50 bytes as step 2" in "".join(p.text)


def test_step_data_given_as_text_is_dumped_as_utf8():
    t = Trace("text")
    t.add("JSON encode", data='{"a":"é"}')  # type: ignore[arg-type]
    assert "7b 22 61 22 3a 22 c3 a9 22 7d" in trace_text(t)


def test_views_show_every_byte_of_a_long_blob_unless_asked_to_elide():
    """Issue 13: "each step's bytes as a full hex view … nothing cut unless asked"."""
    key = random_key()
    t = Trace("long")
    sealing.open_vault(key, sealing.seal_vault(key, bytes(range(256)) * 8), trace=t)
    assert "…" not in trace_text(t).split("output")[0] and "bytes of ciphertext …" not in trace_text(t)
    assert "bytes of ciphertext …" in trace_text(t, elide=64)


# -- where a view opens ----------------------------------------------------------------------------
def test_a_passing_trace_opens_on_the_layout_and_a_failing_one_on_its_failure():
    """Issue 13: "traces that pass open on the layout, not on base64 decode"; "the failing one opened"."""
    key = random_key()
    blob = wire.b64encode(sealing.seal_vault(key, b"hello"))
    good = Trace()
    sealing.open_vault(key, blob, trace=good)
    assert good.steps[good.start].name == "parse vault"
    bad = Trace()
    with pytest.raises(CryptoError):
        sealing.open_vault(random_key(), blob, trace=bad)
    assert bad.steps[bad.start] is bad.failed


# -- served bytes, edits and re-runs ----------------------------------------------------------------
def flipped(blob: bytes, at: int) -> bytes:
    out = bytearray(blob)
    out[at] ^= 0x01
    return bytes(out)


def test_bytes_that_differ_from_the_served_blob_are_marked_in_every_view():
    """Issue 13: "when the input was altered (a flipped byte …), the bytes that differ from the
    served blob are marked"."""
    key = random_key()
    served = sealing.seal_vault(key, b"Prefers short answers.")
    t = Trace("flipped", served=served)
    with pytest.raises(CryptoError):
        sealing.open_vault(key, flipped(served, 20), trace=t)
    assert [t.changed(s) for s in t.steps] == [((20, 21),), ((20, 21),)]
    assert "^^  changed" in t.to_text()
    assert t.to_html().count('class="decoy-changed"') == 2  # hex and ASCII, in the one dump shown
    assert [s["changed"] for s in view(t)["steps"]] == [[[20, 21]], [[20, 21]]]
    clean = Trace("as served", served=served)
    sealing.open_vault(key, served, trace=clean)
    assert all(clean.changed(s) == () for s in clean.steps)


def test_rerun_with_the_byte_put_back_turns_the_failure_into_a_pass():
    """CyberChef-like: edit the input and run the recipe again; the served blob stays the reference."""
    key = random_key()
    served = sealing.seal_vault(key, b"x" * 40)
    t = Trace("flipped", served=served)
    with pytest.raises(CryptoError):
        sealing.open_vault(key, wire.b64encode(flipped(served, 30)), trace=t)
    assert t.source.recipe == "open_vault" and t.editable(t.steps[1]) == "blob"
    again = t.rerun({"blob": served})
    assert again.ok and [s.name for s in again.steps] == [s.name for s in t.steps]
    assert all(again.changed(s) == () for s in again.steps)
    worse = again.rerun({"blob": flipped(served, 0)})
    assert worse.failed.name == "parse vault" and worse.changed(worse.steps[1]) == ((0, 1),)


def test_an_unseal_trace_keeps_its_first_steps_and_reruns_the_row_read(agent, owner):
    """A memory read re-runs as a whole row read (unwrap, kid check, open, bind check)."""
    keys = M.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    row = M.new_memory_row(keys, "Prefers short answers.")
    served = {
        "id": row["id"],
        "kid": row["kid"],
        "rev": 1,
        "ciphertext": row["ciphertext"],
        "wrapped_key": row["self_wrap"],
    }
    t = Trace("unseal")
    t.add("find the served row", output="served")
    M.read_memory_row(served, agent, trace=t)
    assert t.ok and t.source.recipe == "read_row" and t.source.start == 1
    ct = wire.b64decode(row["ciphertext"])
    bad = t.rerun({"ciphertext": flipped(ct, 40)})
    assert bad.steps[0].name == "find the served row" and bad.failed.name == "AES-256-GCM open"
    assert bad.changed(bad.failed) == ((40, 41),)
    assert bad.rerun({"ciphertext": ct}).ok


def test_a_swapped_row_is_marked_against_the_blobs_served_for_it(agent, owner):
    """A ciphertext and wrap moved in from another row: the bind check catches it, and the views
    mark the bytes that differ from the blobs served under this id."""
    keys = M.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    mine, other = M.new_memory_row(keys, "Mine."), M.new_memory_row(keys, "Another row's text.")
    swapped = {
        "id": mine["id"],
        "kid": other["kid"],
        "ciphertext": other["ciphertext"],
        "wrapped_key": other["self_wrap"],
    }
    served = {"ciphertext": wire.b64decode(mine["ciphertext"]), "wrapped_key": wire.b64decode(mine["self_wrap"])}
    t = Trace("swapped", served=served)
    with pytest.raises(UnreadableRow):
        M.read_memory_row(swapped, agent, trace=t)
    assert t.failed.name.startswith("bind check")
    parse = next(s for s in t.steps if s.name == "parse vault")
    runs = t.changed(parse)
    assert runs and sum(b - a for a, b in runs) > len(parse.data) // 2  # nearly every byte differs


def test_a_trace_with_no_recipe_refuses_to_rerun():
    t = Trace()
    t.add("by hand", data=b"abc")
    assert t.editable(t.steps[0]) is None
    with pytest.raises(DecoyError):
        t.rerun({"blob": b"x"})


# -- the field tree ---------------------------------------------------------------------------------
def test_the_field_tree_nests_fields_in_groups_and_json_members_with_their_bytes():
    key = random_key()
    t = Trace()
    sealing.open_json(key, sealing.seal_json(key, {"v": 2, "row_id": "r1", "about": ["user"]}), trace=t)
    steps = view(t)["steps"]
    layout = steps[0]["tree"]
    assert [g["name"] for g in layout["children"]] == ["header", "sealed payload"]
    assert [f["name"] for f in layout["children"][1]["children"]] == ["nonce", "ciphertext", "tag"]
    plain = t.steps[-1].data
    members = steps[-1]["tree"]["children"]
    assert [m["name"] for m in members] == ["v", "row_id", "about"]
    about = members[2]
    assert plain[about["start"] : about["end"]] == b'"about":["user"]'
    assert plain[about["children"][0]["start"] : about["children"][0]["end"]] == b'"user"'


def test_the_view_never_carries_secret_bytes_unless_revealed(agent, owner):
    key = random_key()
    t = Trace()
    sealing.wrap_to_owner(key, owner.public_key_b64, trace=t)
    text = wire.b64encode(key).encode().hex()
    hidden = json.dumps(view(t))
    assert text not in hidden and "secret" in hidden
    assert text in json.dumps(view(t, reveal=True))


# -- export -----------------------------------------------------------------------------------------
def test_json_export_holds_each_step_with_its_bytes_and_fields():
    key = random_key()
    served = sealing.seal_vault(key, b"hi")
    t = Trace("export", served=served)
    with pytest.raises(CryptoError):
        sealing.open_vault(key, flipped(served, 15), trace=t)
    data = json.loads(t.to_json())
    assert data["recipe"] == "open_vault" and data["ok"] is False
    parse, aes = data["steps"]
    assert parse["name"] == "parse vault" and bytes.fromhex(parse["hex"]) == flipped(served, 15)
    assert [f["name"] for f in parse["fields"]] == ["version", "mode", "nonce", "ciphertext", "tag"]
    assert aes["ok"] is False and aes["changed"] == [[15, 16]] and "tag mismatch" in aes["lines"][0][1]
    assert key.hex() not in t.to_json() and wire.b64encode(key) not in t.to_json()


def run_script(source: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-"], input=source, capture_output=True, text=True, timeout=60, env={"PATH": "", **env}
    )


def outcome(t: Trace) -> str:
    return f"✗ {t.failed.name}" if t.failed else "✓"


@pytest.mark.parametrize("altered", [False, True])
def test_the_python_export_reproduces_a_memory_read(agent, owner, tmp_path, altered):
    """Issue 13: "a short Python script that reproduces it with `cryptography`"; it runs with the
    key from the environment (never written into the script unless revealed)."""
    keys = M.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    row = M.new_memory_row(keys, "Prefers window seats.")
    ct = wire.b64decode(row["ciphertext"])
    served = {"id": row["id"], "kid": row["kid"], "ciphertext": row["ciphertext"], "wrapped_key": row["self_wrap"]}
    if altered:
        served["ciphertext"] = wire.b64encode(flipped(ct, 33))
    t = Trace("unseal", served={"ciphertext": ct})
    try:
        M.read_memory_row(served, agent, trace=t)
    except UnreadableRow:
        pass
    script = t.to_python()
    assert agent.to_pem().splitlines()[1] not in script
    pem = tmp_path / "agent.pem"
    pem.write_text(agent.to_pem())
    run = run_script(script, {"DECOY_PRIVATE_KEY": str(pem)})
    assert run.returncode == (1 if altered else 0), run.stderr
    last = run.stdout.strip().splitlines()[-1]
    if altered:
        assert last.startswith(outcome(t) + ":") and outcome(t) == "✗ AES-256-GCM open"
    else:
        assert '"content":"Prefers window seats."' in last and f'"row_id":"{row["id"]}"' in last
    revealed = run_script(t.to_python(reveal=True), {})
    assert revealed.stdout == run.stdout


def test_the_python_export_reproduces_vault_envelope_and_layout_traces(agent, owner):
    from decoy_lab.recipes.dump import open_blob

    key = random_key()
    env = {"DECOY_KEY": wire.b64encode(key)}
    blob = sealing.seal_vault(key, b"hello there")
    opened = open_blob(blob, key=key)
    assert run_script(opened.to_python(), env).stdout.strip().endswith("result: hello there")
    tampered = open_blob(flipped(blob, len(blob) - 1), key=key)
    run = run_script(tampered.to_python(), env)
    assert run.returncode == 1 and run.stdout.strip().splitlines()[-1].startswith(outcome(tampered))
    wrap = Trace()
    sealing.unwrap_as_owner(sealing.wrap_to_owner(key, owner.public_key_b64), owner, trace=wrap)
    run = run_script(wrap.to_python(reveal=True), {})
    assert run.returncode == 0 and run.stdout.strip().endswith(f"result: kid {wire.kid(key)}")
    layout = open_blob(blob)
    assert "'nonce': '" in run_script(layout.to_python(), {}).stdout
    unknown = run_script(open_blob("aGVsbG8gd29ybGQ=").to_python(), {})
    assert unknown.returncode == 1 and "no known layout" in unknown.stdout


def test_a_seal_trace_is_exported_as_json_only(owner):
    t = Trace()
    sealing.wrap_to_owner(random_key(), owner.public_key_b64, trace=t)
    assert json.loads(t.to_json())["steps"]
    with pytest.raises(DecoyError, match="JSON"):
        t.to_python()


def test_a_decrypted_output_is_shown_whole_and_a_secret_one_only_when_revealed(agent):
    """Issue 13: "the middle of every … decrypted output is cut" — no longer: the view carries
    every byte a step gave out; a raw key stays a fingerprint unless revealed."""
    key = random_key()
    plain = b"Prefers short answers. " * 400
    t = Trace()
    sealing.open_vault(key, sealing.seal_vault(key, plain), trace=t)
    v = view(t)
    opened = v["steps"][-1]
    assert bytes.fromhex(v["blobs"][opened["out"]]) == plain and opened["out_tree"]["end"] == len(plain)
    unwrap, _ = Trace(), None
    sealing.unwrap_as_agent(sealing.wrap_to_agent(key, agent.public_key_b64), agent, trace=unwrap)
    assert all(s["out"] is None for s in view(unwrap)["steps"]) and key.hex() not in json.dumps(view(unwrap))
    revealed = view(unwrap, reveal=True)
    assert any(s["out"] is not None and revealed["blobs"][s["out"]] == key.hex() for s in revealed["steps"])
