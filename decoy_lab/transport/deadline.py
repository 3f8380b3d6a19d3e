"""Each call's overall deadline, down to every socket operation.

httpx bounds each socket read by its timeout, so a server that sends one byte just inside it —
its status line and headers as well as its body — can hold a call for ever. `Backend` wraps
httpcore's network backend so that every connect, read and write waits at most the time left
until the deadline of the call under way: the `Bound` made active around the call (a context
variable, so each thread and each task has its own). Outside an active bound every timeout
passes through unchanged, so a client shared with other code behaves as before. Two waits are
outside the socket operations it sees: the name lookup before a connect (the system resolver's
own), and httpx's wait for a free pooled connection (its pool timeout); a TLS handshake is one
operation, each of its socket waits bounded by the time left when it began.

`bind(client)` gives an `httpx.Client`'s transports this backend. It reaches the socket only
through an `httpx.HTTPTransport` (the one httpx builds by default, and those of its proxy
mounts); a client with another transport (`httpx.MockTransport`, Starlette's `TestClient`, a
transport of one's own) reads no socket through httpcore's pool that can be reached, so for it
only the checks between body chunks hold (`Bound.passed`). Connections a client had opened
before `bind` keep their unbounded sockets until they are closed.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

log = logging.getLogger(__name__)
_active: contextvars.ContextVar[Bound | None] = contextvars.ContextVar("decoy_lab_deadline", default=None)


@dataclass
class Bound:
    """One call's deadline: `seconds` long, ending at `ends` (time.monotonic). `expired` is set when
    a socket operation was cut short by it (or found it passed), so the error can say so."""

    seconds: float
    ends: float = field(default=0.0)
    expired: bool = False

    @classmethod
    def start(cls, seconds: float) -> Bound:
        return cls(seconds, time.monotonic() + seconds)

    def restart(self) -> None:
        """Begin again, `seconds` from now: the same request sent again (after a token refresh)."""
        self.ends, self.expired = time.monotonic() + self.seconds, False

    def passed(self) -> bool:
        if time.monotonic() >= self.ends:
            self.expired = True
        return self.expired

    def sooner(self, ends: float, seconds: float) -> Bound:
        """This bound, or a shorter one of `seconds` ending at `ends` when that comes first (a wait
        for progress inside the call's deadline)."""
        return self if self.ends <= ends else Bound(seconds, ends)

    @contextlib.contextmanager
    def active(self) -> Iterator[Bound]:
        """Socket operations in this block (in this context) end by the deadline."""
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)


@contextlib.contextmanager
def _clipped(timeout: float | None, on_expiry: type[httpcore.TimeoutException]) -> Iterator[float | None]:
    """`timeout`, or the time left until the active deadline when that is shorter."""
    bound = _active.get()
    if bound is None:
        yield timeout
        return
    left = bound.ends - time.monotonic()
    if left <= 0:
        bound.expired = True
        raise on_expiry(f"the call's deadline of {bound.seconds:g} s passed")
    if timeout is not None and timeout <= left:
        yield timeout
        return
    try:
        yield left
    except httpcore.TimeoutException:
        bound.expired = True
        raise


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _clipped(timeout, httpcore.ReadTimeout) as wait:
            return self._inner.read(max_bytes, wait)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _clipped(timeout, httpcore.WriteTimeout) as wait:
            self._inner.write(buffer, wait)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        with _clipped(timeout, httpcore.ConnectTimeout) as wait:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, wait))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class Backend(httpcore.NetworkBackend):
    """httpcore's network backend (`inner`, the sync one by default) with each operation ending by
    the active call's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None):
        self.inner = inner if inner is not None else httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream:
        with _clipped(timeout, httpcore.ConnectTimeout) as wait:
            return _Stream(self.inner.connect_tcp(host, port, wait, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> _Stream:
        with _clipped(timeout, httpcore.ConnectTimeout) as wait:
            return _Stream(self.inner.connect_unix_socket(path, wait, socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def bind(client: httpx.Client) -> bool:
    """Give `client`'s transports the deadline backend (once); True when every transport it has
    reads its sockets through it. httpx offers no public way to choose the backend of the pool
    it builds, so this reaches into `HTTPTransport._pool`; should that change, the answer is
    False and only the checks between body chunks hold."""
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    bound = True
    for transport in transports:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None) if isinstance(transport, httpx.HTTPTransport) else None
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, Backend):
            continue
        if isinstance(backend, httpcore.NetworkBackend):
            pool._network_backend = Backend(backend)  # type: ignore[union-attr]
        else:
            bound = False
    if not bound:
        log.debug("the client's transport is not an httpx.HTTPTransport: its sockets are out of the deadline's reach")
    return bound
