"""What an answer means, decided once: a value, or a typed error from errors.py.

Network errors and timeouts become `TransportError` (the outcome is unknown), 5xx `ServerError`,
and every other error status the matching `APIError` subclass carrying the server's `code`,
`recovery` and message (`answer_of`, `error_of`). The TransportError for no answer carries no
chain: the library's frames hold the request, token included, so they are cleared and dropped,
and the message keeps what the library said (`guarded`). A 3xx is never taken for success
(redirects are not followed): its outcome is unknown. `Retry-After` of any text is read safely
(`retry_after`); an answer of the wrong shape is a TransportError naming the member
(`expect_object`).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import re
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from decoy_lab.errors import APIError, RateLimited, ServerError, TokenError, TransportError, error_from_response
from decoy_lab.shapes import fits, json_kind, shape_name
from decoy_lab.transport.deadline import Bound

log = logging.getLogger(__name__)
T = TypeVar("T")
_SECONDS = re.compile(r"[0-9]{1,9}")


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """The wait a `Retry-After` header names, in seconds: delta-seconds or an HTTP-date (RFC 9110
    §10.2.3). Anything else — any text a server may send — is None, never an exception."""
    text = (value or "").strip()
    if not text or len(text) > 64:
        return None
    if _SECONDS.fullmatch(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    now = time.time() if now is None else now
    try:
        return max(0.0, when.timestamp() - now)
    except (OverflowError, OSError, ValueError):
        return None


# -- reading the shape of an answer ----------------------------------------------------------------
def expect_object(answer: Any, where: str, **members: Any) -> dict[str, Any]:
    """`answer` itself, when it is a JSON object whose named members are absent, null or of the
    given shape (see `fits`). Otherwise a TransportError naming the member: an answer that cannot
    be read is treated like a lost one, so a read is asked again and a write sent again unchanged."""
    if not isinstance(answer, dict):
        raise TransportError(f"{where}: the answer is {json_kind(answer)}, not an object; the outcome is unknown")
    for name, shape in members.items():
        value = answer.get(name)
        if value is not None and not fits(value, shape):
            raise TransportError(
                f"{where}: the answer's {name} is not {shape_name(shape)} (it is "
                f"{json_kind(value)}); the outcome is unknown"
            )
    return answer


def is_unknown_outcome(exc: BaseException) -> bool:
    """True when a write may have committed: no answer read, or a 5xx."""
    return isinstance(exc, (TransportError, ServerError))


# -- a status and a body: a value or a typed error --------------------------------------------------
def body_of(resp: httpx.Response) -> Any:
    if not resp.content:
        return {}
    try:
        return resp.json()
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser can go
        return {"message": resp.text[:300]}


def answer_of(method: str, path: str, resp: httpx.Response) -> Any:
    if 300 <= resp.status_code < 400:  # redirects are not followed: what was done, if anything, is unknown
        raise TransportError(
            f"{method} {path}: answered {resp.status_code} (a redirect), which proves nothing was done; "
            "the outcome is unknown"
        )
    if resp.status_code < 400:
        try:  # a success that cannot be read is no success: like a lost answer, its outcome is unknown
            body = resp.json() if resp.content else {}
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, (dict, list)):
            raise TransportError(f"{method} {path}: the answer is not JSON; the outcome is unknown")
        return body
    body = body_of(resp)
    err = error_of(resp.status_code, body)
    if isinstance(err, RateLimited) and err.retry_after is None:
        err.retry_after = retry_after(resp.headers.get("retry-after"))  # a 429 that says when only in its header
    raise err


def error_of(status: int, body: Any) -> APIError:
    err = error_from_response(status, body)
    if isinstance(err, TokenError):
        if err.recovery == "re_pair" or err.code == "TOKEN_REVOKED":
            err.message = (
                "this connection was revoked (TOKEN_REVOKED: the owner ended it, or it was "
                "unpaired): a new pairing is needed — run Connection.pair(...) again; it starts a "
                "new connection that inherits nothing"
            )
        elif err.recovery == "continue":
            err.message = (
                err.message or "this session of the connection ended"
            ) + " — continue the same connection (reconnect with the same client_id); do not pair anew"
    return err


# -- no answer: httpx's errors, with no library frame kept -------------------------------------------
def late(method: str, path: str, bound: Bound) -> TransportError:
    return TransportError(
        f"{method} {path}: the server did not answer within {bound.seconds:g} s (the call's deadline); "
        "the outcome is unknown"
    )


def _library_frames_cleared(exc: BaseException) -> None:
    """Clear the locals of the frames an httpx error passed through (and of the httpcore / socket
    errors it was raised from): they hold the request, its header bytes and any form, token
    included. Only the explicit chain (`__cause__`) is the library's; an implicit `__context__`
    may be the caller's own error, whose frames are left alone."""
    seen: BaseException | None = exc
    while seen is not None:
        traceback.clear_frames(seen.__traceback__)
        seen = seen.__cause__


def guarded(method: str, path: str, bound: Bound, step: Callable[[], T], server: str) -> T:
    """`step()` with its socket operations ending by `bound`, and httpx's errors as a
    TransportError. That error is raised with no chain: the library's frames (their locals
    hold the request, token included) are cleared and dropped, and the message keeps what
    they said (the error's type and text). `server` names the server a refused connect tried."""
    with bound.active():
        try:
            return step()
        except (httpx.HTTPError, OSError) as exc:
            failure = _failure(method, path, bound, exc, server)
            _library_frames_cleared(exc)
    raise failure


def _failure(method: str, path: str, bound: Bound, exc: BaseException, server: str) -> TransportError:
    """What a network error means, saying whether anything can have reached the server."""
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if bound.expired or (isinstance(exc, httpx.TimeoutException) and bound.passed()):
        log.info("%s %s → no answer within the deadline", method, path)
        return late(method, path, bound)
    if isinstance(exc, httpx.ConnectError):  # the request never left: say which server and what to check
        log.info("%s %s → cannot connect", method, path)
        return TransportError(
            f"{method} {path}: cannot reach {server or 'the server'} ({said}); is the server running? Nothing was sent",
            sent=False,
        )
    log.info("%s %s → no answer (%s)", method, path, type(exc).__name__)  # network error, timeout, drop
    return TransportError(f"{method} {path}: no answer ({said}); the outcome is unknown")
