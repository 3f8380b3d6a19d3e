"""`decoy-lab proxy`: run the recording inspector in the foreground until Ctrl-C.

    decoy-lab proxy --sandbox [--port P] [--agent-key PEM] [--record FILE.har] [--keep N] [--reveal]
    decoy-lab proxy --upstream URL [--owner-key PEM] …
    decoy-lab proxy --replay FILE.har …

The first line printed is the URL to give the agent (with `--sandbox`, the next says how to
pair); then one line per exchange once it is opened (in a lull of traffic, or within 2 s):
`#id METHOD path status verdict` ("layout only (2 of 3 rows opened)" when some did). Ctrl-C (or
SIGTERM) stops it, writes `--record` and exits 0. A usage mistake is `error: …` on stderr, exit 2.
`add_arguments(parser)` and `run(args)` are what the `decoy-lab` command wires in.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from decoy_lab.argtypes import port_number
from decoy_lab.errors import DecoyError
from decoy_lab.inspector.flow_record import KEEP, LAYOUT, READABLE
from decoy_lab.text import escaped, plural
from decoy_lab.wire.crypto import AgentKey

DESCRIPTION = (
    "Run a recording proxy in front of the sandbox, a Decoy server or a recording: every exchange "
    "passes through unchanged and is recorded, its secrets masked, its sealed rows opened where a key allows."
)


def flow_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} flows: keep at least 1")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The `proxy` options, shared by `decoy-lab proxy` and `python -m decoy_lab.inspector`."""
    source = p.add_mutually_exclusive_group()
    source.add_argument("--sandbox", action="store_true", help="start a local sandbox and record in front of it")
    source.add_argument("--upstream", metavar="URL", help="the Decoy base URL to record in front of")
    source.add_argument("--replay", metavar="FILE.har", help="serve a recording as the upstream and record again")
    p.add_argument("--port", type=port_number, default=0, help="loopback port to listen on (default: any free one)")
    p.add_argument("--agent-key", dest="agent_key", metavar="PEM", help="the agent's private key: opens what it reads")
    p.add_argument(
        "--owner-key", dest="owner_key", metavar="PEM", help="the owner's private key: opens what agents write"
    )
    p.add_argument("--record", metavar="FILE.har", help="write every exchange as HAR 1.2, as each one finishes")
    p.add_argument(
        "--keep", type=flow_count, default=KEEP, metavar="N", help=f"flows kept on show, the newest (default {KEEP:,})"
    )
    p.add_argument("--reveal", action="store_true", help="keep tokens and codes in the record unmasked")


def _verdict_said(flow: Any) -> str:
    """The flow's verdict for its line. "layout only" says how many of its rows did open: an account
    write carries the owner's record (opened) beside the agent's own copy (opened only with
    --agent-key), and the bare words would read as if nothing had opened."""
    verdict = flow.verdict or "-"
    if verdict == LAYOUT:
        opened = sum(r.verdict == READABLE for r in flow.rows)
        if opened:
            return f"{verdict} ({opened} of {plural(len(flow.rows), 'row')} opened)"
    return verdict


def _usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments (checked before anything starts), or None."""
    if not (args.sandbox or args.upstream or args.replay):
        return "say what to record in front of: --sandbox, --upstream URL or --replay FILE.har"
    from decoy_lab.inspector.inspector import start_problem

    why = start_problem(args.upstream, args.port, args.record)
    if why is not None:
        return why
    if args.replay and not Path(args.replay).is_file():
        return f"--replay {args.replay}: no such file"
    return None


def _start(args: argparse.Namespace) -> Any:
    from decoy_lab.inspector import Inspector

    keys = {
        "agent_key": AgentKey.pem_file("--agent-key", args.agent_key),
        "owner_key": AgentKey.pem_file("--owner-key", args.owner_key),
    }
    common = {"port": args.port, "record": args.record, "reveal": args.reveal, "keep": args.keep, **keys}
    if args.replay:
        return Inspector.replay(args.replay, **common)
    if args.sandbox:
        return Inspector.start(sandbox=True, **common)
    return Inspector.start(args.upstream, **common)


def run(args: argparse.Namespace, *, out: TextIO | None = None, stop: threading.Event | None = None) -> int:
    """Serve until Ctrl-C / SIGTERM (or `stop` is set); 0, or 2 for a usage mistake."""
    out = out or sys.stdout
    why = _usage(args)
    if why is None:
        try:
            insp = _start(args)
        except (OSError, ValueError, DecoyError, RuntimeError) as exc:
            why = str(exc)
    if why is not None:
        print(f"error: {escaped(why)}", file=sys.stderr)
        return 2
    say = _Say(out)

    def line(flow: Any) -> None:
        status = flow.status if flow.status is not None else "-"
        ended = "" if flow.ended == "answered" else f"  ({flow.ended})"
        say(f"#{flow.id} {flow.method} {flow.url} {status} {_verdict_said(flow)}{ended}")

    insp.on_flow(line)
    say(f"Decoy inspector on {insp.url}  (give this URL to the agent; recording in front of {insp.upstream})")
    if args.sandbox:
        owner = f"{insp.sandbox.url}/connect" if insp.sandbox is not None else "the sandbox's /connect"
        say(f"Pair the agent with {insp.url} (the sandbox approves at once; its owner page, yours alone: {owner})")
    stop = stop or threading.Event()
    previous = _on_sigterm(stop)
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        insp.close()
        recorded = f", recorded to {args.record}" if args.record else ""
        gone = f" ({insp.dropped:,} older ones dropped from view)" if insp.dropped else ""
        say(f"stopped after {len(insp) + insp.dropped} exchanges{gone}{recorded}")
    return 0


class _Say:
    """A line out, its control characters escaped, flushed; once nobody reads the output (`| head`, a closed pipe) lines are
    dropped and the proxy serves and records on."""

    def __init__(self, out: TextIO):
        self._out, self._lock, self._gone = out, threading.Lock(), False

    def __call__(self, text: str) -> None:
        with self._lock:
            if self._gone:
                return
            try:
                print(escaped(text), file=self._out, flush=True)  # an agent's path or row id never acts on the terminal
            except (BrokenPipeError, ValueError):  # ValueError: the stream was closed
                self._gone = True
                if self._out is sys.stdout:  # nor a last flush at exit to fail on
                    with contextlib.suppress(OSError):
                        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _on_sigterm(stop: threading.Event) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, lambda *_: stop.set())
