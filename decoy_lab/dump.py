"""Open any blob a user pastes: parse it, then run the matching recipe with a trace.

One place for "what does this base64 hold?", shared by `%decoy dump` and `decoy-lab dump`.
A VAULT blob opens with a 32-byte memory key; an agent envelope with an agent's RSA key; an
owner envelope with the owner's RSA key (the sandbox's simulated phone has one).
"""
from __future__ import annotations

from pathlib import Path

from . import sealing, wire
from .crypto import AgentKey
from .errors import DecoyError
from .trace import Trace


def open_blob(blob: bytes | str | wire.Layout, *, key: bytes | None = None, key_b64: str | None = None,
              key_file: str | Path | None = None, private_key: AgentKey | None = None) -> Trace:
    """Parse `blob` and open it with whichever key fits its kind; every step is in the Trace.

    A failure never raises: it is the failing step of the returned trace.
    """
    layout = blob if isinstance(blob, wire.Layout) else None
    trace = Trace("open blob")
    try:
        if layout is None:
            raw = blob if isinstance(blob, (bytes, bytearray)) else None
            if raw is None:
                with trace.step("base64 decode") as s:
                    raw = wire.b64decode(blob, field="blob")
                    s.output = f"{len(raw)} bytes"
            layout = wire.parse(raw)
        trace.title = f"open {layout.kind.replace('_', ' ')}"
        if key_b64 is not None:
            key = wire.b64decode(key_b64, field="key")
        if key_file is not None:
            private_key = AgentKey.from_pem(Path(key_file).read_text())
        if layout.kind == "vault":
            if key is None:
                trace.add("need a key", ok=False, reason="a VAULT blob opens with its 32-byte memory key (--key)")
                return trace
            sealing.open_vault(key, layout.data, trace=trace)
        elif layout.kind == "agent_envelope":
            if private_key is None:
                trace.add("need a key", ok=False, reason="an agent envelope opens with the agent's private key")
                return trace
            sealing.unwrap_as_agent(layout.data, private_key, trace=trace)
        else:
            if private_key is None:
                trace.add("need a key", ok=False, reason="an owner envelope opens with the owner's private key")
                return trace
            sealing.unwrap_as_owner(layout.data, private_key, trace=trace)
    except DecoyError as exc:
        if trace.failed is None:  # failed before any step recorded it
            trace.add("parse", ok=False, reason=str(exc))
    return trace
