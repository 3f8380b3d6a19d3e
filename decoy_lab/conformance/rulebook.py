"""Rules as data, and what a run hands them: `Rule`, `Result`, `Run`, `Exchange`.

A `Rule` is an id (`rows.self-wrap`), a title, the spec sentence it enforces quoted verbatim
with its document (`000` the memory contract, `001` the Agent API) and section or operation,
a severity (`fail` or `warn`), the scenarios that stage what it needs, the bug that proves it
can fail, and a check: `check(run) -> Result`. A check that found nothing to judge answers
`not-exercised`, never `passed`.

A `Run` is one scenario's record: the exchanges the inspector saw (as `Exchange`s, in order),
the owner's view of every stored row at the end (the sandbox's owner API, `app_view`) and as it
stood when the agent started (`app_view_before`), the faults the staging hop fired, and the
agent's exit code and output.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

PASSED, WARNING, FAILED, NOT_EXERCISED = "passed", "warning", "failed", "not-exercised"
STATUSES = (FAILED, WARNING, PASSED, NOT_EXERCISED)  # worst first
MEMORIES = "/api/agent/context/memories"
POLL_ANSWERS = frozenset({"authorization_pending", "slow_down"})


class Evidence(str):
    """One evidence line, and the exchanges it is about by the checker's own numbers (`Exchange.id`).

    The text holds what the agent sent (a method, a path, a row id, a topic name), so the links
    are never read back out of it: a row id `#1` in the text links nothing. A rule passes the
    exchanges a line is about, `Evidence(f"{x.label()}: …", x)`; the scorecard adds the scenario.
    A plain string is evidence that links nothing."""

    exchanges: tuple[int, ...]
    scenario: str

    def __new__(cls, text: str, *about: Exchange | int, scenario: str = "") -> Evidence:
        self = super().__new__(cls, text)
        if len(about) == 1:  # most lines name one exchange: a rule may make one per row of a big run
            a = about[0]
            self.exchanges = (a.id if isinstance(a, Exchange) else int(a),)
        else:
            self.exchanges = tuple(dict.fromkeys(a.id if isinstance(a, Exchange) else int(a) for a in about))
        self.scenario = scenario
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_evidence, (str(self), self.exchanges, self.scenario))


def _evidence(text: str, exchanges: tuple[int, ...], scenario: str) -> Evidence:
    return Evidence(text, *exchanges, scenario=scenario)


@dataclass
class Result:
    status: str
    evidence: list[str] = field(default_factory=list)  # each an Evidence when it names exchanges

    @classmethod
    def judge(cls, bad: list[str], good: list[str], *, severity: str = "fail") -> Result:
        """failed (or warning, for a `warn` rule) with `bad`; passed with `good`; else not-exercised."""
        if bad:
            return cls(FAILED if severity == "fail" else WARNING, bad)
        return cls(PASSED, good) if good else cls(NOT_EXERCISED, [])


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    doc: str  # "000" or "001"
    section: str
    spec: str  # quoted verbatim from the spec text
    check: Callable[[Run], Result] = field(repr=False, compare=False)
    severity: str = "fail"
    scenarios: tuple[str, ...] = ("clean",)
    bug: str = ""  # the example agent's --bug that this rule catches (docs/rules.md)
    catches: str = ""  # that bug in words
    needs_agent_key: bool = False  # its bug shows only when the check has the agent's key (--agent-key)
    fix: str = ""  # what to do instead, in a line or two (else fixes.FIXES has it by id)

    def evaluate(self, run: Run) -> Result:
        try:
            return self.check(run)
        except Exception as exc:  # a check that stops is a finding, never a crash of the run
            return Result(WARNING, [f"the check stopped: {exc!r}"])


@dataclass
class Exchange:
    """One recorded flow, as the rules read it (bodies parsed once)."""

    id: int
    method: str
    path: str
    query: str
    status: int | None
    ended: str
    start: float  # seconds since the inspector started
    done: float | None
    request: Any
    response: Any
    form: dict[str, str]
    rows: list[Any]  # the inspector's opened rows (inspector.model.Row)
    token: str = ""  # fingerprint of the bearer token the request carried ("" without one)
    body: bytes = field(default=b"", repr=False)  # the request body as recorded (secrets masked)
    content_type: str = ""  # the request's Content-Type

    @property
    def answered(self) -> bool:
        return self.ended == "answered" and self.status is not None and self.status < 500

    @property
    def refused(self) -> bool:
        """The server answered a definite no (a 4xx): nothing of the request was done."""
        return self.ended == "answered" and self.status is not None and 400 <= self.status < 500

    @property
    def unknown(self) -> bool:
        """The agent could not learn the outcome: no answer, a cut answer, or a 5xx."""
        return not self.answered

    @functools.cached_property
    def served_ids(self) -> tuple[str, ...]:
        """The row ids a read's answer listed (`memories[].id`), parsed once: rules go over a big read many times."""
        body = self.response if isinstance(self.response, dict) else {}
        memories = body.get("memories") or []
        return tuple(m["id"] for m in memories if isinstance(m, dict) and isinstance(m.get("id"), str))

    @functools.cached_property
    def rows_sent(self) -> tuple[dict, ...]:
        """The rows a write carried, as sent (a POST's `rows`, a PUT's body), found once."""
        body = self.request if isinstance(self.request, dict) else {}
        if self.method == "PUT":
            return (body,) if isinstance(body.get("id"), str) else ()
        return tuple(r for r in body.get("rows") or [] if isinstance(r, dict) and isinstance(r.get("id"), str))

    @functools.cached_property
    def request_rows(self) -> tuple[Any, ...]:
        """The inspector's opened rows of what the agent sent (not of what it was answered), found once."""
        return tuple(r for r in self.rows if str(getattr(r, "field", "")).startswith("request"))

    @property
    def code(self) -> str:
        r = self.response if isinstance(self.response, dict) else {}
        return str(r.get("code") or r.get("error") or "")

    def label(self) -> str:
        return f"{self.method} {self.path} #{self.id}"

    @classmethod
    def of(cls, flow: Any) -> Exchange:
        form: dict[str, str] = {}
        if flow.path.startswith("/oauth/"):
            try:
                form = dict(parse_qsl(flow.request_body.data.decode("utf-8")))
            except (UnicodeDecodeError, ValueError):
                form = {}
        t = flow.timings
        return cls(
            flow.id,
            flow.method,
            flow.path,
            flow.query,
            flow.status,
            flow.ended,
            t.start / 1000,
            None if t.done is None else t.done / 1000,
            _json(flow.request_body.data),
            _json(flow.response_body.data),
            form,
            list(flow.rows),
            flow.token,
            flow.request_body.data,
            flow.header("content-type") or "",
        )


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


@dataclass
class Run:
    """One scenario's record, as every rule reads it."""

    scenario: str
    exchanges: list[Exchange]
    app_view: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)
    agent_key: bytes | None = field(default=None, repr=False)  # the agent's PEM key, when the check has it
    flows: list[Any] = field(default_factory=list, repr=False, compare=False)  # the inspector's Flows
    app_view_before: list[dict] = field(default_factory=list, repr=False)  # the owner's view as the agent started
    _by_id: dict[str, dict] | None = field(default=None, repr=False, compare=False)
    # lists the rules share (the writes, the reads), made once per record: `memoized`
    memo: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False, compare=False)

    def memoized(self, name: str, make: Callable[[], Any]) -> Any:
        """`make()` once for this record as it stands (an exchange added makes it again): the rules
        go over the same writes and reads many times, and a big run has ten thousand exchanges."""
        key = (name, len(self.exchanges))
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def where(self, method: str | None = None, path: str | None = None) -> list[Exchange]:
        return [
            x for x in self.exchanges if (method is None or x.method == method) and (path is None or x.path == path)
        ]

    @property
    def refusals(self) -> list[dict[str, Any]]:
        """Every refusal the server answered (a 4xx), in order: the exchange, its status and code.
        The device-code poll's `authorization_pending` and `slow_down` are the poll's answers, not
        refusals."""
        return [
            {"exchange": x.id, "method": x.method, "path": x.path, "status": x.status, "code": x.code}
            for x in self.exchanges
            if x.refused and x.code not in POLL_ANSWERS
        ]

    def staged(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["kind"] == kind]

    def owner_row(self, row_id: str) -> dict | None:
        """The owner's view of one stored row (indexed once: a big vault is read many times)."""
        if self._by_id is None or len(self._by_id) != len(self.app_view):
            self._by_id = {str(r.get("id")): r for r in self.app_view}
        return self._by_id.get(row_id)


def short(row_id: str) -> str:
    return row_id[:8] + "…" if len(row_id) > 9 else row_id
