"""The inspector's proxy, run in a process of its own (proxy_child.py) and feeding this process's recorder.

`ProxyProcess(recorder, upstream, …)` starts `python -m decoy_lab.inspector.proxy_child` with one end of a
socketpair and returns once it listens (`.url`), like serve.Served. A reader thread
turns the frames it sends into the recorder's `begin` and `finish`; `sync()` makes sure every
exchange begun before it is known here (a ping answered after every frame before it); `stop()`
asks the proxy's process to stop (exchanges still running get their grace, then end as stopped) and waits
for it to go. Should the proxy's process die, the flows it had in flight end as a fault of the inspector,
with its exit status and the last of what it wrote to stderr.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from decoy_lab.gcpause import gc_paused
from decoy_lab.inspector import flow_record
from decoy_lab.inspector.proxy_child import Frames, frame
from decoy_lab.inspector.recorder import Recorder
from decoy_lab.inspector.serve import is_loopback_host
from decoy_lab.inspector.tee import RowCollector, Tee

START_TIMEOUT = 30.0  # seconds for the proxy's process to start listening (a cold interpreter on a busy machine)
READ = 1 << 20


class ProxyProcess:
    """the proxy's process serving `upstream` into `recorder`: `.url`, `.running`, `.sync()`, `.stop()`."""

    def __init__(
        self,
        recorder: Recorder,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 60.0,
        graceful: float = 2.0,
        limits: dict[str, float] | None = None,
    ):
        if not is_loopback_host(host):
            raise ValueError(f"the inspector listens on loopback only, not {host!r}")
        self.recorder = recorder
        self.url = ""
        self._flows: dict[int, flow_record.Flow] = {}  # the proxy process's exchange number → its flow here
        self._rows: dict[int, list] = {}  # the rows of a memories answer so far, by exchange number
        self._pieces: dict[tuple[int, str], list[bytes]] = {}  # a large body's kept bytes so far
        self._frames = Frames()
        self._lock = threading.Condition()
        self._pings = self._pongs = 0
        self._ready: tuple | None = None
        self._stopping = False
        ours, theirs = socket.socketpair()
        self._sock = ours
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the proxy process's stderr, read when it dies; closed by stop()
        config = {
            "upstream": upstream,
            "host": host,
            "port": port,
            "timeout": timeout,
            "graceful": graceful,
            "limits": limits or {},  # agentside.Limits' fields; tests pass smaller ones
            "cap": recorder.cap,
            "t0": recorder.started_at,
        }
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "decoy_lab.inspector.proxy_child", str(theirs.fileno()), json.dumps(config)],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                env=_env(),
            )
        finally:
            theirs.close()
        self._reader = threading.Thread(target=self._read, name="decoy-inspector-proxy", daemon=True)
        self._reader.start()
        self._await_ready()

    def __repr__(self) -> str:
        return f"<ProxyProcess {self.url} {'running' if self.running else 'stopped'}, pid {self._proc.pid}>"

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._reader.is_alive() and self._proc.poll() is None

    # -- starting and stopping ---------------------------------------------------------------------
    def _await_ready(self) -> None:
        with self._lock:
            self._lock.wait_for(lambda: self._ready is not None, START_TIMEOUT)
            ready = self._ready
        if ready is not None and ready[0] == "ready":
            self.url = str(ready[1])
            return
        self._kill()
        why = ready[1] if ready is not None else f"no answer within {START_TIMEOUT:g} s"
        raise RuntimeError(f"the inspector's proxy failed to start: {why}{self._stderr_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the proxy's process: exchanges still running get their grace, then end as stopped."""
        self._stopping = True
        self._send(("stop",))
        self._reader.join(timeout)
        self._kill()

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(10)
        self._reader.join(5)
        self._sock.close()
        if not self._reader.is_alive():
            self._stderr.close()

    # -- what it sends -----------------------------------------------------------------------------
    def sync(self, timeout: float = 5.0) -> bool:
        """Every exchange begun before this call is known to the recorder (False: the proxy's process did
        not answer in time, or has gone). A no-op on the reader thread (a listener asking)."""
        if threading.current_thread() is self._reader or not self.running:
            return False
        with self._lock:
            self._pings += 1
            n = self._pings
        if not self._send(("ping", n)):
            return False
        with self._lock:
            return self._lock.wait_for(lambda: self._pongs >= n or not self._reader.is_alive(), timeout) and (
                self._pongs >= n
            )

    def _send(self, message: tuple) -> bool:
        try:
            self._sock.sendall(frame(message))
            return True
        except OSError:
            return False

    def _read(self) -> None:
        try:
            while data := self._sock.recv(READ):
                # the flows a batch makes live on: moved to the oldest generation at once, not
                # scanned on their way there, where a full collection would stall the process
                # serving the sandbox beside them (gcpause.py)
                with gc_paused():
                    for message in self._frames.feed(data):
                        self._handle(message)
        except OSError:
            pass
        finally:
            self._gone()

    def _handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "begin":
            _, seq, method, path, query, headers, version, start, started = message
            self._flows[seq] = self.recorder.begin(method, path, query, headers, version, start=start, started=started)
        elif kind == "answer":
            answered = self._flows.get(message[1])
            if answered is not None:
                answered.timings.sent, answered.timings.first_byte = message[3], message[4]
                answered.status = message[2]
        elif kind == "body":
            self._pieces.setdefault((message[1], message[2]), []).append(message[3])
        elif kind == "rows":
            self._rows.setdefault(message[1], []).extend(message[2])
        elif kind == "end":
            self._end(*message[1:])
        elif kind == "whole":  # begun and ended between two of the proxy process's flushes: a begin's fields, an end's
            self._handle(("begin", *message[1:9]))
            self._end(message[1], *message[9:])
        elif kind == "pong":
            with self._lock:
                self._pongs = max(self._pongs, message[1])
                self._lock.notify_all()
        elif kind in ("ready", "failed"):
            with self._lock:
                self._ready = message
                self._lock.notify_all()

    def _end(
        self, seq: int, facts: tuple, request: tuple, response: tuple, headers: list, parsed: tuple | None
    ) -> None:
        """`parsed`: for a memories answer, what stopped its rows' parse and how many were whole within the cap."""
        rows = self._rows.pop(seq, [])
        flow = self._flows.pop(seq, None)
        if flow is None:
            return
        status, sent, first_byte, done, notes, ended, reason = facts
        flow.status, flow.timings.sent, flow.timings.first_byte = status, sent, first_byte
        flow.notes.extend(notes)
        collected = None if parsed is None else RowCollector.of(rows, *parsed)
        req, resp = self._kept(seq, "request", *request), self._kept(seq, "response", *response)
        self.recorder.finish(flow, req, resp, headers, ended=ended, reason=reason, rows=collected, done=done)

    def _kept(self, seq: int, side: str, last: bytes, size: int, complete: bool) -> Tee:
        pieces = self._pieces.pop((seq, side), None)
        return Tee.of(b"".join([*pieces, last]) if pieces else last, size, complete)

    def _gone(self) -> None:
        """The proxy's process has gone: what it had in flight ends here, saying why."""
        with self._lock:
            self._ready = self._ready or ("failed", "the process ended before it listened")
            self._lock.notify_all()
        self._pieces.clear()
        self._rows.clear()
        if not self._flows:
            return
        try:
            code = self._proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        if self._stopping:
            ended, why = flow_record.STOPPED, "the inspector stopped during the exchange"
        else:
            ended, why = (
                flow_record.PROXY_ERROR,
                f"the inspector's proxy process ended (exit status {code}){self._stderr_tail()}",
            )
        for flow in list(self._flows.values()):
            self.recorder.finish(flow, Tee(0), Tee(0), [], ended=ended, reason=why)
        self._flows.clear()

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 2000))
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f": {text.splitlines()[-1]}" if text else ""


def _env() -> dict[str, str]:
    """This process's environment, with the folder decoy_lab was imported from first on the path
    (a checkout run without installing it, a notebook started inside one)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env
