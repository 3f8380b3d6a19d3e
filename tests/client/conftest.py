"""The client side: `http`, `profiles`, pairing, `Connection` and its vault, mostly against the sandbox over
real HTTP. Legacy space rows have a folder (and fixtures) of their own."""
