"""The ASGI lifespan protocol, answered one way by every app the inspector and the check serve.

uvicorn sends `lifespan.startup` once and `lifespan.shutdown` once; an app confirms each, and on
shutdown first closes what it holds (an upstream pool, an HTTP client) so no socket outlives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


async def answer_lifespan(
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    close: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Confirm startup; on shutdown await `close` (if any), confirm, and return."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if close is not None:
                await close()
            await send({"type": "lifespan.shutdown.complete"})
            return
