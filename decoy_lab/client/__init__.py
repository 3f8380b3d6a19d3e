"""`Connection`: the object a user holds, composed of typed parts that each own their state.

saved.py       what a connection keeps between sessions: profile, tokens, cache, journal
grants.py      what a connection holds (/policies) and its grant requests
loader.py      a load: the streamed read, asked again, through the cache and the sync feed
accountbook.py AccountBook: the account family's part — records held in memory, fields by fields_rev, unlocks pending
connect.py     how a connection is made: paired, with the sandbox, or resumed from a profile
connection.py  Connection: session (protocol/session.py) + saved + grants + loader + account_book
"""
