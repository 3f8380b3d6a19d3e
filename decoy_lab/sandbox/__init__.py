"""A local Decoy server that follows the spec, with a simulated owner phone.

`create_app(db_path, …)` builds the Starlette app (for in-process tests);
`Sandbox.start(…)` serves one on a free loopback port in a background thread.

One layer per sub-package, bottom first; a module imports only its own sub-package (modules
listed above it there) and the layers below it, function-local imports included
(tests/sandbox/test_sandbox_layers.py checks it). The sandbox imports only decoy_lab's leaves (errors,
vocab, shapes, gcpause, secret), wire, recipes and memory — never transport, store, vault, protocol
or client — so it stays an independent check of the client.

    core.py         HTTPProblem, FakeClock, SandboxState and its PhoneLog, iso, body helpers
    stores/         the SQLite stores: memstore, spacestore, acctstore, db
    checks/         guard, faults, grants, selectors, grantstore, auth, bodies, reach, readcache,
                    acctaccess, acctbodies, acctshapes
    phone/          the simulated owner: schedule, opening, waiting, moves, sharepass, appview,
                    acctopen, keeper, seed, ownerapp, owner
    routes/         one module per API area — oauth, authorize, token_admin, policies, accounts,
                    credential, acctfields, decoys, unlock, memories, memwrites, spaces, sync,
                    surface and acctsurface (the owner's surface, /_sandbox/); none imports another
    app.py          create_app: every route module in one Starlette app
    server.py       Sandbox: serve an app on a loopback port; the `decoy-lab sandbox` command
    testing.py      pairing helpers for tests over HTTP
    __main__.py     `python -m decoy_lab.sandbox`

Each sub-package's __init__.py lists its modules in import order.

Import from the package (`from decoy_lab.sandbox import Sandbox`) or the module named above.
"""

from __future__ import annotations

from decoy_lab.sandbox.app import create_app
from decoy_lab.sandbox.core import FakeClock, HTTPProblem
from decoy_lab.sandbox.server import Sandbox, default_db_path, server_config

__all__ = ["FakeClock", "HTTPProblem", "Sandbox", "create_app", "default_db_path", "server_config"]
