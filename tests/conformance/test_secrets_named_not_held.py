"""`contents.no-secrets` tells a memory that says where a secret is kept from one that holds it.
000: "Keep booking references, passwords and keys out of the text; they belong on the account." A
memory saying "the login password is saved on the account" does what that sentence asks (the
rule's own fix: "write only that the account has them"); one saying "Password: pw-…" does not.
"""

from __future__ import annotations

import pytest

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.conformance.rules.contents import holds_value, secrets_in
from decoy_lab.inspector.flow_record import Row


def saved(text: str) -> Exchange:
    row = Row("r1", "request.rows[0]", "readable", plaintext={"kind": "memory", "text": text})
    sent = {"rows": [{"id": "r1", "kid": "k-r1", "ciphertext": "AQE…"}]}
    return Exchange(1, "POST", MEMORIES, "", 201, "answered", 1.0, 1.1, sent, {"created": ["r1"]}, {}, [row], "t1")


def judged(text: str) -> tuple[str, list[str]]:
    result = BY_ID["contents.no-secrets"].evaluate(Run("accounts", [saved(text)]))
    return result.status, [str(e) for e in result.evidence]


@pytest.mark.parametrize(
    "text",
    [
        # the outsider agent's memory, word for word: it names where the secrets are kept
        "Signed up for Acme Cloud: the login password is saved on the account and the API key is kept as a "
        "secret field on it.",
        "Password: stored on the account.",
        "The PIN is set on the account",
        "Password is kept in the credential; the API key is encrypted as a field",
        "The access token is not in this memory",
        "the password is the one on the account",
        "Its password is Saved on the account",  # a sentence's capital
        "login password is held by Decoy, the api_key is available on the account",
    ],
)
def test_a_memory_that_says_where_a_secret_is_kept_passes(text):
    assert judged(text) == (PASSED, [f"POST {MEMORIES} #1, row r1: no password, booking reference or key in its text"])


@pytest.mark.parametrize(
    ("text", "what", "shown"),
    [
        # fault 1 of the outsider run (`password-in-memory`): the generated password written out
        ("Acme Cloud account. Password: pw-Q7xk2LmN0pR4sT6uV8wY", "a password", "Password: pw…(23 chars)"),
        ("the login password is hunter22", "a password", "login password is hu…(8 chars)"),
        ("password is SuperSeed", "a password", "password is Su…(9 chars)"),  # a value, not "…ed" in lower case
        ("password: KEPT99", "a password", "password: KE…(6 chars)"),
        ("password is kept/stored", "a password", "password is ke…(11 chars)"),  # the whole value, not its first word
        ("api key is encrypted-9f3a", "a key or token", "api key is en…(14 chars)"),
        ("password is saved; the other password: hunter22.", "a password", "password: hu…(9 chars)"),
    ],
)
def test_a_memory_that_holds_a_secret_still_fails(text, what, shown):
    assert judged(text) == (FAILED, [f"POST {MEMORIES} #1, row r1: its text holds {what}: {shown!r}"])


def test_a_key_known_by_its_shape_is_a_secret_whatever_follows():
    assert holds_value("sk_live_abcdefghijklmnop")
    assert secrets_in("stripe sk_live_abcdefghijklmnop is saved") == [("an API key", "sk_live_abcdefghijklmnop")]
    assert not holds_value("password is saved.")
    assert not holds_value("password: Stored)")
    assert holds_value("password is sav3d")
    assert holds_value("password is savedX")  # only punctuation is cut from the end of the word
    assert holds_value("password is xsaved") is False  # any lower-case word in -ed describes
    assert holds_value("password is edited") is False
    assert holds_value("password is ed")  # no stem: a value
