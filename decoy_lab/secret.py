"""`Secret`: a token's text behind a repr that shows only its fingerprint. A leaf: the transport,
the store and the client all hold tokens this way."""

from __future__ import annotations

import hashlib


def secret_fingerprint(value: str | Secret | None) -> str:
    """A short safe name for a secret: `sha256:` and the first 8 hex digits."""
    if isinstance(value, Secret):
        value = value.reveal()
    if not value:
        return "none"
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:8]


class Secret:
    """A secret text (a token): its repr and str show only a fingerprint, so it may sit in a
    traceback's locals, a log line or a notebook cell; `reveal()` is the one way to the text."""

    __slots__ = ("_text",)

    def __init__(self, text: str | Secret):
        self._text = text.reveal() if isinstance(text, Secret) else text

    def reveal(self) -> str:
        return self._text

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Secret):
            return self._text == other._text
        return self._text == other if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)

    def __bool__(self) -> bool:
        return bool(self._text)

    def __repr__(self) -> str:
        return f"Secret({secret_fingerprint(self._text)})"

    __str__ = __repr__
