"""A checked agent's method, path, body or row id never becomes a command in a reproducer line.

The attack (High): an agent sent the method `$(touch${IFS}PWNED)` (exchange #1) and a row with
the id `#1` (in exchange #2). The evidence of #2, "… #2, row #1: no self_wrap", was parsed for
`#N` and so linked exchange #1 too, whose `curl` line put the method in unquoted:
`curl -sS -i -X $(touch${IFS}PWNED) …` in the text, JSON and HTML reports, run by whoever pasted
it. Now every agent-chosen word of a curl line is `shlex.quote`d, a method that is not an HTTP
token is not made a command at all, and evidence links exchanges only by the numbers the rule
gave its `Evidence`, never by text.
"""

from __future__ import annotations

import html
import json
import pickle
import re
import shutil
import subprocess

import pytest

from decoy_lab.conformance import reproduce
from decoy_lab.conformance.report import evidence_refs, page, save, score, text, to_json
from decoy_lab.conformance.rulebook import MEMORIES, Evidence, Exchange, Run
from decoy_lab.conformance.rules import RULES

BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not on this machine")

SUBSTITUTION = "$(touch${IFS}PWNED)"  # not a token: never reproduced as a command
BACKTICKS = "`touch$IFS'PWNED2'`"  # every character a tchar: reproduced, quoted
# a stand-in for curl: it records its arguments, one per line, and sends nothing
FAKE_CURL = "curl() { printf '%s\\n' \"$@\" >> curl-args; }\n"


def exchange(n: int, method: str, path: str, *, query: str = "", request: object = None, body: bytes = b"") -> Exchange:
    return Exchange(
        n, method, path, query, 200, "answered", float(n), n + 0.1, request, None, {}, [], "sha256:0123abcd", body,
        "application/json" if body else "",
    )  # fmt: skip


@pytest.fixture
def hostile_run() -> Run:
    rows = {"rows": [{"id": "#1", "ciphertext": "AAAA", "owner_wrap": "AAAA", "kid": "00"}]}
    return Run(
        "clean",
        [
            exchange(1, SUBSTITUTION, MEMORIES, query="access_token=x"),  # named by pairing.no-token-in-url
            exchange(2, "POST", MEMORIES, request=rows, body=json.dumps(rows).encode()),  # row "#1", no self_wrap
            exchange(  # a token method, a quote in the path, a non-JSON body: all quoted
                3, BACKTICKS, "/api/x'$(touch${IFS}PWNED3)'", query="access_token=y&q='$(touch PWNED4)'",
                body=b"'; touch PWNED5; echo '$(touch PWNED6)",
            ),
        ],
    )  # fmt: skip


def run_in_bash(command: str, cwd) -> subprocess.CompletedProcess:
    """`command` as a pasted line, with curl replaced by FAKE_CURL, in the folder `cwd`."""
    assert subprocess.run([BASH, "-n", "-c", command], capture_output=True).returncode == 0, command
    env = {"PATH": "/usr/bin:/bin", "DECOY_BASE_URL": "http://127.0.0.1:9", "DECOY_TOKEN": "t"}
    return subprocess.run([BASH, "-c", FAKE_CURL + command], cwd=cwd, env=env, capture_output=True, text=True)


def curls_of(report_text: str, report_json: str, report_html: str) -> list[str]:
    """Every reproducer each report gives: the JSON's, and the HTML page's <pre class='curl'>
    (the text scorecard prints none: it names the body's file and `--replay` instead)."""
    doc = json.loads(report_json)
    from_json = [r["curl"] for rule in doc["rules"] for r in rule["reproducers"]]
    from_html = [html.unescape(c) for c in re.findall(r"<pre class='curl'>(.*?)</pre>", report_html, re.S)]
    assert set(from_html) <= set(from_json)
    assert not any(c in report_text for c in from_json if not c.startswith("#")), "no curl line in the terminal"
    return from_json


def test_a_row_id_hash_1_links_no_exchange_and_a_substitution_method_is_never_a_command(hostile_run, tmp_path):
    card = score(RULES, [hostile_run], "python agent.py")
    by_id = {v.rule.id: v for v in card.verdicts}
    self_wrap = by_id["rows.self-wrap"]
    assert self_wrap.status == "failed" and "row #1: no self_wrap" in self_wrap.evidence[0]
    assert [evidence_refs(e) for e in self_wrap.evidence] == [("clean", [2])], "the row id '#1' links nothing"
    assert [r["exchange"] for r in self_wrap.reproducers] == [f"POST {MEMORIES} #2"]
    assert reproduce.curl(hostile_run.exchanges[0]).startswith("# not reproduced: the method '$(touch")
    assert "not an HTTP token" in reproduce.curl(hostile_run.exchanges[0])

    saved = tmp_path / "saved"
    saved.mkdir()
    save(card, saved / "card.json")  # the bodies go to files: each curl sends its body from one
    reports = text(card), to_json(card), page(card, saved / "card.html")
    curls = curls_of(*reports)
    assert len(curls) >= 3 and any(c.startswith("# not reproduced") for c in curls)
    for command in curls:
        assert not re.search(r"(^|[^'])\$\(", command.split("# not reproduced", 1)[0]), command
        run_in_bash(command, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curl-args", "saved"], "curl ran, and nothing else"
    args = (tmp_path / "curl-args").read_text()
    assert f"-X\n{BACKTICKS}\n" in args, "the token method reached curl as one word, unexpanded"
    assert "http://127.0.0.1:9/api/x'$(touch${IFS}PWNED3)'?access_token=y&q='$(touch PWNED4)'\n" in args
    sent = re.search(r"^@(.*clean-exchange-3\.body)$", args, re.M)
    assert sent is not None, "the hostile body is sent from its file, never spelled in the line"
    assert (tmp_path / sent.group(1)).read_bytes() == b"'; touch PWNED5; echo '$(touch PWNED6)"
    assert reproduce.curl(hostile_run.exchanges[2]).endswith(
        "--data-binary ''\"'\"'; touch PWNED5; echo '\"'\"'$(touch PWNED6)'"
    )
    for line in reports[0].splitlines():  # in the text scorecard "$(" is only ever shown, in evidence or a comment
        assert not line.startswith("curl "), line
        if "$(" in line:
            assert line.lstrip().startswith(("saw:   [", "[")), line


def test_evidence_links_by_the_numbers_the_rule_gave_never_by_its_text():
    assert evidence_refs("[clean] POST /api/agent/context/memories #12, row 3f2a…: x") == ("", [])
    e = Evidence("POST /x #7, row #1: y", 7, scenario="clean")
    assert evidence_refs(e) == ("clean", [7]) and e == "POST /x #7, row #1: y"
    again = pickle.loads(pickle.dumps(e))
    assert (again, again.exchanges, again.scenario) == (e, (7,), "clean")


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type"),
    [
        ("GET\n", MEMORIES, b"", ""),
        ("GET", MEMORIES + "\x1b]0;PWNED\x07", b"", ""),
        ("POST", MEMORIES, b'{"a":\t1}', "application/json"),
        ("POST", MEMORIES, b"text \x9b31m", "text/plain"),
        ("POST", MEMORIES, b"{}", "text/plain\x1b[2J"),
    ],
)
def test_a_control_character_anywhere_is_never_put_in_a_command(method, path, body, content_type):
    x = exchange(1, method, path, body=body)
    x.content_type = content_type
    line = reproduce.curl(x)
    assert "not reproduced" in line or "send it from a file" in line
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", line), line
