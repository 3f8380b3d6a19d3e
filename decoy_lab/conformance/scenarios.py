"""Scenarios: a fresh sandbox behind the inspector, the agent's command run against it, faults staged.

Each scenario starts its own sandbox (its own owner key and database; the owner approves by hand,
`approve="manual"`), a staging hop in front of it (staging.py) and the recording inspector in front of
that, then runs the agent's command with `DECOY_BASE_URL` set to the inspector's URL (and `{url}`
in its arguments replaced by it). The owner, played here through the sandbox's owner API, approves
the pairing after a short delay, as a person reaching for their phone would, and approves each
grant request the same way (or denies it: `owner-denies`), and allows each account unlock asked of
them. When the command ends (or its time limit passes: it is then killed),
the scenario keeps the flows, the owner's view of every stored row, the faults that fired and the
command's output, as a `Run` for the rules.

The command runs in a clean room (`agent_env`): the agent is untrusted, so it gets none of the
user's environment but an allow-list (PATH, the locale, TZ, what Windows needs to start a
process), a fresh HOME and config directory of its own (`DECOY_LAB_CONFIG_DIR`, the XDG
directories inside that HOME), `DECOY_BASE_URL`, and the variables the user names (`--env NAME`).
Never the user's HOME or profile, never another `DECOY_*` variable (a token, a key).

    clean               the demo vault; the owner also grants Read all memories and shares at once
    lost-answers        as clean; the first memory POST commits and its answer is lost, the next is a 503;
                        the first address create (`POST /api/agent/decoys`) commits and its answer is lost
    preparing           the demo vault granted, its keys still owed by the owner's phone (shared ~5 s later)
    owner-edits         as clean; the owner edits the agent's memory just before the agent's first edit
    missing-permission  the owner approves the pairing without Save memories, then approves the ask
    owner-denies        as missing-permission, and the owner denies the ask (not in DEFAULT)
    slow-pairing        the owner approves after 14 s; the second poll is answered `slow_down`
    token-rotation      the agent's second read finds its access token expired (401 TOKEN_EXPIRED)
    other-connections   five other connections whose grants reach some of the agent's memories (by
                        category, by topic, by account) and not others: where its wraps go shows
    rate-limit          429 RATE_LIMITED with Retry-After on a read and on a save
    owner-unlabels      the owner removes a category from the memory the agent is about to edit
    read-write          as clean, and the owner also grants Edit all memories (Read & write): an
                        agent that may corrects a memory another wrote (not in DEFAULT)
    session-ended       the agent's first memory-grantees read answers 401 SESSION_ENDED
                        (recovery: continue): it reconnects, and the owner approves (not in DEFAULT)
    accounts            as clean, and the owner also grants Create accounts: an agent that may sign
                        up makes an account with its Decoy address, its password, an API key and a
                        memory about it (not in DEFAULT: run it with `--scenario accounts`)
    slow-unlock         the owner grants the accounts' memories and Read on a site's logins (an unlock
                        scope): the agent asks to read an account a memory is filed under, and the
                        owner allows it after 12 s (not in DEFAULT)
    late-edit           as accounts, and the owner's phone answers the account family's asks (a
                        queued address edit, a copy) only 15 s after they are owed (not in DEFAULT)
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run
from decoy_lab.conformance.staging import Fault, Request, StageHop
from decoy_lab.vocab import DEVICE_GRANT

READ_ALL = {"permissions": ["memory.read"]}
EDIT_ALL = {"permissions": ["memory.edit"]}  # Read & write on every memory, whoever saved it
DECOYS = "/api/agent/decoys"
ACCOUNT_CREATE = {"permissions": ["account.create"]}  # creates accounts, and reads and edits what it creates
# Read on one site's logins: the account.unlock scope, and no account the sandbox can match ("A
# `domain` selection names no account the sandbox can match"): a read of any other account is asked
UNLOCK_SCOPE = {"permissions": ["account.read"], "domain": "news.example"}
ACCOUNT_MEMORIES = {"permissions": ["acctmem.read"]}  # the memories filed under any account (not their secrets)
LATE_PHONE = 15.0  # late-edit: seconds before the owner's phone answers what the account family owes
OWNER_NOTE = "The owner added: an aisle seat, please."


@dataclass
class Scenario:
    name: str
    title: str
    seed: str = "demo"
    widen: bool = True  # the owner adds Read all memories to what the pairing asks
    share: bool = True  # … and the owner's phone shares their keys at once
    pairing_delay: float = 2.0
    grant_delay: float = 1.5
    narrow: Callable[[list[dict]], list[dict]] | None = None
    faults: Callable[[Any], list[Fault]] = field(default=lambda sandbox: [])
    setup: Callable[[Any], list[str]] | None = None  # staged on the sandbox before the agent starts (notes)
    deny_asks: bool = False  # the owner denies each grant request (pairings are still approved)
    unlock_delay: float = 1.5  # the owner allows each unlock asked of them after this many seconds

    def rows_for(self, asked: list[dict]) -> list[dict] | None:
        if self.narrow is not None:
            return self.narrow(asked)
        if self.widen and READ_ALL not in asked:
            return [*asked, READ_ALL]
        return None


def _owner_edit(sandbox: Any) -> Callable[[Request], str]:
    def edit(req: Request) -> str:
        body = req.json if isinstance(req.json, dict) else {}
        entry = next((r for r in sandbox.owner.app_view() if r.get("id") == body.get("id")), None)
        if entry is None or entry.get("kind") != "memory":
            return ""
        sandbox.owner.edit(entry["id"], text=f"{entry['text']}\n{OWNER_NOTE}")
        return OWNER_NOTE

    return edit


def _lost_answers(sandbox: Any) -> list[Fault]:
    return [
        Fault("drop", "POST", MEMORIES, (1,), note="the write commits and its answer is lost"),
        # an agent that signs up meets a lost answer there too: its resend must keep the idempotency_key
        Fault("drop", "POST", DECOYS, (1,), note="the address is created and its answer is lost"),
        Fault(
            "answer",
            "POST",
            MEMORIES,
            (1,),
            503,
            {"error": "SERVICE_UNAVAILABLE", "code": "SERVICE_UNAVAILABLE", "message": "staged: 503 before commit"},
            note="503 before commit",
            after="drop",
        ),
    ]


def _owner_unlabel(sandbox: Any) -> Callable[[Request], str]:
    """The owner removes the memory's first category (the phone rotates its key) just before the agent's edit."""

    def unlabel(req: Request) -> str:
        body = req.json if isinstance(req.json, dict) else {}
        entry = next((r for r in sandbox.owner.app_view() if r.get("id") == body.get("id")), None)
        if entry is None or entry.get("kind") != "memory" or not entry.get("categories"):
            return ""
        gone = entry["categories"][0]
        sandbox.owner.edit(entry["id"], categories=[c for c in entry["categories"] if c != gone])
        return f"removed category:{gone} from {entry['id']}"

    return unlabel


RATE_LIMITED = {
    "error": "rate_limited",
    "code": "RATE_LIMITED",
    "message": "staged: too many requests from this connection; try again after retry_after_seconds",
    "retry_after_seconds": 3,
}


def _rate_limit(sandbox: Any) -> list[Fault]:
    """429 on the agent's second read and on its first save, with Retry-After and retry_after_seconds."""
    head = [("Retry-After", str(RATE_LIMITED["retry_after_seconds"]))]
    return [
        Fault("answer", "GET", MEMORIES, (2,), 429, RATE_LIMITED, headers=head, note="429 on a read"),
        Fault("answer", "POST", MEMORIES, (1,), 429, RATE_LIMITED, headers=head, note="429 on a save"),
    ]


# Other connections, each with a memory grant that reaches some of the agent's memories and not
# others: (name, the grant row, "topic" for the demo vault's Lisbon trip topic / "account" for its
# first account). The example agent files travel memories under Lisbon trip; its reminder is also
# `misc` until it removes that label.
READERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Travel reader", {"permissions": ["memory.read"], "datatypes": ["travel"]}),
    ("Misc reader", {"permissions": ["memory.read"], "datatypes": ["misc"]}),
    ("Food reader", {"permissions": ["memory.read"], "datatypes": ["food"]}),
    ("Lisbon trip reader", {"permissions": ["memory.read"], "about": ["topic"]}),
    ("Account reader", {"permissions": ["acctmem.read"], "account_id": "account"}),
)
LISBON = "Lisbon trip"


def _other_connections(sandbox: Any) -> list[str]:
    """Pair the READERS (each with a key of its own) and approve each with its grant, before the agent starts."""
    import httpx

    from decoy_lab.wire.crypto import AgentKey

    owner = sandbox.owner
    topic = next((r["id"] for r in owner.app_view() if r.get("kind") == "topic" and r.get("name") == LISBON), "")
    account = next((a["id"] for a in owner.accounts()), "")
    notes = []
    with httpx.Client(base_url=str(sandbox.url), timeout=30.0, trust_env=False) as http:
        for i, (name, row) in enumerate(READERS):
            grant: dict[str, Any] = dict(row)
            if grant.get("about") == ["topic"]:
                if not topic:
                    continue
                grant["about"] = [f"topic:{topic}"]
            if grant.get("account_id") == "account":
                if not account:
                    continue
                grant["account_id"] = account
            ask = {"client_id": f"decoy-check-reader-{i}", "name": name, "authorization_details": [grant],
                   "agent_public_key": AgentKey.generate().public_key_b64}  # fmt: skip
            http.post("/oauth/device", json=ask).raise_for_status()
            pending = next(p for p in owner.pending() if p.get("name") == name)
            owner.approve(pending["request_id"], narrow=[grant])
            notes.append(f"paired {name} with {grant}")
    return notes


SESSION_ENDED = {
    "error": "SESSION_ENDED",
    "code": "SESSION_ENDED",
    "message": "staged: this session of the connection ended; the connection lives on",
    "recovery": "continue",
}


def _session_ended(sandbox: Any) -> list[Fault]:
    grantees = "/api/agent/context/memory-grantees"
    return [Fault("answer", "GET", grantees, (1,), 401, SESSION_ENDED, note="401 SESSION_ENDED, recovery: continue")]


def _late_phone(sandbox: Any) -> list[str]:
    """The owner's phone answers late: a queued edit (and a copy an unlock waits for) is made
    LATE_PHONE seconds after it is owed, not "normally within seconds"."""
    from decoy_lab.sandbox.phone.schedule import configure

    configure(sandbox.state, auto_share_after=LATE_PHONE)
    return [f"the owner's phone answers the account family's asks {LATE_PHONE:g} s after they are owed"]


def _slow_down(sandbox: Any) -> list[Fault]:
    body = {"error": "slow_down", "error_description": "polled too often; wait 10 s", "interval": 10}
    poll = lambda r: r.form.get("grant_type") == DEVICE_GRANT  # noqa: E731
    return [Fault("answer", "POST", "/oauth/token", (2,), 400, body, when=poll, note="slow_down on the second poll")]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("clean", "no faults: the demo vault, readable at once"),
        Scenario("lost-answers", "a committed write's answer is lost, then a 503", faults=_lost_answers),
        Scenario("preparing", "the demo vault's keys still owed by the owner's phone", share=False),
        Scenario(
            "owner-edits",
            "the owner edits the agent's memory before its edit lands",
            faults=lambda sb: [
                Fault("before", "PUT", MEMORIES, (1,), action=_owner_edit(sb), note="the owner edits it")
            ],
        ),
        Scenario(
            "missing-permission",
            "paired without Save memories; the owner approves the ask",
            seed="none",
            narrow=lambda asked: [{"permissions": ["personal.read"], "record_type": "emails"}],
        ),
        Scenario(
            "owner-denies",
            "paired without Save memories; the owner denies the ask (not a default scenario: --scenario owner-denies)",
            seed="none",
            narrow=lambda asked: [{"permissions": ["personal.read"], "record_type": "emails"}],
            deny_asks=True,
        ),
        Scenario("slow-pairing", "a late approval and a slow_down", pairing_delay=14.0, faults=_slow_down),
        Scenario(
            "token-rotation",
            "the access token expires mid-task",
            faults=lambda sb: [Fault("expire", "GET", MEMORIES, (2,), note="the access token expires")],
        ),
        Scenario(
            "other-connections",
            "five other connections read by category (travel, misc, food), by the Lisbon trip topic and by an "
            "account: wraps that go too far or not far enough show",
            setup=_other_connections,
        ),
        Scenario(
            "rate-limit",
            "429 RATE_LIMITED (Retry-After and retry_after_seconds: 3) on the second read and the first save",
            faults=_rate_limit,
        ),
        Scenario(
            "owner-unlabels",
            "the owner removes a category from the agent's memory (a key rotation) just before its edit lands",
            faults=lambda sb: [
                Fault("before", "PUT", MEMORIES, (1,), action=_owner_unlabel(sb), note="the owner removes a label")
            ],
        ),
        Scenario(
            "read-write",
            "the owner also grants Edit all memories (Read & write): the agent may correct a memory another "
            "wrote, its text only (not a default scenario: --scenario read-write)",
            narrow=lambda asked: [*asked, READ_ALL, EDIT_ALL],
        ),
        Scenario(
            "session-ended",
            "the first memory-grantees read answers 401 SESSION_ENDED (recovery: continue): the agent reconnects "
            "with its own client_id (not a default scenario: --scenario session-ended)",
            faults=_session_ended,
        ),
        Scenario(
            "accounts",
            "the owner also grants Create accounts: the agent signs up (an account with its Decoy address, its "
            "password, an API key) and saves a memory about it (not a default scenario: --scenario accounts)",
            narrow=lambda asked: [*asked, READ_ALL, ACCOUNT_CREATE],
        ),
        Scenario(
            "slow-unlock",
            "the owner grants account memories and Read on news.example's logins: the agent's read of another "
            "account is asked of the owner, who allows it after 12 s (not a default scenario: --scenario slow-unlock)",
            narrow=lambda asked: [*asked, READ_ALL, ACCOUNT_MEMORIES, UNLOCK_SCOPE],
            unlock_delay=12.0,
        ),
        Scenario(
            "late-edit",
            f"as accounts; the owner's phone applies the agent's queued address edit (and makes its copies) "
            f"{LATE_PHONE:g} s after they are owed (not a default scenario: --scenario late-edit)",
            narrow=lambda asked: [*asked, READ_ALL, ACCOUNT_CREATE],
            setup=_late_phone,
        ),
    )
}
DEFAULT = (
    "clean",
    "lost-answers",
    "preparing",
    "owner-edits",
    "missing-permission",
    "slow-pairing",
    "token-rotation",
    "other-connections",
    "rate-limit",
    "owner-unlabels",
)


class OwnerLoop(threading.Thread):
    """The owner: approves each pairing and grant request after its delay (approve="manual"); a
    `deny_asks` scenario's owner denies each grant request instead."""

    def __init__(self, sandbox: Any, scenario: Scenario):
        super().__init__(name="decoy-check-owner", daemon=True)
        self.sandbox, self.scenario = sandbox, scenario
        self.stop = threading.Event()
        self.seen: dict[str, float] = {}
        self.log: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self._step(time.monotonic())
            except Exception as exc:  # the owner's mistakes are the run's notes, never a crash
                self.log.append(f"the owner could not act: {exc!r}")

    def _step(self, now: float) -> None:
        owner = self.sandbox.owner
        for p in owner.pending():
            ref = p["request_id"]
            first = self.seen.setdefault(ref, now)
            pairing = p.get("kind") == "pairing"
            if now - first < (self.scenario.pairing_delay if pairing else self.scenario.grant_delay):
                continue
            if not pairing and self.scenario.deny_asks:
                owner.deny(ref)
                self.log.append(f"denied the {p.get('kind')} {p.get('name') or ''} after {now - first:.1f} s")
                continue
            rows = self.scenario.rows_for(list(p.get("permissions") or [])) if pairing else None
            owner.approve(ref, narrow=rows)
            self.log.append(f"approved the {p.get('kind')} {p.get('name') or ''} after {now - first:.1f} s")
            if pairing and self.scenario.share:
                owner.share()
        for u in owner.unlocks():  # an unlock the owner is asked: Allow, after the scenario's delay
            first = self.seen.setdefault(u["id"], now)
            if now - first >= self.scenario.unlock_delay:
                owner.approve_unlock(u["id"])
                self.log.append(f"allowed the unlock of {u.get('account') or 'an account'} after {now - first:.1f} s")


def _command(command: Sequence[str], url: str) -> list[str]:
    return [part.replace("{url}", url) for part in command]


BASE_URL = "DECOY_BASE_URL"
CONFIG_DIR = "DECOY_LAB_CONFIG_DIR"  # store/profiles.py reads it: the agent's own, empty, config directory
# what the agent keeps of the user's environment when set: the programs, the locale, the time zone
KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
# … and on Windows what a process (python, node) needs to start at all
KEPT_ON_WINDOWS = ("SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT")
XDG = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache"}
# the names the clean room sets itself: `--env` cannot hand the agent the user's own
RESERVED = frozenset({"HOME", BASE_URL, CONFIG_DIR, "PYTHONUNBUFFERED", *XDG})


def agent_env(
    room: Path, url: str, passed: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The agent's whole environment, in the clean room `room` (an empty directory of the
    check's): what KEPT names of `environ` (the user's), a HOME and a config directory inside
    `room`, the base URL, and each variable of `passed` (`--env NAME`) that `environ` sets."""
    environ = os.environ if environ is None else environ
    kept = (*KEPT, *(KEPT_ON_WINDOWS if sys.platform == "win32" else ()))
    env = {k: environ[k] for k in kept if k in environ}
    home = room / "home"
    dirs = {"HOME": home, CONFIG_DIR: room / "config", **{k: home / v for k, v in XDG.items()}}
    for name, path in dirs.items():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(path)
    env.update({k: environ[k] for k in passed if k in environ and k not in RESERVED})
    env.update({BASE_URL: url, "PYTHONUNBUFFERED": "1"})
    return env


def run_scenario(
    scenario: Scenario,
    command: Sequence[str],
    *,
    timeout: float = 120.0,
    agent_key: bytes | None = None,
    on_flow: Callable[[Any], Any] | None = None,
    pass_env: Sequence[str] = (),
    owner_key: Any = None,
    cancel: threading.Event | None = None,
) -> Run:
    """Run `command` once under `scenario`; the record of what happened, for the rules. With
    `agent_key` (PEM) the inspector opens what the agent wrote with it too; `on_flow(flow)` hears
    of each finished exchange as it happens (from the inspector's thread). The command runs in a
    clean room (`agent_env`); `pass_env` names the user's variables it is given besides.
    `owner_key` (an AgentKey or PEM) is the sandbox owner's, so a report can stage the same
    sandbox again (runner.py); `cancel` set stops the agent (its process group) and raises
    KeyboardInterrupt, as Ctrl-C does, for a scenario run beside others in a thread."""
    from decoy_lab.conformance.recording import start_inspector
    from decoy_lab.inspector.serve import serve_in_thread
    from decoy_lab.sandbox import Sandbox

    sandbox = Sandbox.start(approve="manual", seed=scenario.seed, owner_key=owner_key)
    hop = StageHop(sandbox.url, scenario.faults(sandbox))
    served = serve_in_thread(hop, name="decoy-check-hop")
    owner = OwnerLoop(sandbox, scenario)
    staged: list[str] = []
    try:
        staged = scenario.setup(sandbox) if scenario.setup is not None else []
        before = sandbox.owner.app_view()
        insp = start_inspector(served.url, sandbox, agent_key=agent_key)
        if on_flow is not None:
            insp.on_flow(on_flow)
        try:
            owner.start()
            code, out, err, timed_out = _execute(
                _command(command, str(insp.url)), str(insp.url), timeout, pass_env, cancel
            )
            owner.stop.set()
            insp.settle(30.0)
            flows = insp.all_flows()
        finally:
            owner.stop.set()
            insp.close()
        view = sandbox.owner.app_view()
    finally:
        served.stop()
        sandbox.stop()
    notes = staged + list(owner.log) + ([f"the command was stopped after {timeout:g} s"] if timed_out else [])
    return Run(
        scenario.name,
        [Exchange.of(f) for f in flows],
        view,
        list(hop.events),
        code,
        out,
        err,
        timed_out,
        notes,
        agent_key=agent_key,
        flows=flows,
        app_view_before=before,
    )


def _execute(
    command: list[str], url: str, timeout: float, passed: Sequence[str] = (), cancel: threading.Event | None = None
) -> tuple[int | None, str, str, bool]:
    room = Path(tempfile.mkdtemp(prefix="decoy-check-"))  # 0700, the agent's alone; removed after
    try:
        return _run_in(command, agent_env(room, url, passed), timeout, cancel)
    finally:
        shutil.rmtree(room, ignore_errors=True)


def _run_in(
    command: list[str], env: dict[str, str], timeout: float, cancel: threading.Event | None = None
) -> tuple[int | None, str, str, bool]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)
        except OSError as exc:
            return None, "", f"the command could not start: {exc}", False
        timed_out = False
        try:
            code: int | None = _wait(proc, timeout, cancel)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the command's own process group (started above)
            code = proc.wait()
        except BaseException:  # interrupted (Ctrl-C, a notebook's interrupt): the agent stops too
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        out.seek(0)
        err.seek(0)
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), timed_out


def _wait(proc: subprocess.Popen, timeout: float, cancel: threading.Event | None) -> int:
    """The agent's exit status; TimeoutExpired after `timeout`; KeyboardInterrupt once `cancel` is set."""
    if cancel is None:
        return proc.wait(timeout)
    deadline = time.monotonic() + timeout
    while True:
        if cancel.is_set():
            raise KeyboardInterrupt("the check was cancelled")
        try:
            return proc.wait(max(0.0, min(0.2, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise


def describe(command: Sequence[str]) -> str:
    return shlex.join(command)
