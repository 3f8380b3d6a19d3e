"""The pieces every sandbox module shares; it imports nothing of the sandbox.

`HTTPProblem(status, code, message, **extra)` is the one way a route refuses: it becomes the
JSON body `{"error": code, "code": code, "message": message, **extra}` (`OAuthProblem` is its
RFC 6749 shape). `SandboxState` (on `app.state.sb`) carries the store, the clock, the owner
phone, the fault settings, the knobs tests turn (`device_interval`, `token_ttl`) and, typed, the
phone's bookkeeping (`PhoneLog`) and the per-sandbox caches. `iso` is the one timestamp format;
`json_object` / `json_body` / `optional_json_body` / `form_fields` / `form_body` read request
bodies; `need_fields` refuses one that lacks a field.
"""

from __future__ import annotations

import functools
import json
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse

DEFAULT_AUTO_SHARE_AFTER = 5.0  # the first retry an agent is told: the phone answers about then


class HTTPProblem(Exception):
    """A refusal with a status, a stable `code`, a message and extra body fields."""

    def __init__(self, status: int, code: str, message: str, **extra: Any):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": self.code, "code": self.code, "message": self.message, **self.extra}

    def response(self) -> JSONResponse:
        headers = {}
        if self.status == 429 and "retry_after_seconds" in self.extra:
            headers["Retry-After"] = str(self.extra["retry_after_seconds"])
        if self.status == 401:
            headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        if self.status in (413, 415):  # refused before its body was read: the rest of it is not waited for
            headers["Connection"] = "close"
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


class OAuthProblem(HTTPProblem):
    """An RFC 6749-shaped error: `{"error": "invalid_grant", "error_description": …}`."""

    def __init__(self, status: int, error: str, description: str, **extra: Any):
        super().__init__(status, extra.pop("code", error), description, **extra)
        self.oauth_error = error

    def body(self) -> dict[str, Any]:
        return {
            "error": self.oauth_error,
            "error_description": self.message,
            "code": self.code,
            "message": self.message,
            **self.extra,
        }


def bad_request(code: str, message: str, field: str | None = None, **extra: Any) -> HTTPProblem:
    if field is not None:
        extra["field"] = field
    return HTTPProblem(400, code, message, **extra)


def need_fields(body: dict[str, Any], *keys: str, at: str = "", lead: str = "", why: str = "") -> None:
    """400 INVALID_REQUEST naming the first of `keys` the body lacks (null counts as missing):
    "{lead}{at}{key} is required{why}", its `field` "{at}{key}" (`at` a path such as "rows[3].")."""
    for k in keys:
        if body.get(k) is None:
            raise bad_request("INVALID_REQUEST", f"{lead}{at}{k} is required{why}", f"{at}{k}")


class FakeClock:
    """A clock tests and the owner surface can move: `clock()` → epoch seconds, `advance(s)`.

    A sandbox whose clock has `advance` accepts `POST /_sandbox/clock`; one on the real
    clock (`time.time`) refuses it, so time never jumps under a real client by accident."""

    def __init__(self, start: float | None = None):
        self.now = float(time.time() if start is None else start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self.now += float(seconds)
        return self.now

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now!r})"


@dataclass
class PhoneLog:
    """What the owner's phone has been asked and has done (schedule.py, sharepass.py, legacy_rows.py)."""

    auto_share_after: float | None = DEFAULT_AUTO_SHARE_AFTER  # None: the phone never answers on its own
    nudged_at: float | None = None  # the oldest ask the phone has not answered yet
    unknown_read_ask_at: float | None = None  # the last `failed_unknown` read that asked again
    unknown_asks_sent: dict[str, float] = field(default_factory=dict)  # token id → newest first-day ask sent
    moves_asked: dict[str, float] = field(default_factory=dict)  # legacy row id → when it was asked
    last_share: Any = None  # the last pass's ShareReport
    opened: dict = field(default_factory=dict)  # the rows the last pass opened (opening.open_kept)
    settled: Any = None  # what the last pass left (sharepass.Settled)
    last_moves: Any = None  # the last pass's MoveReport
    accounts_asked_at: float | None = None  # the oldest account-family ask not answered yet (keeper.py)


@dataclass
class SandboxState:
    """Everything a request handler needs, on `app.state.sb`. `store` is a db.Store, `owner` an
    owner.Owner, `faults` a faults.Faults (typed loosely: this module imports none of them)."""

    store: Any
    clock: Callable[[], float] = time.time
    approve: str = "auto"
    owner: Any = None
    faults: Any = None
    seed: str = "none"
    device_interval: int = 5  # seconds between device-code polls (tests may set 0)
    device_ttl: int = 600  # a pairing link lives 10 minutes
    token_ttl: int = 365 * 86400  # "the token (`token.expires_at`, about a year, renewable with the refresh token)"
    refresh_ttl: int = 2 * 365 * 86400  # outlives the token, so a year-old token can still be renewed
    strict: bool = False  # refuse wrongly laid-out wraps and ciphertexts (default: store them, as Decoy does)
    strict_rotation: bool = False  # a used refresh token is dead at once (default: a short replay window)
    owner_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)  # owner-surface POSTs
    phone: PhoneLog = field(default_factory=PhoneLog)
    read_cache: Any = None  # readcache.ReadCache, made on first use
    asks_being_saved: Any = None  # policies.AsksBeingSaved, made on first use
    seed_report: Any = None  # seed.SeedReport of the seed applied, if any

    def now(self) -> float:
        return float(self.clock())


def iso(ts: float | None) -> str | None:
    """Epoch seconds → RFC 3339 UTC (`2027-01-01T00:00:00Z`), None stays None."""
    if ts is None:
        return None
    return _iso_second(math.floor(ts))


@functools.lru_cache(maxsize=1 << 16)
def _iso_second(second: int) -> str:
    """A list of 10,000 rows formats 20,000 timestamps, most sharing a second: each is made once."""
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_of(request: Request) -> SandboxState:
    return request.app.state.sb


def now_of(state: SandboxState) -> float:
    return float(state.clock())


def json_object(raw: bytes) -> dict[str, Any]:
    """A request body that must be one JSON object, or 400 INVALID_JSON."""
    try:
        obj = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request("INVALID_JSON", f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise bad_request("INVALID_JSON", "the body nests too deeply to be a request") from None
    if not isinstance(obj, dict):
        raise bad_request("INVALID_JSON", "the body must be a JSON object")
    return obj


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or 400 INVALID_JSON."""
    return json_object(await request.body())


async def optional_json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, `{}` for an empty (or blank) body, or 400 INVALID_JSON."""
    raw = await request.body()
    return json_object(raw) if raw.strip() else {}


def is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")


def form_fields(raw: bytes) -> dict[str, str] | None:
    """A form-encoded body as a dict (the last value of a repeated key wins); None if not UTF-8
    (each caller refuses that in its own shape)."""
    try:
        parsed = parse_qs(raw.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        return None
    return {k: v[-1] for k, v in parsed.items()}


async def form_body(request: Request) -> dict[str, str]:
    """A form-encoded body as a dict (form_fields), or 400 invalid_request."""
    if not is_form(request):
        raise OAuthProblem(
            400, "invalid_request", f"POST {request.url.path} is form-encoded (application/x-www-form-urlencoded)"
        )
    fields = form_fields(await request.body())
    if fields is None:
        raise OAuthProblem(400, "invalid_request", "the form is not UTF-8")
    return fields


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")
