"""What is kept on disk between sessions: profiles, the pending-writes journal, the sealed cache.

profiles.py  one profile per name: tokens, the agent key, the server
journal.py   writes whose outcome is not known yet
cache.py     a sealed local copy of a profile's vault
"""
