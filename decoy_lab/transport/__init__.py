"""The HTTP boundary: one httpx client, the bearer token, errors translated once, retries.

api.py         the client, tokens, answer checks, retries
deadline.py    each call's overall deadline, down to every socket operation
jsonstream.py  one array of a JSON answer read while it arrives
"""
