"""What a cache file holds, row by row (store/cache.py seals it): the rows of the last load as
kept (served fields with the ciphertext's SHA-256 in its place, what each read as), and `Snapshot`,
the contents of a file that opened: rows reused by id, kid, rev and ciphertext hash, or the whole
vault rebuilt with no request and no RSA work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import fields
from datetime import datetime
from functools import cached_property
from operator import attrgetter
from typing import Any

import orjson  # 5-10x the standard library's speed on the 1 MB per 1,000 rows a cache holds

from decoy_lab import memory
from decoy_lab.errors import UnreadableRow
from decoy_lab.vault import frames
from decoy_lab.vault.decode import decoded
from decoy_lab.vault.decoded_rows import DecodedRows, Kept
from decoy_lab.vault.read import Vault

_BLOBS = ("ciphertext", "wrapped_key", "self_wrap", "owner_wrap", "grantee_wraps")  # never kept: not needed
DIGEST = "ciphertext_sha256"  # what a row rebuilt from the cache carries instead of its ciphertext
_MODELS: dict[str, Any] = {"memory": memory.Memory, "topic": memory.TopicEntity, "link": memory.Link}
_SERVED = {f.name for f in fields(memory.Served)}  # the served fields every model carries
# a model's own fields (all but the served ones), in order: what a rebuild passes positionally
_PLAIN = {kind: attrgetter(*[f.name for f in fields(cls) if f.name not in _SERVED]) for kind, cls in _MODELS.items()}


def digest(ciphertext: Any) -> str | None:
    return hashlib.sha256(ciphertext.encode("ascii", "replace")).hexdigest() if isinstance(ciphertext, str) else None


def row_digest(row: Mapping) -> str | None:
    """The SHA-256 of a row's ciphertext (a row rebuilt from the cache carries it instead)."""
    got = digest(row.get("ciphertext"))
    return got if got is not None else row.get(DIGEST)


class Snapshot:
    """The contents of a cache file that opened: rows in served order, keys, cursor."""

    def __init__(self, head: dict, body: dict):
        self.cursor: str | None = head.get("cursor")
        self.access_version = head.get("access_version")
        self.complete: bool = bool(head.get("complete"))  # every served row is kept: the vault can be rebuilt
        self.answer: dict = body.get("answer") or {}
        self.keys: dict[str, bytes] = body.get("keys") or {}
        # per row: [served fields (the ciphertext's digest in its place), kind, plaintext fields |
        #           reason, the served fields the model holds when not the row's own (else None),
        #           the fingerprint of the row's JSON text as served]
        self.rows: list[list] = body.get("rows") or []
        self.taken: dict[str, list] = {}  # id -> the row as the cache keeps it, for rows reuse() gave out
        self._built: list[tuple[Kept, Any] | None] = []  # per row, what it reads as (prebuild); None once handed out
        self._times: dict[str, datetime | None] = {}  # a served time's text -> its datetime (_time)

    def prebuild(self) -> None:
        """What every kept row reads as, made now (on the worker that opened the file, while the
        server is asked): a row served as kept then costs a lookup."""
        self._built = [self._rebuild(kept[0], kept, True) for kept in self.rows]

    def _as_kept(self, i: int) -> tuple[Kept, Any]:
        """What row `i` reads as: made by prebuild (each is handed out once), else now."""
        built = self._built[i] if i < len(self._built) else None
        if built is None:
            return self._rebuild(self.rows[i][0], self.rows[i], True)
        self._built[i] = None
        return built

    @cached_property
    def _by_id(self) -> dict[str, int]:
        return {r[0]["id"]: i for i, r in enumerate(self.rows)}

    @cached_property
    def by_fingerprint(self) -> dict[str, dict]:
        """Fingerprint of a row's JSON text as it was served → the cache's copy of that row: a row
        served byte for byte as then is handed out as this copy without being parsed (jsonstream)."""
        return {r[4]: r[0] for r in self.rows if r[4] is not None and r[1] != "unreadable"}

    def _rebuild(self, row: Mapping, kept: list, same: bool) -> tuple[Kept, Any]:
        """What `row` reads as, from what the cache kept. `same`: its served fields are those the
        kept ones were read from, so the model's served fields are as kept."""
        _served, kind, value, checked, _fp = kept
        if kind == "unreadable":
            err = UnreadableRow(row.get("id"), value)
            return decoded(row, err), err
        if kind == "other":
            return decoded(row, None), None
        if not same:
            model = _MODELS[kind](*value, **vars(memory.served_fields(row)))
            return decoded(row, model), model
        if checked is not None:  # the model's served fields are not the row's own (kept as checked)
            rev, kid, via, mine, author, created, updated = checked
            model = _MODELS[kind](
                *value,
                rev=rev,
                kid=kid,
                via=via,
                mine=mine,
                author_kind=author,
                created_at=_when(created),
                updated_at=_when(updated),
            )
            return decoded(row, model), model
        # nearly every row: its served fields, of the types the reader checks, are the model's as they are
        kid, rev, via, mine, author = row["kid"], row["rev"], row["via"], row["mine"], row["author_kind"]
        created, updated = row.get("created_at"), row.get("updated_at")
        model = _MODELS[kind](
            *value,
            rev=rev,
            kid=kid,
            via=list(via),
            mine=mine,
            author_kind=author,
            created_at=self._time(created),
            updated_at=self._time(updated),
        )
        if kind == "memory":  # its DecodedRow is made again from the model alone (vault/decoded_rows.py)
            return model, model
        return decoded(row, model, (kid, rev, list(via), mine, author, created, updated)), model

    def _time(self, text: Any) -> datetime | None:
        """A served time as a datetime, one object for the rows stamped alike (the server's times
        are to the second: rows written together share them). Immutable, so safe to share."""
        if type(text) is not str:
            return _when(text)
        when = self._times.get(text)
        if when is None:
            when = self._times[text] = _when(text)
        return when

    def reuse(self, row: Mapping) -> tuple[Kept, Any] | None:
        """What `row` read as, when the cache holds it with the same id, kid, rev and ciphertext
        hash and it was readable then; None means: open it afresh."""
        rid = row.get("id")
        at = self._by_id.get(rid)  # type: ignore[arg-type]
        if at is None or self.rows[at][1] == "unreadable":
            return None
        kept = self.rows[at]
        if row is kept[0]:  # the stream knew it by its fingerprint: served byte for byte as kept
            self.taken[rid] = kept  # type: ignore[index]
            return self._as_kept(at)
        was = kept[0]
        if was.get("kid") != row.get("kid") or was.get("rev") != row.get("rev") or was[DIGEST] != row_digest(row):
            return None
        same = _served_part(row) == _served_part(was)
        try:
            out = self._rebuild(row, kept, same)
        except (UnreadableRow, TypeError, KeyError):  # served fields the reader refuses: read it afresh
            return None
        again = kept if same else kept_row(row, out[1], None)
        if again is not None:
            self.taken[str(rid)] = again  # what write() keeps of it
        return out

    def vault(self, space_rows: Iterable[frames.DecodedRow]) -> Vault:
        """The vault of the last load, rebuilt with no request and no RSA work."""
        built = self._built if len(self._built) == len(self.rows) else [None] * len(self.rows)
        self._built = []  # each is handed out once
        pairs = [b if b is not None else self._rebuild(k[0], k, True) for b, k in zip(built, self.rows)]
        return Vault(
            served=[kept[0] for kept in self.rows],  # the snapshot's own dicts, with the digest each stands for
            decoded_rows=DecodedRows(d for d, _ in pairs),
            models=[m for _, m in pairs if m is not None and not isinstance(m, UnreadableRow)],
            answer=dict(self.answer),
            space_rows=list(space_rows),
            read=0,
            results=[m for _, m in pairs],
            fingerprints=[kept[4] for kept in self.rows],
        )


def _served_part(row: Mapping, seen: dict | None = None) -> dict:
    """A row's served fields without its blobs (and digest); with `seen`, its strings as _same gives them."""
    return {k: v if seen is None else _same(v, seen) for k, v in row.items() if k not in _BLOBS and k != DIGEST}


def kept_row(row: Mapping, result: Any, fp: str | None, seen: dict | None = None) -> list | None:
    """One served row as the cache keeps it, or None when it cannot be kept (no id, kid or
    ciphertext). `seen`: the strings already written (see _same)."""
    rid, kid, dig = row.get("id"), row.get("kid"), row_digest(row)
    if not isinstance(rid, str) or not isinstance(kid, str) or dig is None:
        return None
    seen = {} if seen is None else seen
    served = _served_part(row, seen)
    served[DIGEST] = dig
    if isinstance(result, UnreadableRow):
        return [served, "unreadable", result.reason, None, None]
    if result is None:
        return [served, "other", None, None, fp]
    checked = None
    if not _as_served(served, result):  # rare: kept as the model holds them
        times = [t.isoformat() if t is not None else None for t in (result.created_at, result.updated_at)]
        checked = [result.rev, result.kid, result.via, result.mine, result.author_kind, *times]
    return [served, result.kind, [_same(v, seen) for v in _PLAIN[result.kind](result)], checked, fp]


def _same(value: Any, seen: dict) -> Any:
    """`value` with each string in it replaced by an equal one already written, when there is one
    (a row's id in its plaintext, a topic's id and name, categories, timestamps, `via`), and a list
    of strings or a dict of strings (or None) equal to one already written (the same `via`,
    categories, topic, empty metadata) replaced by that one: marshal writes a repeat as a
    reference and reads it back as the same object, a third fewer objects a row (~0.13 s fewer at
    100,000 rows). The models made from them share those values, as a load's do (memory/shared.py)."""
    kind = type(value)
    if kind is str:
        return seen.setdefault(value, value)
    if kind is list:
        items = [seen.setdefault(v, v) if type(v) is str else v for v in value]
        return seen.setdefault(("\0list", *items), items) if all(type(v) is str for v in items) else items
    if kind is dict:
        fields = {k: seen.setdefault(v, v) if type(v) is str else v for k, v in value.items()}
        plain = all(type(k) is str and (type(v) is str or v is None) for k, v in fields.items())
        return seen.setdefault(("\0dict", *fields.items()), fields) if plain else fields
    return value


def _as_served(served: Mapping, result: Any) -> bool:
    """Does the model hold `served`'s fields exactly as served, of the types the reader checks (so
    a rebuild may take them from the row as they are, and a DecodedRow shows the same)? Nearly
    every row: then they are not kept twice."""
    kid, rev, via, mine, author = (served.get(k) for k in ("kid", "rev", "via", "mine", "author_kind"))
    return (
        type(kid) is str
        and type(rev) is int
        and type(via) is list
        and type(mine) is bool
        and type(author) is str
        and (result.kid, result.rev, result.via, result.mine, result.author_kind) == (kid, rev, via, mine, author)
        and result.created_at == _when(served.get("created_at"))
        and result.updated_at == _when(served.get("updated_at"))
    )


def plain_json(value: Any) -> Any:
    """A JSON answer as lists, dicts and scalars only (marshal keeps nothing else)."""
    return orjson.loads(orjson.dumps(value, default=str))


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None
