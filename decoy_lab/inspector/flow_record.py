"""The flow record: one `Flow` per exchange the inspector saw, and the rows it carried.

A Flow is filled in as the exchange runs (request line and headers, then the request body as it
streams, the answer's head, its body, how it ended) and is then left alone. Bodies keep their
bytes up to a cap (`Body.data`), with the real size counted (`Body.size`) and `truncated` set
when the rest went through unrecorded. Every secret in a flow (tokens, device codes, client
secrets, Authorization headers) is already masked as a fingerprint when it is stored, unless
the inspector was started with `reveal=True`; nothing here ever holds more than it was given.

`Flow.to_dict()` is the one JSON-able form: the flows widget and the HAR writer read it.
Times are milliseconds from the inspector's start (`Timings`); `started` is the wall clock.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BODY_CAP = 8 * 1024 * 1024  # bytes kept of each body; the rest is counted and streamed through
KEEP = 10_000  # flows a running inspector keeps (the newest); older ones are dropped and counted

# How an exchange ended (`Flow.ended`); `reason` says more in words.
ANSWERED = "answered"
AGENT_DISCONNECTED = "agent disconnected"
UPSTREAM_DOWN = "upstream down"
UPSTREAM_CUT_OFF = "upstream cut off"
UPSTREAM_TIMEOUT = "upstream timed out"
PROXY_ERROR = "proxy error"
STOPPED = "inspector stopped"
IN_FLIGHT = "in flight"
UNREAD = "not readable in the recording"  # a HAR entry read back that is not one (reason: why)
ENDINGS = (
    ANSWERED,
    AGENT_DISCONNECTED,
    UPSTREAM_DOWN,
    UPSTREAM_CUT_OFF,
    UPSTREAM_TIMEOUT,
    PROXY_ERROR,
    STOPPED,
    IN_FLIGHT,
    UNREAD,
)

# What a row's opening found (`Row.verdict`), and a flow's summary of its rows (`Flow.verdict`).
READABLE = "readable"  # the owner's app opens it (or the agent's key opened it as served)
UNREADABLE = "unreadable"  # the key was there and the row does not open: `reason` says why
LAYOUT = "layout only"  # no key to open it: parsed by its layout, `certainty` says how sure
ERROR = "error"  # the body could not be read for rows at all (not JSON, cut short)
VERDICTS = (READABLE, UNREADABLE, LAYOUT, ERROR)


@dataclass
class Body:
    """A body as recorded: the bytes kept (at most the cap), the real size, and whether the rest
    was cut off the record (`truncated`) or never arrived (`complete` False: the peer stopped)."""

    data: bytes = b""
    size: int = 0
    truncated: bool = False
    complete: bool = True

    def __repr__(self) -> str:
        more = ", truncated" if self.truncated else ""
        cut = ", incomplete" if not self.complete else ""
        return f"Body({self.size} bytes, {len(self.data)} kept{more}{cut})"

    @property
    def text(self) -> str | None:
        """The kept bytes as UTF-8 text, None when they are not text."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def to_dict(self) -> dict[str, Any]:
        text = self.text
        out: dict[str, Any] = {"size": self.size, "kept": len(self.data), "truncated": self.truncated}
        out["complete"] = self.complete
        if text is not None:
            out["text"] = text
        else:
            out["base64"] = base64.b64encode(self.data).decode("ascii")
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Body:
        data = d["text"].encode("utf-8") if "text" in d else base64.b64decode(d.get("base64") or "")
        return cls(data, int(d.get("size", len(data))), bool(d.get("truncated")), bool(d.get("complete", True)))


@dataclass
class Timings:
    """Milliseconds from the inspector's start: the request arrived (`start`), was sent upstream
    in full (`sent`), the answer's first byte arrived (`first_byte`), the exchange ended (`done`)."""

    start: float = 0.0
    sent: float | None = None
    first_byte: float | None = None
    done: float | None = None

    @property
    def total(self) -> float | None:
        return None if self.done is None else round(self.done - self.start, 3)

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "sent": self.sent, "first_byte": self.first_byte, "done": self.done}


@dataclass
class Row:
    """One sealed row a flow carried, opened where a key allowed.

    `field` is where it sat (`body.memories[3]`), `verdict` one of VERDICTS with `reason` in
    words, `problem` the short code of the owner's-eye check (`kid_mismatch`…), `text` the
    plaintext's text when it opened, `certainty` how sure a layout-only parse is, `trace` the
    recipe's Trace (recipes/trace.py) for the step-through."""

    id: str
    field: str
    verdict: str
    reason: str = ""
    problem: str = ""
    text: str | None = None
    kind: str = ""
    kid: str = ""
    opened_by: str = ""  # "owner key", "agent key", "" (layout only)
    certainty: str = ""
    plaintext: Any = dataclasses.field(default=None, repr=False)
    trace: Any = dataclasses.field(default=None, repr=False, compare=False)
    rerun: Callable[[], Any] | None = dataclasses.field(default=None, repr=False, compare=False)

    def recipe_trace(self) -> Any:
        """The recipe's Trace: kept when the row was opened with one, else made now (a big read is
        opened in parallel without traces, and each row's trace is made when it is asked for);
        None for a row served past the record's cap (its served bytes are not kept)."""
        if self.trace is None and self.rerun is not None:
            self.trace = self.rerun()
        return self.trace

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "field": self.field,
            "verdict": self.verdict,
            "reason": self.reason,
            "problem": self.problem,
            "text": self.text,
            "kind": self.kind,
            "kid": self.kid,
            "opened_by": self.opened_by,
            "certainty": self.certainty,
        }


@dataclass
class Flow:
    """One exchange: request, answer, timings, which agent, how it ended, and its rows."""

    id: int
    method: str
    path: str
    query: str = ""
    status: int | None = None
    request_headers: list[tuple[str, str]] = field(default_factory=list, repr=False)
    response_headers: list[tuple[str, str]] = field(default_factory=list, repr=False)
    request_body: Body = field(default_factory=Body, repr=False)
    response_body: Body = field(default_factory=Body, repr=False)
    timings: Timings = field(default_factory=Timings, repr=False)
    started: float = 0.0  # wall clock (epoch seconds) when the request arrived
    agent: str = ""  # the OAuth client_name seen at pairing, else the token's fingerprint
    token: str = ""  # fingerprint of the bearer token (`sha256:…`), "" without one
    token_id: str = ""  # the connection's token_id, when its token answer went through the inspector
    ended: str = IN_FLIGHT
    reason: str = ""
    http_version: str = "HTTP/1.1"
    rows: list[Row] = field(default_factory=list, repr=False)
    notes: list[str] = field(default_factory=list, repr=False)  # what opening said about the body
    pending: bool = field(default=False, repr=False, compare=False)  # ended, its masking and opening to come

    @property
    def url(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    @property
    def ms(self) -> float | None:
        return self.timings.total

    @property
    def verdict(self) -> str:
        """The flow's rows in one word: "" without rows; the worst verdict among them otherwise
        (unreadable, then error, then layout only, then readable), with the count of bad rows."""
        if not self.rows:
            return ERROR if any(n.startswith("error:") for n in self.notes) else ""
        for worst in (UNREADABLE, ERROR):
            bad = sum(r.verdict == worst for r in self.rows)
            if bad:
                return f"{bad} {worst}"
        if any(r.verdict == LAYOUT for r in self.rows):
            return LAYOUT
        return READABLE

    def header(self, name: str, *, response: bool = False) -> str | None:
        """The first header of that name (any case), from the request or the answer."""
        lname = name.lower()
        for k, v in self.response_headers if response else self.request_headers:
            if k.lower() == lname:
                return v
        return None

    def started_iso(self) -> str:
        stamp = _dt.datetime.fromtimestamp(self.started, tz=_dt.UTC)
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def summary(self) -> str:
        """One line: `#3 GET /api/agent/context/memories 200 readable 12 ms`."""
        status = self.status if self.status is not None else "-"
        ms = f"{self.ms:.0f} ms" if self.ms is not None else ""
        parts = [f"#{self.id}", self.method, self.url, str(status), self.verdict or "-", self.ended, ms]
        return " ".join(p for p in parts if p)

    def to_dict(self) -> dict[str, Any]:
        """Everything recorded, JSON-able (bodies as text, or base64 when not UTF-8)."""
        return {
            "id": self.id,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "status": self.status,
            "http_version": self.http_version,
            "started": self.started_iso(),
            "agent": self.agent,
            "token": self.token,
            "token_id": self.token_id,
            "ended": self.ended,
            "reason": self.reason,
            "verdict": self.verdict,
            "ms": self.ms,
            "timings": self.timings.to_dict(),
            "request": {"headers": [list(h) for h in self.request_headers], "body": self.request_body.to_dict()},
            "response": {"headers": [list(h) for h in self.response_headers], "body": self.response_body.to_dict()},
            "rows": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
        }

    def frame_row(self) -> dict[str, Any]:
        """The flow as one row of `Inspector.flows`."""
        return {
            "id": self.id,
            "method": self.method,
            "path": self.url,
            "status": self.status,
            "agent": self.agent,
            "verdict": self.verdict,
            "rows": len(self.rows),
            "ms": self.ms,
            "sent": self.request_body.size,
            "received": self.response_body.size,
            "ended": self.ended,
        }


FRAME_COLUMNS = ["id", "method", "path", "status", "agent", "verdict", "rows", "ms", "sent", "received", "ended"]
ROW_COLUMNS = ["flow", "id", "field", "verdict", "reason", "problem", "text", "kind", "kid", "opened_by", "certainty"]
