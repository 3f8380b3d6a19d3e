"""The HTTP boundary: one httpx client, the bearer token, errors translated once, retries.

routes.py      every API path the client calls, named once
retry.py       the spec's retry rule: RetryPolicy and send_with_retries
deadline.py    each call's overall deadline, down to every socket operation
jsonstream.py  one array of a JSON answer read while it arrives
oversized.py   an element over the size cap, skipped unheld and reported in its place
tokens.py      Tokens: the credentials, and reading a token answer
answers.py     what an answer means: a value or a typed error, and no answer at all
streams.py     StreamedArray: a streamed answer's rows handed out as they arrive
auth.py        the bearer token and its refresh on a 401, as an httpx.Auth flow
api.py         Api: the one httpx client of a connection
"""
