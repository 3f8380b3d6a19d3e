"""The guide's lines for accounts, run as typed (the port and the request id put in): pairing with
the account permissions and a first account from the shell; the `curl` lines of the sandbox
owner's account surface, a pending unlock allowed and denied and a Personal Alias made — against
the sandbox over real HTTP.

001, `unlock_request`: "A covering permission answers the request as `ready` at once; otherwise the
owner is asked on their phone and the request is `pending`." A shell user meets `pending` under
`decoy-lab sandbox --approve manual` and had no line telling how the owner answers it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox

from support.connections import paired
from support.shell_runs import prompt_sandbox, run, shell_env

pytestmark = pytest.mark.timeout(120)
GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text(encoding="utf-8")
SHELL = re.search(r"```sh\n(decoy-lab connect [^\n]*--name \"Sign-up helper\"[^`]*)```", GUIDE)
CURL = re.findall(r"^(curl -s [^\n]*?/_sandbox/(?:unlocks|aliases)[^\n]*?)(?:\s+#.*)?$", GUIDE, re.M)


def _typed(sb: Sandbox, line: str, request_id: str = "") -> dict:
    """The guide's line as a shell runs it, at this sandbox's port and with this request id."""
    typed = line.replace("http://127.0.0.1:8787", sb.url).replace("REQUEST_ID", request_id)
    done = subprocess.run(["sh", "-c", typed], capture_output=True, text=True, timeout=30, check=True)
    return json.loads(done.stdout)


def _line(path: str) -> str:
    (line,) = [c for c in CURL if re.search(rf"/_sandbox/{path}(?:\s|$)", c)]
    return line


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox.start(seed="none") as sb:
        yield sb


def test_the_owner_answers_a_pending_unlock_and_makes_an_alias_as_the_guide_says(sandbox):
    maker = paired(sandbox, [{"permissions": ["account.create"]}], name="Sign-up helper")
    made = maker.create_account("Acme", username="me@acme.test")
    assert maker.set_password(made.account_id, "hunter2-guide").ok
    reader = Connection.pair(
        sandbox.url, name="Billing assistant", profile=None, on_link=lambda *a: None,
        permissions=[{"permissions": ["account.read"], "domain": "billing.example"}],
    )  # fmt: skip
    sandbox.state.approve = "manual"  # as `decoy-lab sandbox --approve manual`

    asked = reader.unlock(made.account_id, reason="Download the invoice")
    assert asked.status == "pending", asked
    waiting = _typed(sandbox, _line("unlocks"))["unlocks"]
    assert [(u["id"], u["connection"], u["reason"]) for u in waiting] == [
        (asked.request_id, "Billing assistant", "Download the invoice")
    ]
    assert _typed(sandbox, _line("unlocks/approve"), asked.request_id)["status"] == "ready"
    got = reader.unlock(made.account_id, wait=30)  # the same request, polled
    assert got.status == "ready" and got.request_id == asked.request_id and got.password == "hunter2-guide"

    again = reader.unlock(made.account_id, reason="And last month's")
    assert again.status == "pending" and again.request_id != asked.request_id
    assert _typed(sandbox, _line("unlocks/deny"), again.request_id)["status"] == "denied"
    assert reader.unlock(made.account_id).status == "denied"

    alias = _typed(sandbox, _line("aliases"))
    assert alias["name"] == "Shopping" and alias["email"].endswith("@decoys.me")


def test_the_shell_pairs_for_accounts_and_makes_one_as_the_guide_says(tmp_path):
    assert SHELL, "the guide shows how to pair for accounts from the shell"
    with shell_env(tmp_path), prompt_sandbox() as sb:
        for line in SHELL[1].strip().splitlines():
            code, out, err = run(*shlex.split(line.replace("http://127.0.0.1:8787", sb.url))[1:])
            assert code == 0, (line, err)
        assert [k for k in ("account_id", "email", "decoy_id", "idempotency_key") if k in out] == [
            "account_id", "email", "decoy_id", "idempotency_key"
        ]  # fmt: skip
