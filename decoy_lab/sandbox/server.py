"""Serving the sandbox: `Sandbox.start()` in a background thread, `run()` for `decoy-lab sandbox`.

`Sandbox.start` runs uvicorn on its own event loop in a daemon thread (never the caller's or a
Jupyter kernel's loop), on a free loopback port, and returns once the server listens.
`run` serves in the foreground; its default database is a file in the user data directory so
a restart loses nothing.

Both bound what one local process can hold (`server_config`): a connection must complete each
request head within `head_timeout` seconds of opening or of its previous answer, or it is closed
(`HeadTimeoutH11`; uvicorn's h11 protocol has no such timer, and its keep-alive timer is
cancelled by the first byte, so a head sent a line every few seconds would stay open for ever);
a connection in the middle of a request body that sends no byte for `body_timeout` seconds is
closed too (time the server itself is not reading — flow control, an `Expect: 100-continue` not
yet answered — is not counted against it); an idle keep-alive connection is closed after
`keep_alive` seconds; at most `max_connections` are served at once, and a new connection at that
limit closes the one stalled longest — waiting for its head (or idle) since the earliest, or
stalled mid-body since the earliest last byte — so a crowd of half-sent heads or bodies cannot
starve a real client.
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

import h11
import uvicorn
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

from decoy_lab.argtypes import port_number
from decoy_lab.errors import DecoyError
from decoy_lab.sandbox.app import create_app
from decoy_lab.sandbox.stores.db import private_dirs

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# Production defaults (tests pass smaller ones to run fast):
HEAD_TIMEOUT = 10.0  # seconds to send a whole request head (request line and headers)
BODY_TIMEOUT = 10.0  # seconds a request body may pause between two bytes
KEEP_ALIVE = 5.0  # seconds an idle keep-alive connection is kept (uvicorn's default)
MAX_CONNECTIONS = 256  # connections served at once (uvicorn's limit_concurrency)
MAX_HEAD = 16 * 1024  # bytes of request head (h11's default, stated): larger is 400


class HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head and on each pause in a request
    body, and room made at the connection limit (see the module docstring). `head_timeout` and
    `body_timeout` are set per server (`server_config`)."""

    head_timeout: float = HEAD_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None
    _owed: str | None = None  # what the client owes: "head", "body", or None (nothing: the server's turn)
    _stalled_since: float | None = None  # head: since it began waiting for one; body: since its last byte

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()
        self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch(progress=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._unwatch()
        super().connection_lost(exc)

    def stalled_since(self) -> float | None:
        """Since when (loop time) this connection has kept the server waiting for its client: for
        a head since the wait began, for a body since its last byte; None when the client owes
        nothing, or when the server is the one not reading (flow control, an unanswered
        `Expect: 100-continue`)."""
        if self._owed == "body" and self._excused():
            return None
        return self._stalled_since

    def _make_room(self) -> None:
        """At the limit, close the connection stalled longest (never this new one)."""
        limit = self.limit_concurrency
        if limit is None or len(self.connections) < limit:
            return
        stalled = [
            (since, c)
            for c in self.connections
            if c is not self and isinstance(c, HeadTimeoutH11) and (since := c.stalled_since()) is not None
        ]
        if stalled:
            min(stalled, key=lambda pair: pair[0])[1]._close()

    def _watch(self, *, progress: bool = False) -> None:
        """Start, keep or stop the deadline for what the client owes now (`_owing`)."""
        owed = self._owing()
        if owed != self._owed:
            self._unwatch()
            if owed is not None:
                self._owed, self._stalled_since = owed, self.loop.time()
                timeout = self.head_timeout if owed == "head" else self.body_timeout
                self._deadline = self.loop.call_later(timeout, self._on_deadline)
        elif owed == "body" and progress:
            self._stalled_since = self.loop.time()  # a byte of body came: its deadline starts again

    def _owing(self) -> str | None:
        """h11's IDLE is exactly "the previous answer is out and no new request head is complete";
        SEND_BODY is "the head is in, not all of the body"."""
        if self.transport.is_closing():
            return None
        state = self.conn.their_state
        return "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None

    def _unwatch(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self._owed = self._stalled_since = None

    def _excused(self) -> bool:
        return self.flow.read_paused or self.conn.they_are_waiting_for_100_continue

    def _on_deadline(self) -> None:
        self._deadline = None
        if self._owed == "body" and self._stalled_since is not None:
            now = self.loop.time()
            if self._excused():
                self._stalled_since = now
            left = self._stalled_since + self.body_timeout - now
            if left > 0:
                self._deadline = self.loop.call_later(left, self._on_deadline)
                return
        self._close()

    def _close(self) -> None:
        """Close this connection if its client still owes a head or a body."""
        self._unwatch()
        if self._owing() is not None:
            self.transport.close()


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    head_timeout: float = HEAD_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    keep_alive: float = KEEP_ALIVE,
    max_connections: int = MAX_CONNECTIONS,
    **extra: Any,
) -> uvicorn.Config:
    """The one uvicorn configuration of the sandbox, in the foreground or in a thread."""
    timeouts = {"head_timeout": float(head_timeout), "body_timeout": float(body_timeout)}
    protocol = type("HeadTimeoutH11", (HeadTimeoutH11,), timeouts)
    return uvicorn.Config(
        _quiet_when_gone(app),
        host=host,
        port=port,
        loop="asyncio",
        http=protocol,
        timeout_keep_alive=keep_alive,  # type: ignore[arg-type]  # uvicorn accepts a float
        limit_concurrency=max_connections,
        h11_max_incomplete_event_size=MAX_HEAD,
        proxy_headers=False,  # X-Forwarded-For never makes a remote peer look local
        **extra,
    )


def _quiet_when_gone(app: Any) -> Any:
    """`app`, but a client that left (or was closed for stalling) in the middle of its body is
    not logged as an application error with a traceback: a crowd of slow clients cannot fill the
    log."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except ClientDisconnect:
            pass  # nobody is left to answer

    return asgi


def serve_in_thread(
    config: uvicorn.Config, *, name: str, timeout: float = 15.0
) -> tuple[uvicorn.Server, threading.Thread, str]:
    """Run uvicorn on its own event loop in a daemon thread (never the caller's, nor a Jupyter
    kernel's) and return once it listens: the server, its thread and its URL. The sandbox and the
    inspector both serve this way."""
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

    thread = threading.Thread(target=serve, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            reason = repr(failure[0]) if failure else "the server did not start"
            raise RuntimeError(f"{name} failed to start on {config.host}:{config.port}: {reason}")
        time.sleep(0.01)
    bound_host, bound_port = server.servers[0].sockets[0].getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return server, thread, f"http://{shown}:{bound_port}"


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
        head_timeout: float = HEAD_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
        keep_alive: float = KEEP_ALIVE,
        max_connections: int = MAX_CONNECTIONS,
    ) -> Sandbox:
        """Serve a fresh sandbox on a free loopback port in a background thread
        (`head_timeout`, `body_timeout`, `keep_alive`, `max_connections`: see the module docstring)."""
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
        config = server_config(
            app,
            host,
            port,
            head_timeout=head_timeout,
            body_timeout=body_timeout,
            keep_alive=keep_alive,
            max_connections=max_connections,
            log_config=None,
            log_level="warning",
            lifespan="on",
        )
        server, thread, url = serve_in_thread(config, name="decoy-sandbox", timeout=timeout)
        return cls(app, server, thread, url)

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
    private_dirs(str(path.parent))  # it will hold the owner's key: 0700 whatever the umask
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
    config = server_config(app, host, port, log_level="warning")
    fingerprint = app.state.sb.owner.key.fingerprint
    server = _TellingServer(config, lambda h, p: print(next_steps(h, p, db_path, approve, fingerprint), flush=True))
    server.run()
    return 0


class _TellingServer(uvicorn.Server):
    """A uvicorn server that says where it listens once it does: the port it bound (`--port 0`
    asks the system for a free one), so the URL printed is one that answers."""

    def __init__(self, config: uvicorn.Config, tell: Callable[[str, int], None]) -> None:
        super().__init__(config)
        self._tell = tell

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._tell(*bound_address(self.config.host, self.servers))


def bound_address(host: str, servers: list[Any]) -> tuple[str, int]:
    """(host, port) to show for what the server bound. The host as asked, with the port bound;
    when port 0 bound several sockets (`localhost`: IPv4 and IPv6) on different ports, the first
    socket's own address, so the URL names one socket exactly."""
    names = [sock.getsockname()[:2] for srv in servers for sock in srv.sockets]
    if len({port for _, port in names}) == 1:
        return host, names[0][1]
    return names[0][0], names[0][1]


def next_steps(host: str, port: int, db_path: str, approve: str, fingerprint: str) -> str:
    """What `decoy-lab sandbox` prints once it serves: where it is, what to do next, how to stop."""
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    home = f"{url}/" if host in LOOPBACK_HOSTS else f"http://127.0.0.1:{port}/  (this machine only)"
    waits = "approves every ask at once" if approve == "auto" else "waits for you to approve each ask on the home page"
    return "\n".join(
        [
            f"Decoy sandbox on {url}  (db: {db_path}, approve: {approve}, owner key: {fingerprint})",
            "",
            "Next:",
            f"  give an agent this URL   {url}",
            f"  your home page           {home}",
            f"                           what is waiting, who is connected, how to pair; this sandbox {waits}",
            f'  pair from a shell        decoy-lab connect {url} --name "My agent"',
            f"  pair from a notebook     %decoy connect {url}",
            "  or the guided tour       jupyter lab notebooks/01-tour.ipynb  (it starts a sandbox of its own)",
            "",
            "Ctrl-C to stop.",
        ]
    )


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
