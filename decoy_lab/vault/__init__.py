"""A loaded vault: rows read with this connection's key, kept as data, and its frames.

frames.py  decoded rows → pandas DataFrames (pure functions)
read.py    the loaded vault: decode, read in parallel, what is still waiting
"""
