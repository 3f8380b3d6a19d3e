"""The simulated owner: the owner's phone and app, opening rows with the owner's key.

One module per concern, each importing only those above it (and checks/, stores/, `sandbox/core.py`):

    schedule.py     when the owner's phone runs and the asks it gets
    opening.py      opening a row as the owner's app does, naming the step that fails
    waiting.py      the preparing / failed report of a read while keys are owed
    legacy_rows.py  the phone moves legacy rows to their own keys
    sharepass.py    the phone's sharing pass
    appview.py      every row as the owner's app shows it, and as stored
    acctopen.py     opening accounts, credentials, fields and decoy details; the owner's-eye view
    passkeys.py     the owner's passkeys: made on the owner's surface, a sign-in signed once allowed
    keeper.py       the phone's account side: copies, field keys, decoy names, edits, unlocks
    seed.py         the seed vaults: `demo` and `none`
    ownerapp.py     the owner's own edits, renames, grant changes, key setup, account list
    owner.py        Owner: the phone's approvals, denials, revocation, expiry and key
    pages.py        the owner's pages as HTML: what is waiting, who is connected, what was decided
"""
