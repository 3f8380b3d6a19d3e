"""The inspector in front of a staging hop, opening rows with the sandbox's owner's-eye check.

`Inspector.start(sandbox=…)` forwards to the sandbox itself; a conformance run puts the staging
hop between them, so the inspector is assembled here from its public parts (Recorder, Opener,
ProxyProcess: the proxy in a process of its own) with the owner's-eye check of the sandbox behind the hop
(`decoy_lab.sandbox.phone.appview.check_row`, what the sandbox's own app-view runs).
"""

from __future__ import annotations

from typing import Any

from decoy_lab.inspector.inspector import Inspector
from decoy_lab.inspector.opening import Opener
from decoy_lab.inspector.proxy_process import ProxyProcess
from decoy_lab.inspector.recorder import Recorder


def owner_check(sandbox: Any) -> Any:
    """(row, trace) → the owner's app's view of that row, in the running sandbox; `accounts`: the
    owner's phone's checks of the account family's bodies (inspector/account_bodies.py)."""
    from decoy_lab.inspector.account_bodies import PhoneEye
    from decoy_lab.sandbox.phone import appview

    class Check:
        key = sandbox.owner.key  # the owner's private key: opens the legacy space keys wrapped to it
        accounts = PhoneEye(sandbox.state)  # the owner's own sandbox: its phone holds the vault key

        def __call__(self, row: dict, trace: Any) -> dict:
            return appview.check_row(sandbox.state, row, trace=trace)

        def stored_owner_wrap(self, row_id: str, kid: str) -> str | None:
            """The owner_wrap the sandbox stores for this row under `kid` (an edit that sends none,
            under a key the owner rotated: the owner's app holds its wrap)."""
            stored = next((r for r in sandbox.owner.rows() if r.get("id") == row_id), None)
            if stored is None or stored.get("kid") != kid:
                return None
            wrap = stored.get("owner_wrap")
            return wrap if isinstance(wrap, str) else None

    return Check()


def start_inspector(
    upstream: str, sandbox: Any, *, timeout: float = 60.0, agent_key: bytes | str | None = None
) -> Inspector:
    """A recording inspector forwarding to `upstream` (the hop), opening rows as `sandbox`'s owner
    (and with `agent_key`, the agent's PEM key, as the agent reads them back)."""
    recorder = Recorder(opener=Opener(owner_check=owner_check(sandbox), agent_key=agent_key))
    served = ProxyProcess(recorder, upstream, timeout=timeout)
    return Inspector(recorder, served=served, upstream=upstream, sandbox=sandbox)
