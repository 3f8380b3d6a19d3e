"""Secrets out of the record: learn every secret an exchange carries, mask it wherever it appears.

A `Masker` learns secrets from what it is shown: the credentials of `Authorization`, `Cookie`,
`Set-Cookie` and `X-Sandbox-Token` headers, and the values of secret members (`access_token`,
`refresh_token`, `device_code`, `client_secret`, `code_verifier`, `token`…) in JSON bodies, form
bodies and query strings. It then replaces each learned secret, in any text or bytes of the
record (headers, bodies, query strings: wherever it appears, JSON-escaped or URL-encoded too), by
its fingerprint (`secret_fingerprint`: `sha256:` and 8 hex digits), so a flow can still be matched
to the token it carried. User codes stay: they are shown to people. With `reveal=True` nothing is
masked. The learned secrets are never shown, not even in the repr.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus

from decoy_lab.secret import secret_fingerprint

SECRET_MEMBERS = frozenset(
    {
        "access_token",
        "refresh_token",
        "device_code",
        "client_secret",
        "code_verifier",
        "id_token",
        "token",
        "private_key",
        "password",
    }
)
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-sandbox-token"})
MIN_SECRET = 6  # shorter values are never learned (masking "abc" everywhere would wreck the record)
MAX_DEPTH = 64
FINGERPRINT = re.compile(r"sha256:[0-9a-f]{8}")  # what `secret_fingerprint` makes: already masked


# how each name of SECRET_MEMBERS ends, as written in JSON: one search finds the four *token names
_NAMES = tuple({(b'token"' if name.endswith("token") else f'{name}"'.encode("ascii")) for name in SECRET_MEMBERS})


def _may_name_a_secret(data: bytes) -> bool:
    """False only when no member of `data` can be a secret one: it is UTF-8 JSON in which no name
    of SECRET_MEMBERS appears as written and there is no escape at all (a \\u escape is the one
    way to write a name otherwise). The searches take ~17 ms on an 8 MB memories answer; parsing
    it to learn nothing took ~40 ms."""
    if json.detect_encoding(data) not in ("utf-8", "utf-8-sig") or b"\\" in data:  # one byte: memchr
        return True
    return any(name in data for name in _NAMES)


class Masker:
    """What the record must not show, learned as exchanges go by; `mask(...)` hides it."""

    def __init__(self, *, reveal: bool = False):
        self.reveal = reveal
        self._known: dict[str, str] = {}  # secret → fingerprint
        self._order: list[tuple[bytes, bytes]] = []  # (secret spelling, fingerprint), longest first
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Masker {len(self._known)} secrets learned{', revealing' if self.reveal else ''}>"

    def __len__(self) -> int:
        return len(self._known)

    def __contains__(self, value: object) -> bool:
        return value in self._known

    # -- learning ----------------------------------------------------------------------------------
    def learn(self, value: Any) -> None:
        """One secret (a str of at least MIN_SECRET characters; anything else is ignored)."""
        if not isinstance(value, str) or len(value) < MIN_SECRET or value in self._known:
            return
        fp = secret_fingerprint(value)
        with self._lock:
            self._known[value] = fp
            spellings = {value, json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value)}
            for s in spellings:
                self._order.append((s.encode("utf-8"), fp.encode("ascii")))
            self._order.sort(key=lambda pair: -len(pair[0]))

    def learn_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        for name, value in headers:
            if name.lower() in SECRET_HEADERS:
                self.learn(_credential(name, value))

    def learn_query(self, query: str) -> None:
        for name, value in parse_qsl(query, keep_blank_values=False):
            if name in SECRET_MEMBERS:
                self.learn(value)

    def learn_body(self, data: bytes, content_type: str | None) -> None:
        """Secrets of a JSON or form body (any body that parses as one; others teach nothing)."""
        if not data:
            return
        ctype = (content_type or "").split(";")[0].strip().lower()
        if ctype == "application/x-www-form-urlencoded":
            try:
                self.learn_query(data.decode("utf-8"))
            except UnicodeDecodeError:
                pass
            return
        if ("json" in ctype or data[:1] in (b"{", b"[")) and _may_name_a_secret(data):
            try:
                obj = json.loads(data)
            except (ValueError, RecursionError):
                return
            self._learn_json(obj, 0)

    def _learn_json(self, obj: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in SECRET_MEMBERS and isinstance(v, str):
                    self.learn(v)
                else:
                    self._learn_json(v, depth + 1)
        elif isinstance(obj, list):
            for v in obj:
                self._learn_json(v, depth + 1)

    # -- masking -----------------------------------------------------------------------------------
    def mask_bytes(self, data: bytes) -> bytes:
        if self.reveal or not data or not self._order:
            return data
        for secret, fp in list(self._order):
            if secret in data:
                data = data.replace(secret, fp)
        return data

    def mask_text(self, text: str) -> str:
        if self.reveal or not text or not self._order:
            return text
        return self.mask_bytes(text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")

    def mask_headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Headers as recorded: a secret header's credential as its fingerprint, learned or not."""
        out = []
        for name, value in headers:
            if not self.reveal and name.lower() in SECRET_HEADERS:
                cred = _credential(name, value)
                if cred and not FINGERPRINT.fullmatch(cred):
                    value = value.replace(cred, secret_fingerprint(cred))
            out.append((name, self.mask_text(value)))
        return out


def _credential(name: str, value: str) -> str:
    """The secret part of a secret header: after the scheme of `Authorization: Bearer …`, the
    value of a cookie pair (name=value; only the first pair's value), the whole of anything else."""
    value = value.strip()
    lname = name.lower()
    if lname in ("authorization", "proxy-authorization"):
        scheme, _, cred = value.partition(" ")
        return cred.strip() if cred else scheme
    if lname in ("cookie", "set-cookie"):
        first = value.split(";", 1)[0]
        return first.partition("=")[2].strip() or first
    return value


def bearer(headers: Iterable[tuple[str, str]]) -> str | None:
    """The bearer token of a request's headers, or None."""
    for name, value in headers:
        if name.lower() == "authorization":
            scheme, _, cred = value.strip().partition(" ")
            if scheme.lower() == "bearer" and cred.strip():
                return cred.strip()
    return None
