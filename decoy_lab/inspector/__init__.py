"""The inspector: a recording reverse proxy in front of the sandbox or any Decoy server.

Give an agent the inspector's URL instead of the server's: every exchange passes through byte for
byte and is recorded as a `Flow`, its secrets masked, its sealed rows opened where a key allows
(the sandbox's owner key, the agent's key) and parsed by layout where none does.

    flow_record.py  the flow record: Flow, Body, Timings, Row; Flow.to_dict for views and the HAR
    masking.py    secrets learned from each exchange and masked as fingerprints wherever they appear
    senders.py    which agent sent an exchange: its paired name, followed through its tokens
    opening.py    the rows a flow carries, opened with the owner's or the agent's key, or by layout
    legacy.py     the legacy space routes and memory-wraps, opened the same way (space keys by skid)
    account_bodies.py  the account family's bodies (records, credentials, fields, decoys, unlocks), opened the same way
    tee.py        what the proxy tees off an exchange: a body up to the cap, a memories answer's rows
    recorder.py   the newest flows in order: bodies teed up to a cap, masked and opened off the request path
    upstream.py   the HTTP/1.1 client towards the upstream (answers read by llhttp): pooled, streamed
    proxy.py      the ASGI reverse proxy: streamed both ways, every failure recorded, no owner surface
    lifespan.py   the ASGI lifespan answered one way: confirm startup, close and confirm shutdown
    serve.py      uvicorn on a loopback port in a daemon thread, with the sandbox's hardened config
    agentside.py  the HTTP/1.1 server towards the agents (llhttp, strict): limits, deadlines, refusals
    proxy_child.py  the proxy in a process of its own: each exchange sent to the inspector as data frames
    proxy_process.py  starting that process, feeding the recorder from it; a dead one ends its flows
    har.py        HAR 1.2 out (whole, or streamed as flows finish) and back in, replayed, re-sent
    inspector.py  Inspector: start / open / replay, flows and rows as DataFrames, save, close
    command.py    `decoy-lab proxy`: add_arguments(parser) and run(args)

`decoy_lab/widgets/flows.py` (the flows view) shows the flows; `widgets/flowdetail.py` opens one.
"""

from __future__ import annotations

from typing import Any

from decoy_lab import lazy

# Names load on first use, so `decoy-lab --help` (which builds this package's parser) stays quick.
_EXPORTS = {
    "Flow": "flow_record",
    "Inspector": "inspector",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return __all__
