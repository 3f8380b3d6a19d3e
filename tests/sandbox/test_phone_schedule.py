"""The simulated owner phone shares on its own schedule, as a real phone answers its pushes."""

from __future__ import annotations

import time

from decoy_lab.client.connection import Connection
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.core import FakeClock


def test_the_phone_shares_in_the_background_without_a_read_or_a_button():
    """Spec 000: "Decoy asks the owner's phone in the background; read again after that many
    seconds." The sandbox's phone answers once something has been owed `auto_share_after` s,
    whether or not anyone reads meanwhile (issue 12: "without a button")."""
    clock = FakeClock()
    with Sandbox.start(seed="demo", clock=clock) as sb:
        conn = Connection.pair(sb.url, name="background", profile=None, on_link=lambda *_: None)
        try:
            first = conn.load()
            assert len(first.memories) == 0 and first.answer.get("preparing_others")
            assert sb.state.phone.last_share is None
            clock.advance(6)  # past auto_share_after: the phone's own tick answers, no read needed
            deadline = time.monotonic() + 10
            while sb.state.phone.last_share is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sb.state.phone.last_share is not None
            after = conn.load()
            assert len(after.memories) > 0 and not after.answer.get("preparing_others")
        finally:
            conn.close()
