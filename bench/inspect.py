"""The inspector: the flows view at 10,000 flows in a real browser, and what the proxy costs.

1. The flows view (JupyterLab + Debian chromium + Playwright) holding 10,000 flows (every tenth a
   POST of 4 sealed rows, every tenth a GET of 4 rows, a few rows unreadable). Measured in the
   page with performance.now(), from the event to the DOM change, painted (the next animation
   frame): a filter keystroke → the rows redrawn and counted; a click on a flow → its opening
   shown (the page asked the kernel for the openings of the rows in view once they were drawn,
   so a click draws one it holds; else it waits for the kernel's). Target ≤ 100 ms each.
   Printed beside them: the table's cells as sent to the page (MB).
2. Proxy overhead per exchange: `GET /api/agent/context/memories` (4 memories) sent in turn
   directly to a sandbox and through an Inspector in front of it (rows opened with the owner
   key, as `Inspector.start(sandbox=…)` does); overhead = median (and p95) proxied − direct.
   Targets ≤ 2 ms median, ≤ 5 ms p95.
3. Write throughput: 8 writers, each its own paired connection and keep-alive socket, POSTing
   sealed memory rows one per request, directly and through the inspector, in turn (best of 10
   rounds of 1,200 each). Each request is made ahead as bytes and each answer read by its
   Content-Length, as wrk or h2load load a server: the load then costs a sixth of the CPU
   `http.client` takes, and the two cores go to what the figure is about. The
   load runs in a process of its own, the sandbox and the inspector's recorder in the bench's (as
   they share a kernel in a notebook), the proxy in its own (as Inspector.start runs it). The
   inspector opens every row off the request path (in a lull, or when looked at): after each
   proxied round the bench waits for that (`settle`, not timed, so it never runs into the next
   direct round) and prints how long it took, and the CPU per row of each process.
   Target: through the proxy ≥ 90 % of direct. Printed beside it: the same with httpx writers
   (best of 2), whose own CPU then takes the cores; and the same writers against a sandbox in a
   process of its own (best of 6; left out under --quick), the recorder then apart from the server.
4. A big read: the bench vault's whole `GET /memories` (11,000 rows) in turn directly and
   through an inspector: the first body byte ≤ 10 ms later than direct (medians), the peak
   resident memory the proxy's process adds over the reads (bounded, ≤ 8 MiB whatever the answer),
   and the opening of one such read's rows with the agent's key: ≥ 0.8 of (a), the parallel
   reader `load()` uses ((a) on 4,000 of the rows just before and just after, the faster counting).

Its own sandbox and connections: the staged vault of the other benchmarks is left alone. The
browser part is left out under --quick (it starts a JupyterLab: run `make bench`).
"""

from __future__ import annotations

import json
import resource
import statistics
import time
from pathlib import Path
from typing import Any

from .context import Context
from .report import Figure, check, info, missing, relative, within
from .unwrap import SAMPLE, rsa_limit_around

CHROMIUM = "/usr/bin/chromium"
VIEW_BUDGET = 0.100
OVERHEAD_MEDIAN, OVERHEAD_P95 = 0.002, 0.005
THROUGHPUT_NEED = 0.90
FLOWS = 10_000
WRITERS = 8
MEMORIES = "/api/agent/context/memories"

# The kernel's cell: 10,000 flows of the shapes an agent run has, in a FlowsView.
SETUP = f"""
import json
from decoy_lab import memory
from decoy_lab.wire.crypto import AgentKey
from decoy_lab.inspector.flow_record import Body, Flow, Row, Timings
from decoy_lab.widgets.flows import FlowsView

me, owner = AgentKey.generate(), AgentKey.generate()
keys = memory.RecipientKeys(owner.public_key_b64, me.public_key_b64)
made = [memory.new_memory_row(keys, f"Memory {{i}}: Lisbon trip notes.") for i in range(4)]
post = json.dumps({{"rows": made}}).encode()
got = json.dumps({{"memories": [{{**r, "wrapped_key": r["self_wrap"], "rev": 1}} for r in made]}}).encode()
OTHER = ["/api/agent/policies", "/api/agent/context/memory-grantees", "/oauth/token", "/api/agent/context/memories/delete"]
flows = []
for i in range(1, {FLOWS} + 1):
    t = Timings(i * 3.0, None, None, i * 3.0 + 2 + i % 17)
    agent = f"agent {{i % 7}}"
    if i % 10 == 0:
        bad = i % 500 == 0
        rows = [Row(r["id"], f"request.rows[{{j}}]", "unreadable" if bad and j == 3 else "readable",
                    reason="the owner's app cannot open owner_wrap" if bad and j == 3 else "",
                    text=f"Memory {{j}}: Lisbon trip notes.", kind="memory", kid=r["kid"], opened_by="owner key")
                for j, r in enumerate(made)]
        flows.append(Flow(i, "POST", "/api/agent/context/memories", status=201, request_body=Body(post, len(post)),
                          timings=t, agent=agent, ended="answered", rows=rows))
    elif i % 10 == 1:
        rows = [Row(r["id"], f"response.memories[{{j}}]", "layout only", kind="memory", kid=r["kid"],
                    certainty="looks like a VAULT blob") for j, r in enumerate(made)]
        flows.append(Flow(i, "GET", "/api/agent/context/memories", status=200, response_body=Body(got, len(got)),
                          timings=t, agent=agent, ended="answered", rows=rows))
    else:
        flows.append(Flow(i, "GET" if i % 3 else "POST", OTHER[i % 4], status=200 if i % 13 else 409,
                          timings=t, agent=agent, ended="answered"))
view = FlowsView(flows)
print("TABLE_BYTES", len(json.dumps(view.rows)))
view.add_class("bench-flows")
view
"""

# Arms one measurement: the time of the next event, then of the first frame after `what` changed.
ARM = """([event, what, click]) => {
  window.__lat = null;
  window.__want = null;  // the flow a click opens (CLICK sets it)
  const root = document.querySelector('.bench-flows .decoy-flows');
  const target = root.querySelector(what);
  let t0 = null;
  document.addEventListener(event, (e) => { t0 = e.timeStamp; }, {capture: true, once: true});
  const done = () => {
    if (!click) return true;
    const id = window.__want;
    if (id == null) return false;
    const title = root.querySelector('.decoy-flows-detail .decoy-flows-title');
    return !!root.querySelector('.decoy-flows-detail .decoy-flows-facts') && title.textContent.startsWith('#' + id + ' ');
  };
  const obs = new MutationObserver(() => {
    if (t0 === null || !done()) return;
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__lat = performance.now() - t0; }, 0));
  });
  obs.observe(target, {childList: true, subtree: true, characterData: true});
}"""


def run(ctx: Context) -> list[Figure]:
    figures = _view(ctx)
    figures += _proxy(ctx)
    figures += _big_read(ctx)
    return figures


# -- 1. the flows view in chromium -------------------------------------------------------------
def _view(ctx: Context) -> list[Figure]:
    names = ("flows view: filter keystroke (10,000 flows)", "flows view: flow click → opening shown")
    if ctx.quick:
        ctx.say("  skipped under --quick: the flows view is measured in a real browser by `make bench`")
        return []
    if not Path(CHROMIUM).exists():
        return [missing(n, "≤ 100 ms", f"needs Debian's chromium at {CHROMIUM}") for n in names]
    from tests.support.lab import notebook_page

    with notebook_page("bench-flows-", [SETUP.strip()], {"width": 1300, "height": 1100}) as page:
        root = page.locator(".bench-flows .decoy-flows")
        root.locator(".decoy-flows-row").first.wait_for(timeout=60_000)
        table = page.locator(".jp-OutputArea-output pre", has_text="TABLE_BYTES").first.inner_text()
        keys = _keystrokes(page, root)
        clicks = _clicks(page, root)
    size = int(table.split()[-1])
    return [
        _figure(names[0], keys, "keystroke (keydown) → the rows filtered, counted and painted"),
        _figure(
            names[1],
            clicks,
            "pointerdown → that flow's opening painted (the page asked for the openings of the rows in view "
            "when it drew them; POSTs of 4 rows among them)",
        ),
        info("flows view: the table sent to the page", size / 1e6, "MB", f"{FLOWS:,} flows' cells, sent once"),
    ]


def _keystrokes(page: Any, root: Any) -> list[float]:
    search = root.locator(".decoy-flows-search")
    search.click()
    out = []
    for key in [*"context/memories 201", *["Backspace"] * 12]:
        page.evaluate(ARM, ["keydown", ".decoy-flows-rows", False])
        page.keyboard.press(key)
        out.append(_wait(page))
    search.fill("")
    return out


# A row in view, not the picked one (the n-th such): a pointer press and a click dispatched on it.
# (Playwright's own click scrolls a row into view first, the table repaints under the pointer and
# the click lands on another flow.)
CLICK = """(n) => {
  const root = document.querySelector('.bench-flows .decoy-flows');
  const box = root.querySelector('.decoy-flows-body').getBoundingClientRect();
  const rows = [...root.querySelectorAll('.decoy-flows-row')].filter((r) => {
    const b = r.getBoundingClientRect();
    return b.top >= box.top && b.bottom <= box.bottom && !r.classList.contains('picked');
  });
  const row = rows[(n * 5) % rows.length];
  window.__want = Number(row.dataset.id);
  row.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true}));
  row.click();
  return Number(row.dataset.id);
}"""


def _clicks(page: Any, root: Any) -> list[float]:
    root.locator(".decoy-flows-row").first.wait_for()
    out = []
    for n in range(20):
        page.evaluate(ARM, ["pointerdown", ".decoy-flows-detail", True])
        page.evaluate(CLICK, n)
        out.append(_wait(page))
    return out


def _wait(page: Any) -> float:
    page.wait_for_function("() => window.__lat !== null", timeout=20_000)
    return page.evaluate("() => window.__lat") / 1000


def _figure(name: str, samples: list[float], what: str) -> Figure:
    median = statistics.median(samples)
    p95 = sorted(samples)[int(0.95 * (len(samples) - 1))]
    note = f"{what}; median of {len(samples)}, p95 {p95 * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms"
    return within(name, median, VIEW_BUDGET, f"≤ {VIEW_BUDGET * 1000:g} ms", note + ", chromium headless")


# -- 2 and 3. the proxy ----------------------------------------------------------------------------
def _proxy(ctx: Context) -> list[Figure]:
    names = ("inspector: overhead per exchange (median)", "inspector: overhead per exchange (p95)")
    name3 = f"inspector: write throughput, {WRITERS} writers, proxied vs direct"
    try:
        from decoy_lab.inspector import Inspector

        from .stage import start_sandbox
    except ImportError as exc:
        why = f"the inspector cannot be imported: {exc}"
        return [missing(n, t, why) for n, t in zip((*names, name3), ("≤ 2 ms", "≤ 5 ms", "≥ 90 %"))]
    import httpx

    sb = start_sandbox(seed="none")
    try:
        sb.state.device_interval = 0
        with Inspector.start(sandbox=sb) as insp:
            writers = [_writer(sb, i) for i in range(WRITERS)]
            figures = _overhead(ctx, sb.url, insp.url, writers[0], names, httpx)
            figures += _throughput(ctx, sb.url, insp, writers, name3, httpx)
            insp.settle(120)
            figures.append(info("inspector: flows recorded in this run", float(len(insp)), "flows"))
    finally:
        sb.stop()
    return figures + ([] if ctx.quick else [_apart(httpx)])


def _apart(httpx: Any) -> Figure:
    """The same writers against a sandbox in a process of its own (as `decoy-lab sandbox`, or a
    Decoy server elsewhere): the proxy's cost without the recording sharing the server's process."""
    import tempfile

    from decoy_lab import memory
    from decoy_lab.inspector import Inspector

    from .steady import SandboxProcess, running

    name = f"inspector: write throughput, {WRITERS} writers, the sandbox in its own process"
    per, best = 150, 6
    with tempfile.TemporaryDirectory() as tmp, running(SandboxProcess(Path(tmp) / "sb.sqlite3")) as sp:
        writers = [_writer(sp, i) for i in range(WRITERS)]
        owner = _owner_key(sp.url, writers[0], httpx)
        for w in writers:
            keys = memory.RecipientKeys(owner, w["key"].public_key_b64)
            w["rows"] = [memory.new_memory_row(keys, f"Apart memory {j}.") for j in range(per * 2 * best)]
        with Inspector.start(upstream=sp.url) as insp:
            got = _rounds(sp.url, insp, writers, per, iter(range(2 * best)), "socket", best)
    ratio = got["proxied"]["rate"] / got["direct"]["rate"]
    note = (
        f"as above, best of {best} rounds each way, the inspector in the bench's process with no key to "
        f'open rows with, the sandbox on a database file: {_said(got)} (here "sandbox + recorder" is the '
        "recorder alone)"
    )
    return info(name, ratio * 100, "%", note)


# -- 4. the big read -------------------------------------------------------------------------------
BIG = ("inspector: big read, first byte later than direct", "inspector: big read, the proxy's memory")
BIG3 = "inspector: big read, its rows opened (agent key) vs (a)"
FIRST_BYTE, OPENING_NEED = 0.010, 0.80
PROXY_MEMORY = (
    8 * 2**20
)  # what the proxy's process may add whatever the answer: 2 MiB of frames queued, pieces, parsing


def _big_read(ctx: Context) -> list[Figure]:
    """The bench vault's whole `GET /memories` (every row the main load reads) through an inspector:
    its first byte against direct's, the proxy process's peak memory over the reads, and the
    opening of one read's rows with the agent's key against (a)."""
    if ctx.sandbox is None or ctx.conn is None:
        why = ctx.setup_error or "no sandbox in this run"
        return [missing(n, t, why) for n, t in zip((*BIG, BIG3), ("≤ 10 ms", "flat", "≥ 0.8 of (a)"))]
    from decoy_lab.inspector import Inspector

    headers = {"Authorization": f"Bearer {ctx.conn.tokens.access_token.reveal()}", "Accept": "application/json"}
    n = 3 if ctx.quick else 7
    rows = len(ctx.served)
    with Inspector.start(upstream=ctx.sandbox.url) as insp:
        before = _hwm_kib(insp.pid)
        times: dict[str, Any] = {"direct": [], "proxied": []}
        for _ in range(n):  # one pair at a time: each read's recording is finished before the next (a lull)
            got = _client({"mode": "first-byte", "direct": ctx.sandbox.url, "proxied": insp.url, "headers": headers, "n": 1})  # fmt: skip
            times["direct"] += got["direct"]
            times["proxied"] += got["proxied"]
            times["bytes"] = got["bytes"]
            insp.settle(120)
        grown = (_hwm_kib(insp.pid) - before) * 1024
    size = int(times["bytes"])
    d, p = statistics.median(times["direct"]), statistics.median(times["proxied"])
    later = p - d

    def opening() -> tuple[float, Any]:
        """One big read through an inspector that holds the agent's key: the seconds its rows took
        to open once the read was done, and its flow."""
        with Inspector.start(upstream=ctx.sandbox.url, agent_key=ctx.conn.agent_key) as insp:
            _client({"mode": "first-byte", "direct": ctx.sandbox.url, "proxied": insp.url, "headers": headers, "n": 1})
            t0 = time.perf_counter()
            insp.settle(600)
            seconds = time.perf_counter() - t0
            (flow,) = [f for f in insp.all_flows() if f.path == MEMORIES]
        return seconds, flow

    (seconds, flow), limit, how = rsa_limit_around(ctx, ctx.served[:SAMPLE], ctx.conn.agent_key.private_key, opening)
    opened = sum(1 for r in flow.rows if r.opened_by == "agent key")
    rate = opened / seconds
    what = f"{rows:,} rows, {size / 2**20:.1f} MiB"
    figures = [
        within(
            BIG[0],
            later,
            FIRST_BYTE,
            "≤ 10 ms",
            f"GET {MEMORIES} ({what}), {n} each in turn, a new connection each (the record finished between "
            f"pairs), the median time to the answer's "
            f"first body byte: direct {d * 1000:.1f} ms, proxied {p * 1000:.1f} ms",
        ),
        check(
            BIG[1],
            grown / 2**20,
            "MiB",
            grown <= PROXY_MEMORY,
            f"≤ {PROXY_MEMORY / 2**20:g} MiB, any answer",
            f"{grown / size:.2f} of the answer",
            f"the proxy's process: its peak resident memory grew {grown / 2**20:.1f} MiB over {n} reads of a "
            f"{size / 2**20:.1f} MiB answer; it keeps neither the body (past a 256 KiB piece) nor the rows, and "
            "at most 2 MiB of frames wait for the inspector's process (tests/inspector/test_proxy_process.py: the same "
            "growth for a 2 MB and a 40 MB answer)",
        ),
    ]
    note = f"{opened:,} of {len(flow.rows):,} rows opened in {seconds:.2f} s after the read, {rate:,.0f} rows/s; {how}"
    figures.append(relative(BIG3, rate, "rows/s", limit, OPENING_NEED, "≥ 0.8 of (a)", note))
    return figures


def _hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _writer(sb: Any, i: int) -> dict[str, Any]:
    from decoy_lab.sandbox.testing import pair_agent
    from decoy_lab.wire.crypto import AgentKey

    key = AgentKey.generate()
    rows = [{"permissions": ["memory.read"]}, {"permissions": ["memory.save"]}]
    tok = pair_agent(sb.url, key, rows, name=f"Bench writer {i}", client_id=f"bench-writer-{i}")
    return {"key": key, "headers": {"Authorization": f"Bearer {tok['access_token']}", "Accept": "application/json"}}


# The load: a process of its own (the sandbox and the inspector share the bench's process, as they
# share a kernel; an agent is another process). One JSON command on stdin, the timings on stdout.
CLIENT = r"""
import json, os, sys, threading, time
import httpx
job = json.load(sys.stdin)
M = "/api/agent/context/memories"
if job["mode"] == "latency":
    out = {"direct": [], "proxied": []}
    with httpx.Client(timeout=30) as c:
        for base in (job["direct"], job["proxied"]):
            for _ in range(10):
                c.get(base + M, headers=job["headers"]).raise_for_status()
        for _ in range(job["n"]):
            for k in ("direct", "proxied"):
                t0 = time.perf_counter()
                c.get(job[k] + M, headers=job["headers"]).raise_for_status()
                out[k].append(time.perf_counter() - t0)
elif job["mode"] == "first-byte":
    import http.client
    from urllib.parse import urlsplit
    out = {"direct": [], "proxied": [], "bytes": 0}
    for _ in range(job["n"]):
        for k in ("direct", "proxied"):
            u = urlsplit(job[k])
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            t0 = time.perf_counter()
            c.request("GET", M, headers=job["headers"])
            r = c.getresponse()
            first = r.read(1)
            out[k].append(time.perf_counter() - t0)
            out["bytes"] = len(first) + len(r.read())
            c.close()
else:
    failures, gate = [], threading.Barrier(len(job["writers"]) + 1, timeout=120)
    def more(s):
        data = s.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        return data
    def write(w):
        try:
            send(w)
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
    def send(w):
        if job["client"] == "httpx":
            with httpx.Client(timeout=60) as c:
                gate.wait()
                for row in w["rows"]:
                    r = c.post(job["base"] + M, json={"rows": [row]}, headers=w["headers"])
                    if r.status_code >= 300:
                        failures.append(f"{r.status_code} {r.text[:120]}")
            return
        import socket
        from urllib.parse import urlsplit
        u = urlsplit(job["base"])
        head = "".join(f"{k}: {v}\r\n" for k, v in w["headers"].items())
        asks = []
        for row in w["rows"]:
            body = json.dumps({"rows": [row]}).encode()
            asks.append((f"POST {M} HTTP/1.1\r\nHost: {u.netloc}\r\n{head}Content-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        s = socket.create_connection((u.hostname, u.port), timeout=60)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        got = b""
        gate.wait()
        for ask in asks:
            s.sendall(ask)
            while b"\r\n\r\n" not in got:
                got += more(s)
            top, _, got = got.partition(b"\r\n\r\n")
            lines = top.split(b"\r\n")
            fields = dict(x.split(b":", 1) for x in lines[1:])
            size = int({k.strip().lower(): v for k, v in fields.items()}[b"content-length"])
            while len(got) < size:
                got += more(s)
            answer, got = got[:size], got[size:]
            status = int(lines[0].split()[1])
            if status >= 300:
                failures.append(f"{status} {answer[:120]!r}")
        s.close()
    threads = [threading.Thread(target=write, args=(w,)) for w in job["writers"]]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    t = os.times()
    out = {"seconds": time.perf_counter() - t0, "rows": sum(len(w["rows"]) for w in job["writers"]), "failures": failures,
           "cpu": t.user + t.system}
print(json.dumps(out))
"""


def _client(job: dict[str, Any]) -> dict[str, Any]:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", CLIENT], input=json.dumps(job), capture_output=True, text=True, timeout=600
    )
    if run.returncode != 0:
        raise RuntimeError(f"the load process failed: {run.stderr.strip()[-400:]}")
    out: dict[str, Any] = json.loads(run.stdout)
    return out


def _overhead(ctx: Context, direct: str, proxied: str, w: dict, names: tuple[str, str], httpx: Any) -> list[Figure]:
    from decoy_lab import memory

    keys = memory.RecipientKeys(_owner_key(direct, w, httpx), w["key"].public_key_b64)
    made = [memory.new_memory_row(keys, f"Overhead memory {i}.") for i in range(4)]
    httpx.post(direct + MEMORIES, json={"rows": made}, headers=w["headers"], timeout=30).raise_for_status()
    n = 60 if ctx.quick else 300
    times = _client({"mode": "latency", "direct": direct, "proxied": proxied, "headers": w["headers"], "n": n})
    d, p = sorted(times["direct"]), sorted(times["proxied"])
    at = int(0.95 * (n - 1))
    med = statistics.median(p) - statistics.median(d)
    note = (
        f"GET {MEMORIES} (4 memories), {n} each in turn on one keep-alive client in its own process; direct "
        f"median {statistics.median(d) * 1000:.2f} ms, p95 {d[at] * 1000:.2f} ms; proxied median "
        f"{statistics.median(p) * 1000:.2f} ms, p95 {p[at] * 1000:.2f} ms"
    )
    return [
        within(names[0], med, OVERHEAD_MEDIAN, "≤ 2 ms", note),
        within(names[1], p[at] - d[at], OVERHEAD_P95, "≤ 5 ms", "p95 proxied − p95 direct, same samples"),
    ]


def _owner_key(base: str, w: dict, httpx: Any) -> str:
    g = httpx.get(base + "/api/agent/context/memory-grantees", headers=w["headers"], timeout=30)
    g.raise_for_status()
    return str(g.json()["owner_public_key"])


def _throughput(ctx: Context, direct: str, insp: Any, writers: list[dict], name: str, httpx: Any) -> list[Figure]:
    from decoy_lab import memory

    per, best = (25, 2) if ctx.quick else (150, 10)
    owner = _owner_key(direct, writers[0], httpx)
    for w in writers:  # rows sealed ahead: the figure is the HTTP path, not the client's crypto
        keys = memory.RecipientKeys(owner, w["key"].public_key_b64)
        w["rows"] = [memory.new_memory_row(keys, f"Throughput memory {j}.") for j in range(per * 2 * (best + 2))]
    rounds = iter(range(2 * (best + 2)))
    main = _rounds(direct, insp, writers, per, rounds, "socket", best)
    heavy = _rounds(direct, insp, writers, per, rounds, "httpx", 2)
    ratio = main["proxied"]["rate"] / main["direct"]["rate"]
    note = (
        f"{WRITERS} threads × {per} POSTs of one memory row each (a kept-alive socket each, requests made "
        f"ahead as bytes), best of {best} rounds each way, in turn: "
        f"{_said(main)}; every row then opened with the owner key off the request path, {main['opening']:.2f} s "
        f"at most after a round of {WRITERS * per} rows"
    )
    bad = main["failed"] + heavy["failed"]
    if bad:  # a write that failed is a failed figure, whatever the rate
        note += f"; {len(bad)} writes failed, e.g. {bad[0]}"
    ok = ratio >= THROUGHPUT_NEED and not bad
    h = heavy["proxied"]["rate"] / heavy["direct"]["rate"]
    return [
        Figure(name, ratio * 100, "%", "≥ 90 %", f"{ratio:.2f} (need ≥ {THROUGHPUT_NEED:g})", ok, note),
        info(
            f"inspector: write throughput, {WRITERS} httpx writers, proxied vs direct",
            h * 100,
            "%",
            f"the same with httpx as the writers' client, best of 2: {_said(heavy)}; the writers then use as much "
            "CPU as the sandbox, and on two cores the cores, not the proxy's process, are the limit",
        ),
    ]


def _rounds(direct: str, insp: Any, writers: list[dict], per: int, rounds: Any, client: str, n: int) -> dict:
    """`n` rounds each way in turn: the best rate, and the CPU per row of each process at it."""
    import psutil

    pump = psutil.Process(insp.pid)
    out: dict[str, Any] = {"failed": [], "opening": 0.0}
    for base, k in [(direct, "direct"), (str(insp.url), "proxied")] * n:
        c0, p0 = _cpu(), sum(pump.cpu_times()[:2])
        at = next(rounds) * per
        job = [{"headers": w["headers"], "rows": w["rows"][at : at + per]} for w in writers]
        got = _client({"mode": "writers", "client": client, "base": base, "writers": job})
        rows = int(got["rows"])
        rate = (rows - len(got["failures"])) / float(got["seconds"])
        used = {"sandbox": _cpu() - c0, "proxy": sum(pump.cpu_times()[:2]) - p0, "writers": float(got["cpu"])}
        if rate > out.get(k, {}).get("rate", 0):
            out[k] = {"rate": rate, **{w: v / rows for w, v in used.items()}}
        out["failed"] += got["failures"]
        if k == "proxied":
            t0 = time.perf_counter()
            insp.settle(120)
            out["opening"] = max(out["opening"], time.perf_counter() - t0)
    return out


def _said(got: dict) -> str:
    d, p = got["direct"], got["proxied"]

    def cpu(x: dict) -> str:
        return f"sandbox + recorder {x['sandbox'] * 1000:.2f}, proxy {x['proxy'] * 1000:.2f}, writers {x['writers'] * 1000:.2f}"

    return (
        f"direct {d['rate']:,.0f} rows/s, proxied {p['rate']:,.0f} rows/s; CPU ms per row: direct ({cpu(d)}), "
        f"proxied ({cpu(p)})"
    )


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
