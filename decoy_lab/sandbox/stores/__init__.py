"""The sandbox's SQLite stores: tables and the queries over them, no rule of the API.

One module per concern, each importing only those above it (and `sandbox/core.py`):

    memstore.py     memory tables: rows, wraps, the phone's bookkeeping, the sync change log
    spacestore.py   legacy space tables and their SCHEMA
    passkeystore.py the owner's passkeys and the sign-ins asked of them
    acctstore.py    the account family: accounts, credential, secret fields, decoys, edits, unlocks
    db.py           Store: the one SQLite connection, one transaction per request; token_hash

Every query takes an open sqlite3 connection inside `store.tx()`; nothing here commits.
"""
