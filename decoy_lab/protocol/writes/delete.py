"""Delete: memories and legacy space rows in one call; after a resend, a refused id that was ours
and is no longer served was deleted by the attempt whose answer was lost; every id is answered for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from decoy_lab.protocol import legacy
from decoy_lab.protocol.writes.sending import log, send
from decoy_lab.transport import routes

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session


@dataclass
class DeleteResult:
    """What `delete` did: ids deleted, ids refused, why each was refused (id → reason) and the
    server's remediation (id → the grant request that unlocks deleting it), if any."""

    deleted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    remediation: dict[str, Any] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"deleted {len(self.deleted)}, refused {len(self.refused)}"

    def add(self, other: DeleteResult) -> None:
        self.deleted += other.deleted
        self.refused += other.refused
        self.remediation.update(other.remediation)
        self.why.update(other.why)


def delete(s: Session, ids: str | Iterable[str]) -> DeleteResult:
    """Delete memories and legacy space rows, in one call."""
    ids = [ids] if isinstance(ids, str) else list(ids)
    if not ids:
        return DeleteResult()
    space_rows = legacy.space_row_ids(s)
    rows = [i for i in ids if i in space_rows]
    memory_ids = [i for i in ids if i not in space_rows]
    result = DeleteResult()
    if memory_ids:
        result.add(delete_memories(s, memory_ids))
    if rows:
        done = legacy.delete(s, rows)
        result.add(DeleteResult(done.deleted, list(done.refused), done.remediation, done.refused))
        if done.moved:
            log.info("legacy rows %s now live in the per-memory store: deleting them there", ", ".join(done.moved))
            result.add(delete_memories(s, done.moved))
    return result


def delete_memories(s: Session, ids: list[str]) -> DeleteResult:
    """POST memories/delete; after a resend, a refused id that was ours and is no longer served was
    deleted by the attempt whose answer was lost."""
    known = set(s.written)
    if s.vault is not None:
        known |= {r["id"] for r in s.vault.served if isinstance(r.get("id"), str)}
    before = s.resends
    ans = send(s, "POST", routes.MEMORIES_DELETE, {"ids": ids})
    result = DeleteResult(
        list(ans.get("deleted") or []), list(ans.get("refused") or []), dict(ans.get("remediation") or {})
    )
    # Every id is answered for: "missing or ineligible ids are refused". One the answer leaves out
    # is settled by reading what is served now, like a refusal after a lost answer.
    unmentioned = [i for i in dict.fromkeys(ids) if i not in result.deleted and i not in result.refused]
    still: set[str] = set()
    if (s.resends > before and result.refused) or unmentioned:
        served = {r.get("id") for r in s.served()}
        gone = [i for i in [*result.refused, *unmentioned] if i not in served and i in known]
        still = {i for i in unmentioned if i in served}
        result.deleted += gone
        result.refused = [i for i in [*result.refused, *unmentioned] if i not in gone]
    result.why = {i: _why_memory_refused(result.remediation.get(i)) for i in result.refused}
    result.why.update(
        dict.fromkeys(
            still, "the server's answer named it neither deleted nor refused, and it is still served: not deleted"
        )
    )
    return result


def _why_memory_refused(remediation: Mapping[str, Any] | None) -> str:
    if remediation:
        return (
            "this connection may not delete it: ask the owner with POST /api/agent/grant-request "
            f"{json.dumps(remediation, sort_keys=True)}"
        )
    return "missing, or not a memory this connection may delete (its own, or with memory.delete on it)"
