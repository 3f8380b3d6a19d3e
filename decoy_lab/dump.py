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

_NEEDS = {
    "vault": "a VAULT blob opens with its 32-byte memory key (--key)",
    "agent_envelope": "an agent envelope opens with the agent's private key",
    "owner_envelope": "an owner envelope opens with the owner's private key",
}


def open_blob(
    blob: bytes | str | wire.Layout,
    *,
    key: bytes | None = None,
    key_b64: str | None = None,
    key_file: str | Path | None = None,
    private_key: AgentKey | None = None,
) -> Trace:
    """Parse `blob` and open it with whichever key fits its kind; every step is in the Trace.

    Without a fitting key the trace still shows the annotated layout, then a failing "need a
    key" step. A failure never raises: it is the failing step of the returned trace.
    """
    trace = Trace("open blob")
    try:
        raw = blob.data if isinstance(blob, wire.Layout) else blob
        if isinstance(raw, str):
            with trace.step("base64 decode", inputs={"characters": len(raw)}) as s:
                raw = wire.b64decode(raw, field="blob")
                s.output = f"{len(raw)} bytes"
        kind = blob.kind if isinstance(blob, wire.Layout) else wire.guess_kind(bytes(raw))
        trace.title = f"open {kind.replace('_', ' ')}"
        if key_b64 is not None:
            key = wire.b64decode(key_b64, field="key")
        if key_file is not None:
            private_key = AgentKey.from_pem(Path(key_file).read_text())
        if kind == "vault" and key is not None:
            sealing.open_vault(key, raw, trace=trace)
        elif kind == "agent_envelope" and private_key is not None:
            sealing.unwrap_as_agent(raw, private_key, trace=trace)
        elif kind == "owner_envelope" and private_key is not None:
            sealing.unwrap_as_owner(raw, private_key, trace=trace)
        else:  # no key fits: still show the layout, field by field
            with trace.step(f"parse {kind.replace('_', ' ')}", data=raw, inputs={"bytes": len(raw)}) as s:
                try:
                    layout = wire.parse(raw, kind)
                except DecoyError as exc:
                    s.fields = getattr(exc, "fields", ())  # the partial layout, failing bytes marked
                    raise
                s.fields = layout.fields
                s.output = ", ".join(f"{f.name}[{f.offset}:{f.end}]" for f in layout.fields)
            trace.add("need a key", ok=False, reason=_NEEDS[kind])
    except DecoyError as exc:
        if trace.failed is None:  # failed outside a step (a bad key argument)
            trace.add("read the key", ok=False, reason=str(exc))
    return trace
