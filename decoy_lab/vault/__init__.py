"""A loaded vault: rows read with this connection's key, kept as data, and its frames.

frames.py   decoded rows → pandas DataFrames (pure functions)
account_list.py the accounts a connection sees (AccountEntry) and their DataFrame
counts.py   the one count vocabulary every view and command speaks
decode.py   one served row → DecodedRow; legacy space rows opened with the space key
waiting.py  what a load is still waiting for, in words; waiting for rows (the spec's 90 s)
served.py   the served rows kept as their JSON text (blobs as bytes), made again as dicts when asked for
decoded_rows.py the decoded rows, a memory kept as its model and its DecodedRow made when asked for
heap.py     the heap a bulk read freed, given back to the system (glibc's malloc_trim)
reuse.py    which served rows an earlier load (the vault before, the cache) already read, and how
read.py     the loaded vault: read in parallel, reusing what an earlier load read
"""
