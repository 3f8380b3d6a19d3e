"""The sandbox's HTTP routes: one module per API area, each a `routes` list; none imports another.

Each imports only the layers below (phone/, checks/, stores/, `sandbox/core.py`); `sandbox/app.py`
joins them into one Starlette app:

    oauth.py        the discovery documents and `POST /oauth/token`
    authorize.py    `POST /oauth/par` and `POST /oauth/device`
    token_admin.py  introspection (RFC 7662) and revocation (RFC 7009)
    policies.py     `GET /api/agent/policies` and the grant-request loop
    accounts.py     `GET /api/agent/accounts`
    memories.py     the memory read routes
    memwrites.py    the memory write routes
    spaces.py       the legacy space routes
    sync.py         the change feed
    surface.py      the owner's surface under `/_sandbox/`, for the owner alone (checks/guard.py)
    pages.py        the owner's home page (`/`, `/_sandbox/`) and `/connect`, in a browser
"""
