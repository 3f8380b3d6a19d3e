"""How soon things answer while something else waits: figures that used to be wall-clock thresholds
in the tests (issue 49), which now prove only that the thing happens at all (in order, not in time).

1. The sandbox answers a GET beside five slowloris heads (each a head sent in part, then held open)
   — was `< 0.5 s` in tests/sandbox/test_bounds.py.
2. The sandbox answers a GET with every connection slot held by a half-sent head (6 slots, 12
   heads) — was `< 1 s` there.
3. `%decoy connect` hands the cell back while the owner has not answered (approve="manual")
   — was `< 3000 ms` in tests/workbench/test_browser.py and `< 10 s` in test_magics.py.
4. `%decoy inspect` hands the cell back with the proxy running on its own thread — was `< 15 s` in
   tests/workbench/test_inspect_magic.py.

Each is timed three times and the median printed. Runs alone (`python -m bench.responsive`) or
as part of `python -m bench --only responsive`; it starts sandboxes of its own.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from .context import Context
from .report import Figure, info, table, within

RUNS = 3


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _median(measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(RUNS))


def _get_beside(url: str, heads: int, head: bytes, *, settle: float = 0.0) -> float:
    """Seconds a GET waits for its answer while `heads` other connections have each sent `head`, a
    request head they never finish (after `settle` s for them to reach the server); they close after."""
    held = [_connect(url) for _ in range(heads)]
    try:
        for conn in held:
            conn.sendall(head)
        if settle:
            time.sleep(settle)  # the heads reach the server (a bench's settle, not a test's assert)
        start = time.perf_counter()
        assert httpx.get(f"{url}/_sandbox/pending", timeout=10).status_code == 200
        return time.perf_counter() - start
    finally:
        for conn in held:
            conn.close()


def _beside_slowloris() -> float:
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none", head_timeout=5.0, keep_alive=5.0) as running:
        host = urlsplit(running.url).netloc.encode()
        return _get_beside(running.url, 5, b"GET /_sandbox/pending HTTP/1.1\r\nHost: " + host + b"\r\n")


def _at_the_connection_limit() -> float:
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none", head_timeout=30.0, max_connections=6) as running:
        return _get_beside(running.url, 12, b"GET /_sandbox/pending HTTP/1.1\r\n", settle=0.2)


@contextlib.contextmanager
def _shell():
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    with tempfile.TemporaryDirectory() as config:
        before = os.environ.get("DECOY_LAB_CONFIG_DIR")
        os.environ["DECOY_LAB_CONFIG_DIR"] = config
        try:
            shell = start_ipython() or get_ipython()
            shell.run_line_magic("load_ext", "decoy_lab")
            shell.run_line_magic("config", "DecoyMagics.sandbox_options = {'seed': 'none'}")
            yield shell, shell.magics_manager.registry["DecoyMagics"]
        finally:
            if before is None:
                os.environ.pop("DECOY_LAB_CONFIG_DIR", None)
            else:
                os.environ["DECOY_LAB_CONFIG_DIR"] = before


def _connect_magic() -> float:
    from decoy_lab.sandbox import Sandbox

    with _shell() as (shell, magics), Sandbox.start(approve="manual", seed="none") as sb:
        magics.connection = None
        start = time.perf_counter()
        widget = shell.run_line_magic("decoy", f"connect {sb.url} --name waiting --force")
        took = time.perf_counter() - start
        assert widget.waiting
        widget.handle.cancel()
        return took


def _inspect_magic() -> float:
    with _shell() as (shell, magics):
        magics.inspector = magics.sandbox = None
        start = time.perf_counter()
        insp = shell.run_line_magic("decoy", "inspect")
        took = time.perf_counter() - start
        assert insp.running
        insp.close()
        magics.sandbox.stop()
        magics.inspector = magics.sandbox = None
        return took


def run(ctx: Context | None = None) -> list[Figure]:
    return [
        within("sandbox GET beside 5 slowloris heads", _median(_beside_slowloris), 0.5, "≤ 0.5 s"),
        within(
            "sandbox GET at the connection limit (12 half-sent heads)", _median(_at_the_connection_limit), 1.0, "≤ 1 s"
        ),
        within("%decoy connect hands the cell back (owner not answering)", _median(_connect_magic), 3.0, "≤ 3 s"),
        info("%decoy inspect hands the cell back (proxy on its own thread)", _median(_inspect_magic), "s"),
    ]


if __name__ == "__main__":
    print(table(run()))
