"""The sandbox's checks: who may talk to it, what a connection holds, and what it may reach.

One module per concern, each importing only those above it (and stores/, `sandbox/core.py`):

    guard.py        the owner surface for the owner alone; no web page on the agent API; body caps
    faults.py       injected faults (drops, delays, 5xx) around a route
    grants.py       the permission vocabulary: rows, selections, needs, scopes, coverage
    selectors.py    Selector / MemoryAccess: what read, write and delete reach
    grantstore.py   a connection's live and ended grants, and refusals built from them
    bearer.py       bearer token → Agent, or a 401 that says how to recover
    bodies.py       request bodies of the per-memory routes, checked on what the server sees
    access_reasons.py  access reasons: who may read, write or delete a row, and why
    readcache.py    a connection's encoded memories list, kept until anything changes
    acctaccess.py   the account family's scope and permission gates, and a creator's own rights
    acctbodies.py   request bodies of the account family, checked on what the server sees
    acctshapes.py   an account and a decoy as one connection may see them
    listing.py      a list's query: limit, cursor, order, sort_by, the plain filters
"""
