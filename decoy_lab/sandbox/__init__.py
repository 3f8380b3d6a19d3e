"""A local Decoy server that follows the spec, with a simulated owner phone.

`create_app(db_path, …)` builds the Starlette app (for in-process tests);
`Sandbox.start(…)` serves one on a free loopback port in a background thread.

One module per concern, each importing only those above it (function-local imports included;
tests/sandbox/test_layers.py checks it). The sandbox imports the lower layers of decoy_lab
(errors, crypto, wire, sealing, memory) and never the client side, so it stays an independent
check of the client.

    core.py         HTTPProblem, FakeClock, SandboxState and its PhoneLog, iso, body helpers
    guard.py        the owner surface for the owner alone; no web page on the agent API
    faults.py       injected faults (drops, delays, 5xx) around a route
    grants.py       the permission vocabulary: rows, selections, needs, scopes, coverage
    selectors.py    Selector / MemoryAccess: what read, write and delete reach
    memstore.py     memory tables: rows, wraps, the phone's bookkeeping, the sync change log
    spacestore.py   legacy space tables
    db.py           Store: the one SQLite connection, one transaction per request
    grantstore.py   a connection's live and ended grants, and refusals built from them
    auth.py         bearer token → Agent, or a 401 that says how to recover
    readcache.py    a connection's encoded memories list, kept until anything changes
    bodies.py       request bodies of the per-memory routes, checked on what the server sees
    reach.py        access reasons: who may read, write or delete a row, and why
    schedule.py     when the owner's phone runs and the asks it gets
    opening.py      opening a row as the owner's app does, naming the step that fails
    waiting.py      the preparing / failed report of a read while keys are owed
    moves.py        the phone moves legacy rows to their own keys
    sharepass.py    the phone's sharing pass
    appview.py      every row as the owner's app shows it, and as stored
    seed.py         the demo vault
    ownerapp.py     the owner's own edits, renames, grant changes, key setup, account list
    owner.py        Owner: the phone's approvals, denials, revocation, expiry and key
    route modules   oauth, authorize, token_admin, policies, memories, memwrites, accounts, spaces, sync,
                    surface (the owner's surface, /_sandbox/) — none imports another
    app.py          create_app: every route module in one Starlette app
    server.py       Sandbox: serve an app on a loopback port; the `decoy-lab sandbox` command
    testing.py      pairing helpers for tests over HTTP

Import from the package (`from decoy_lab.sandbox import Sandbox`) or the module named above.
"""

from __future__ import annotations

from decoy_lab.sandbox.app import create_app
from decoy_lab.sandbox.core import FakeClock, HTTPProblem
from decoy_lab.sandbox.server import Sandbox, default_db_path

__all__ = ["FakeClock", "HTTPProblem", "Sandbox", "create_app", "default_db_path"]
