"""Every error decoy_lab raises, in one tree.

    DecoyError
    ├── WireFormatError(field, offset)        bytes that do not fit a layout
    ├── CryptoError(step)                     a seal/open step failed (GCM tag, RSA unwrap, kid …)
    ├── UnreadableRow(row_id, reason)         a served row this connection cannot read
    ├── MemoryModelError                      a row or edit the memory contract refuses
    ├── ProfileError                          a saved connection that is missing or unreadable
    │   └── UntrustedConfig(path)             a config not owned by this user, or writable by others
    ├── PairingError(code)                    the device grant ended without a token
    │   └── PairingCancelled
    ├── RevocationUnavailable                 the server advertises no revocation endpoint
    ├── TransportError(sent)                  the outcome of a request is unknown (network, timeout)
    │   └── OutcomeUnknown(entry, ids)        a write ran out of resends: kept in the journal to resend
    ├── AnswerRefused                         an answer too large or too deep to read safely
    └── APIError(status, code, recovery, body)  the server answered with an error
        ├── TokenError(recovery)              401: refresh, or pair again (TOKEN_REVOKED)
        ├── InsufficientGrant(permission_request)   403 with something to ask for
        ├── NotFound                          404 (never says whether the id exists)
        ├── RevConflict(current_rev)          409 REV_CONFLICT
        ├── KidConflict                       409 KID_CONFLICT
        ├── HoldersMissing(missing)           409 HOLDERS_MISSING
        ├── MemoryMoving(retry_after, current_rev)  409 MEMORY_MOVING (a legacy row moving to its own key)
        ├── GrantAlreadyRequested(request_id) 409 GRANT_ALREADY_REQUESTED
        ├── ReviewBusy(sends)                 409 REVIEW_BUSY (sent again, bounded)
        ├── RateLimited(retry_after)          429
        └── ServerError                       5xx (outcome unknown, like TransportError)

`is_definite_refusal` (in decoy_lab.memory) and the client's retry rules read this tree: a
TransportError or ServerError means "may have committed", everything else under APIError
means "did not happen".
"""

from __future__ import annotations

from typing import Any

from decoy_lab.shapes import fits


class DecoyError(Exception):
    """Base of every decoy_lab error."""


class WireFormatError(DecoyError, ValueError):
    """Bytes or base64 that do not fit a layout. Names the field and the byte offset, and how many
    bytes the field takes there (`length`; None: all that remain, as in a truncated blob)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        offset: int | None = None,
        kind: str | None = None,
        length: int | None = None,
    ):
        self.field = field
        self.offset = offset
        self.kind = kind
        self.length = length
        self.fields: tuple = ()  # the fields parsed before the failure (wire.parse fills it in)
        where = []
        if kind:
            where.append(kind)
        if field:
            where.append(f"field {field!r}")
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class CryptoError(DecoyError):
    """A cryptographic step failed; `step` names it (e.g. "AES-256-GCM open")."""

    def __init__(self, message: str, *, step: str | None = None):
        self.step = step
        super().__init__(f"{step}: {message}" if step else message)


class UnreadableRow(DecoyError):
    """A served row this connection cannot read, with the reason in words."""

    def __init__(self, row_id: str | None, reason: str):
        self.row_id = row_id
        self.reason = reason
        super().__init__(f"row {row_id}: {reason}")


class MemoryModelError(DecoyError, ValueError):
    """A memory, topic or edit that the memory contract refuses (raised before any request)."""


class ProfileError(DecoyError):
    """A profile that does not exist, has a bad name, or cannot be read."""


class UntrustedConfig(ProfileError):
    """A config directory, profile or journal that is not the current user's, or that group or
    others may write (`path` names it): another user could have planted it, so it is not read or
    written. The message says what to run to fix it (`chmod 700 …`, `chown …`), as ssh does."""

    def __init__(self, message: str, *, path: str | None = None):
        self.path = path
        super().__init__(message)


class PairingError(DecoyError):
    """The device grant ended without a token (`code`: access_denied, expired_token, …)."""

    def __init__(self, message: str, *, code: str | None = None):
        self.code = code
        super().__init__(message)


class PairingCancelled(PairingError):
    """The user cancelled a pairing that was still waiting for the owner."""


class RevocationUnavailable(DecoyError):
    """The server's metadata names no `revocation_endpoint` (RFC 8414), so an agent cannot end its
    own connection there; the owner ends it in the Decoy app."""


class TransportError(DecoyError):
    """No answer was read (network error, timeout, dropped connection), or one that does not say
    what was asked: the outcome is unknown. `sent` is False only when the request surely never
    left (the connection was refused)."""

    def __init__(self, message: str = "", *, sent: bool = True):
        super().__init__(message)
        self.sent = sent


class OutcomeUnknown(TransportError):
    """A write whose every send ended without an answer that proves it: some or all of its rows
    may have committed. Its sealed rows are kept in the pending-writes journal (`entry` names the
    entry, `ids` the row ids): `conn.resend()` — or running the same save again — sends the SAME
    rows, never new ones."""

    def __init__(self, message: str, *, entry: str | None = None, ids: list[str] | None = None, sent: bool = True):
        super().__init__(message, sent=sent)
        self.entry = entry
        self.ids = list(ids or [])


class AnswerRefused(DecoyError):
    """An answer decoy_lab will not read: one value over the size cap, or nested deeper than any
    row is. Asking again would bring the same answer, so it is reported, never retried."""


class APIError(DecoyError):
    """The server answered with an error status. Carries its `code`, `recovery` and body."""

    def __init__(
        self,
        status: int,
        code: str | None = None,
        message: str | None = None,
        *,
        recovery: str | None = None,
        body: Any = None,
    ):
        self.status = status
        self.code = code
        self.recovery = recovery
        self.body = body if body is not None else {}
        self.message = message or ""
        super().__init__(status, code, self.message)

    def __str__(self) -> str:  # built from the fields, so a caller may reword `message`
        text = f"HTTP {self.status}"
        if self.code:
            text += f" {self.code}"
        if self.message:
            text += f": {self.message}"
        if self.recovery:
            text += f" (recovery: {self.recovery})"
        return text


class TokenError(APIError):
    """401: the token expired (recovery "refresh") or was revoked (recovery "re_pair")."""


class InsufficientGrant(APIError):
    """403 that names what to ask for. `request(conn)` sends `permission_request` unchanged."""

    def __init__(
        self, *args: Any, permission_request: dict | None = None, required_permission: str | None = None, **kw: Any
    ):
        super().__init__(*args, **kw)
        self.permission_request = permission_request
        self.required_permission = required_permission

    def request(self, conn: Any):
        """Send `permission_request` to grant-request, unchanged; returns the GrantRequest."""
        if not self.permission_request:
            raise DecoyError("this refusal carries no permission_request: there is nothing to ask for")
        return conn.send_grant_request(self.permission_request)


class NotFound(APIError):
    """404: not found, or not yours (the server never says which)."""


class RevConflict(APIError):
    """409 REV_CONFLICT: the memory changed since it was read. `current_rev` is the new rev."""

    def __init__(self, *args: Any, current_rev: int | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.current_rev = current_rev


class KidConflict(APIError):
    """409 KID_CONFLICT: the share endpoint was given a stale key id."""


class HoldersMissing(APIError):
    """409 HOLDERS_MISSING: a rotation left out current holders, listed in `missing`."""

    def __init__(self, *args: Any, missing: list | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.missing = list(missing or [])


class MemoryMoving(APIError):
    """409 MEMORY_MOVING: the owner's phone is moving a legacy space row to its own key; nothing
    changed. Retry after `retry_after` seconds, under the per-memory rule once it has moved."""

    def __init__(self, *args: Any, retry_after: float | None = None, current_rev: int | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.retry_after = retry_after
        self.current_rev = current_rev


class GrantAlreadyRequested(APIError):
    """409 GRANT_ALREADY_REQUESTED: an open request exists; wait on `request_id`."""

    def __init__(self, *args: Any, request_id: str | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.request_id = request_id


class ReviewBusy(APIError):
    """409 REVIEW_BUSY: other asks from this connection were being saved at the same moment; the
    same ask is sent again after a short backoff. `sends` counts the sends when the client gave up."""

    sends: int = 1

    def __str__(self) -> str:
        text = super().__str__()
        if self.sends > 1:
            text += f" — still busy after {self.sends} sends; this ask was not added: send it again in a moment"
        return text


class RateLimited(APIError):
    """429: wait `retry_after` seconds before asking again."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the outcome is unknown; resend the same sealed rows."""


_BY_CODE = {
    "REV_CONFLICT": RevConflict,
    "KID_CONFLICT": KidConflict,
    "HOLDERS_MISSING": HoldersMissing,
    "MEMORY_MOVING": MemoryMoving,
    "GRANT_ALREADY_REQUESTED": GrantAlreadyRequested,
    "REVIEW_BUSY": ReviewBusy,
}


# The members of an error answer read below, and their shapes: one of another type is left out of
# the typed error (it stays in `body`), so a hostile error answer is still the error of its status.
ERROR_MEMBERS = {
    "code": str,
    "error": str,
    "message": str,
    "error_description": str,
    "detail": str,
    "recovery": str,
    "retry_after_seconds": float,
    "current_rev": int,
    "missing": list[dict],
    "request_id": str,
    "permission_request": dict,
    "required_permission": str,
}


def error_from_response(status: int, body: Any) -> APIError:
    """Turn an HTTP error answer into the matching typed error (one place for the mapping)."""
    b = (
        {k: v for k, v in body.items() if k not in ERROR_MEMBERS or fits(v, ERROR_MEMBERS[k])}
        if isinstance(body, dict)
        else {}
    )
    body = body if body is not None else {}
    code = b.get("code") or (b.get("error") if isinstance(b.get("error"), str) else None)
    message = b.get("message") or b.get("error_description") or b.get("detail") or ""
    kw: dict[str, Any] = {"recovery": b.get("recovery"), "body": body}
    if status == 401:
        return TokenError(status, code, message, **kw)
    if status == 429:
        retry = b.get("retry_after_seconds")
        return RateLimited(status, code, message, retry_after=retry, **kw)
    if status >= 500:
        return ServerError(status, code, message, **kw)
    if status == 404:
        return NotFound(status, code, message, **kw)
    if status == 403 and (
        b.get("permission_request") or code in ("INSUFFICIENT_GRANT", "GRANT_EXPIRED", "SCOPE_MISSING")
    ):
        return InsufficientGrant(
            status,
            code,
            message,
            permission_request=b.get("permission_request"),
            required_permission=b.get("required_permission"),
            **kw,
        )
    cls = _BY_CODE.get(code or "")
    if cls is RevConflict:
        return RevConflict(status, code, message, current_rev=b.get("current_rev"), **kw)
    if cls is HoldersMissing:
        return HoldersMissing(status, code, message, missing=b.get("missing"), **kw)
    if cls is MemoryMoving:
        return MemoryMoving(
            status, code, message, retry_after=b.get("retry_after_seconds"), current_rev=b.get("current_rev"), **kw
        )
    if cls is GrantAlreadyRequested:
        return GrantAlreadyRequested(status, code, message, request_id=b.get("request_id"), **kw)
    if cls is not None:
        return cls(status, code, message, **kw)
    return APIError(status, code, message, **kw)
