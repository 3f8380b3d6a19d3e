"""The notebook's verbs about other agents: `%decoy inspect` (a recording proxy whose flows view
fills live while the kernel stays free) and `%decoy check` (the conformance check, its scenarios run side by side
(conformance/runner.py), its progress shown per scenario, its scorecard linked to the flows; an
agent's file not found in the notebook's folder is looked for in the checkout, so the README's
`examples/…` paths work from `notebooks/`). `RUN` holds them; handlers.py adds them
to the magic's table.

A handler gets the magics (`AgentsNotebook`: the embedded sandbox, the running inspector and the
settings it reads).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from IPython.display import display

from decoy_lab.wire.crypto import AgentKey
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import with_progress

if TYPE_CHECKING:
    from decoy_lab.conformance.report import Scorecard
    from decoy_lab.inspector.inspector import Inspector
    from decoy_lab.sandbox import Sandbox


class AgentsNotebook(Protocol):
    """What these handlers use of `DecoyMagics`."""

    sandbox: Sandbox | None
    inspector: Inspector | None

    @property
    def sandbox_options(self) -> dict[str, Any]: ...


def _problem(verb: str, message: str) -> verbs.UsageProblem:
    return verbs.UsageProblem(message, verb=verb, usage=verbs.BY_NAME[verb].usage())


def _pem(verb: str, path: str | None) -> bytes | None:
    try:
        return AgentKey.pem_file("--agent-key", path)
    except ValueError as exc:
        raise _problem(verb, str(exc)) from None


def _stop_previous(m: AgentsNotebook) -> None:
    """A new inspector replaces the running one, saying so (never two proxies silently)."""
    old, m.inspector = m.inspector, None
    if old is None or not old.running:
        return
    url, count = old.url, len(old)
    old.close()
    saved = f"; its recording is in {old.record}" if old.record is not None else ""
    print(f"Stopped the previous inspector on {url} ({count} exchanges{saved}).")


def _embedded_sandbox(m: AgentsNotebook) -> Sandbox:
    """The notebook's embedded sandbox (the one `connect --sandbox` uses), started when none runs."""
    if m.sandbox is None:
        from decoy_lab.sandbox import Sandbox

        opts = {"approve": "auto", **m.sandbox_options}
        m.sandbox = with_progress(lambda _: Sandbox.start(**opts), "starting the sandbox")
    return m.sandbox


def _inspect(m: AgentsNotebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.inspector.inspector import Inspector, start_problem

    if args.stop:
        if m.inspector is None or not m.inspector.running:
            print("No inspector is running.")
        _stop_previous(m)
        return None
    if args.url and args.sandbox:
        raise _problem("inspect", "give a URL or --sandbox, not both")
    why = start_problem(args.url, args.port, args.record)
    if why is not None:
        raise _problem("inspect", why)
    key = _pem("inspect", args.agent_key)
    _stop_previous(m)
    where: dict[str, Any] = {"upstream": args.url} if args.url else {"sandbox": _embedded_sandbox(m)}
    record = Path(args.record).expanduser() if args.record else None
    try:
        insp = Inspector.start(**where, port=args.port, agent_key=key, record=record)
    except OSError as exc:
        raise _problem("inspect", f"the inspector could not start: {exc}") from None
    m.inspector = insp
    _show_inspector(insp, args.url is None)
    return insp


def _show_inspector(insp: Inspector, sandbox: bool) -> None:
    from decoy_lab.widgets.flows import FlowsPanel
    from decoy_lab.widgets.html import esc

    said = (
        f"Decoy inspector on {insp.url} → {insp.upstream}: give the agent this URL as its Decoy base URL"
        + (" (the sandbox approves its pairing at once)" if sandbox else "")
        + ". It records while other cells run; `%decoy inspect --stop` ends it."
    )
    html = esc(said).replace(esc(str(insp.url)), f"<code>{esc(insp.url)}</code>", 1)
    html = html.replace("`%decoy inspect --stop`", "<code>%decoy inspect --stop</code>")
    display({"text/plain": said, "text/html": f"<p class='decoy-inspect-url'>{html}</p>"}, raw=True)
    display(FlowsPanel(insp))


def _check(m: AgentsNotebook, args: Any, cell: str | None) -> Scorecard:
    from decoy_lab.conformance import command as checking
    from decoy_lab.conformance import report, runner
    from decoy_lab.conformance.rules import RULES
    from decoy_lab.widgets.scorecard import CheckProgress, ScorecardView

    try:
        command = checking.agent_command(kernel_python(args.command), roots=checkout_roots())
        names = checking.scenario_names(args.scenarios)
        passed = checking.env_names(args.env)
    except checking.UsageError as exc:
        raise _problem("check", str(exc)) from None
    key = _pem("check", args.agent_key)
    progress = CheckProgress(names)
    display(progress)
    began = time.monotonic()
    try:
        runs, staging = runner.run_scenarios(
            names,
            command,
            timeout=args.timeout,
            agent_key=key,
            pass_env=passed,
            on_start=progress.started,
            on_flow=lambda name, flow: progress.flow(name),
            on_done=progress.finished,
        )
    except runner.ScenarioError as exc:
        raise _problem("check", str(exc)) from None
    card = report.score(RULES, runs, shlex.join(command), staging=staging)
    card.seconds = time.monotonic() - began
    report.save(card, Path(tempfile.mkdtemp(prefix="decoy-report-")) / "report.json")
    progress.done(card)
    display(ScorecardView(card))
    return card


def kernel_python(words: list[str] | None) -> list[str]:
    """The agent's command with a bare `python` / `python3` as the kernel's own interpreter: in a
    notebook "python" means the one decoy_lab (and the examples' httpx, cryptography) runs in,
    not whichever PATH finds first."""
    command = list(words or [])
    i = 1 if command[:1] == ["--"] else 0
    if command[i : i + 1] in (["python"], ["python3"]):
        command[i] = sys.executable
    return command


def checkout_roots() -> list[Path]:
    """Where a notebook's `%decoy check` looks for an agent's file not found in the kernel's
    working folder (a notebook runs in `notebooks/`, the README's paths are the checkout's):
    the checkout decoy_lab is installed from (an editable install), then the folder above."""
    roots = [Path(__file__).resolve().parents[3], Path.cwd().parent]  # decoy_lab/workbench/notebook/agents.py
    return [r for r in dict.fromkeys(roots) if (r / "pyproject.toml").is_file() or (r / "examples").is_dir()]


Handler = Callable[[Any, Any, str | None], Any]

# verb -> handler, added to handlers.RUN
RUN: dict[str, Handler] = {"inspect": _inspect, "check": _check}
