"""Serving an ASGI app on a loopback port from a daemon thread, as the sandbox serves itself.

uvicorn runs on its own event loop in a daemon thread (never the caller's, nor a Jupyter
kernel's), with the sandbox's hardened configuration (`server_config`: a deadline on each request
head, a keep-alive limit, a connection limit that closes the oldest half-sent connection, proxy
headers off) and neither `Server` nor `Date` added, so an answer passed through carries the
upstream's own. The inspector listens on loopback only.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

import uvicorn

from decoy_lab.sandbox import server_config
from decoy_lab.sandbox.server import serve_in_thread as sandbox_serve_in_thread


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Served:
    """A running server: `.url`, `.stop()`."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, url: str):
        self._server = server
        self._thread = thread
        self.url = url

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __repr__(self) -> str:
        return f"<Served {self.url} {'running' if self.running else 'stopped'}>"


def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 15.0,
    name: str = "decoy-inspector",
    graceful: float = 2.0,
) -> Served:
    """Serve `app` on `host:port` (0: a free port) and return once it listens. On `stop()`,
    exchanges still running get `graceful` seconds, then are cancelled (and so recorded as such)."""
    if not is_loopback_host(host):
        raise ValueError(f"the inspector listens on loopback only, not {host!r}")
    config = server_config(
        app,
        host,
        port,
        log_config=None,
        log_level="warning",
        lifespan="on",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=graceful,
    )
    server, thread, url = sandbox_serve_in_thread(config, name=name, timeout=timeout)
    return Served(server, thread, url)
