"""The sandbox's HTTP routes: one module per API area, each a `routes` list; none imports another.

Each imports only the layers below (phone/, checks/, stores/, `sandbox/core.py`); `sandbox/app.py`
joins them into one Starlette app:

    oauth.py        the discovery documents and `POST /oauth/token`
    authorize.py    `POST /oauth/par` and `POST /oauth/device`
    token_admin.py  introspection (RFC 7662) and revocation (RFC 7009)
    policies.py     `GET /api/agent/policies` and the grant-request loop
    accounts.py     the accounts: list, create, read, update, delete, the account key
    credential.py   an account's saved password: set, status, the full-access read
    acctfields.py   an account's secret fields and who they are wrapped to
    acctdecoy.py    an account's Decoy email: protect (link or mint), burn-decoy
    decoys.py       Decoy addresses: create with their account, read, update, queued edits
    addresses.py    Decoy addresses as a set: list, preview, burn, pause, stats, notifications
    vaultkey.py     the vault-key surfaces: the wrapped key, metadata recipients, the edit queue
    unlock.py       `POST /api/agent/unlock` and its poll and withdrawal
    sealedsecrets.py  `GET /api/agent/sealed-secrets`: saved passwords sealed to the connection's key
    memories.py     the memory read routes
    memwrites.py    the memory write routes
    spaces.py       the legacy space routes
    sync.py         the change feed
    surface.py      the owner's surface under `/_sandbox/`, for the owner alone (checks/guard.py)
    acctsurface.py  the owner's surface for the account family: the phone's pass, unlock answers
    pages.py        the owner's home page (`/`, `/_sandbox/`) and `/connect`, in a browser
"""
