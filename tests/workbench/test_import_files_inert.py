"""A password manager's export is untrusted input to `decoy-lab account-import` (and `%decoy
account-import`): a file it cannot read is a mistake that names it (`error: …`, exit 2, nothing
sent), never a traceback; what it says of a row reaches the terminal shown, never acted on; and
neither a message nor what the notebook gives back repeats a password it holds.

001, `account_create_batch`: "Create up to **25 sealed accounts in one call**" — each record a
VAULT SealedBlob the owner's apps open as JSON, so a record that is not JSON is never sealed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.workbench import verbs

from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")  # the vault key: an import needs `everything`
PASSWORD = "pw-in-the-file-7"


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(("--name", "Import owner", "--permission", "everything", *OWNER)) as sb:
        yield sb


def accounts() -> int:
    code, out, err = run("accounts", "--json", *OWNER)
    assert code == 0, err
    return len(json.loads(out))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('[{"name": "A", "n": ' + "9" * 5000 + "}]", "not JSON the import reads (Exceeds the limit"),
        ("[" * 100_000 + "]" * 100_000, "not JSON the import reads (maximum recursion depth exceeded"),
        ('[{"name": "A", "password": NaN}]', "not JSON the import reads (NaN is not a JSON value)"),
        (f'name,notes\nA,"{"x" * 200_000}"\n', "not a CSV the import reads (row 1: field larger than field limit"),
        ('[{"name": "A"}, {"name": "B", "password": "\\udfff"}]', "row 2 holds a lone surrogate escape"),
    ],
    ids=["a number too long", "nesting too deep", "NaN", "a cell past csv's limit", "a lone surrogate"],
)
def test_a_file_the_import_cannot_read_is_a_mistake_and_nothing_is_sent(sandbox, tmp_path, body, said):
    export = tmp_path / "export.txt"
    export.write_text(body, encoding="utf-8")
    before = accounts()
    code, out, err = run("account-import", str(export), "--json", *OWNER)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {export}: {said}") and "nothing was sent" in err
    assert "Traceback" not in err
    assert accounts() == before


def test_a_first_line_that_is_a_record_is_not_repeated(sandbox, tmp_path):
    """An export with no header line has a record where the header goes, its password with it."""
    export = tmp_path / "headless.csv"
    export.write_text(f"https://mail.example,me@mail.test,{PASSWORD}\n", encoding="utf-8")
    code, out, err = run("account-import", str(export), *OWNER)
    assert code == 2 and out == ""
    assert "the CSV header has no name column (its first line has 3 cells, not all of them column names" in err
    assert PASSWORD not in err and "me@mail.test" not in err


def test_a_rows_name_is_printed_with_its_controls_escaped(sandbox, tmp_path):
    export = tmp_path / "hostile.json"
    export.write_text(json.dumps([{"name": "Evil\x1b]0;pwned\x07\x1b[2J", "password": PASSWORD}]), encoding="utf-8")
    code, out, err = run("account-import", str(export), *OWNER)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert out.rstrip().endswith("(Evil\\x1b]0;pwned\\x07\\x1b[2J)")
    assert PASSWORD not in out + err


def test_a_rows_name_in_json_is_the_same_json_with_nothing_a_terminal_acts_on(sandbox, tmp_path):
    """json escapes C0 controls only; a C1 control (U+009B is CSI) or a bidi override is escaped too."""
    name = "Shop\u009b2J\u202egnp.exe\x7f"
    export = tmp_path / "c1.json"
    export.write_text(json.dumps([{"name": name}]), encoding="utf-8")
    code, out, err = run("account-import", str(export), "--json", *OWNER)
    assert code == 0, err
    assert not any(ch in out for ch in "\u009b\u202e\x7f")
    assert json.loads(out)["rows"][0]["name"] == name


def test_what_the_notebook_gives_back_never_shows_a_password(sandbox):
    """`r = %decoy account-import FILE` gives back the run; `r.value` shown in a cell is its repr."""
    records = verbs.import_records(
        json.dumps([{"name": "Repr", "password": PASSWORD}]),
        source="export.json",
        verb="account-import",
        front=verbs.NOTEBOOK,
    )
    with Connection.resume("owner") as conn:
        ran = verbs.import_rows(conn, records)
    assert ran.ok and len(ran.created) == 1
    assert PASSWORD not in repr(ran)
