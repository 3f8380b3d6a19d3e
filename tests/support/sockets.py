"""A real HTTP/1.1 server on a loopback socket whose every answer is chosen per request: sound,
dripped a byte at a time (status line and headers, or body), silent, cut off by a reset, or a
5xx. For the faults a MockTransport cannot show: those that happen between bytes on the wire."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

Answer = Callable[[socket.socket, threading.Event], None]


def whole(status: int, body: Any) -> Answer:
    """A complete JSON answer, then the connection is closed."""

    def send(conn: socket.socket, stop: threading.Event) -> None:
        data = json.dumps(body).encode()
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        conn.sendall(head.encode() + b"Connection: close\r\n\r\n" + data)

    return send


def drip_head(every: float) -> Answer:
    """The status line and headers one byte every `every` seconds (each byte inside any read
    timeout), so only an overall deadline ends the call."""

    def send(conn: socket.socket, stop: threading.Event) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"x" * 20 + b"\r\n\r\n{}"
        for i in range(len(head)):
            if stop.is_set():
                return
            conn.sendall(head[i : i + 1])
            time.sleep(every)

    return send


def silent(conn: socket.socket, stop: threading.Event) -> None:
    """Reads the request and answers nothing (until the client gives up)."""
    stop.wait(30)


def reset_mid_body(conn: socket.socket, stop: threading.Event) -> None:
    """Headers promising 1000 bytes, 10 of them, then a TCP reset."""
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"memories"')
    time.sleep(0.05)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close → RST


def _read_request(conn: socket.socket) -> tuple[str, str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return "", "", b""
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length"), 0)
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            break
        body += more
    method, target, _ = lines[0].split(" ", 2)
    return method, target.split("?")[0], body


@contextlib.contextmanager
def serving(answer: Callable[[str, str, bytes], Answer]) -> Iterator[str]:
    """A server at the yielded URL answering each request with `answer(method, path, body)`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                method, path, body = _read_request(conn)
                if method:
                    answer(method, path, body)(conn, stop)
            except OSError:
                pass  # the client hung up: what it saw is what the test checks

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()


def refused_url() -> str:
    """A loopback URL nothing listens on (connecting is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"
