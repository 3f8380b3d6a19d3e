"""What the account family's calls take and what their answers must hold before anything is
built on them: a wrong argument is a MemoryModelError naming it, before anything is sent — never a
TypeError from deep inside; an answer missing what a write is built on (a row's id, its rev) is a
TransportError, its outcome unknown — never a list taken for empty or a write sent without its
`expected_rev`. accounts_write, accounts_unlock, accounts_list and accounts_decoys share these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from decoy_lab.errors import MemoryModelError, TransportError
from decoy_lab.shapes import fits, shape_name

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.protocol.session import Session

__all__ = [
    "LABEL_MAX",
    "flag_arg",
    "ids_arg",
    "label_arg",
    "record_arg",
    "seconds_arg",
    "served_row",
    "text_arg",
    "whole",
]

LABEL_MAX = 200  # "agent_label: { type: string, maxLength: 200 }"


def text_arg(value: object, what: str, *, limit: int | None = None) -> str:
    """`value` if it is non-blank text of at most `limit` characters, else why not."""
    if not isinstance(value, str):
        raise MemoryModelError(f"{what} is text, not {type(value).__name__}; nothing was sent")
    if not value.strip():
        raise MemoryModelError(f"{what} is empty; nothing was sent")
    if limit is not None and len(value) > limit:
        raise MemoryModelError(f"{what} is at most {limit} characters, not {len(value)}; nothing was sent")
    return value


def label_arg(value: object, what: str) -> str | None:
    """A label: None (none, or clear it) or text of at most LABEL_MAX characters ("" clears it too)."""
    if value is None:
        return None
    if value == "":
        return ""
    return text_arg(value, what, limit=LABEL_MAX)


def flag_arg(value: object, what: str) -> bool:
    """True or False, nothing else (1, "yes" and None are mistakes, not answers)."""
    if not isinstance(value, bool):
        raise MemoryModelError(f"{what} is True or False, not {value!r:.40}; nothing was sent")
    return value


def seconds_arg(value: object, what: str = "wait") -> float:
    """A time to wait: a finite number of seconds, 0 or more (NaN or infinity would never end)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise MemoryModelError(f"{what} is a finite number of seconds, 0 or more, not {value!r:.40}; nothing was sent")
    return float(value)


def whole(answer: Mapping[str, Any], where: str, **required: Any) -> dict[str, Any]:
    """`answer` when it holds each of `required` with its shape. A 200 with no body reads as `{}`,
    and a read missing what a write is built on (a row's id, its rev) is no answer: nothing is
    decided on it — no list taken for empty, no write sent without its `expected_rev`."""
    for name, shape in required.items():
        if not fits(answer.get(name), shape):
            raise TransportError(f"{where}: the answer has no {name} ({shape_name(shape)}); the outcome is unknown")
    return dict(answer)


def served_row(s: Session, path: str, row_id: str, **required: Any) -> dict[str, Any]:
    """`GET path`: the row `row_id` as served, with `required` members (an answer about another
    row, or without them, is a TransportError)."""
    served = whole(s.get(path, id=str, **required), f"GET {path}", id=str, **required)
    if served["id"] != row_id:
        raise TransportError(f"GET {path}: the answer is about another row; the outcome is unknown")
    return served


def record_arg(value: object, what: str) -> dict[str, Any]:
    """A record to seal: a dict whose values are JSON (text, numbers, lists …). bytes, a set or NaN
    would fail in the sealing, after reads were sent — or, NaN, seal JSON the owner's app cannot parse."""
    if not isinstance(value, Mapping):
        raise MemoryModelError(
            f"{what} is a dict (name, username, url …), not {type(value).__name__}; nothing was sent"
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryModelError(f"{what} holds a value that is not JSON ({exc}); nothing was sent") from None
    return dict(value)


def ids_arg(values: object, what: str, *, most: int | None = None) -> list[str]:
    """A list of ids (text), each once, at least one and at most `most`."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise MemoryModelError(f"{what} takes a list of ids, not {type(values).__name__}; nothing was sent")
    ids = list(dict.fromkeys(text_arg(v, f"each of {what}'s ids") for v in values))
    if not ids:
        raise MemoryModelError(f"{what} needs at least one id; nothing was sent")
    if most is not None and len(ids) > most:
        raise MemoryModelError(f"{what} takes at most {most} ids a call, not {len(ids)}; nothing was sent")
    return ids
