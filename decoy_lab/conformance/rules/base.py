"""What the rules share: the rows an exchange wrote, topic names (the rows a read served: `Exchange.served_ids`)."""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run, short


@functools.lru_cache(maxsize=65536)
def normalize(name: str) -> str:
    """000 "Find or create": NFKC, lowercase, collapse whitespace, trim, strip surrounding quotes."""
    return " ".join(unicodedata.normalize("NFKC", name).lower().split()).strip().strip("\"'“”‘’").strip()


def writes(run: Run, *, refused: bool = False) -> list[Exchange]:
    """Every memory write (POST rows, PUT an edit) the server may have kept, in order: answered
    2xx, or with an unknown outcome. With `refused=True` the refused ones (4xx) too: a refused
    write stored nothing, so rules about rows never judge its rows."""
    kept = run.memoized(
        f"writes refused={refused}",
        lambda: [
            x
            for x in run.exchanges
            if x.path == MEMORIES and x.method in ("POST", "PUT") and (refused or not x.refused)
        ],
    )
    return list(kept)  # a copy: a rule may change its list


def posts(run: Run, *, refused: bool = False) -> list[Exchange]:
    return [x for x in writes(run, refused=refused) if x.method == "POST"]


def reads(run: Run) -> list[Exchange]:
    return list(run.memoized("reads", lambda: [x for x in run.exchanges if x.path == MEMORIES and x.method == "GET"]))


def sent_rows(x: Exchange) -> list[dict]:
    """The rows a write carried, as sent (a POST's `rows`, a PUT's body)."""
    return list(x.rows_sent)


def opened_rows(x: Exchange) -> tuple[Any, ...]:
    """The inspector's opened rows of what the agent sent (not of what it was answered)."""
    return x.request_rows


def kind_of(row: Any) -> str:
    """memory / topic / link for an opened row (from the owner's-eye entry), else ""."""
    plain = getattr(row, "plaintext", None)
    if isinstance(plain, dict):
        return str(plain.get("kind") or "")
    return str(getattr(row, "kind", "") or "")


def labels_of(row: Any) -> list[str]:
    """An opened row's labels (`category:…`, `topic:…`, `account:…`): from the owner's-eye entry, or
    from the plaintext a kept key opened (a plain edit, which carries no wrap of its own)."""
    p = getattr(row, "plaintext", None)
    found = p.get("labels") if isinstance(p, dict) else getattr(p, "labels", None)
    return [str(v) for v in found] if isinstance(found, list | tuple) else []


def plain(row: Any) -> dict:
    p = getattr(row, "plaintext", None)
    return p if isinstance(p, dict) else {}


def topic_of(row: Any) -> str:
    """The `topic:<id>` an opened memory row is filed under ("" when none)."""
    p = getattr(row, "plaintext", None)
    if isinstance(p, dict):
        return str((p.get("topic") or {}).get("id") or "") if p.get("kind") == "memory" else ""
    return str(getattr(p, "topic_id", "") or "")


def preparing(x: Exchange) -> bool:
    """A read that reported rows still owed by the owner's phone."""
    body = x.response if isinstance(x.response, dict) else {}
    return bool(body.get("preparing") or body.get("preparing_others") or body.get("preparing_unknown"))


def row_label(x: Exchange, row_id: str) -> str:
    return f"{x.label()}, row {short(row_id)}"


def pairings(run: Run) -> list[Exchange]:
    return [x for x in run.exchanges if x.method == "POST" and x.path == "/oauth/device"]


def token_calls(run: Run, grant: str) -> list[Exchange]:
    return [
        x
        for x in run.exchanges
        if x.method == "POST" and x.path == "/oauth/token" and grant in x.form.get("grant_type", "")
    ]
