"""What the checked agent (or the server) chose never acts on the terminal, and the JUnit XML is
well-formed whatever the evidence holds.

The attack (Low): `check` printed raw row ids and the agent's stderr, so `\\x1b]0;PWNED\\x07` in a
row id retitled the terminal, and the JUnit XML carried a raw ESC (not well-formed XML 1.0).
Now every line of the scorecard is escaped (`decoy_lab.text.escaped`: `\\x1b`, `\\x07`, …), and
so is each evidence line in the XML.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

from decoy_lab.conformance.report import junit, page, score, text, to_json
from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run
from decoy_lab.conformance.rules import RULES
from decoy_lab.text import escaped

from support.check_agents import ROOT

TITLE = "\x1b]0;PWNED\x07"  # OSC 0: sets the terminal's title
SHOWN = "\\x1b]0;PWNED\\x07"
RAW = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) != "\n"]


def hostile_card():
    ids = [TITLE, f"\x9b2J{TITLE}", "a\ud800b\u202e"]  # C1 CSI, a lone surrogate, a bidi override
    rows = {"rows": [{"id": i, "ciphertext": "AAAA", "owner_wrap": "AAAA", "kid": "00"} for i in ids]}
    x = Exchange(
        4, "POST", MEMORIES, "", 200, "answered", 1.0, 1.1, rows, None, {}, [], "sha256:0123abcd",
        json.dumps(rows).encode(), "application/json",
    )  # fmt: skip
    leak = Exchange(5, "GET", f"/api/{TITLE}", "access_token=1", 200, "answered", 2.0, 2.1, None, None, {}, [])
    run = Run("clean", [x, leak], exit_code=1, stderr=f"Traceback …\nboom {TITLE}\n")
    return score(RULES, [run], "python agent.py")


def test_a_row_id_with_escapes_reaches_neither_the_terminal_nor_the_reports_raw():
    card = hostile_card()
    shown = text(card)
    assert not any(c in shown for c in RAW), "no control character is printed raw"
    assert f"GET /api/{SHOWN} #5" in shown and "\\x9b2J" in shown  # (the third row id: one of "… more")
    shown.encode("utf-8")  # a lone surrogate is escaped, so the scorecard can be printed at all
    assert f"    | boom {SHOWN}" in shown, "the agent's stderr too"
    doc = json.loads(to_json(card).encode("utf-8"))  # written as UTF-8, read back the same
    assert any(TITLE in e for r in doc["rules"] for e in r["evidence"]), "JSON keeps the text (as \\u001b)"
    assert not any(c in page(card) for c in RAW)
    page(card).encode("utf-8")


def test_the_junit_xml_is_well_formed_whatever_the_evidence_holds():
    xml = junit(hostile_card())
    root = ET.fromstring(xml.encode("utf-8"))
    failures = {c.get("name"): c.findtext("failure") or "" for c in root.iter("testcase")}
    assert f"GET /api/{SHOWN} #5" in failures["pairing.no-token-in-url"]
    assert "row \\x1b]0;PWNE…" in failures["rows.self-wrap"]
    assert not any(c in xml for c in RAW if c not in "\t\r")


def test_checks_stdout_holds_no_raw_escape_from_the_agents_output(tmp_path):
    agent = tmp_path / "noisy.py"
    agent.write_text(
        textwrap.dedent(
            f"""
            import sys
            print({TITLE!r} + "stdout", flush=True)
            print("bad:", {TITLE!r}, "\\x9b31m\\x7f", file=sys.stderr)
            sys.exit(1)
            """
        )
    )
    out = {k: tmp_path / f"card.{k}" for k in ("xml", "json", "html")}
    done = subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", "--scenario", "clean", "--timeout", "60",
         "--junit", str(out["xml"]), "--json", str(out["json"]), "--html", str(out["html"]),
         "--", sys.executable, str(agent)],
        capture_output=True, timeout=180, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    stdout = done.stdout.decode("utf-8")
    assert done.returncode == 1, stdout + done.stderr.decode()  # it exited 1: outcome.finished fails
    assert not any(c in stdout for c in RAW), stdout
    assert f"bad: {SHOWN} \\x9b31m\\x7f" in stdout, "shown escaped, as the agent wrote it"
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    ET.parse(out["xml"])
    assert json.loads(out["json"].read_text())["scenarios"][0]["stdout"] == TITLE + "stdout\n"
    assert escaped(TITLE) == SHOWN
