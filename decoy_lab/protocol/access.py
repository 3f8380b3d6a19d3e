"""What a connection holds (`GET /api/agent/policies`) and what it has asked for (grant requests).

`Access` puts the plain summary first, as the spec says to read it (`access`, then the names in
`policies[].permissions[].permissions` and `policies[].expires_at`, never `scopes`), and keeps
every named permission with its selection and expiry in a DataFrame. The spec leaves the shape
of `access` open beyond the memory part's `save`, `read`, `write` and `delete`; it is read
defensively here (a selector object, a boolean, or a list of reasons are all understood).

`GrantRequest` is one ask on the connection's single open request: `status`, `refresh()`, and
`wait()` polling `GET /api/agent/grant-request?id=` until the owner answers.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from decoy_lab.transport import routes
from decoy_lab.transport.api import expect_object
from decoy_lab.vocab import SELECTION_KEYS

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

VERBS = ("save", "read", "write", "delete")
# The members of a grant-request answer that are read, and their shapes (http.expect_object).
ASKED = {"request_id": str, "status": str, "permissions": list[str], "ends_at": str, "message": str}
PENDING, FINISHED = (
    "pending",
    frozenset({"approved", "denied", "expired", "revoked", "resolved", "already_granted", "implicit"}),
)


def _utc(value: Any) -> pd.Timestamp | None:
    if value in (None, ""):
        return None
    ts = pd.to_datetime(value, utc=True, errors="coerce")
    return None if pd.isna(ts) else ts


def read_policies(answer: Any) -> dict:
    """A policies answer, checked where `Access` relies on its shape: the lists it walks and the
    objects it reads. A member of another shape is a TransportError that names it (ask again);
    a policy or permission row that is not an object is skipped, as before."""
    where = "GET /api/agent/policies"
    expect_object(answer, where, policies=list, token=dict, scopes=list[str], access_version=float)
    expect_object(answer.get("token") or {}, f"{where}: token", scopes=list[str], key_registered=bool)
    if isinstance(answer.get("access"), dict):
        expect_object(answer["access"], f"{where}: access", version=float)
    for i, policy in enumerate(answer.get("policies") or []):
        if isinstance(policy, dict):
            expect_object(policy, f"{where}: policies[{i}]", permissions=list, expires_at=str)
            for j, row in enumerate(policy.get("permissions") or []):
                if isinstance(row, dict):
                    expect_object(row, f"{where}: policies[{i}].permissions[{j}]", permissions=list[str], named=bool)
    return answer


def _listed(value: Any) -> list:
    """A selector member as a list: the spec leaves its shape open, so one value is a list of one."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] if value not in (None, False, "", {}) else []


def _named(ids: Any, names: dict[str, str] | None) -> list[str]:
    """Topic ids as their names where the connection has read them (the id otherwise)."""
    return [(names or {}).get(str(t), str(t)) for t in ids]


def describe_reach(value: Any, names: dict[str, str] | None = None) -> str:
    """One verb's memory reach in words: "all memories", "categories food, travel", "nothing".
    `names` maps `topic:<id>` to a topic's name, so a topic selection reads as its name."""
    if value is None or value is False:
        return "nothing"
    if value is True:
        return "yes"
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) if value else "nothing"
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        parts = []
        if value.get("all"):
            parts.append("all memories")
        cats = _listed(value.get("categories") or value.get("datatypes"))
        if cats:
            parts.append("categories " + ", ".join(map(str, cats)))
        topics = _listed(value.get("topics") or value.get("about"))
        if topics:
            parts.append(
                f"{len(topics)} topic"
                + ("s" if len(topics) != 1 else "")
                + " ("
                + ", ".join(_named(topics, names))
                + ")"
            )
        if value.get("account_wildcard"):
            parts.append("memories about every account")
        accounts = _listed(value.get("account_ids") or value.get("accounts"))
        if accounts:
            parts.append(f"memories about {len(accounts)} account" + ("s" if len(accounts) != 1 else ""))
        if value.get("own") or value.get("self"):
            parts.append("its own memories")
        return "; ".join(parts) if parts else "nothing"
    return str(value)


def _memory_part(access: Any) -> dict:
    if not isinstance(access, dict):
        return {}
    for key in ("memories", "memory"):
        if isinstance(access.get(key), dict):
            return access[key]
    return {}


def _selection(row: dict, names: dict[str, str] | None = None) -> str:
    parts = []
    for k in SELECTION_KEYS:
        v = row.get(k)
        if v in (None, [], ""):
            continue
        if k == "about" and isinstance(v, (list, tuple)):
            v = _named(v, names)
        parts.append(f"{k}=" + (",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)))
    return "; ".join(parts) if parts else "all"


@dataclass
class Access:
    """The connection's effective access, as `/policies` reports it."""

    raw: dict = field(repr=False)
    # `topic:<id>` -> name for the topics this connection has read, so selections show names
    topic_names: dict[str, str] = field(default_factory=dict, repr=False)

    # -- the parts -------------------------------------------------------------------------
    @property
    def summary_raw(self) -> Any:
        return self.raw.get("access")

    @property
    def memory(self) -> dict:
        """The memory part of `access`: `save`, `read`, `write`, `delete`."""
        return _memory_part(self.raw.get("access"))

    @property
    def can_save(self) -> bool:
        v = self.memory.get("save")
        return bool(v.get("allowed", True) if isinstance(v, dict) else v)

    def reaches(self, verb: str) -> bool:
        return describe_reach(self.memory.get(verb)) not in ("nothing", "no")

    @property
    def version(self) -> int | None:
        a = self.raw.get("access")
        v = a.get("version") if isinstance(a, dict) else None
        if v is None:
            v = self.raw.get("access_version")
        return int(v) if isinstance(v, (int, float)) else None

    @property
    def policies(self) -> list[dict]:
        return [p for p in self.raw.get("policies") or [] if isinstance(p, dict)]

    @property
    def names(self) -> set[str]:
        """Every permission name held now."""
        return {
            n
            for p in self.policies
            for row in p.get("permissions") or []
            if isinstance(row, dict)
            for n in row.get("permissions") or []
        }

    @property
    def token(self) -> dict:
        return self.raw.get("token") or {}

    @property
    def scopes(self) -> list[str]:
        return list(self.raw.get("scopes") or self.token.get("scopes") or [])

    @property
    def key_registered(self) -> bool | None:
        return self.token.get("key_registered")

    @property
    def frame(self) -> pd.DataFrame:
        """One row per named permission: policy, permission, selection, expires_at (UTC)."""
        recs = []
        for p in self.policies:
            for row in p.get("permissions") or []:
                if not isinstance(row, dict):
                    continue
                for name in row.get("permissions") or []:
                    recs.append(
                        {
                            "policy_id": p.get("id"),
                            "permission": name,
                            "selection": _selection(row, self.topic_names),
                            "kind": row.get("kind"),
                            "named": row.get("named"),
                            "expires_at": _utc(p.get("expires_at")),
                            "row": {k: v for k, v in row.items() if k not in ("type",)},
                        }
                    )
        df = pd.DataFrame(recs, columns=["policy_id", "permission", "selection", "kind", "named", "expires_at", "row"])
        for col in ("policy_id", "permission", "selection", "kind"):
            df[col] = df[col].astype("string")
        df["named"] = df["named"].astype("boolean")
        df["expires_at"] = pd.to_datetime(df["expires_at"], utc=True)
        return df

    # -- the summary -------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        """The plain summary first (the server's sentence when it gives one), then memories, then
        when access ends."""
        a = self.raw.get("access")
        lines: list[str] = []
        if isinstance(a, dict) and isinstance(said := a.get("summary") or a.get("text"), str):
            lines.append(said)
        if isinstance(a, dict) and a.get("everything") is True:
            lines.append("Everything in the vault (the whole-vault grant).")
        mem = self.memory
        if mem:
            lines.append(
                "Memories: "
                + "; ".join(
                    f"{verb} {describe_reach(mem.get(verb), self.topic_names)}" for verb in VERBS if verb in mem
                )
            )
        elif not lines:
            lines.append("Memories: nothing")
        ends = sorted({str(p.get("expires_at")) for p in self.policies if p.get("expires_at")})
        lines.append("Access ends: " + (", ".join(ends) if ends else "no end date (until revoked)"))
        return lines

    @property
    def summary(self) -> str:
        return "\n".join(self.summary_lines())

    def __str__(self) -> str:
        df = self.frame
        table = (
            df[["permission", "selection", "expires_at"]].to_string(index=False, na_rep="never")
            if len(df)
            else "(no permissions)"
        )
        return self.summary + "\n\n" + table

    def __repr__(self) -> str:
        return f"<Access {sorted(self.names)} version={self.version}>"

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.summary_lines())
        df = self.frame
        table = (
            df[["permission", "selection", "expires_at"]].to_html(index=False, na_rep="never", escape=True)
            if len(df)
            else "<p><em>No permissions held.</em></p>"
        )
        return f"<div class='decoy-access'><strong>What this connection holds now</strong><ul>{items}</ul>{table}</div>"


@dataclass
class GrantRequest:
    """One ask to the owner. `status`: pending, approved, denied, expired, revoked, resolved,
    or already_granted (nothing was sent: the connection holds it)."""

    session: Session = field(repr=False)
    request_id: str | None
    status: str
    permissions: list[str] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list, repr=False)
    renewal: bool = False
    combined: bool = False
    ends_at: str | None = None
    message: str | None = None
    raw: dict = field(default_factory=dict, repr=False)
    on_done: Callable[[], Any] | None = field(default=None, repr=False)  # read what is held again

    @property
    def done(self) -> bool:
        return self.status in FINISHED

    @property
    def granted(self) -> bool:
        return self.status in ("approved", "resolved", "already_granted", "implicit")

    def refresh(self) -> str:
        """Ask the server where the request stands; returns the new status."""
        if self.request_id is None:
            return self.status
        ans = self.session.get(routes.GRANT_REQUEST, {"id": self.request_id}, **ASKED)
        self.raw = ans
        self.status = ans.get("status", self.status)
        return self.status

    def wait(
        self,
        timeout: float = 600.0,
        interval: float = 3.0,
        *,
        on_status: Callable[[GrantRequest], Any] | None = None,
        sleep: Callable[[float], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> GrantRequest:
        """Poll every `interval` s until the owner answers (or `timeout`); then re-read policies."""
        sleep = sleep or self.session.sleep
        deadline = clock() + timeout
        last = None
        while not self.done:
            if clock() >= deadline:
                break
            sleep(interval)
            self.refresh()
            if on_status is not None and self.status != last:
                on_status(self)
            last = self.status
        if self.done and self.on_done is not None:
            self.on_done()  # what is held may have changed: read it again
        return self

    def __str__(self) -> str:
        text = f"Grant request {self.request_id or '(none sent)'}: {self.status}"
        if self.permissions:
            text += " — asked for " + ", ".join(self.permissions)
        if self.message:
            text += f"\n{self.message}"
        return text
