"""The record: the newest flows in the order they arrived, each finished by masking and opening it.

`Recorder.begin` opens a flow the moment a request head arrives (its headers masked at once,
`watchers` told: the flow shows "in flight"); the proxy tees each body into a `Tee` and, for a
`GET` of memories, its rows into a `RowCollector` (bodies.py). `Recorder.finish` ends the flow at once (its timing and how it ended,
`watchers` told) and queues the rest, which one worker thread does off the request path: learn
the secrets the exchange carried (masking.py) and which agent sent it (agents.py), store the
masked bodies, open the rows (opening.py), tell each listener. The worker waits for a lull (the
unwraps and parsing would otherwise take the cores the exchanges need), for at most MAX_LAG
seconds, or runs at once for anyone who looks: `settle()` waits for every flow to be finished,
`finish_now(flow)` finishes one. Only the newest `keep` flows are kept; `dropped` counts the rest.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from decoy_lab.inspector.flow_record import BODY_CAP, IN_FLIGHT, KEEP, Body, Flow, Timings
from decoy_lab.inspector.masking import Masker, bearer
from decoy_lab.inspector.opening import Opener
from decoy_lab.inspector.senders import AgentBook
from decoy_lab.inspector.tee import RowCollector, Tee, decoded
from decoy_lab.secret import secret_fingerprint

Listener = Callable[[Flow], Any]
IDLE = 0.05  # seconds without an exchange beginning or ending: the worker finishes flows then
MAX_LAG = 2.0  # seconds a finished exchange waits at most, under a steady load, for its opening
BACKLOG = 2_000  # exchanges waiting: past this the worker runs whatever the load
BACKLOG_BYTES = 128 * 1024 * 1024  # or past this many body bytes held for them
MASKED_KEPT = 4096  # request headers kept with their masked form


class Recorder:
    """The newest `keep` flows, in order; finishing (masking, naming, opening) runs on one worker
    thread, while the proxy is idle or when someone waits for it (`settle`, `finish_now`)."""

    def __init__(
        self,
        *,
        opener: Opener | None = None,
        reveal: bool = False,
        cap: int = BODY_CAP,
        keep: int = KEEP,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        if keep < 1:
            raise ValueError(f"keep must be at least 1 flow, got {keep}")
        self.opener = opener or Opener()
        self.masker = Masker(reveal=reveal)
        self.agents = AgentBook()
        self.cap = cap
        self.keep = keep
        self.flows: deque[Flow] = deque()
        self.dropped = 0  # flows dropped from the front to keep the newest `keep`
        self.listeners: list[Listener] = []  # told of each flow once it is finished (masked, opened)
        self.watchers: list[Listener] = []  # told as soon as a flow begins and as soon as it ends
        self._clock, self._wall = clock, wall
        self._t0 = clock()
        self._next_id = 1
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._last = clock()  # when an exchange last began or ended
        self._jobs: deque[_Job] = deque()
        self._held = 0  # body bytes the queued jobs hold
        # a request header → as recorded, and the fingerprint of the bearer token it carries (or "")
        self._masked: dict[tuple[str, str], tuple[tuple[str, str], str]] = {}
        self._masked_at = -1  # how many secrets the masker knew when those were masked
        self._running: _Job | None = None
        self._wanted = 0  # callers waiting in settle(): the worker runs at once
        self._closing = False
        self._one = threading.Lock()  # one finishing at a time (worker, or finish_now's caller)
        self._worker = threading.Thread(target=self._work, name="decoy-inspector-open", daemon=True)
        self._worker.start()

    def __repr__(self) -> str:
        return f"<Recorder {len(self.flows)} flows>"

    @property
    def started_at(self) -> float:
        """When the recorder started, on its clock (time.monotonic, the machine's, unless told)."""
        return self._t0

    def ms(self) -> float:
        """Milliseconds since the recorder started."""
        return round((self._clock() - self._t0) * 1000, 3)

    def begin(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        http_version: str,
        *,
        start: float | None = None,
        started: float | None = None,
    ) -> Flow:
        """A flow for a request head that has just arrived (`start`, `started`: when, if it came
        to the proxy's own process earlier than now)."""
        masked, token_fp = self._head(headers)
        if query:
            self.masker.learn_query(query)
            query = self.masker.mask_text(query)
        agent, token_fp, token_id = self.agents.label(token_fp)
        with self._lock:
            flow = Flow(
                self._next_id,
                method,
                path,
                query,
                request_headers=masked,
                timings=Timings(start=self.ms() if start is None else start),
                started=self._wall() if started is None else started,
                agent=agent,
                token=token_fp,
                token_id=token_id,
                http_version=http_version,
            )
            self._next_id += 1
            self._append(flow)
            self._in_flight += 1
            self._last = self._clock()
        self._tell(self.watchers, flow)
        return flow

    def answered(self, flow: Flow) -> None:
        """The answer's head has come (`flow.status`, its first byte): the flow holds it already."""

    async def pace(self) -> None:
        """Returns when the record can take more of a body that streams (here: at once)."""

    def tee(self, flow: Flow, side: str) -> Tee:
        """Where the `side` ("request", "response") body of `flow` is kept, up to the cap."""
        return Tee(self.cap)

    def collector(self, flow: Flow, encoding: str | None) -> RowCollector:
        """Where the rows of a memories answer go as it streams (`encoding`: its Content-Encoding)."""
        return RowCollector(encoding=encoding, cap=self.cap)

    def _head(self, headers: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], str]:
        """The request's headers learned from and masked, and its bearer token's fingerprint. An
        agent sends the same headers on every request: each new one is learned from (all of them
        before any is masked, so a secret one header carries is masked in the others), then masked
        and fingerprinted once and reused, until a secret is learned that may mask it differently
        (learning never forgets: a header seen once has taught all it can)."""
        cache = self._masked
        new = [pair for pair in headers if pair not in cache]
        if new:
            self.masker.learn_headers(new)
        if len(self.masker) != self._masked_at:
            cache.clear()
            self._masked_at = len(self.masker)
        out, token_fp = [], ""
        for pair in headers:
            got = cache.get(pair)
            if got is None:
                token = bearer([pair])
                got = (self.masker.mask_headers([pair])[0], secret_fingerprint(token) if token else "")
                if len(cache) < MASKED_KEPT:
                    cache[pair] = got
            out.append(got[0])
            token_fp = token_fp or got[1]
        return out, token_fp

    def _append(self, flow: Flow) -> None:
        self.flows.append(flow)
        while len(self.flows) > self.keep:
            self.flows.popleft()
            self.dropped += 1

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
        done: float | None = None,
    ) -> bool:
        """End `flow` now (its timing, or `done` when it ended earlier elsewhere, and how it ended)
        and queue the rest of its finishing; a flow already ended stays as it was (False)."""
        if flow.ended != IN_FLIGHT:
            return False
        flow.timings.done = self.ms() if done is None else done
        flow.ended, flow.reason = ended, reason
        flow.request_body = Body(b"", request.size, request.size > len(request.buf), request.complete)
        flow.response_body = Body(b"", response.size, response.size > len(response.buf), response.complete)
        req, resp = bytes(request.buf), bytes(response.buf)
        learnt = flow.path.startswith("/oauth/")  # small bodies that name the next requests' agent
        if learnt:
            resp = self._decoded(flow, resp, response_headers)
            self._learn(flow, req, resp, response_headers)
        flow.pending = True
        with self._lock:
            self._jobs.append(_Job(flow, req, resp, response_headers, rows, learnt, self._clock()))
            self._held += len(req) + len(resp)
            self._in_flight -= 1
            self._last = self._clock()
            if self._wanted:  # only for someone waiting: waking the worker would take the GIL from the exchanges
                self._idle.notify_all()
        self._tell(self.watchers, flow)
        return True

    # -- finishing, off the request path -----------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._idle:
                while not self._due():
                    if self._closing and not self._jobs:
                        return
                    self._idle.wait(IDLE)
                job = self._jobs.popleft()
                self._held -= len(job.request) + len(job.response)
                self._running = job
            try:
                self._run(job)
            finally:
                with self._idle:
                    self._running = None
                    if self._wanted:
                        self._idle.notify_all()

    def _due(self) -> bool:
        """A job runs when someone waits, the proxy has been idle a moment (no exchange in flight, none
        begun or ended for IDLE: a proxy in another process tells of its exchanges in batches, so
        a gap between them is no lull while some are still running), the oldest has waited
        MAX_LAG seconds (a live view gets its verdicts under a steady load), or the queue is long
        (in exchanges, or in the body bytes it holds)."""
        if not self._jobs:
            return False
        now = self._clock()
        return (
            self._wanted > 0
            or self._closing
            or (self._in_flight == 0 and now - self._last >= IDLE)
            or now - self._jobs[0].queued >= MAX_LAG
            or len(self._jobs) >= BACKLOG
            or self._held >= BACKLOG_BYTES
        )

    def finish_now(self, flow: Flow) -> None:
        """Finish `flow` on the caller's thread if it still waits its turn (a flow looked at)."""
        with self._lock:
            job = next((j for j in self._jobs if j.flow is flow), None)
            if job is not None:
                self._jobs.remove(job)
                self._held -= len(job.request) + len(job.response)
        if job is not None:
            self._run(job)

    def _run(self, job: _Job) -> None:
        with self._one:
            self._finish(job.flow, job.request, job.response, job.headers, job.rows, job.learnt)

    def _finish(
        self,
        flow: Flow,
        request: bytes,
        response: bytes,
        response_headers: list[tuple[str, str]],
        rows: RowCollector | None,
        learnt: bool = False,
    ) -> None:
        m = self.masker
        try:
            if not learnt:
                response = self._decoded(flow, response, response_headers)
                self._learn(flow, request, response, response_headers)
            known = self.agents.by_fingerprint(flow.token)
            if known is not None and flow.agent in ("", flow.token):
                flow.agent, flow.token_id = known.name, flow.token_id or known.token_id
            flow.response_headers = m.mask_headers(response_headers)
            flow.request_headers = m.mask_headers(flow.request_headers)
            flow.request_body = _kept(flow.request_body, m.mask_bytes(request))
            flow.response_body = _kept(flow.response_body, m.mask_bytes(response))
            if rows is not None and rows.problem:
                flow.notes.append(rows.problem)
            served = rows.rows if rows is not None and flow.status is not None and flow.status < 300 else None
            self.opener.open_flow(flow, request, response, served)
            if served is not None and flow.response_body.truncated:
                self._forget_past_cap(flow, response, rows.within if rows is not None else None)
        except Exception as exc:  # a record with a note beats a lost record
            flow.notes.append(f"error: finishing the record stopped: {exc!r}")
        flow.pending = False
        self._tell(self.listeners, flow)

    def _forget_past_cap(self, flow: Flow, kept: bytes, within: int | None) -> None:
        """Rows served past the record's cap keep their verdict and text but not the served row a
        trace would be made from (the record holds only the cap's worth of the answer). `within`:
        how many rows the collector found whole in the kept bytes as they streamed; else (a body
        decoded for the record) they are parsed again to count them."""
        if within is None:
            again = RowCollector()
            again.feed(kept)
            within = again.count
        n = within
        for row in flow.rows[n:]:
            row.rerun = None
        if len(flow.rows) > n:
            flow.notes.append(f"rows past the first {n:,} were opened as they streamed; their traces are not kept")

    def _decoded(self, flow: Flow, data: bytes, headers: list[tuple[str, str]]) -> bytes:
        encoding = next((v for k, v in headers if k.lower() == "content-encoding"), None)
        data, note = decoded(data, encoding, self.cap)
        if note:
            flow.notes.append(note)
        return data

    def _learn(self, flow: Flow, request: bytes, response: bytes, response_headers: list[tuple[str, str]]) -> None:
        """The secrets an exchange carried, and the agent it names (pairing, token answers)."""
        m = self.masker
        m.learn_body(request, flow.header("content-type"))
        m.learn_headers(response_headers)
        m.learn_body(response, next((v for k, v in response_headers if k.lower() == "content-type"), None))
        agent = self.agents.follow(flow.path, request, response, flow.status)
        if agent is not None and agent.name:
            flow.agent, flow.token_id = agent.name, flow.token_id or agent.token_id

    def add_finished(self, flow: Flow) -> None:
        """A flow recorded elsewhere (a HAR), appended as it is."""
        with self._lock:
            flow.id = self._next_id
            self._next_id += 1
            self._append(flow)

    def snapshot(self) -> list[Flow]:
        """The kept flows, in order, as a list (the record goes on changing under it)."""
        with self._lock:
            return list(self.flows)

    def finished(self) -> list[Flow]:
        """The kept flows, every one that has ended masked and opened first (those still waiting
        their turn, on the caller's thread): what anyone who looks at the record sees."""
        with self._idle:
            jobs = list(self._jobs)
            self._jobs.clear()
            self._held = 0
        for job in jobs:
            self._run(job)
        with self._idle:
            while self._running is not None:
                self._idle.wait(0.05)
        return self.snapshot()

    def flow(self, flow_id: int) -> Flow | None:
        """The kept flow of that id, None when there is none (never seen, or dropped)."""
        with self._lock:
            if not self.flows:
                return None
            at = flow_id - self.flows[0].id
            if 0 <= at < len(self.flows) and self.flows[at].id == flow_id:
                return self.flows[at]
            return next((f for f in self.flows if f.id == flow_id), None)

    def settle(self, timeout: float | None = 30.0) -> bool:
        """Wait until no exchange is in flight and every finished one is masked and opened;
        False when `timeout` seconds were not enough."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            self._wanted += 1
            self._idle.notify_all()
            try:
                while self._in_flight or self._jobs or self._running is not None:
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._idle.wait(left)
                return True
            finally:
                self._wanted -= 1

    def close(self) -> None:
        """Finish what is queued, then stop the worker."""
        with self._idle:
            self._closing = True
            self._idle.notify_all()
        self._worker.join()

    @staticmethod
    def _tell(listeners: list[Listener], flow: Flow) -> None:
        for listener in list(listeners):
            try:
                listener(flow)
            except Exception as exc:
                flow.notes.append(f"a listener failed: {exc!r}")


@dataclass
class _Job:
    """A flow ended and waiting to be finished, with the bytes its finishing reads."""

    flow: Flow
    request: bytes
    response: bytes
    headers: list[tuple[str, str]]
    rows: RowCollector | None
    learnt: bool
    queued: float


def _kept(body: Body, data: bytes) -> Body:
    return Body(data, body.size, body.truncated, body.complete)
