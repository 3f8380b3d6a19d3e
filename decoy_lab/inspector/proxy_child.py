"""The inspector's proxy in a process of its own: `python -m decoy_lab.inspector.proxy_child FD CONFIG`.

Started by proxy_process.py, never by hand. The proxy (proxy.py on agentside.py's server) runs on
this process's event loop, and each exchange it sees goes to the inspector's process as data frames
over the socket `FD` (a socketpair the parent holds the other end of): `begin` when its request
head arrived, `answer` when the answer's head did, `body` and `rows` as the bytes the record keeps
of a large body come and as a memories answer's rows are parsed (this process keeps neither, so
its memory does not grow with an answer), `end` when it ended, with the rest of both bodies.
Frames go out together at most FLUSH seconds after the first of them; an exchange that begins and
ends between two flushes (most do) goes as one `whole` frame, its begin and end in one. Masking,
naming the agent and opening the rows stay with the recorder in the inspector's process, off the
request path.

Why a process: the proxy's parsing and copying, per exchange, then takes a core of its own
instead of the GIL of the process that serves the sandbox (a notebook's kernel, `decoy-lab
proxy --sandbox`): in one process, 8 writers through the proxy went at half the direct rate.

Frames are `marshal` data (tuples of str, bytes, numbers, lists and dicts: no code, no objects),
each preceded by its length (4 bytes, big-endian). From the parent: `("ping", n)` (answered
`("pong", n)` after every frame before it: the parent then holds every exchange begun so far) and
`("stop",)`; the parent's side closing is a stop too. This process ignores SIGINT (the
terminal's Ctrl-C reaches the whole group): the inspector stops it, and its flows in flight end
as recorded.
"""

from __future__ import annotations

import asyncio
import json
import marshal
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from decoy_lab.inspector.agentside import AgentServer, Limits, new_loop
from decoy_lab.inspector.flow_record import IN_FLIGHT, Flow, Timings
from decoy_lab.inspector.proxy import ProxyApp
from decoy_lab.inspector.tee import RowCollector, Tee

LENGTH = 4
FLUSH = 0.02  # seconds frames wait to go out together
PIECE = 256 * 1024  # bytes of a body kept for the record, sent on at a time
HIGH_WATER = 2 * 1024 * 1024  # bytes of frames waiting to be sent, past which a streaming body waits


# The proxy runs in a process of its own for `make bench`'s "inspector write throughput, proxied vs
# direct" (≥ 90 %): in the kernel's process it shared one GIL with the sandbox it fronts.
def frame(message: tuple) -> bytes:
    body = marshal.dumps(message)
    return len(body).to_bytes(LENGTH, "big") + body


class Frames:
    """Bytes in, whole messages out: `feed(data)` returns the messages completed by `data`."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        buf = self._buf
        buf += data
        out, at, size = [], 0, len(buf)
        with memoryview(buf) as view:  # read in place: slicing the bytearray would copy each frame
            while size - at >= LENGTH:
                n = int.from_bytes(view[at : at + LENGTH], "big")
                if size - at - LENGTH < n:
                    break
                out.append(marshal.loads(view[at + LENGTH : at + LENGTH + n]))
                at += LENGTH + n
        del buf[:at]
        return out


class Relay:
    """What the proxy records into here: each exchange's begin and end, sent as frames."""

    def __init__(self, control: Control, cap: int, t0: float):
        self.cap = cap
        self._control, self._send, self._t0, self._seq = control, control.send, t0, 0
        # begins not sent yet, oldest first: an exchange that ends before the next flush goes as
        # one `whole` frame (a third of the frames to make here and to read there)
        self._held: dict[int, tuple[tuple, Flow]] = {}
        control.before_flush = self.release

    def ms(self) -> float:
        """Milliseconds since the parent's recorder started (CLOCK_MONOTONIC is the machine's)."""
        return round((time.monotonic() - self._t0) * 1000, 3)

    def begin(self, method: str, path: str, query: str, headers: list[tuple[str, str]], http_version: str) -> Flow:
        self._seq += 1
        flow = Flow(self._seq, method, path, query, timings=Timings(start=self.ms()), http_version=http_version)
        begun = ("begin", self._seq, method, path, query, headers, http_version, flow.timings.start, time.time())
        self._held[self._seq] = (begun, flow)
        self._control.wake()
        return flow

    def release(self, upto: int | None = None) -> None:
        """Send the held begins, oldest first (those up to exchange `upto`, or all), each with its
        answer's head when that has come: the inspector's process numbers flows as begins come."""
        held = self._held
        while held:
            seq = next(iter(held))
            if upto is not None and seq > upto:
                break
            begun, flow = held.pop(seq)
            self._send(begun)
            if flow.status is not None:
                self.answered(flow)

    def _send_on(self, message: tuple) -> None:
        """A frame about exchange `message[1]`: its begin goes first."""
        if self._held:
            self.release(message[1])
        self._send(message)

    def answered(self, flow: Flow) -> None:
        if flow.id in self._held:  # told with its begin, or with its end
            return
        t = flow.timings
        self._send(("answer", flow.id, flow.status, t.sent, t.first_byte))

    async def pace(self) -> None:
        await self._control.room()

    def collector(self, flow: Flow, encoding: str | None) -> RowCollector:
        return _SentRows(self._send_on, flow.id, encoding, self.cap)

    def tee(self, flow: Flow, side: str) -> Tee:
        return _SentTee(self._send_on, flow.id, side, self.cap)

    def finish(
        self,
        flow: Flow,
        request: Tee,
        response: Tee,
        response_headers: list[tuple[str, str]],
        *,
        ended: str,
        reason: str = "",
        rows: RowCollector | None = None,
    ) -> bool:
        if flow.ended != IN_FLIGHT:
            return False
        flow.ended = ended
        t = flow.timings
        end = (
            (flow.status, t.sent, t.first_byte, self.ms(), list(flow.notes), ended, reason),
            (bytes(request.buf), request.size, request.complete),
            (bytes(response.buf), response.size, response.complete),
            response_headers,
            None if rows is None else (rows.problem, rows.within),
        )
        held = self._held.pop(flow.id, None)
        if held is None:
            self._send(("end", flow.id, *end))
        else:
            self.release(flow.id)  # the begins before it
            self._send(("whole", *held[0][1:], *end))
        return True


class _SentTee(Tee):
    """A body's kept bytes (up to the cap), sent on in pieces of PIECE bytes as they come: this
    process holds at most a piece of any body, however large; the last piece goes with `end`."""

    def __init__(self, send: Any, flow_id: int, side: str, cap: int):
        super().__init__(cap)
        self._send, self._id, self._side, self._sent = send, flow_id, side, 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = self.cap - self._sent - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]
        if len(self.buf) >= PIECE:
            self._send(("body", self._id, self._side, bytes(self.buf)))
            self._sent += len(self.buf)
            self.buf = bytearray()


class _SentRows(RowCollector):
    """A memories answer's rows, sent on as they are parsed: this process keeps none of them, so
    its memory does not grow with the answer (the record keeps its first `cap` bytes only)."""

    def __init__(self, send: Any, flow_id: int, encoding: str | None, cap: int):
        super().__init__(encoding=encoding, cap=cap)
        self._send, self._id = send, flow_id

    def feed(self, chunk: bytes) -> None:
        super().feed(chunk)
        if self.rows:
            self._send(("rows", self._id, self.rows))
            self.rows = []


class Control(asyncio.Protocol):
    """This process's end of the socketpair: frames out, `ping` and `stop` in."""

    def __init__(self, stop: asyncio.Event):
        self.stop = stop
        self._queue: list[bytes] = []
        self._queued = 0  # bytes in the queue
        self._room = asyncio.Event()
        self._room.set()
        self._timer: asyncio.TimerHandle | None = None
        self._frames = Frames()
        self._transport: asyncio.Transport | None = None
        # called first by each flush: frames held back (the Relay's begins) go out with it
        self.before_flush: Callable[[], None] | None = None

    def connection_made(self, transport: Any) -> None:
        self._transport = transport
        transport.set_write_buffer_limits(high=HIGH_WATER)

    def pause_writing(self) -> None:
        self._room.clear()

    def resume_writing(self) -> None:
        self._room.set()

    async def room(self) -> None:
        """Returns once the frames waiting for the inspector's process are under HIGH_WATER bytes:
        a body streaming faster than they are taken waits, rather than piling up here."""
        if self._queued >= PIECE:
            self.flush()
        if not self._room.is_set():
            await self._room.wait()

    def data_received(self, data: bytes) -> None:
        for message in self._frames.feed(data):
            if message[0] == "ping":  # answered after every frame held or queued before it
                self.flush()
                self.send(("pong", message[1]), now=True)
            elif message[0] == "stop":
                self.stop.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._room.set()
        self.stop.set()  # the inspector's process has gone: nobody records what this would pass

    def send(self, message: tuple, *, now: bool = False) -> None:
        """Queue `message`; the queue goes out FLUSH seconds after its first frame (or `now`), so
        under load the inspector's process wakes once for many exchanges, not three times for each."""
        data = frame(message)
        self._queue.append(data)
        self._queued += len(data)
        if now:
            self.flush()
        else:
            self.wake()

    def wake(self) -> None:
        """A flush within FLUSH seconds (one is due already, or is set now)."""
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH, self.flush)

    def flush(self) -> None:
        if self.before_flush is not None:
            self.before_flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None and self._queue:
            self._transport.write(b"".join(self._queue))
        self._queue.clear()
        self._queued = 0

    async def drained(self, timeout: float = 10.0) -> None:
        self.flush()
        end = time.monotonic() + timeout
        while self._transport is not None and self._transport.get_write_buffer_size() and time.monotonic() < end:
            await asyncio.sleep(0.01)


async def serve_proxy(sock: socket.socket, config: dict[str, Any]) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    _, control = await loop.connect_accepted_socket(lambda: Control(stop), sock)
    relay = Relay(control, int(config["cap"]), float(config["t0"]))
    app = ProxyApp(relay, config["upstream"], timeout=float(config["timeout"]))
    srv = AgentServer(app, float(config["graceful"]), loop=loop, limits=Limits(**config.get("limits", {})))
    try:
        await srv.start(config["host"], int(config["port"]))
    except OSError as exc:
        control.send(("failed", f"{type(exc).__name__}: {exc.strerror or exc}"))
        await control.drained()
        return 1
    control.send(("ready", srv.url), now=True)
    await srv.serve_until(stop)
    control.send(("bye",))
    await control.drained()
    return 0


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(argv[0]))
    config = json.loads(argv[1])
    loop = new_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(serve_proxy(sock, config))
    finally:
        loop.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
