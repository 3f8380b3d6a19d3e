"""Seeded faults on the memory routes (and the account family's writes: a decoy create, a
password, a secret field), for reliability tests.

Settings (`create_app(faults=…)`, `POST /_sandbox/faults` replaces them, `{}` turns them off):

- `error_5xx` p      — with probability p the route answers 503 before doing anything
                       (nothing is committed; the client must treat the outcome as unknown).
- `drop_after_commit` p — for a write (POST/PUT) the route commits, then the connection is
                       aborted: the status line goes out and the body never follows, so the
                       client sees a network error (httpx: RemoteProtocolError) although the
                       write happened. Under TestClient the abort surfaces as ConnectionDropped.
- `latency_ms` n     — every memory route waits n ms first.
- `seed` s           — the random generator's seed, so a run repeats exactly.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

KEYS = ("error_5xx", "drop_after_commit", "latency_ms", "seed")
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class ConnectionDropped(ConnectionAbortedError):
    """Raised after the status line went out: the server aborts the connection, the body never
    follows. Uvicorn closes the socket; TestClient re-raises this to the test."""


@dataclass
class Faults:
    """The fault settings plus their seeded generator (one per sandbox)."""

    error_5xx: float = 0.0
    drop_after_commit: float = 0.0
    latency_ms: int = 0
    seed: int | str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"error_5xx": 0, "drop_after_commit": 0})
    _rng: random.Random = field(default_factory=random.Random, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: dict | None) -> Faults:
        """Validate settings; unknown keys or out-of-range values raise ValueError."""
        f = cls()
        f.configure(settings)
        return f

    def configure(self, settings: dict | None) -> None:
        """Replace every setting (absent keys go back to off) and reseed."""
        settings = dict(settings or {})
        unknown = sorted(set(settings) - set(KEYS))
        if unknown:
            raise ValueError(f"unknown fault settings {unknown}; known: {', '.join(KEYS)}")
        values = {}
        for k in ("error_5xx", "drop_after_commit"):
            p = settings.get(k, 0.0)
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ValueError(f"{k} is a probability between 0 and 1, not {p!r}")
            values[k] = float(p)
        ms = settings.get("latency_ms", 0)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms < 0:
            raise ValueError(f"latency_ms is a number of milliseconds ≥ 0, not {ms!r}")
        seed = settings.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, str))):
            raise ValueError(f"seed is an integer or a string, not {seed!r}")
        with self._lock:
            self.error_5xx = values["error_5xx"]
            self.drop_after_commit = values["drop_after_commit"]
            self.latency_ms = int(ms)
            self.seed = seed
            self._rng = random.Random(seed)
            self.counts = {"error_5xx": 0, "drop_after_commit": 0}

    replace = configure

    def as_json(self) -> dict:
        return {
            "error_5xx": self.error_5xx,
            "drop_after_commit": self.drop_after_commit,
            "latency_ms": self.latency_ms,
            "seed": self.seed,
            "counts": dict(self.counts),
        }

    settings = property(as_json)

    @property
    def active(self) -> bool:
        return bool(self.error_5xx or self.drop_after_commit or self.latency_ms)

    def roll(self, kind: str) -> bool:
        """One seeded draw for `kind`; True means the fault fires (and is counted)."""
        p = getattr(self, kind)
        with self._lock:
            hit = p > 0 and self._rng.random() < p
            if hit:
                self.counts[kind] += 1
        return hit


def _faults_of(request: Request) -> Faults | None:
    f = getattr(request.app.state.sb, "faults", None)
    return f if isinstance(f, Faults) and f.active else None


class faulty:
    """Wrap a memory route so the sandbox's faults apply to it (an ASGI app, for Route)."""

    def __init__(self, endpoint: Callable[[Request], Awaitable[Response]]):
        self.endpoint = endpoint
        self.__name__ = getattr(endpoint, "__name__", "faulty")
        self.__doc__ = endpoint.__doc__

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        request = Request(scope, receive, send)
        faults = _faults_of(request)
        if faults is not None:
            if faults.latency_ms:
                await asyncio.sleep(faults.latency_ms / 1000)
            if faults.roll("error_5xx"):
                body = {
                    "error": "SERVICE_UNAVAILABLE",
                    "code": "SERVICE_UNAVAILABLE",
                    "message": "injected fault: 503 before commit (nothing was written)",
                    "retry_after_seconds": 1,
                }
                await JSONResponse(body, status_code=503, headers={"Retry-After": "1"})(scope, receive, send)
                return
        response = await self.endpoint(request)
        if faults is not None and scope.get("method") in WRITES and faults.roll("drop_after_commit"):
            # The write is committed. Send the status line and headers, then abort: the body
            # never arrives and the client cannot learn the outcome.
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(response.body) or 1).encode()),
                    ],
                }
            )
            raise ConnectionDropped("injected fault: the write committed and the connection was dropped")
        await response(scope, receive, send)
