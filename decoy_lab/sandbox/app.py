"""`create_app`: the sandbox as one Starlette app, plus the pieces every route module shares.

`HTTPProblem(status, code, message, **extra)` is the one way a route refuses: it becomes the
JSON body `{"error": code, "code": code, "message": message, **extra}`. `SandboxState` (on
`app.state.sb`) carries the store, the clock, the owner phone, the fault settings and the knobs
tests turn (`device_interval`, `token_ttl`). Intra-package imports stay inside `create_app` so
route modules can import `HTTPProblem` from here without a cycle.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

if TYPE_CHECKING:  # pragma: no cover
    from .db import Store
    from .owner import Owner


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
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


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
class SandboxState:
    """Everything a request handler needs, on `app.state.sb`."""

    store: Store
    clock: Callable[[], float] = time.time
    approve: str = "auto"
    owner: Owner = None  # type: ignore[assignment]
    faults: Any = None
    seed: str = "none"
    device_interval: int = 5  # seconds between device-code polls (tests may set 0)
    device_ttl: int = 600  # a pairing link lives 10 minutes
    token_ttl: int = 365 * 86400  # "the token (`token.expires_at`, about a year, renewable with the refresh token)"
    refresh_ttl: int = 2 * 365 * 86400  # outlives the token, so a year-old token can still be renewed
    extra: dict[str, Any] = field(default_factory=dict)

    def now(self) -> float:
        return float(self.clock())


def iso(ts: float | None) -> str | None:
    """Epoch seconds → RFC 3339 UTC (`2027-01-01T00:00:00Z`), None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_of(request: Request) -> SandboxState:
    return request.app.state.sb


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or 400 INVALID_JSON."""
    raw = await request.body()
    try:
        obj = json.loads(raw or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HTTPProblem(400, "INVALID_JSON", f"the body is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise HTTPProblem(400, "INVALID_JSON", "the body must be a JSON object")
    return obj


async def _problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPProblem)
    return exc.response()


async def _http_exc(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, f"HTTP_{exc.status_code}")
    return JSONResponse(
        {"error": code, "code": code, "message": str(exc.detail)},
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


def create_app(
    db_path: str = ":memory:",
    *,
    owner_key: Any = None,
    approve: str = "auto",
    seed: str = "demo",
    faults: dict | None = None,
    clock: Callable[[], float] | None = None,
) -> Starlette:
    """A fresh sandbox app: its own store, owner phone and settings (no module-level state)."""
    from . import memories, oauth, policies, spaces, surface, sync, token_admin
    from . import seed as seed_mod
    from .db import Store
    from .owner import Owner

    if approve not in ("auto", "manual"):
        raise ValueError(f"approve must be 'auto' or 'manual', not {approve!r}")
    if seed not in ("demo", "none"):
        raise ValueError(f"seed must be 'demo' or 'none', not {seed!r}")
    store = Store(db_path)
    state = SandboxState(store=store, clock=clock or time.time, approve=approve, seed=seed)
    state.owner = Owner(state, owner_key)
    state.faults = _faults(faults)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        store.close()

    app = Starlette(
        routes=[
            *oauth.routes,
            *token_admin.routes,
            *policies.routes,
            *surface.routes,
            *memories.routes,
            *spaces.routes,
            *sync.routes,
        ],
        exception_handlers={HTTPProblem: _problem, HTTPException: _http_exc},
        lifespan=lifespan,
    )
    app.state.sb = state
    with store.tx() as con:  # a database is seeded once: reopening a file keeps its vault as it is
        seeded = con.execute("SELECT value FROM sandbox_meta WHERE key='seed'").fetchone() is not None
    if not seeded:
        if seed == "demo":
            seed_mod.apply(state)
        with store.tx() as con:
            con.execute("INSERT OR REPLACE INTO sandbox_meta (key, value) VALUES ('seed', ?)", (seed,))
    return app


def _faults(settings: dict | None) -> Any:
    from .faults import Faults

    return Faults.from_settings(settings)
