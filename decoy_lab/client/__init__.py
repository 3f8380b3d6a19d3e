"""`Connection`: the facade a user holds; it delegates to the rules, the store and the vault.

persist.py     what a connection keeps between sessions: profile, tokens, cache, journal, unpair
pairing.py     how a connection is made: paired, with the sandbox, or resumed from a profile
asking.py      what a connection holds (/policies) and its grant requests
loading.py     a load: the streamed read, asked again, through the cache and the sync feed
connection.py  Connection
"""
