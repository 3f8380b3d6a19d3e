"""`decoy-lab` connection commands against a real sandbox over HTTP.

One sandbox and one paired profile for the whole module (pairing costs an RSA keygen); the
config directory is a temporary one (DECOY_LAB_CONFIG_DIR, keyring off, so secrets sit in the
profile file where the tests can read them and check that no output ever contains them).
Commands run in-process through `decoy_lab.workbench.shell.cli.main`, and a few through the real console script.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from decoy_lab.store.profiles import ENV_DIR, ENV_KEYRING, ProfileStore
from decoy_lab.workbench.shell.cli import main

from support.shell_runs import run
from support.terminal import as_at_a_terminal

SCRIPT = Path(sys.executable).with_name("decoy-lab")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config")


@pytest.fixture(autouse=True)
def _env(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(config))
    monkeypatch.setenv(ENV_KEYRING, "0")
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[object]:
    from decoy_lab.sandbox import Sandbox

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_DIR, str(config))
        mp.setenv(ENV_KEYRING, "0")
        sb = Sandbox.start()
        sb.paired = run("pair", sb.url, "--name", "CLI test")  # type: ignore[attr-defined]
        sb.owner.share()  # the owner's phone shares the demo vault with the new connection
        try:
            yield sb
        finally:
            sb.stop()


def secrets(config: Path) -> list[str]:
    """Every secret a saved profile holds (read fresh: a refresh changes the tokens)."""
    store = ProfileStore(config)
    out = []
    for name in store.names():
        p = store.load(name)
        out += [s for s in (p.access_token, p.refresh_token) if s]
        if p.private_key_pem:
            out += [line for line in p.private_key_pem.splitlines() if len(line) > 40]  # the PEM body
    return out


def assert_no_secret(config: Path, *texts: str) -> None:
    joined = "\n".join(texts)
    assert "PRIVATE KEY" not in joined
    found = secrets(config)
    assert found or not ProfileStore(config).names()  # a saved profile always has something to hide
    for s in found:
        assert s not in joined


def cli(capsys: pytest.CaptureFixture, config: Path, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Run `decoy-lab ARGV` in-process; returns (exit code, stdout, stderr), checked for secrets."""
    capsys.readouterr()
    if stdin is not None:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sys, "stdin", io.StringIO(stdin))
            code = main(list(argv))
    else:
        code = main(list(argv))
    out, err = capsys.readouterr()
    assert_no_secret(config, out, err)
    return code, out, err


def vault(config: Path):
    from decoy_lab.client.connection import Connection

    with Connection.resume("default", store=ProfileStore(config)) as conn:
        return conn.load()


def stored_rows(sb) -> int:
    return len(httpx.get(f"{sb.url}/_sandbox/rows").json()["rows"])


# -- pairing -------------------------------------------------------------------------------------
def test_pair_prints_link_and_code_then_what_was_granted(sandbox, config):
    code, out, err = sandbox.paired
    assert code == 0, err
    link = re.search(r"Open (\S+/connect\?code=(\S+))", out)
    assert link, out
    assert f"shows the code {link.group(2)}" in out
    assert "saved as profile 'default'" in out
    assert "memory.read" in out.split("Granted:")[1] and "memory.save" in out.split("Granted:")[1]
    assert ProfileStore(config).exists("default")
    assert_no_secret(config, out, err)


def _read_until(stream, needle: str) -> str:
    seen = ""
    for line in stream:
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never appeared; got {seen!r}")


def _spawn(*argv: str, config: Path) -> subprocess.Popen:
    env = {**os.environ, ENV_DIR: str(config), ENV_KEYRING: "0"}
    return subprocess.Popen(
        as_at_a_terminal([str(SCRIPT), *argv]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        bufsize=1,
    )


@pytest.fixture
def manual(sandbox):
    """The owner's phone answers by hand for this test; polls every second."""
    state = sandbox.state
    before = state.approve, state.device_interval
    state.approve, state.device_interval = "manual", 1
    yield sandbox
    state.approve, state.device_interval = before


def test_pair_waits_for_the_owner_with_a_status_line(manual, config):
    """The console script prints the link at once, shows the wait on stderr, then the grant."""
    proc = _spawn("pair", manual.url, "--profile", "approved", "--permission", "memory.read", config=config)
    try:
        head = _read_until(proc.stdout, "shows the code")
        code = re.search(r"shows the code (\S+)\.", head).group(1)
        waiting = _read_until(proc.stderr, "waiting")
        assert code in waiting
        manual.owner.approve(code)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0, err
    assert "saved as profile 'approved'" in out and "memory.read" in out.split("Granted:")[1]
    assert ProfileStore(config).exists("approved")
    assert_no_secret(config, head, waiting, out, err)


def test_pair_ctrl_c_cancels_cleanly(manual, config):
    proc = _spawn("pair", manual.url, "--profile", "cancelled", config=config)
    try:
        _read_until(proc.stdout, "shows the code")
        _read_until(proc.stderr, "waiting")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 130
    assert "pairing cancelled" in err and "Traceback" not in err
    assert not ProfileStore(config).exists("cancelled")


# -- reading ---------------------------------------------------------------------------------------
def test_memories_table_lists_every_readable_memory(sandbox, config, capsys):
    v = vault(config)
    assert len(v.memories) > 10
    code, out, err = cli(capsys, config, "memories")
    assert code == 0, err
    header = out.splitlines()[0].split()
    assert header == ["id", "topic", "categories", "text"]
    # ids cut as git cuts them: the shortest prefix (8 at least) that no two ids share
    listed = [line.split()[0] for line in out.splitlines()[1:]]
    whole = [[i for i in v.memories["id"] if i.startswith(short)] for short in listed]
    assert all(len(w) == 1 for w in whole) and {w[0] for w in whole} == set(v.memories["id"])
    assert {len(short) for short in listed} == {8}
    assert v.summary in err
    assert all(len(line) <= 120 for line in out.splitlines())  # long text shortened to the width


def test_memories_json_and_filters(sandbox, config, capsys):
    v = vault(config)
    code, out, _ = cli(capsys, config, "memories", "--json")
    assert code == 0
    records = json.loads(out)
    assert {r["id"] for r in records} == set(v.memories["id"])
    first = next(r for r in records if r["id"] == v.memories["id"].iloc[-1])
    assert first["text"] == v.memories["text"].iloc[-1]
    assert isinstance(first["categories"], list)

    topic = v.topics["name"].iloc[0]
    code, out, _ = cli(capsys, config, "memories", "--topic", topic, "--json")
    got = json.loads(out)
    assert got and all(r["topic"] == topic for r in got)
    assert {r["id"] for r in got} == set(v.topics["memory_ids"].iloc[0])

    code, out, _ = cli(capsys, config, "memories", "--category", "food", "--json")
    assert json.loads(out) and all("food" in r["categories"] for r in json.loads(out))

    code, out, err = cli(capsys, config, "memories", "--category", "fodo")
    assert code == 2 and "unknown category 'fodo'" in err and "food" in err  # not an empty table


def test_topics_links_rows(sandbox, config, capsys):
    v = vault(config)
    code, out, _ = cli(capsys, config, "topics")
    assert code == 0
    for name in v.topics["name"]:
        assert name in out
    code, out, _ = cli(capsys, config, "topics", "--json")
    assert [t["name"] for t in json.loads(out)] == list(v.topics["name"])
    code, out, _ = cli(capsys, config, "links", "--json")
    assert {r["id"] for r in json.loads(out)} == set(v.links["id"])
    code, out, _ = cli(capsys, config, "rows")
    assert code == 0 and out.splitlines()[0].split() == ["id", "kind", "status", "label"]


def test_a_read_right_after_connect_waits_for_the_keys_and_calls_rows_rows(sandbox, config, capsys):
    """Issue: the README's third line, `memories --topic "Lisbon trip"` right after `connect`,
    exited 2 while the owner's phone was still sharing the keys, and said "84 memories … on their
    way" for a vault of 59 memories (the answer counts rows: topics and links too). A shell read
    now waits for them (at most 90 s) and says so; `--no-wait` reads once and says how to wait."""
    code, _, err = cli(capsys, config, "connect", sandbox.url, "--profile", "fresh", "--name", "Fresh")
    assert code == 0, err
    try:
        code, out, err = cli(capsys, config, "memories", "--topic", "Lisbon trip", "--profile", "fresh", "--no-wait")
        assert code == 2 and out == ""
        coming = re.search(r"(\d+) rows saved by the owner or other connections \(memories, topics and links", err)
        assert coming, err
        assert f"{coming.group(1)} memories" not in err and "--wait" not in err
        assert "(decoy-lab memories waits for them)" in err and "%decoy" not in err
        code, out, err = cli(capsys, config, "memories", "--topic", "Lisbon trip", "--profile", "fresh")
        assert code == 0, err
        waited = re.search(
            r"^waiting for (\d+) rows \(memories, topics, links\) on their way .*at most 90 s", err, re.M
        )
        assert waited, err
        assert "Lisbon trip" in out and re.search(r"^\d+ of \d+ memories shown", err, re.M)
        assert f"{waited.group(1)} memories" not in err and "on their way" not in err.split("\n", 1)[1]
        assert main(["memories", "--profile", "fresh", "--no-wait", "--json"]) == 0  # the keys came: read at once
    finally:
        cli(capsys, config, "unpair", "--profile", "fresh")


def test_status_and_access_show_no_secret(sandbox, config, capsys):
    code, out, _ = cli(capsys, config, "status")
    assert code == 0
    store = ProfileStore(config)
    p = store.load("default")
    assert p.token_id in out and sandbox.url in out
    code, out, _ = cli(capsys, config, "status", "--json")
    facts = json.loads(out)
    assert facts["token_id"] == p.token_id and "memory.read" in facts["permissions"]
    code, out, _ = cli(capsys, config, "access", "--json")
    assert {r["permission"] for r in json.loads(out)["permissions"]} >= {"memory.read", "memory.save"}


def test_unseal_good_row_exits_0(sandbox, config, capsys):
    mid = vault(config).memories.query("source == 'memories'")["id"].iloc[0]
    code, out, _ = cli(capsys, config, "unseal", mid)
    assert code == 0
    assert f"unseal {mid} — ✓ all" in out and "AES-256-GCM open" in out


def test_unseal_reveal_shows_the_raw_key_only_when_asked(sandbox, config, capsys):
    from decoy_lab.client.connection import Connection

    mid = vault(config).memories.query("source == 'memories'")["id"].iloc[0]
    with Connection.resume("default", store=ProfileStore(config)) as conn:
        trace = conn.unseal(mid)
    raw_key = next(s.output for s in trace.steps if s.secret_output and isinstance(s.output, bytes)).hex()
    _, hidden, _ = cli(capsys, config, "unseal", mid)
    _, shown, _ = cli(capsys, config, "unseal", mid, "--reveal")
    assert raw_key not in hidden and "secret 32 bytes" in hidden
    assert raw_key in shown


def test_unseal_a_row_not_served_exits_1(sandbox, config, capsys):
    code, out, _ = cli(capsys, config, "unseal", str(uuid.uuid4()))
    assert code == 1
    assert "✗ find the served row" in out


def test_seal_is_a_dry_run(sandbox, config, capsys):
    before = stored_rows(sandbox)
    code, out, err = cli(
        capsys,
        config,
        "seal",
        "Would",
        "like",
        "a",
        "window",
        "seat.",
        "--topic",
        "A topic never saved",
        "--categories",
        "travel",
    )
    assert code == 0
    assert "seal preview (not sent) — ✓ all" in out and "new topic" in out
    assert "nothing was sent" in err
    assert stored_rows(sandbox) == before
    assert "A topic never saved" not in json.dumps([r.get("name") for r in sandbox.owner.app_view()])


# -- writing ---------------------------------------------------------------------------------------
def test_save_list_edit_delete_round_trip(sandbox, config, capsys):
    code, out, err = cli(
        capsys,
        config,
        "save",
        "-",
        "--topic",
        "Lisbon trip",
        "--categories",
        "travel",
        stdin="Wants a tram 28 ride at sunrise.\n",
    )
    assert code == 0, err
    mid = out.strip()
    assert UUID.match(mid)

    code, out, _ = cli(capsys, config, "memories", "--mine", "--json")
    mine = {r["id"]: r for r in json.loads(out)}
    assert mine[mid]["text"] == "Wants a tram 28 ride at sunrise."
    assert mine[mid]["topic"] == "Lisbon trip" and mine[mid]["categories"] == ["travel"]

    code, out, _ = cli(
        capsys, config, "edit", mid, "--text", "Wants a tram 28 ride at dawn.", "--categories", "travel", "food"
    )
    assert code == 0 and out.strip() == f"edited {mid} (rev 2)"
    code, out, _ = cli(capsys, config, "memories", "--search", "at dawn", "--json")
    [edited] = json.loads(out)
    assert edited["id"] == mid and edited["rev"] == 2 and edited["categories"] == ["travel", "food"]

    seen = {r["id"]: r for r in sandbox.owner.app_view()}
    assert seen[mid]["readable"] and seen[mid]["text"] == "Wants a tram 28 ride at dawn."
    code, out, _ = cli(capsys, config, "app-view", sandbox.url, "--json")
    assert {r["id"]: r["readable"] for r in json.loads(out)}[mid] is True

    code, out, _ = cli(capsys, config, "delete", mid)
    assert code == 0 and out.strip() == f"deleted  {mid}"
    code, out, _ = cli(capsys, config, "memories", "--json")
    assert mid not in {r["id"] for r in json.loads(out)}


def test_delete_reports_refused_ids_and_exits_1(sandbox, config, capsys):
    demo = vault(config).memories.query("source == 'memories' and mine == False")["id"].iloc[0]
    code, out, _ = cli(capsys, config, "delete", demo, "--json")
    assert code == 1
    assert json.loads(out)["refused"] == [demo]
    assert demo in set(vault(config).memories["id"])


def test_sync_json(sandbox, config, capsys):
    code, out, _ = cli(capsys, config, "sync", "--json")
    assert code == 0
    first = json.loads(out)
    assert first["cursor"] is not None
    code, out, _ = cli(capsys, config, "sync", "--json")
    again = json.loads(out)
    assert again["full_reload"] is False and again["created"] == again["destroyed"] == []


# -- errors ----------------------------------------------------------------------------------------
def test_missing_profile_is_a_clear_error(sandbox, config, capsys):
    code, out, err = cli(capsys, config, "memories", "--profile", "nobody")
    assert code == 2 and out == ""
    assert err.startswith("error: no saved profile 'nobody'")
    assert "decoy-lab connect URL --profile nobody" in err


def test_no_profile_at_all(sandbox, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    capsys.readouterr()
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no saved profile 'default'") and "saved profiles: none" in err


def test_bad_profile_name(sandbox, config, capsys):
    code, _, err = cli(capsys, config, "status", "--profile", "../etc")
    assert code == 2
    assert err.startswith("error: profile name '../etc' must be") and "hint" not in err


def test_server_refusal_prints_code_and_recovery(sandbox, config, capsys):
    """A revoked connection answers 401 TOKEN_REVOKED with recovery re_pair: say so, exit 2."""
    code, out, err = cli(capsys, config, "pair", sandbox.url, "--profile", "revoked", "--name", "Revoked one")
    assert code == 0, err
    sandbox.owner.revoke(ProfileStore(config).load("revoked").token_id)
    code, out, err = cli(capsys, config, "memories", "--profile", "revoked")
    assert code == 2 and out == ""
    assert err.startswith("error: HTTP 401 TOKEN_REVOKED") and "recovery: re_pair" in err
    assert "decoy-lab connect URL --profile revoked" in err


def test_unpair_ends_the_connection_and_deletes_the_profile(sandbox, config, capsys):
    """RFC 7009 §2.1: the client revokes its refresh token; the spec: "`recovery: re_pair` (`TOKEN_REVOKED`)
    → only a new owner-approved pairing, which inherits nothing"."""
    code, _, err = cli(capsys, config, "pair", sandbox.url, "--profile", "leaving", "--name", "Leaving one")
    assert code == 0, err
    saved = ProfileStore(config).load("leaving")
    hidden = secrets(config)
    code, out, err = cli(capsys, config, "unpair", "--profile", "leaving")
    assert code == 0, err
    assert f"Ended connection {saved.token_id}" in out and "deleted profile 'leaving'" in out
    assert all(s not in out + err for s in hidden)  # fingerprints only, never the tokens or the key
    assert not ProfileStore(config).exists("leaving")
    r = httpx.get(f"{sandbox.url}/api/agent/policies", headers={"Authorization": f"Bearer {saved.access_token}"})
    assert r.status_code == 401 and r.json()["code"] == "TOKEN_REVOKED"
    code, _, err = cli(capsys, config, "unpair", "--profile", "leaving")
    assert code == 2 and err.startswith("error: no saved profile 'leaving'")


def test_unpair_local_only_forgets_the_profile_and_says_the_connection_lives_on(sandbox, config, capsys):
    from decoy_lab.errors import TransportError
    from decoy_lab.workbench import verbs

    code, _, err = cli(capsys, config, "pair", sandbox.url, "--profile", "offline", "--name", "Offline one")
    assert code == 0, err
    saved = ProfileStore(config).load("offline")
    code, out, err = cli(capsys, config, "unpair", "--profile", "offline", "--local")
    assert code == 0 and "on this machine only" in out and "stays live" in err
    assert not ProfileStore(config).exists("offline")
    r = httpx.get(f"{sandbox.url}/api/agent/policies", headers={"Authorization": f"Bearer {saved.access_token}"})
    assert r.status_code == 200
    # an unreachable server keeps the profile and says how to go on
    hint = verbs.hint(TransportError("cannot reach"), verbs.SHELL, verb="unpair", profile="offline")
    assert (
        hint == "the profile was kept: run decoy-lab unpair --profile offline again, or forget it here only "
        "with --local"
    )


def test_bad_arguments_exit_2(sandbox, config, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["unseal"])
    assert exc.value.code == 2
    assert main(["memories", "--no-such-flag"]) == 2  # said with the verb's usage (test_words.py)
    code, _, err = cli(capsys, config, "edit", str(uuid.uuid4()))
    assert code == 2 and "say what changes" in err


def test_app_view_help_says_sandbox_only(capsys):
    with pytest.raises(SystemExit):
        main(["app-view", "--help"])
    assert "Sandbox only" in capsys.readouterr().out


# -- the console script ------------------------------------------------------------------------------
def test_console_script_memories_json(sandbox, config):
    env = {**os.environ, ENV_DIR: str(config), ENV_KEYRING: "0"}
    done = subprocess.run([str(SCRIPT), "memories", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {r["id"] for r in json.loads(done.stdout)} == set(vault(config).memories["id"])
    assert_no_secret(config, done.stdout, done.stderr)


def test_output_piped_into_a_reader_that_stops_early_is_not_a_traceback(sandbox, config):
    """`decoy-lab memories | head -1`: the reader closing the pipe ends the command quietly."""
    env = {**os.environ, ENV_DIR: str(config), ENV_KEYRING: "0"}
    proc = subprocess.Popen([str(SCRIPT), "rows"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # closed before the command writes: its first write meets a broken pipe
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
    assert proc.returncode == 0


# -- asking for more -----------------------------------------------------------------------------------
def test_request_for_a_topic_is_granted_on_the_same_connection(sandbox, config, capsys):
    token_id = ProfileStore(config).load("default").token_id
    code, out, err = cli(
        capsys,
        config,
        "request",
        "memory.edit",
        "--topic",
        "Lisbon trip",
        "--reason",
        "fix typos in the trip notes",
        "--wait",
        "--interval",
        "0.05",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "approved" and json.loads(out)["granted"] is True
    topic_id = vault(config).find_topic("Lisbon trip").id
    code, out, _ = cli(capsys, config, "access", "--json")
    rows = json.loads(out)["permissions"]
    assert any(r["permission"] == "memory.edit" and topic_id in r["selection"] for r in rows)
    assert ProfileStore(config).load("default").token_id == token_id  # widened, never re-paired


def test_request_wait_reports_a_denial_and_exits_1(manual, config):
    proc = _spawn("request", "memory.delete", "--reason", "tidy up", "--wait", "--interval", "0.2", config=config)
    try:
        waiting = _read_until(proc.stderr, "waiting for the owner")
        [ask] = [p for p in manual.owner.pending() if p["kind"] == "grant"]
        manual.owner.deny(ask["request_id"])
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 1, err
    assert f"Grant request {ask['request_id']}: denied" in out
    assert_no_secret(config, waiting, out, err)


def test_status_line_rewrites_in_place_on_a_terminal_and_prints_changes_otherwise(capsys):
    from decoy_lab.workbench.shell.terminal import StatusLine

    class Term(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Term()
    line = StatusLine(term)
    line.show("waiting — 9:59 left", steady="waiting")
    line.show("waiting — 9:59 left", steady="waiting")
    line.show("waiting — 9:58 left", steady="waiting")
    line.print("Open LINK")
    assert term.getvalue() == "\rwaiting — 9:59 left\x1b[K\rwaiting — 9:58 left\x1b[K\r\x1b[K"
    assert capsys.readouterr().out == "Open LINK\n"

    log = io.StringIO()
    plain = StatusLine(log)
    for text in ("waiting — 9:59 left", "waiting — 9:58 left", "approved — 9:58 left"):
        plain.show(text, steady=text.split(" — ")[0])
    assert log.getvalue() == "waiting\napproved\n"


# -- one verb table, mistakes, reuse ----------------------------------------------------------------
def test_edit_in_a_shell_never_imports_matplotlib(sandbox, config, capsys):
    """Issue 12: "the CLI no longer imports matplotlib for `edit`" (it costs a second at start)."""
    env = {**os.environ, ENV_DIR: str(config), ENV_KEYRING: "0"}
    code, out, err = cli(capsys, config, "save", "Edit me in a shell.")
    assert code == 0, err
    mid = out.strip()
    code = (
        "import sys; from decoy_lab.workbench.shell.cli import main; "
        f"rc = main(['edit', {mid!r}, '--categories', 'travel']); "
        "print(rc, 'matplotlib' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.split()[-2:] == ["0", "False"], done.stderr


def test_a_mistyped_sub_command_is_one_line_and_the_closest_ones_usage(capsys):
    """Issue 12: "unknown sub-command 'memries' — did you mean 'memories'?" plus its one-line usage."""
    from decoy_lab.workbench import verbs

    assert main(["memries"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "error: unknown sub-command 'memries' — did you mean 'memories'?",
        "usage: " + verbs.BY_NAME["memories"].usage(verbs.SHELL),
    ]
    assert main(["zzzzzz"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown sub-command 'zzzzzz' — decoy-lab --help lists them"


def test_connect_again_reuses_the_saved_connection_and_connections_lists_them(sandbox, config, capsys):
    """Issue 12: "A second `connect` reuses the live connection of that profile and says so"; the
    shell's older `pair` is the same verb."""
    token_id = ProfileStore(config).load("default").token_id
    code, out, _ = cli(capsys, config, "connect", sandbox.url)
    assert code == 0 and "Already connected" in out and token_id in out and "--new" in out
    code, out, _ = cli(capsys, config, "pair", "--url", sandbox.url)
    assert code == 0 and "Already connected" in out
    assert ProfileStore(config).load("default").token_id == token_id  # nothing was paired again
    code, _, err = cli(capsys, config, "connect", sandbox.url, "--new")
    assert code == 2 and "--profile NAME" in err  # never pairs over a live saved connection
    code, out, _ = cli(capsys, config, "connections")
    line = next(x for x in out.splitlines() if token_id in x)
    assert code == 0 and line.startswith("→") and sandbox.url in line


def test_cache_shows_where_and_how_large_and_clear_leaves_no_file(sandbox, config, capsys):
    """Issue 15: "size and location shown by `decoy-lab cache`, removed by `cache --clear`"."""
    code, _, err = cli(capsys, config, "memories")  # a load writes the profile's sealed cache
    assert code == 0, err
    path = ProfileStore(config).cache_path("default")
    code, out, err = cli(capsys, config, "cache")
    assert code == 0 and str(path) in out and f"{path.stat().st_size:,} bytes" in out
    code, out, _ = cli(capsys, config, "cache", "--clear")
    assert code == 0 and out.startswith("Removed") and not path.exists()
    code, out, _ = cli(capsys, config, "cache")
    assert code == 0 and "no cache yet" in out
    code, _, err = cli(capsys, config, "cache", "--profile", "no/such")
    assert code == 2 and err.startswith("error: profile name")


def test_tables_show_control_characters_escaped(sandbox, config, capsys, monkeypatch):
    """What a vault holds reaches the terminal as text, never as terminal commands: a memory text
    or topic name holding ESC, CR, BEL or a bidi override is shown escaped (`\\x1b`)."""
    hostile = "clear\x1b[2J here\rover\x07 bell \u202eevil"
    monkeypatch.setenv("COLUMNS", "400")  # the whole text fits: nothing is shortened away
    code, _, err = cli(capsys, config, "save", "-", "--topic", "Esc\x1b]0;title\x07", stdin=hostile)
    assert code == 0, err
    code, out, _ = cli(capsys, config, "memories", "--mine")
    assert code == 0
    code, topics, _ = cli(capsys, config, "topics")
    assert code == 0
    for shown in (out, topics):
        assert not any(c in shown for c in "\x1b\r\x07\u202e")
    assert "clear\\x1b[2J here\\rover\\x07" in out and "\\u202eevil" in out
    assert "Esc\\x1b]0;title\\x07" in topics
