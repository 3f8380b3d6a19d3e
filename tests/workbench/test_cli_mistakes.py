"""Every CLI mistake is one `error: …` line on stderr and exit 2, never a traceback; a refused
`--db` file is left as it was. Through `decoy_lab.workbench.shell.cli.main`, as a shell runs it."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from decoy_lab.workbench.shell.cli import main


def run(capsys, *argv: str) -> str:
    """main(argv) must exit 2 with exactly one `error:` line; returns stderr."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert sum("error:" in line for line in err.splitlines()) == 1, err
    return err


@pytest.fixture
def garbage(tmp_path) -> Path:
    path = tmp_path / "garbage.pem"
    path.write_bytes(bytes(range(256)) * 2)
    return path


@pytest.mark.parametrize("port", ["abc", "70000", "-1"])
def test_a_bad_port_is_an_error_line(capsys, port):
    run(capsys, "sandbox", "--db", ":memory:", "--port", port)


def test_a_port_in_use_is_an_error_line(capsys):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        err = run(capsys, "sandbox", "--db", ":memory:", "--port", str(held.getsockname()[1]))
    assert "in use" in err or "cannot listen" in err


def test_a_directory_as_db_is_an_error_line_and_keeps_its_mode(capsys, tmp_path):
    before = stat.S_IMODE(tmp_path.stat().st_mode)
    run(capsys, "sandbox", "--db", str(tmp_path), "--port", "0")
    assert stat.S_IMODE(tmp_path.stat().st_mode) == before


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database, just notes kept here\n" * 50)
    os.chmod(path, 0o644)
    before = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    err = run(capsys, "sandbox", "--db", str(path), "--port", "0")
    assert "SQLite" in err
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_db_is_an_error_line(capsys, tmp_path):
    path = tmp_path / "locked.sqlite3"
    path.write_bytes(b"")
    os.chmod(path, 0)
    run(capsys, "sandbox", "--db", str(path), "--port", "0")


def test_a_missing_or_garbage_owner_key_is_an_error_line(capsys, tmp_path, garbage):
    run(capsys, "sandbox", "--db", ":memory:", "--port", "0", "--owner-key", str(tmp_path / "missing.pem"))
    run(capsys, "sandbox", "--db", ":memory:", "--port", "0", "--owner-key", str(garbage))


def test_a_missing_or_garbage_dump_key_file_is_an_error_line(capsys, tmp_path, garbage):
    run(capsys, "dump", "--key-file", str(tmp_path / "missing.pem"), "AAAA")
    run(capsys, "dump", "--key-file", str(garbage), "AAAA")
    run(capsys, "dump", "--key", str(garbage), "AAAA")


@pytest.mark.parametrize("text", ["[1, 2]", '"x"', "{not json", '{"base_url": 5, "access_token": []}'])
def test_a_corrupt_profile_is_an_error_line(capsys, tmp_path, monkeypatch, text):
    monkeypatch.setenv("DECOY_LAB_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    from decoy_lab.store.profiles import ProfileStore

    path = ProfileStore().path("broken")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)  # a private file whose content is damaged (a 0644 one is refused unread)
    err = run(capsys, "status", "--profile", "broken")
    assert "chmod" not in err


def test_the_cache_of_a_profile_that_is_not_saved_is_an_error_line(capsys, tmp_path, monkeypatch):
    """Issue 15: the cache's "size and location shown by `decoy-lab cache`": for a profile that
    does not exist (misspelt, or unpaired already) it says so, never "no cache yet"."""
    monkeypatch.setenv("DECOY_LAB_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("DECOY_LAB_KEYRING", "0")
    err = run(capsys, "cache", "--profile", "nope")
    assert "no saved profile 'nope'" in err and "saved profiles: none" in err
    run(capsys, "cache", "--profile", "nope", "--clear")


def test_the_tour_outside_a_clone_is_an_error_line_and_makes_nothing(capsys, tmp_path):
    out = tmp_path / "build"
    err = run(capsys, "tour", "--notebooks", str(tmp_path), "--output", str(out))
    assert "01-tour.ipynb: no such notebook" in err
    assert not out.exists()  # no output folder left behind for a run that could not start


def test_a_check_key_file_that_holds_no_key_names_the_option_and_the_file(capsys, garbage):
    err = run(capsys, "check", "--agent-key", str(garbage), "--", "true")  # was a traceback
    assert f"--agent-key {garbage}: not an unencrypted RSA private key" in err


@pytest.mark.parametrize(
    "option", [("--timeout", "0"), ("--interval", "-1"), ("--interval", "inf"), ("--timeout", "soon")]
)
def test_a_time_that_is_no_time_is_an_error_line(capsys, option):
    """`--interval 0` would ask the server in a busy loop, `--timeout 0` give up before asking."""
    err = run(capsys, "request", "memory.edit", "--wait", *option)
    assert f"argument {option[0]}:" in err and "seconds" in err


def test_a_typo_of_check_prints_checks_whole_usage(capsys):
    """Issue: after `decoy-lab chek` the usage printed was the notebook's `check` (no `--`, no
    `--json`, no `--html`). It is now the usage of the `check` the shell runs, every option of
    its parser and the `--` before the agent's command, as `decoy-lab check -h` begins."""
    err = run(capsys, "chek")
    assert err.splitlines()[0] == "error: unknown sub-command 'chek' — did you mean 'check'?"
    usage = " ".join(err.split("\n", 1)[1].split())
    assert usage.startswith("usage: decoy-lab check ")
    for option in ("--scenario NAME", "--json FILE", "--junit FILE", "--html FILE", "--timeout S", "--agent-key PEM"):
        assert f"[{option}]" in usage, option
    assert usage.endswith("-- COMMAND [ARG ...]")
    with pytest.raises(SystemExit):
        main(["check", "-h"])
    assert " ".join(capsys.readouterr().out.split()).startswith(usage)  # the same as its own help


@pytest.mark.parametrize("typo,verb", [("sandbx", "sandbox"), ("proxi", "proxy"), ("memries", "memories")])
def test_every_typo_prints_the_whole_usage_of_the_command_meant(capsys, typo, verb):
    """Every option the meant command takes is in the usage printed, `--profile` of a verb too
    (but for another spelling of one shown, which the table keeps out of its usage: a shell's
    `memories --wait`, its default)."""
    import argparse

    from decoy_lab.workbench import verbs
    from decoy_lab.workbench.shell.cli import build_parser

    err = run(capsys, typo)
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = {s for a in sub.choices[verb]._actions for s in a.option_strings if s.startswith("--")} - {"--help"}
    if verb in verbs.BY_NAME:
        options -= {a.name for a in verbs.BY_NAME[verb].args_for(verbs.SHELL) if not a.shown}
    assert options and all(option in err for option in options), (options, err)


def test_the_shell_help_speaks_of_the_shell():
    """Issue: `decoy-lab --help` said "the connections of this notebook" and "the notebook's
    widget". The one verb table gives each front end its own words: no notebook, kernel, widget,
    cell or consent card in any shell help, and the notebook's help keeps its own."""
    import contextlib
    import io
    import re

    from decoy_lab.workbench import verbs

    texts = []
    for argv in [["--help"], *([v.name, "-h"] for v in verbs.verbs_for(verbs.SHELL))]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(argv)
        texts.append(out.getvalue())
    said = "\n".join(texts)
    assert "pair with a Decoy server: prints the link and code" in said
    assert "the saved connections (profiles)" in said
    assert re.findall(r"\bnotebook\b|kernel|widget|\bcell\b|%decoy|consent card", said, re.I) == []
    nb = {v.name: v for v in verbs.verbs_for(verbs.NOTEBOOK)}
    assert "this notebook" in nb["connections"].summary_for(verbs.NOTEBOOK)
    assert "cell body" in nb["save"].args[0].help_for(verbs.NOTEBOOK)


def test_an_edit_that_changes_nothing_says_so_in_the_shells_words(capsys, monkeypatch, tmp_path):
    """The message and usage of an edit with nothing to change: no `%decoy`, no cell body."""
    import argparse

    from decoy_lab.workbench import verbs

    args = argparse.Namespace(topic=None, categories=None)
    with pytest.raises(verbs.UsageProblem) as shell:
        verbs.edit_changes(args, None, verbs.SHELL)
    assert "cell" not in str(shell.value) and shell.value.usage.startswith("decoy-lab edit ")
    with pytest.raises(verbs.UsageProblem) as notebook:
        verbs.edit_changes(args, None)
    assert "%%decoy edit cell body" in str(notebook.value) and notebook.value.usage.startswith("%decoy edit ")
