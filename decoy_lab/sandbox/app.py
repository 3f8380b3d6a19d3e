"""`create_app`: the sandbox as one Starlette app, from every route module (the top layer)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from decoy_lab.sandbox.checks.faults import Faults
from decoy_lab.sandbox.checks.guard import Guard
from decoy_lab.sandbox.core import FakeClock, HTTPProblem, SandboxState
from decoy_lab.sandbox.phone import keeper, sharepass
from decoy_lab.sandbox.phone import seed as seed_mod
from decoy_lab.sandbox.phone.owner import Owner
from decoy_lab.sandbox.routes import (
    accounts,
    acctdecoy,
    acctfields,
    acctsurface,
    addresses,
    authorize,
    credential,
    decoys,
    memories,
    memwrites,
    oauth,
    pages,
    policies,
    sealedsecrets,
    spaces,
    surface,
    sync,
    token_admin,
    unlock,
    vaultkey,
)
from decoy_lab.sandbox.stores.db import Store

__all__ = ["FakeClock", "HTTPProblem", "SandboxState", "create_app"]

log = logging.getLogger(__name__)
PHONE_TICK = 1.0  # seconds between the phone's looks at what it owes


async def _phone(state: SandboxState) -> None:
    """The owner's phone on its own schedule, as a real one answers its pushes: a sharing pass
    once something has been owed `auto_share_after` seconds, whether or not anyone reads."""
    while True:
        await asyncio.sleep(PHONE_TICK)
        try:
            sharepass.maybe_share_on_read(state, float(state.clock()))
            keeper.maybe_pass(state, float(state.clock()))
        except Exception:  # the next tick tries again; a read still runs a due pass itself
            log.exception("the owner phone's background pass failed")


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
    key_setup: bool = True,
    strict: bool = False,
    strict_rotation: bool = False,
) -> Starlette:
    """A fresh sandbox app: its own store, owner phone and settings (no module-level state).

    `key_setup=False`: the owner has not finished key setup (no public key is served yet).
    `strict=True`: refuse (400) wraps and ciphertexts whose layout is wrong, which by default are
    stored as Decoy stores them (it cannot decrypt) and flagged by the owner's-eye check.
    `strict_rotation=True`: a used refresh token is refused at once, with no replay window (oauth.py)."""
    if approve not in ("auto", "manual"):
        raise ValueError(f"approve must be 'auto' or 'manual', not {approve!r}")
    if seed not in ("demo", "none"):
        raise ValueError(f"seed must be 'demo' or 'none', not {seed!r}")
    store = Store(db_path)
    state = SandboxState(store=store, clock=clock or time.time, approve=approve, seed=seed, strict=strict)
    state.strict_rotation = strict_rotation
    state.owner = Owner(state, owner_key, key_setup=key_setup)
    state.faults = Faults.from_settings(faults)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        phone = asyncio.create_task(_phone(state))
        try:
            yield
        finally:
            phone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await phone
            store.close()

    app = Starlette(
        routes=[
            *oauth.routes,
            *authorize.routes,
            *token_admin.routes,
            *policies.routes,
            *surface.routes,
            *pages.routes,  # the owner's home page and /connect
            *memories.routes,
            *memwrites.routes,
            *accounts.routes,
            *credential.routes,
            *acctfields.routes,
            *acctdecoy.routes,
            *acctsurface.routes,
            *addresses.routes,  # before decoys: `generate-email` is not a decoy id
            *decoys.routes,
            *vaultkey.routes,
            *sealedsecrets.routes,
            *unlock.routes,
            *spaces.routes,
            *sync.routes,
        ],
        exception_handlers={HTTPProblem: _problem, HTTPException: _http_exc},
        lifespan=lifespan,
    )
    app.state.sb = state
    app.add_middleware(Guard, state=state)
    with store.tx() as con:  # a database is seeded once: reopening a file keeps its vault as it is
        seeded = con.execute("SELECT value FROM sandbox_meta WHERE key='seed'").fetchone() is not None
    if not seeded:
        if seed == "demo":
            seed_mod.apply(state)
        with store.tx() as con:
            con.execute("INSERT OR REPLACE INTO sandbox_meta (key, value) VALUES ('seed', ?)", (seed,))
    return app
