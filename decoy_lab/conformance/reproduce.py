"""A `curl` command line per exchange a failed rule names, that re-sends it against a sandbox.

    DECOY_BASE_URL=http://127.0.0.1:8787 DECOY_TOKEN=… sh -c "$(the command)"

The bearer token is never written out: the command reads it from `$DECOY_TOKEN` (pair an agent
with the sandbox and export its access token), and the base URL from `$DECOY_BASE_URL`. A JSON
body goes in a quoted here-doc (the shell expands nothing in it); any other body is one quoted
argument. `-i` prints the answer's status line and headers, so the status can be compared with
the one recorded.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from decoy_lab.conformance.model import Exchange, Run

HEREDOC = "DECOY_BODY"


def curl(x: Exchange) -> str:
    """The command line that re-sends exchange `x` (one line, or a here-doc for a JSON body)."""
    target = x.path + (f"?{x.query}" if x.query else "")
    words = ["curl", "-sS", "-i", "-X", x.method, f'"$DECOY_BASE_URL"{shlex.quote(target)}']
    if x.token:
        words += ["-H", '"Authorization: Bearer $DECOY_TOKEN"']
    if not x.body:
        return " ".join(words)
    words += ["-H", shlex.quote(f"Content-Type: {x.content_type or 'application/json'}")]
    text = _text(x.body)
    if text is None:
        return " ".join(words) + f"  # the {len(x.body)}-byte body is not text: send it from a file"
    if _is_json(text) and HEREDOC not in text:
        return " ".join([*words, "--data-binary", "@-", f"<<'{HEREDOC}'"]) + f"\n{text}\n{HEREDOC}"
    return " ".join([*words, "--data-binary", shlex.quote(text)])


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
