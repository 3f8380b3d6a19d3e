"""When the owner's phone runs: the asks it gets and when it answers them on its own.

Not inside a save (so a test can always observe `preparing` first). It runs when asked
(`Owner.share()`, `POST /_sandbox/share`) and, like the real phone answering a background push,
once something has been owed `auto_share_after` seconds (default 5, the first retry an agent is
told; `due`): the app's background task looks every second, and a read runs a due pass itself; `configure(state, auto_share_after=None)` turns that off,
as if the phone were switched off. A read answered `failed_unknown` asks once more, at most once
a day for the owner (`ask_for_unknown`); while `preparing_unknown`, the phone is asked on the
spec's first-day schedule (`ask_for_preparing_unknown`: about 1, 16 and 46 minutes and 4 hours
after the grant). The bookkeeping is `state.phone` (core.PhoneLog).
"""

from __future__ import annotations

from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import DEFAULT_AUTO_SHARE_AFTER, SandboxState

DAY = 86400.0


def configure(state: SandboxState, *, auto_share_after: float | None = DEFAULT_AUTO_SHARE_AFTER) -> None:
    """Set how long after something is owed the phone answers on its own (None: never)."""
    state.phone.auto_share_after = auto_share_after


def nudge(state: SandboxState, now: float) -> None:
    """Something is owed: the phone is asked (once; the pass clears it)."""
    if state.phone.nudged_at is None:
        state.phone.nudged_at = now


def ask_for_unknown(state: SandboxState, now: float) -> bool:
    """A `failed_unknown` read: "a read may ask once more, at most once a day per owner" (the
    sandbox has one owner). True when this read asks the phone."""
    last = state.phone.unknown_read_ask_at
    if last is not None and now - last < DAY:
        return False
    state.phone.unknown_read_ask_at = now
    nudge(state, now)
    return True


UNKNOWN_ASKS = (60.0, 16 * 60.0, 46 * 60.0, 4 * 3600.0)


def ask_for_preparing_unknown(state: SandboxState, agent: Agent, now: float) -> bool:
    """`preparing_unknown`: "Decoy asks the owner's phone for it during the first day after this
    connection's approval or newest grant (about 1, 16 and 46 minutes and 4 hours after it)".
    Asks due by now and not yet sent are sent (one push); reading more often asks no more often."""
    base = unknown_base(agent)
    due = [base + t for t in UNKNOWN_ASKS if base + t <= now]
    sent = state.phone.unknown_asks_sent
    if not due or sent.get(agent.token_id, float("-inf")) >= due[-1]:
        return False
    sent[agent.token_id] = due[-1]
    nudge(state, now)
    return True


def note_write(state: SandboxState) -> None:
    """Every saved row or edit nudges the owner's phone."""
    nudge(state, float(state.clock()))


def key_time(agent: Agent) -> float:
    return float(agent.key_changed_at or agent.approved_at or 0.0)


def unknown_base(agent: Agent) -> float:
    """When the first day of asks for grants the server cannot see into starts: this
    connection's approval, its newest grant or its newest key, whichever is latest."""
    return max(float(agent.newest_grant_at or 0.0), float(agent.approved_at or 0.0), key_time(agent))


def due(state: SandboxState, now: float) -> bool:
    """Does the phone answer now on its own? Something was owed `auto_share_after` seconds ago."""
    after, asked = state.phone.auto_share_after, state.phone.nudged_at
    return after is not None and asked is not None and now - asked >= after
