"""`decoy-lab account-import` seals each record as it reads it, so what it reads must be what the
owner's apps read: a CSV cut off inside a quote is a mistake (not an account named by the rest of
the file), and a row whose username, password, URL or notes is not text (a number, an object) is
a mistake naming the row and the kind of value — never the value, which may be a password.
Nothing is sent. 001, `account_create_batch`: "each item's `encrypted_data` sealed with the vault
key … the writer must flag stored passwords"."""

from __future__ import annotations

import json

import pytest

from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")


@pytest.fixture(scope="module")
def sandbox(config):
    with shell_sandbox(("--name", "Typed import", "--permission", "everything", *OWNER)) as sb:
        yield sb


def listed() -> int:
    code, out, err = run("accounts", "--json", *OWNER)
    assert code == 0, err
    return len(json.loads(out))


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("cut.csv", 'name,username,password\n"Unterminated,me@x.test,pw-cut-1\n', "not a CSV the import reads"),
        ("number.json", '[{"name": "Num Co", "password": 12345678}]', "row 1's password is a number, not text"),
        ("object.json", '[{"name": "Obj Co", "username": {"a": 1}}]', "row 1's username is an object, not text"),
        ("urls.json", '[{"name": "Url Co", "urls": "https://x.test"}]', "row 1's urls is text, not a list of text"),
        ("flag.json", '[{"name": "Bool Co", "notes": true}]', "row 1's notes is true or false, not text"),
    ],
)
def test_a_row_the_owners_apps_would_not_read_is_a_mistake(sandbox, tmp_path, name, text, said):
    before = listed()
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run("account-import", str(path), *OWNER)
    assert code == 2 and err.startswith("error: ") and said in err and "nothing was sent" in err, err
    assert "12345678" not in out + err and "pw-cut-1" not in out + err
    assert listed() == before


def test_a_quoted_comma_is_still_one_cell(sandbox, tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('name,username,password\n"Quoted, Inc.",me@q.test,pw-quoted-2\n', encoding="utf-8")
    code, out, err = run("account-import", str(path), *OWNER)
    assert code == 0, err
    assert "Quoted, Inc." in out and "pw-quoted-2" not in out + err
