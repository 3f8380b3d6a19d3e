"""The classes of wrongly sealed row, each with the problem the owner's-eye check names.

Decoy never decrypts, so it stores each of these and "the app silently can't read it". The
sandbox's test builds each class by hand and checks it is stored and flagged
(tests/sandbox/test_accepts.py); the client's test seals each through the client's own write path
and checks its verify step warns with that reason (tests/client/test_verify.py). Both cover every
class named here, and every problem the owner's app can meet has a class.
"""

from __future__ import annotations

#: class of wrongly sealed row → the `problem` app-view names (sandbox/phone/opening.py PROBLEMS)
CLASSES: dict[str, str] = {
    "raw key in owner_wrap": "owner_wrap",
    "a headerless envelope as owner_wrap": "owner_wrap",
    "a wrong header byte in owner_wrap": "owner_wrap",
    "kid of another key": "kid_mismatch",
    "ciphertext not a VAULT blob": "ciphertext",
    "plaintext not UTF-8 JSON": "json",
    "v is not 2": "version",
    "plaintext bound to another id": "binding",
    "a plaintext field of the wrong type": "fields",
}
