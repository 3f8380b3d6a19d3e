"""`decoy-lab proxy --sandbox` in front of an account write: the exchange's line says how many of its
sealed rows opened, over real HTTP through the inspector.

001, `decoy_create`: the record goes to the owner ("`sealed_details` … sealed to the owner's public
key") with a `metadata_seals` copy for the connection, "sealed to that connection's public key" — so
the owner's key opens two of its three rows and only the agent's key opens the third. A line that
said just "layout only" read as if the inspector had opened none of them."""

from __future__ import annotations

import argparse
import io
import re
import threading

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.inspector import command

from support.polling import wait_for

pytestmark = pytest.mark.timeout(120)


def test_an_account_create_line_says_which_rows_opened():
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(["--sandbox"])
    out, stop = io.StringIO(), threading.Event()
    served = threading.Thread(target=command.run, args=(args,), kwargs={"out": out, "stop": stop}, daemon=True)
    served.start()
    try:
        url = wait_for(lambda: re.search(r"Decoy inspector on (http://127\.0\.0\.1:\d+)", out.getvalue()))[1]
        conn = Connection.pair(
            url, name="Line reader", profile=None, on_link=lambda *a: None,
            permissions=[{"permissions": ["account.create"]}],
        )  # fmt: skip
        with conn:
            made = conn.create_account("Acme", username="me@acme.test")
        line = wait_for(lambda: re.search(r"^#\d+ POST /api/agent/decoys 201 .*$", out.getvalue(), re.M))[0]
    finally:
        stop.set()
        served.join(30)
    assert made.account_id
    assert line.endswith("201 layout only (2 of 3 rows opened)"), line
