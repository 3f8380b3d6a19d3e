"""A `curl` command line per exchange a failed rule names, that re-sends it against a sandbox.

    DECOY_BASE_URL=http://127.0.0.1:8787 DECOY_TOKEN=… sh -c "$(the command)"

The bearer token is never written out: the command reads it from `$DECOY_TOKEN` (pair an agent
with the sandbox and export its access token), and the base URL from `$DECOY_BASE_URL`. A JSON
body goes in a quoted here-doc (the shell expands nothing in it); any other body is one quoted
argument. `-i` prints the answer's status line and headers, so the status can be compared with
the one recorded.

Everything in the line the agent chose (the method, the path and query, the Content-Type, the
body) is one `shlex.quote`d word: pasted into a shell, the line runs curl and nothing else. An
exchange that cannot be written so is not made a command at all; its line is a `#` comment that
says why: a method that is not an HTTP token (RFC 9110 §9.1: tchar only), or a target, header
or body holding a control character (a terminal would act on it, and the scorecard shows it
escaped, so a pasted line would not send the same bytes; a JSON body keeps its line breaks).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from decoy_lab.conformance.model import Exchange, Run
from decoy_lab.text import escaped

HEREDOC = "DECOY_BODY"
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.6.2: a method is a token of tchar


def curl(x: Exchange) -> str:
    """The command line that re-sends exchange `x` (one line, or a here-doc for a JSON body), or a
    `#` comment saying why it cannot be one."""
    if TOKEN.fullmatch(x.method) is None:
        return f"# not reproduced: the method {escaped(repr(x.method))} is not an HTTP token (RFC 9110 §9.1)"
    target = x.path + (f"?{x.query}" if x.query else "")
    if _controls(target):
        return f"# not reproduced: the request target {escaped(repr(target))} holds a control character"
    words = ["curl", "-sS", "-i", "-X", shlex.quote(x.method), f'"$DECOY_BASE_URL"{shlex.quote(target)}']
    if x.token:
        words += ["-H", '"Authorization: Bearer $DECOY_TOKEN"']
    if not x.body:
        return " ".join(words)
    content_type = x.content_type or "application/json"
    if _controls(content_type):
        return f"# not reproduced: the Content-Type {escaped(repr(content_type))} holds a control character"
    words += ["-H", shlex.quote(f"Content-Type: {content_type}")]
    text = _text(x.body)
    if text is None:
        return " ".join(words) + f"  # the {len(x.body)}-byte body is not text: send it from a file"
    if _is_json(text) and HEREDOC not in text and not _controls(text.replace("\n", "")):
        return " ".join([*words, "--data-binary", "@-", f"<<'{HEREDOC}'"]) + f"\n{text}\n{HEREDOC}"
    if _controls(text):
        return " ".join(words) + f"  # the {len(x.body)}-byte body holds control characters: send it from a file"
    return " ".join([*words, "--data-binary", shlex.quote(text)])


def _controls(text: str) -> bool:
    """Whether `text` holds anything the scorecard shows escaped (a control, bidi, surrogate)."""
    return escaped(text) != text


def reproducers(run: Run, ids: list[int]) -> list[dict[str, Any]]:
    """For each exchange id of `run`: what it was, the status recorded and the curl that re-sends it."""
    by_id = {x.id: x for x in run.exchanges}
    return [
        {"scenario": run.scenario, "exchange": by_id[i].label(), "status": by_id[i].status, "curl": curl(by_id[i])}
        for i in ids
        if i in by_id
    ]


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
