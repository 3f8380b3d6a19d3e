"""The client's protocol: the rules of talking to Decoy, each over a narrow session.

session.py  the session the rules work through
pairing.py  the OAuth 2.0 device grant with named permissions
access.py   what a connection holds and what it has asked for
verify.py   read a write back and check it reads as intended
legacy.py   legacy space rows: edit, delete, MEMORY_MOVING
writes/     save, edit, delete and share by the spec's retry rules, one module per verb
syncfeed.py the sync feed followed once: cursor pages, the 410 rule, the page cap
account_names.py account names from the authorized account list, page by page
accounts_write.py   an account (with its Decoy address or without), its password, a field added, changed, deleted; an update
accounts_unlock.py  an account's secrets read back: unlock asked, polled, opened
accounts_list.py    the accounts this connection may see, each read with what it can open
accounts_decoys.py  an account's addresses (list, protect, rename by a queued edit, pause), accounts in bulk
accounts_pending.py an account write journaled until its outcome is known, and finished by resend
accounts_checks.py  what the account calls take, and what an answer must hold before a write is built on it
unseal.py   step-through: one served row read step by step, a memory sealed and not sent
"""
