"""What is kept on disk between sessions: profiles, the pending-writes journal, the sealed cache.

profiles.py  one profile per name: tokens, the agent key, the server
journal.py   writes whose outcome is not known yet
snapshot.py  what a cache file holds, row by row, and the vault rebuilt from it
body.py      a cache file's sealed body, written and read in pieces
sealed.py    files sealed beside the cache (the built map), and the writes in flight
cache.py     a sealed local copy of a profile's vault
"""
