"""account-update re-seals an account's record whole (`--service`, with `--url`): the URL it
puts there is checked as account-new's and account-save's are — http or https, since the owner's
app offers it as a link — and a mistake sends nothing. `decoy-lab` over real HTTP.

001, `account_update`: "Identity fields (service_name/service_url/login_url/username/…) require an
accompanying `encrypted_data` re-seal".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.sandbox import Sandbox

from support.shell_runs import run, shell_sandbox

OWNER = ("--profile", "owner")


@pytest.fixture(scope="module")
def sandbox(config: Path) -> Iterator[Sandbox]:
    with shell_sandbox(("--name", "Update URLs", "--permission", "everything", *OWNER)) as sb:
        yield sb


def rev(account: str) -> int:
    code, out, err = run("accounts", "--json", *OWNER)
    assert code == 0, err
    return next(a["rev"] for a in json.loads(out) if a["id"] == account)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "mail.example"])
def test_a_url_that_is_not_http_is_a_mistake_and_nothing_is_sent(sandbox, url):
    code, out, err = run("account-save", "Mail", "--url", "https://mail.example", *OWNER)
    assert code == 0, err
    account = out.strip()
    before = rev(account)
    code, out, err = run("account-update", account, "--service", "Mail", "--url", url, "--json", *OWNER)
    assert code == 2 and out == ""
    assert err.startswith(f"error: the service URL must be http or https, not {url!r}; nothing was sent")
    assert rev(account) == before


def test_an_https_url_is_re_sealed(sandbox):
    code, out, err = run("account-save", "Shop", *OWNER)
    account = out.strip()
    code, out, err = run("account-update", account, "--service", "Shop", "--url", "https://shop.example", *OWNER)
    assert code == 0, err
    assert "re-sealed to the owner (name Shop, url https://shop.example)" in out
