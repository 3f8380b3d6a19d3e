"""Sending a write under the spec's retry rules: each route's answer shape, the check that an
answer accounts for what was sent, POSTing rows (sent once more after a resend if one is not
served), a journaled PUT sent again, and the best-effort removal of rows a refused change wrote.
Text is checked before anything is sealed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import DecoyError, MemoryModelError, RevConflict
from decoy_lab.protocol import legacy
from decoy_lab.transport import routes

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

log = logging.getLogger(__name__)

MEMORIES = routes.MEMORIES
WRAPS = routes.WRAPS
# Each write's answer, by route: the members read from it and their shapes (http.expect_object). An
# answer that does not fit is an unknown outcome, like a lost one: the same body is sent again.
WRITE_ANSWERS: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", MEMORIES): {"created": list[str], "existing": list[str]},
    ("PUT", MEMORIES): legacy.EDITED,
    ("POST", routes.MEMORIES_DELETE): {"deleted": list[str], "refused": list[str], "remediation": dict},
    ("POST", WRAPS): {"added": int},
    ("PUT", legacy.ROWS): legacy.EDITED,
    ("POST", legacy.ROWS_DELETE): legacy.DELETED,
}


def send(s: Session, method: str, path: str, body: Any) -> dict[str, Any]:
    """One write under the retry rules, its answer read for the members its route names and
    checked against what was asked: a POST of rows must account for every id sent (in `created`
    or `existing`), an edit must name the memory and carry its new rev. Any other answer is an
    unknown outcome, like a lost one."""
    check = None
    if (method, path) == ("POST", MEMORIES):
        check = accounts_for([r["id"] for r in body["rows"]])
    elif method == "PUT":
        check = legacy.edited(body)
    return s.send(method, path, body, WRITE_ANSWERS.get((method, path)), check)


def accounts_for(ids: list[str]) -> Callable[[dict[str, Any]], str | None]:
    def check(ans: dict[str, Any]) -> str | None:
        told = {*(ans.get("created") or ()), *(ans.get("existing") or ())}
        missing = [i for i in ids if i not in told]
        if missing:
            return f"the answer accounts for {len(ids) - len(missing)} of the {len(ids)} rows sent (created ∪ existing)"
        return None

    return check


def post_rows(s: Session, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """POST rows; after any resend, read back and send the same rows once more if one is not served."""
    before = s.resends
    ans = send(s, "POST", MEMORIES, {"rows": rows})
    if s.resends > before:
        served = {r.get("id") for r in s.served()}
        if any(r["id"] not in served for r in rows):
            ans = send(s, "POST", MEMORIES, {"rows": rows})
    s.written.update(r["id"] for r in rows)
    return ans


def put_journaled(s: Session, body: dict[str, Any]) -> dict[str, Any]:
    """Send a journaled PUT again. REV_CONFLICT: when the served row is this very body (the same
    ciphertext), an earlier send landed; otherwise the memory changed meanwhile and it did not."""
    try:
        return send(s, "PUT", MEMORIES, body)
    except RevConflict:
        served = next((r for r in s.served() if r.get("id") == body["id"]), None)
        if served is not None and served.get("ciphertext") == body.get("ciphertext"):
            return {"id": body["id"], "outcome": "already applied"}
        raise


def delete_quietly(s: Session, ids: list[str]) -> None:
    """Best effort: remove rows this call wrote for a change that was refused."""
    try:
        s.api.request("POST", routes.MEMORIES_DELETE, json={"ids": ids})
    except DecoyError as exc:
        log.info("could not remove topic rows %s: %s", ids, exc)


def checked_text(value: Any, what: str) -> None:
    """Text must be text that UTF-8 can carry: bytes (undecoded, maybe not UTF-8) or a lone surrogate
    (what a bad decode leaves behind) is refused here, in plain words, before anything is sealed."""
    if isinstance(value, (bytes, bytearray)):
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryModelError(
                f"the {what} is bytes that are not UTF-8 (byte {exc.start}): decode it to text first; nothing was sent"
            ) from None
        raise MemoryModelError(f"the {what} is bytes: pass it as text (str); nothing was sent")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryModelError(
                f"the {what} holds a lone surrogate at character {exc.start} (U+{ord(value[exc.start]):04X}), "
                "which is not text UTF-8 can carry — it usually comes from decoding bytes wrongly: fix the "
                "text first; nothing was sent"
            ) from None
