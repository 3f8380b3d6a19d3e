"""Recipes over the wire primitives: seal and open, each recording its steps.

sealing.py  seal / open VAULT blobs, wrap and unwrap memory keys
account_records.py the account family's record kinds: account record, credential, field, details, patch, unlock answer
trace/      the record of a recipe's steps and every view of one
dump.py     open any pasted blob: find its layout, say how sure
export.py   a trace as a script that runs its recipe with `cryptography` alone
"""
