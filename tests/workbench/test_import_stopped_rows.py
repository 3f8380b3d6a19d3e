"""An import that stops part way says what became of the rows it never sent, and what sends them:
`decoy-lab account-import` over real HTTP, its first call's answer lost.

001, `account_create_batch`: "Create up to **25 sealed accounts in one call**" — a 26th row goes
in a second call, which is never made once the first call's outcome is unknown (a batch has no
idempotency key); importing the whole file again would make the landed rows twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox

from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(("--name", "Import stops", "--permission", "everything", *OWNER)) as sb:
        yield sb


def test_rows_never_sent_are_said_with_what_sends_them(sandbox, tmp_path, monkeypatch):
    resume = Connection.resume.__func__
    monkeypatch.setattr(
        Connection, "resume", classmethod(lambda cls, profile="default", **kw: resume(cls, profile, retries=0, **kw))
    )
    export = tmp_path / "many.json"
    export.write_text(json.dumps([{"name": f"Row {n}"} for n in range(1, 27)]), encoding="utf-8")
    sandbox.state.faults.configure({"drop_after_commit": 1.0})
    try:
        code, out, _ = run("account-import", str(export), "--json", *OWNER)
    finally:
        sandbox.state.faults.configure({})
    assert code == 1
    got = json.loads(out)
    assert (got["outcome"], got["unknown"], got["not_sent"]) == ("unknown", 25, 1)
    assert got["rows"][25] == {"row": 26, "name": "Row 26", "outcome": "not sent"}
    assert "0 of 26 rows created, 25 unknown" in got["said"]
    assert (
        "1 not sent (the import stopped before them): once the rest is settled, import a file of those rows alone"
        in (got["said"])
    )
