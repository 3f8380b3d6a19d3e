"""A scorecard of failing rules with large bodies, as the report tests and the browser test of its
page both use: four scenarios, each POSTing four rows whose owner_wrap the owner's app cannot open."""

from __future__ import annotations

import base64
import json
import os

from decoy_lab.conformance.report import save, score
from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.runner import Staging
from decoy_lab.inspector.flow_record import Row

BLOB = base64.b64encode(os.urandom(4000)).decode()  # a 5,336-character wrap: no break in it
REASON = "the owner's app cannot open owner_wrap: owner plaintext check: the owner wrap holds 32 raw bytes"


def big_run(scenario: str = "clean") -> Run:
    rows = [{"id": f"{i:08d}-0000-4000-8000-000000000000", "kid": "00" * 8, "ciphertext": BLOB, "owner_wrap": BLOB}
            for i in range(4)]  # fmt: skip
    body = json.dumps({"rows": rows}).encode()
    opened = [Row(r["id"], f"request.rows[{i}]", "unreadable", REASON, "owner_wrap") for i, r in enumerate(rows)]
    post = Exchange(
        3, "POST", MEMORIES, "", 201, "answered", 1.0, 1.1, {"rows": rows}, {"created": []}, {}, opened,
        "sha256:0123abcd", body, "application/json",
    )  # fmt: skip
    read = Exchange(
        4, "GET", MEMORIES, "", 200, "answered", 2.0, 2.1, None, {"memories": []}, {}, [], "sha256:0123abcd"
    )
    return Run(scenario, [post, read], exit_code=0)


def big_card(tmp_path):
    runs = [big_run(s) for s in ("clean", "lost-answers", "preparing", "owner-edits")]
    card = score(RULES, runs, "python agent.py", staging=Staging(b"-----BEGIN PRIVATE KEY-----\nx\n"))
    card.staging.seeds = dict.fromkeys(("clean", "lost-answers", "preparing", "owner-edits"), "demo")
    save(card, tmp_path / "card.json")
    return card
