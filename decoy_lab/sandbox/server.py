"""Serving the sandbox: `Sandbox.start()` in a background thread, `run()` for `decoy-lab sandbox`.

`Sandbox.start` runs uvicorn on its own event loop in a daemon thread (never the caller's or a
Jupyter kernel's loop), on a free loopback port, and returns once the server listens.
`run` serves in the foreground; its default database is a file in the user data directory so
a restart loses nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from ..errors import DecoyError
from .app import create_app

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


class Sandbox:
    """A running sandbox: `.url`, `.owner`, `.app`, `.stop()`; a context manager."""

    def __init__(self, app, server: uvicorn.Server, thread: threading.Thread, url: str):
        self.app = app
        self._server = server
        self._thread = thread
        self.url = url

    @property
    def owner(self):
        return self.app.state.sb.owner

    @property
    def state(self):
        return self.app.state.sb

    @classmethod
    def start(
        cls,
        owner_key: Any = None,
        approve: str = "auto",
        seed: str = "demo",
        db: str = ":memory:",
        faults: dict | None = None,
        clock: Callable[[], float] | None = None,
        *,
        key_setup: bool = True,
        strict: bool = False,
        strict_rotation: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 15.0,
    ) -> Sandbox:
        """Serve a fresh sandbox on a free loopback port in a background thread."""
        app = create_app(
            db,
            owner_key=owner_key,
            approve=approve,
            seed=seed,
            faults=faults,
            clock=clock,
            key_setup=key_setup,
            strict=strict,
            strict_rotation=strict_rotation,
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            loop="asyncio",
            log_config=None,
            log_level="warning",
            lifespan="on",
            proxy_headers=False,  # X-Forwarded-For never makes a remote peer look local
        )
        server = uvicorn.Server(config)
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            try:
                asyncio.set_event_loop(loop)
                loop.run_until_complete(server.serve())
            except BaseException as exc:  # pragma: no cover - reported to the starter below
                failure.append(exc)
            finally:
                loop.close()

        thread = threading.Thread(target=serve, name="decoy-sandbox", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                reason = repr(failure[0]) if failure else "the server did not start"
                raise RuntimeError(f"sandbox failed to start: {reason}")
            time.sleep(0.01)
        sock = server.servers[0].sockets[0]
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        return cls(app, server, thread, f"http://{shown}:{bound_port}")

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        running = "running" if self._thread.is_alive() else "stopped"
        return f"Sandbox({self.url}, {running}, approve={self.state.approve!r})"


def default_db_path() -> Path:
    """The CLI's database: a file in the user data directory, kept across restarts."""
    import platformdirs

    path = Path(platformdirs.user_data_dir("decoy-lab")) / "sandbox.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def run(
    host: str = "127.0.0.1",
    port: int = 8787,
    db: str | None = None,
    approve: str = "auto",
    owner_key_path: str | None = None,
    seed: str = "demo",
    *,
    host_explicit: bool = False,
    strict: bool = False,
    strict_rotation: bool = False,
) -> int:
    """Serve in the foreground until interrupted (`decoy-lab sandbox`)."""
    if host not in LOOPBACK_HOSTS:
        if not host_explicit:
            print("refusing to bind a non-loopback address without an explicit --host", file=sys.stderr)
            return 2
        print(
            f"WARNING: the sandbox is listening on {host}: other machines can reach its agent API. "
            "It is a test server with no real security; the owner surface (/_sandbox/) still answers "
            "loopback clients only.",
            file=sys.stderr,
        )
    db_path = str(default_db_path()) if db is None else db
    why = _unusable(host, port, db_path)
    if why is None:
        try:
            owner_key = Path(owner_key_path).read_bytes() if owner_key_path else None
        except OSError as exc:
            why = f"--owner-key {owner_key_path}: cannot be read ({exc.strerror or exc})"
    if why is None:
        try:
            app = create_app(
                db_path, owner_key=owner_key, approve=approve, seed=seed, strict=strict, strict_rotation=strict_rotation
            )
        except sqlite3.DatabaseError as exc:
            why = f"--db {db_path}: not a SQLite database this sandbox can open ({exc})"
        except DecoyError as exc:  # an --owner-key that holds no RSA private key in PEM
            why = f"--owner-key {owner_key_path}: {exc}"
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    config = uvicorn.Config(app, host=host, port=port, loop="asyncio", log_level="warning", proxy_headers=False)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"Decoy sandbox on http://{shown}:{port}  (db: {db_path}, approve: {approve}, "
        f"owner key: {app.state.sb.owner.key.fingerprint})",
        flush=True,
    )
    server.run()
    return 0


def _unusable(host: str, port: int, db_path: str) -> str | None:
    """Why the sandbox cannot serve on `host:port` from `db_path`, checked before anything is
    created or changed (a refused --db file is left as it was); None when it can."""
    if db_path != ":memory:" and Path(db_path).is_dir():
        return f"--db {db_path} is a directory, not a SQLite file"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind((host, port))
    except OSError as exc:
        return f"cannot listen on {host}:{port} ({exc.strerror or exc}; is the port in use?)"
    return None


def port_number(text: str) -> int:
    """`--port`: a TCP port, 0-65535 (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (0-65535)")
    return port


def add_cli(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `decoy-lab sandbox …` on the CLI's subparsers."""
    p = subparsers.add_parser("sandbox", help="run a local Decoy sandbox server (foreground)", description=DESCRIPTION)
    add_arguments(p)
    p.set_defaults(run=run_args)
    return p


DESCRIPTION = "Run a local Decoy server that follows the spec, with a simulated owner phone."


def run_args(args: argparse.Namespace) -> int:
    """Run from parsed `sandbox` arguments (an omitted --host means loopback)."""
    return run(
        args.host or "127.0.0.1",
        args.port,
        args.db,
        args.approve,
        args.owner_key,
        args.seed,
        host_explicit=args.host is not None,
        strict=getattr(args, "strict", False),
        strict_rotation=getattr(args, "strict_rotation", False),
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The `sandbox` options, shared by `decoy-lab sandbox` and `python -m decoy_lab.sandbox`."""
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; anything else prints a warning)")
    p.add_argument("--port", type=port_number, default=8787)
    p.add_argument(
        "--db", default=None, help="SQLite file or :memory: (default: sandbox.sqlite3 in the user data directory)"
    )
    p.add_argument("--approve", choices=["auto", "manual"], default="auto")
    p.add_argument("--owner-key", dest="owner_key", default=None, metavar="PEM_FILE")
    p.add_argument("--seed", choices=["demo", "none"], default="demo")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse (400) wraps and ciphertexts laid out wrongly; by default they are stored, as Decoy "
        "stores what it cannot decrypt, and app-view flags each",
    )
    p.add_argument(
        "--strict-rotation",
        dest="strict_rotation",
        action="store_true",
        help="a used refresh token is refused at once (no replay window), as OAuth servers commonly do",
    )
