"""The connection's credentials, and reading a `/oauth/token` answer into them.

The tokens are held as `Secret`s from the moment they are read: a repr, a log line or a traceback's
locals show only their fingerprints. A token is what RFC 6750 §2.1 lets a Bearer header carry, or
it is refused by name (`is_bearer_token`), never sent as text the header cannot hold.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.secret import Secret, secret_fingerprint
from decoy_lab.shapes import fits, json_kind, shape_name

_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 §2.1: what a Bearer header can carry


def is_bearer_token(text: str) -> bool:
    """Whether `text` is what a Bearer header can carry (RFC 6750 §2.1)."""
    return _B64TOKEN.fullmatch(text) is not None


@dataclass
class Tokens:
    """The connection's credentials. The tokens are held as `Secret`s (revealed only where the
    Authorization header is built and where they are saved); the repr shows fingerprints."""

    access_token: Secret = field(repr=False)
    refresh_token: Secret | None = field(default=None, repr=False)
    token_id: str | None = None
    expires_at: float | None = None
    access_version: int | None = None

    def __post_init__(self) -> None:
        self.access_token = Secret(self.access_token)
        self.refresh_token = None if self.refresh_token is None else Secret(self.refresh_token)

    @classmethod
    def from_response(cls, body: dict[str, Any], *, previous: Tokens | None = None, now: float | None = None) -> Tokens:
        """Read a `/oauth/token` answer (either grant)."""
        if not isinstance(body, dict) or not isinstance(body.get("access_token"), (str, Secret)):
            raise DecoyError("the token answer carries no access_token")
        now = time.time() if now is None else now
        expires_in, version = body.get("expires_in"), body.get("access_version")
        refresh_token, token_id = body.get("refresh_token"), body.get("token_id")
        for name, value, shape in (
            ("token_id", token_id, str),
            ("expires_in", expires_in, float),
            ("access_version", version, int),
        ):
            if value is not None and not fits(value, shape):
                raise DecoyError(f"the token answer's {name} is {json_kind(value)}, not {shape_name(shape)}")
        if refresh_token is not None and not isinstance(refresh_token, (str, Secret)):
            raise DecoyError(f"the token answer's refresh_token is {json_kind(refresh_token)}, not a string")
        for name, value in (("access_token", body["access_token"]), ("refresh_token", refresh_token)):
            if value is not None and not is_bearer_token(Secret(value).reveal()):
                raise DecoyError(
                    f"the token answer's {name} holds characters a Bearer token cannot carry (RFC 6750 §2.1)"
                )
        return cls(
            access_token=Secret(body["access_token"]),
            refresh_token=Secret(refresh_token) if refresh_token else (previous.refresh_token if previous else None),
            token_id=token_id or (previous.token_id if previous else None),
            expires_at=now + float(expires_in) if expires_in is not None else None,
            access_version=version if version is not None else (previous.access_version if previous else None),
        )

    def __repr__(self) -> str:
        return (
            f"Tokens(token={secret_fingerprint(self.access_token)}, "
            f"refresh={secret_fingerprint(self.refresh_token)}, token_id={self.token_id!r}, "
            f"access_version={self.access_version})"
        )

    __str__ = __repr__
