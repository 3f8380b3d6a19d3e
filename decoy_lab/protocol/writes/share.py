"""Share: wrap a memory's key to every grantee its labels reach (KID_CONFLICT: read again, once)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decoy_lab import memory
from decoy_lab.errors import KidConflict, UnreadableRow
from decoy_lab.protocol.writes.sending import WRAPS, send
from decoy_lab.recipes import sealing

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session


def share(s: Session, memory_id: str) -> int:
    for attempt in range(2):
        served = s.served_row(memory_id)
        if memory.read_row(served, s.agent_key, key_cache=s.key_cache) is None:
            raise UnreadableRow(memory_id, "opens, but is not a memory, topic or link")
        key = s.key_cache[served["kid"]]
        plain = memory.decode_plaintext(sealing.open_json(key, served["ciphertext"]), memory_id)
        wraps = memory.grantee_wraps(key, plain, s.keys())
        if not wraps:
            return 0
        try:
            ans = send(s, "POST", WRAPS, {"row_id": memory_id, "kid": served["kid"], "wraps": wraps})
            return int(ans.get("added") or 0)
        except KidConflict:
            if attempt:
                raise
    return 0
