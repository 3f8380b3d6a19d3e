"""Step-through over a session: the read of one served row re-run step by step, and a memory
sealed as `save` would seal it with nothing sent; each returns its Trace."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import DecoyError, UnreadableRow
from decoy_lab.protocol import legacy
from decoy_lab.protocol.session import Session
from decoy_lab.recipes.trace import Trace
from decoy_lab.store import snapshot
from decoy_lab.vault.read import Vault


def unseal(session: Session, row_id: str, trace: Trace | None, load: Callable[[], Vault]) -> Trace:
    """`Connection.unseal`: find the served row (`load` when the last load does not hold it),
    then base64 decode, parse envelope, RSA-OAEP unwrap, kid check, AES-GCM open, bind check."""
    trace = trace if trace is not None else Trace(f"unseal {row_id}")
    if row_id.startswith("topic:"):  # a topic's id as listed: `topic:<entity row id>`
        row_id = row_id.removeprefix("topic:")
    last = session.vault
    vault = last if last is not None and last.row(row_id) else load()
    served = vault.served_row(row_id)
    if served is not None and snapshot.DIGEST in served:  # rebuilt from the local cache: read it as served now
        served = session.served_row(row_id)
    if served is None:
        srow = next((r for r in vault.space_rows if r.id == row_id), None)
        if srow is not None:
            return legacy.unseal(session, srow, trace)
        waiting = vault.row(row_id)
        reason = (
            f"not served yet: {waiting.reason}"
            if waiting is not None
            else "this connection is not served a row with this id (it may be on its way, deleted, "
            "or outside this connection's grant)"
        )
        trace.add("find the served row", ok=False, inputs={"id": row_id}, reason=reason)
        return trace
    trace.add(
        "find the served row",
        inputs={"id": row_id, "kid": served.get("kid"), "rev": served.get("rev"), "via": served.get("via")},
        output="served",
    )
    try:
        memory.read_row(served, session.agent_key, trace=trace)
    except (UnreadableRow, DecoyError) as exc:
        if trace.failed is None:
            trace.add("read row", ok=False, reason=getattr(exc, "reason", None) or str(exc))
    return trace


def seal_preview(session: Session, text: str, topic: Any, categories: Iterable[str]) -> tuple[dict, Trace]:
    """`Connection.seal_preview`: seal a memory exactly as `save` would, recording every step."""
    trace = Trace("seal preview (not sent)")
    keys = session.keys()
    ref = None
    if topic is not None:
        found = session.find_topic(topic)
        if found is not None:
            ref = {"id": found.id, "name": found.name}
        else:
            made = memory.new_topic_rows(keys, topic if isinstance(topic, str) else str(topic))
            trace.add(
                "new topic",
                inputs={"name": made.topic["name"]},
                output=made.topic_id,
                note="save() would create this topic and its relation row in the same POST",
            )
            ref = made.topic
    row = memory.new_memory_row(keys, text, topic=ref, categories=categories, trace=trace)
    return row, trace
