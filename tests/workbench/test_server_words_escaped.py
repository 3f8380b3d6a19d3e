"""What a server says reaches the terminal shown, never acted on: an error's message with terminal
control sequences in it is printed with them escaped — over real HTTP, from a server on a loopback
socket that answers every request so.

A Decoy server is not trusted with what it cannot read (001: "Decoy's servers can't read them"),
and neither is it trusted with the terminal: `ESC ] 0 ; … BEL` retitles the window, `ESC [ 2 J`
clears it, and a refusal's `message` went to stderr as sent."""

from __future__ import annotations

from pathlib import Path

from support.shell_runs import run, shell_env
from support.sockets import serving, whole

SAID = "bad \x1b]0;pwned\x07\x1b[2J here"


def test_a_servers_message_is_printed_with_its_controls_escaped(tmp_path: Path):
    with shell_env(tmp_path), serving(lambda *_: whole(400, {"code": "NOPE", "message": SAID})) as url:
        code, out, err = run("connect", url, "--name", "Anyone")
    assert code == 2 and out == ""
    assert "\x1b" not in err and "\x07" not in err
    assert "bad \\x1b]0;pwned\\x07\\x1b[2J here" in err
