"""`Inspector`: a running recording proxy (or a recording re-opened offline) and its views.

    with Inspector.start(sandbox=True) as insp:          # or upstream="https://…", sandbox=<Sandbox>
        conn = Connection.pair(insp.url, name="My agent")  # give the agent insp.url
        conn.load()
        insp.flows                # one row per exchange: id, method, path, status, agent, verdict, …
        insp.rows(3)              # the rows flow 3 carried, opened where a key allows

`Inspector.open("run.har", owner_key=…, agent_key=…)` reads a recording back without a server
(with a key, every row is opened again; without, the verdicts recorded are kept);
`Inspector.replay("run.har")` serves the recording as the upstream of a new inspector, so an
agent (or `resend`) can run against it again. `record="run.har"` writes every exchange to the
recording as it finishes (streamed: nothing is held for it), closed when the inspector closes;
`save(path)` writes the flows kept so far at any time. A running inspector keeps the newest
`keep` flows (10,000 unless told); `dropped` counts the older ones let go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from decoy_lab.argtypes import port_problem
from decoy_lab.inspector import har
from decoy_lab.inspector.flow_record import BODY_CAP, FRAME_COLUMNS, KEEP, ROW_COLUMNS, Flow
from decoy_lab.inspector.opening import Opener, owner_check_of
from decoy_lab.inspector.proxy import upstream_problem
from decoy_lab.inspector.proxy_process import ProxyProcess
from decoy_lab.inspector.recorder import Recorder
from decoy_lab.inspector.serve import Served, serve_in_thread
from decoy_lab.wire.crypto import AgentKey

KeyArg = AgentKey | str | bytes | None


def _key(value: KeyArg | Path) -> KeyArg:
    """An AgentKey, PEM text or bytes, or a path to a PEM file."""
    if isinstance(value, Path) or (isinstance(value, str) and "-----BEGIN" not in value and Path(value).is_file()):
        return Path(value).read_bytes()
    return value


def start_problem(upstream: str | None, port: int, record: str | Path | None) -> str | None:
    """What keeps a proxy from starting with these, in words, or None."""
    if upstream is not None and (why := upstream_problem(str(upstream))) is not None:
        return why
    if (why := port_problem(port)) is not None:
        return f"port {why}"
    if record is not None and not Path(record).expanduser().resolve().parent.is_dir():
        return f"{record}: its folder does not exist"
    return None


class Inspector:
    """Flows recorded by a running proxy (`url`), or read from a recording (`url` None)."""

    def __init__(
        self,
        recorder: Recorder,
        *,
        served: ProxyProcess | Served | None = None,
        upstream: str | None = None,
        sandbox: Any = None,
        owns_sandbox: bool = False,
        record: str | Path | None = None,
        also_stop: list[Served] | None = None,
        writer: har.HarWriter | None = None,
    ):
        self.recorder = recorder
        self.upstream = upstream
        self.sandbox = sandbox
        self.record = Path(record) if record is not None else None
        self._served = served
        self._owns_sandbox = owns_sandbox
        self._also_stop = also_stop or []
        self._writer = writer
        self._closed = False

    # -- making one ------------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        upstream: str | None = None,
        *,
        sandbox: Any = None,
        port: int = 0,
        host: str = "127.0.0.1",
        agent_key: KeyArg | Path = None,
        owner_key: KeyArg | Path = None,
        record: str | Path | None = None,
        reveal: bool = False,
        cap: int = BODY_CAP,
        keep: int = KEEP,
        timeout: float = 60.0,
    ) -> Inspector:
        """Start a recording proxy in front of `upstream` (a base URL) or a sandbox (`sandbox=True`
        starts one, with `owner_key` when given; or pass a running `Sandbox`). `.url` is the base
        URL to give the agent. With the sandbox its owner key opens every row an agent writes;
        `owner_key` does the same for any other upstream, `agent_key` opens what the agent reads.
        `keep`: how many flows are kept (the newest); `record` still gets every exchange."""
        if (upstream is None) == (sandbox is None or sandbox is False):
            raise ValueError("give exactly one of upstream='http://…' or sandbox=True / sandbox=<Sandbox>")
        why = start_problem(upstream, port, record)  # said before a sandbox or a process is started
        if why is not None:
            raise ValueError(why)
        owns = False
        if sandbox is True:
            from decoy_lab.sandbox import Sandbox

            sandbox, owns = Sandbox.start(owner_key=_key(owner_key)), True
        elif sandbox is not None and not hasattr(sandbox, "url"):
            raise TypeError("sandbox= takes True or a running Sandbox (Sandbox.start())")
        recorder: Recorder | None = None
        writer: har.HarWriter | None = None
        try:
            target = str(upstream) if upstream is not None else str(sandbox.url)
            check = owner_check_of(sandbox, None) if sandbox is not None else owner_check_of(None, _key(owner_key))
            opener = Opener(owner_check=check, agent_key=_key(agent_key), reveal=reveal)
            recorder = Recorder(opener=opener, reveal=reveal, cap=cap, keep=keep)
            writer = har.HarWriter(record, upstream=target, reveal=reveal) if record is not None else None
            if writer is not None:  # told before the first exchange can finish
                recorder.listeners.append(writer.add)
            served = ProxyProcess(recorder, target, host=host, port=port, timeout=timeout)
        except BaseException:
            if writer is not None:
                writer.abandon()
            if recorder is not None:
                recorder.close()
            if owns:
                sandbox.stop()
            raise
        if writer is not None:
            writer.inspector = served.url
        return cls(
            recorder, served=served, upstream=target, sandbox=sandbox, owns_sandbox=owns, record=record, writer=writer
        )

    @classmethod
    def open(
        cls, source: str | Path | dict, *, agent_key: KeyArg | Path = None, owner_key: KeyArg | Path = None
    ) -> Inspector:
        """Read a recording back, offline. With a key every row is opened again with it; without
        one, each flow keeps the rows and verdicts it was recorded with."""
        doc = har.load_har(source)
        check = owner_check_of(None, _key(owner_key))
        opener = Opener(owner_check=check, agent_key=_key(agent_key))
        flows = har.read_har(doc)
        recorder = Recorder(opener=opener, keep=max(KEEP, len(flows)))
        for flow in flows:
            if check is not None or opener.agent_key is not None:
                flow.notes = [n for n in flow.notes if not n.startswith("error:")]
                opener.open_flow(flow, flow.request_body.data, flow.response_body.data)
            recorder.add_finished(flow)
        upstream = (doc["log"].get("_decoy") or {}).get("upstream")
        return cls(recorder, upstream=upstream)

    @classmethod
    def replay(
        cls,
        source: str | Path | dict,
        *,
        port: int = 0,
        agent_key: KeyArg | Path = None,
        owner_key: KeyArg | Path = None,
        record: str | Path | None = None,
        reveal: bool = False,
        keep: int = KEEP,
    ) -> Inspector:
        """Serve a recording as the upstream of a new recording inspector: its `.url` answers the
        recorded requests as they were answered (har.ReplayApp); `.replayed` is that app."""
        app = har.ReplayApp(har.read_har(source))
        upstream = serve_in_thread(app, name="decoy-inspector-replay")
        try:
            insp = cls.start(
                upstream.url,
                port=port,
                agent_key=agent_key,
                owner_key=owner_key,
                record=record,
                reveal=reveal,
                keep=keep,
            )
        except BaseException:
            upstream.stop()
            raise
        insp._also_stop.append(upstream)
        insp.replayed = app
        return insp

    replayed: har.ReplayApp | None = None

    # -- what it holds ---------------------------------------------------------------------------
    @property
    def url(self) -> str | None:
        """The base URL to give the agent (None for a recording opened offline)."""
        return self._served.url if self._served is not None else None

    @property
    def pid(self) -> int | None:
        """The process id of the proxy, which runs in a process of its own (None offline)."""
        return self._served.pid if isinstance(self._served, ProxyProcess) else None

    @property
    def running(self) -> bool:
        return self._served is not None and self._served.running and not self._closed

    def settle(self, timeout: float | None = 30.0) -> bool:
        """Wait until every finished exchange is masked and opened (a notebook rarely needs to)."""
        self._sync()
        return self.recorder.settle(timeout)

    def all_flows(self) -> list[Flow]:
        """Every kept flow, in order; each that has ended is masked and opened before it is shown."""
        self._sync()
        return self.recorder.finished()

    def _sync(self) -> None:
        """Every exchange the proxy has begun is in the record (it runs in a process of its own)."""
        if isinstance(self._served, ProxyProcess):
            self._served.sync()

    def __len__(self) -> int:
        return len(self.recorder.flows)

    def __iter__(self) -> Iterator[Flow]:
        return iter(self.all_flows())

    @property
    def dropped(self) -> int:
        """How many older flows were let go to keep the newest `keep`."""
        return self.recorder.dropped

    def flow(self, flow_or_id: Flow | int) -> Flow:
        if isinstance(flow_or_id, Flow):
            return flow_or_id
        self._sync()
        found = self.recorder.flow(flow_or_id) if isinstance(flow_or_id, int) else None
        if found is None:
            flows = self.all_flows()
            span = f"flows {flows[0].id} to {flows[-1].id} are kept" if flows else "no flow is kept"
            gone = f" ({self.dropped:,} older ones were dropped)" if self.dropped else ""
            raise KeyError(f"no flow {flow_or_id!r}: {span}{gone}")
        self.recorder.finish_now(found)  # a flow looked at is masked and opened first
        return found

    __getitem__ = flow

    @property
    def flows(self) -> pd.DataFrame:
        """One row per exchange, in order (finished ones masked and opened: see `settle`)."""
        self.settle(0.25)
        frame = pd.DataFrame([f.frame_row() for f in self.all_flows()], columns=FRAME_COLUMNS)
        return frame.astype({"status": "Int64"})  # 200, not 200.0, beside a flow that had no answer

    def rows(self, flow_or_id: Flow | int, *, frame: bool = True) -> pd.DataFrame | list[dict]:
        """The sealed rows one flow carried: id, field, verdict, reason, text, …"""
        flow = self.flow(flow_or_id)
        self.recorder.finish_now(flow)
        self.settle(0.25)
        found = [{"flow": flow.id, **r.to_dict()} for r in flow.rows]
        return pd.DataFrame(found, columns=ROW_COLUMNS) if frame else found

    def on_flow(self, callback: Callable[[Flow], Any], *, in_flight: bool = False) -> None:
        """Call `callback(flow)` as each exchange is finished (masked and opened), from a worker
        thread; with `in_flight`, also as soon as it begins and ends (before it is opened)."""
        self.recorder.listeners.append(callback)
        if in_flight:
            self.recorder.watchers.append(callback)

    # -- recordings ------------------------------------------------------------------------------
    def to_har(self) -> dict:
        self.settle(30.0)
        return har.to_har(self.all_flows(), **self._har_options())

    def save(self, path: str | Path) -> Path:
        """Write the flows so far as HAR 1.2 (secrets masked, and the rows' opened text left out,
        unless the inspector reveals them)."""
        self.settle(30.0)
        return har.write_har(path, self.all_flows(), **self._har_options())

    def _har_options(self) -> dict[str, Any]:
        reveal = self.recorder.masker.reveal
        return {"upstream": self.upstream or "http://upstream", "inspector": self.url, "reveal": reveal}

    # -- ending ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving, finish every flow, write `record` when given, stop what it started."""
        if self._closed:
            return
        self._closed = True
        if self._served is not None:
            self._served.stop()
        self.recorder.settle(15.0)
        try:
            if self._writer is not None:
                self.recorder.close()  # every flow still queued finished first, and so written
                self._writer.close()
            elif self.record is not None:
                self.save(self.record)
        finally:
            self.recorder.close()
            for other in self._also_stop:
                other.stop()
            if self._owns_sandbox and self.sandbox is not None:
                self.sandbox.stop()

    def __enter__(self) -> Inspector:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._served is None:
            return f"<Inspector opened from a recording of {self.upstream or '?'}: {len(self)} flows>"
        state = "running" if self.running else "closed"
        gone = f" ({self.dropped:,} older dropped)" if self.dropped else ""
        return f"<Inspector {self.url} → {self.upstream}: {len(self)} flows{gone}, {state}>"
