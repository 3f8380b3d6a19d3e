"""Reading served rows: unwrap, kid check, open, bind check, into Memory / TopicEntity / Link.

The readers raise UnreadableRow with the reason in words; read_rows reads a whole GET answer in
parallel, and summarize counts what it found.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import orjson

from decoy_lab.errors import DecoyError, UnreadableRow
from decoy_lab.gcpause import gc_paused
from decoy_lab.memory import shared
from decoy_lab.memory.plaintext import Plain, decode_plaintext, fail_row, string_list, type_name
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Source, Trace, run_recipe, tracer
from decoy_lab.text import plural
from decoy_lab.vocab import MAX_CIPHERTEXT
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey


# -- keys ---------------------------------------------------------------------------------------
class KeyCache(dict[str, bytes]):
    """kid -> raw 32-byte memory key, filled by the readers so a reload of unchanged rows costs no
    RSA work. A dict whose repr shows kids only: the keys are secrets."""

    def __repr__(self) -> str:
        return f"<KeyCache {len(self)} keys: {', '.join(sorted(self)[:8])}{' …' if len(self) > 8 else ''}>"

    __str__ = __repr__


# -- reading rows -------------------------------------------------------------------------------
@dataclass(kw_only=True, slots=True)
class Served:
    """What the server says about a row, next to its ciphertext: the same for every kind, so each
    model below carries these as keyword-only fields. The models keep their fields in slots (no
    dict per object: ~500 bytes less per row at 100,000 rows)."""

    rev: int | None = None
    kid: str | None = None
    via: list[str] = field(default_factory=list)
    mine: bool = False
    author_kind: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(slots=True)
class Memory(Served):
    """A memory as this connection reads it. Read, never changed: the memories of one load share
    their equal `via`, `categories`, `topic` and empty `metadata` values (shared.py)."""

    id: str
    text: str
    about: str  # "user", "topic:<id>" or "account:<id>"
    entity_name: str | None = None
    topic: dict[str, Any] | None = None  # {"id": "topic:<id>", "name": …}
    account: str | None = None
    categories: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    about_hint: str | None = None

    kind = "memory"


@dataclass(slots=True)
class TopicEntity(Served):
    """A topic's own entity row. `topic_id` is `topic:<id>`, how memories and grants name it."""

    id: str
    topic_id: str
    name: str
    type: str = ""

    kind = "topic"


@dataclass(slots=True)
class Link(Served):
    """A relation row: `from_` --relation_type--> `to`, with the ends it joins (`endpoints`)."""

    id: str
    from_: str
    to: str
    relation_type: str
    endpoints: list[str] = field(default_factory=list)

    kind = "link"


Row = Memory | TopicEntity | Link


def _timestamp(value: Any, name: str, row_id: str) -> datetime | None:
    if value is None:
        return None
    try:  # a time out of range (year 9999 west of UTC, 1e20 seconds) leaves the cell empty
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, tz=UTC)
        if isinstance(value, str) and (dt := _iso_time(value)) is not None:
            return dt
    except (OverflowError, OSError, ValueError):
        return None
    fail_row(row_id, f"the served {name} {value!r} is not an ISO 8601 date-time")


# The server stamps to the second, so rows written together serve one text: they share one
# (immutable) datetime, not one each (~5 MB less held at 100,000 rows).
@functools.lru_cache(maxsize=4096)
def _iso_time(text: str) -> datetime | None:
    """None when `text` is no ISO 8601 date-time (raises OverflowError for one out of range)."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _served(row: Mapping[str, Any], row_id: str) -> dict[str, Any]:
    """The Served fields by name, checked."""
    via = row.get("via")
    if via is None:
        via = ["self"] if _is_posted(row) else []
    rev = row.get("rev")
    if rev is not None and (isinstance(rev, bool) or not isinstance(rev, int)):
        fail_row(row_id, f"the served rev must be an integer, got {type_name(rev)}")
    author, created_at, updated_at = row.get("author_kind"), row.get("created_at"), row.get("updated_at")
    created = _timestamp(created_at, "created_at", row_id)  # one datetime when both times are the same
    return {
        "rev": rev,
        "kid": row.get("kid"),
        "via": shared.strings(string_list(via, "via", row_id)),  # "self", "all", "category:food": few values
        "mine": bool(row.get("mine", _is_posted(row))),
        "author_kind": shared.few(author) if type(author) is str else author,
        "created_at": created,
        "updated_at": created if _same(updated_at, created_at) else _timestamp(updated_at, "updated_at", row_id),
    }


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def served_fields(row: Mapping[str, Any]) -> SimpleNamespace:
    """The served fields of a row (rev, kid, via, mine, author, timestamps), checked as a read
    checks them: what a model keeps next to its plaintext, as attributes (`vars()` gives them by
    name). Raises UnreadableRow."""
    return SimpleNamespace(**_served(row, row_id_of(row)))


def _is_posted(row: Mapping[str, Any]) -> bool:
    """A row as new_memory_row built it (self_wrap, no wrapped_key): ours, readable offline."""
    return "wrapped_key" not in row and "self_wrap" in row


def row_id_of(row: Any) -> str:
    if not isinstance(row, Mapping):
        raise UnreadableRow(None, f"a served row is a JSON object, got {type_name(row)}")
    rid = row.get("id")
    if not isinstance(rid, str) or not rid:
        raise UnreadableRow(None, "the served row has no id")
    return rid


def _row_key(
    row: Mapping[str, Any],
    row_id: str,
    agent_key: AgentKey,
    trace: Trace | None,
    key_cache: MutableMapping[str, bytes] | None,
) -> bytes:
    """Unwrap the row's key with this connection's private key and check it against `kid`."""
    t = tracer(trace)
    kid = row.get("kid")
    if not isinstance(kid, str):
        fail_row(row_id, "the served row has no kid")
    if key_cache is not None and kid in key_cache:
        with t.step("key cache", inputs=lambda: {"kid": kid}) as s:
            s.output = f"kid {kid} was unwrapped and checked on an earlier read: no RSA work"
        return key_cache[kid]
    wrapped = row.get("wrapped_key") if "wrapped_key" in row else row.get("self_wrap")
    if not isinstance(wrapped, (str, bytes)) or not wrapped:
        fail_row(row_id, "the served row carries no wrapped_key for this connection")
    try:
        key = sealing.unwrap_as_agent(wrapped, agent_key, trace=trace)
    except (DecoyError, ValueError) as exc:
        raise UnreadableRow(row_id, f"this connection's key does not open wrapped_key: {exc}") from exc
    with t.step("kid check", inputs=lambda: {"served kid": kid}) as s:
        got = wire.kid(key)
        s.output = got
        if got != kid:
            fail_row(
                row_id,
                f"kid check failed: the row says {kid} but the unwrapped key's kid is {got}; "
                "the wrap and the ciphertext do not belong to the same key",
            )
    if key_cache is not None:
        key_cache[kid] = key
    return key


def open_served_row(
    row: Mapping[str, Any], agent_key: AgentKey, trace: Trace | None, key_cache: MutableMapping[str, bytes] | None
) -> tuple[str, bytes, Plain]:
    row_id = row_id_of(row)
    blob = row.get("ciphertext")
    if not isinstance(blob, (str, bytes)) or not blob:
        fail_row(row_id, "the served row has no ciphertext")
    size = len(blob) if isinstance(blob, bytes) else len(blob) // 4 * 3 - (len(blob) - len(blob.rstrip("=")))
    if size > MAX_CIPHERTEXT:  # checked before any RSA work: the API never stores such a row
        fail_row(
            row_id,
            f"the ciphertext decodes to {size:,} bytes, over the 100 KiB ({MAX_CIPHERTEXT:,}-byte) "
            "maximum: no row this large was stored through the API",
        )
    key = _row_key(row, row_id, agent_key, trace, key_cache)
    try:
        obj = sealing.open_json(key, blob, trace=trace, row_id=row_id)
    except UnreadableRow:
        raise
    except (DecoyError, ValueError) as exc:
        raise UnreadableRow(row_id, f"the ciphertext does not open under its key: {exc}") from exc
    return row_id, key, decode_plaintext(obj, row_id, trace=trace)


def _model(plain: Plain, common: dict[str, Any]) -> Row | None:
    """`common`: the Served fields by name, passed on to whichever model the row is."""
    if plain.kind == "memory":
        if len(plain.about) != 1:  # "Exactly one `about` value per memory: the user, one account or one topic"
            fail_row(
                plain.row_id,
                f"the memory names {len(plain.about)} about values; the contract says exactly one "
                "(the user, one account or one topic), so whom it is about cannot be told",
            )
        about, name = shared.few(plain.about_label), shared.few(plain.entity_name)
        topic = shared.topic(about, name or "") if about.startswith("topic:") else None
        return Memory(
            plain.row_id,
            plain.text or "",
            about,
            name,
            topic,
            plain.account_id,
            shared.strings(plain.categories),
            dict(plain.metadata) if plain.metadata else shared.EMPTY,
            about_hint=shared.few(plain.about_hint),
            **common,
        )
    if plain.kind == "topic":
        return TopicEntity(plain.row_id, plain.topic_id or "", plain.name or "", plain.entity_type or "", **common)
    if plain.kind == "link":
        return Link(
            plain.row_id,
            plain.relation_from or "",
            plain.relation_to or "",
            plain.relation_type or "",
            list(plain.endpoints),
            **common,
        )
    return None


def read_row(
    row: Mapping[str, Any],
    agent_key: AgentKey,
    *,
    trace: Trace | None = None,
    key_cache: MutableMapping[str, bytes] | None = None,
) -> Row | None:
    """Read any served row: a Memory, a TopicEntity or a Link (None for a row of another kind).

    Steps: unwrap `wrapped_key`, kid check, open `ciphertext`, bind check (`v` == 2 and
    `row_id` == id), field types. Raises UnreadableRow with the reason in words. A blob may be
    its base64 text, as served, or the bytes that text stands for (a row a vault kept compact).
    """
    if trace is not None:
        _claim(trace, row, agent_key)
    row_id, _key, plain = open_served_row(row, agent_key, trace, key_cache)
    return _model(plain, _served(row, row_id))


def _claim(trace: Trace, row: Mapping[str, Any], agent_key: AgentKey) -> None:
    """Record the row's blobs on the trace, so a view can read the row again with edited bytes."""
    names = [n for n in ("wrapped_key", "self_wrap", "ciphertext") if isinstance(row.get(n), str)]
    try:
        inputs = {n: wire.b64decode(row[n], field=n) for n in names}
    except DecoyError:
        return  # bytes that do not decode cannot be edited byte by byte; the read says why

    def run(edited: dict[str, bytes]) -> Trace:
        again = {**row, **{n: wire.b64encode(b) for n, b in edited.items()}}
        return run_recipe(trace.title, lambda t: read_row(again, agent_key, trace=t))

    params = {"row_id": row.get("id"), "kid": row.get("kid")}
    trace.claim(Source("read_row", run, inputs=inputs, params=params, secrets={"private_key": agent_key}))


read_graph_row = read_row


def read_memory_row(
    row: Mapping[str, Any],
    agent_key: AgentKey,
    *,
    trace: Trace | None = None,
    key_cache: MutableMapping[str, bytes] | None = None,
) -> Memory | None:
    """Read one served memory. None for a graph row (topic or link): None never means unreadable."""
    out = read_row(row, agent_key, trace=trace, key_cache=key_cache)
    return out if isinstance(out, Memory) else None


STREAM_CHUNK = 16  # rows per pool task while rows are still arriving: small, so reading starts early


def read_rows(
    rows: Iterable[Any],
    agent_key: AgentKey,
    *,
    key_cache: MutableMapping[str, bytes] | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    then: Callable[[Mapping[str, Any], Any], Any] | None = None,
    parse: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """Read every row, in served order: a model, None (another kind) or the UnreadableRow it raised.

    Runs on a thread pool over all cores (the RSA unwrap releases the GIL); `workers=1` is serial.
    `rows` may be a list or rows still arriving (an iterator over a streamed answer): each chunk
    goes to the pool as soon as it is complete, so reading overlaps receiving.
    A row may come as its JSON text (as the stream reader cut it out), or as anything `parse`
    makes the row of (a vault gives each row's index in what it keeps): it is parsed in the
    worker, so the rows waiting for one hold only that, never a dict each — RSA is ~1 ms a row and
    the answer arrives far faster, so nearly all rows wait at once.
    `progress(1, total)` is called after each row, from the worker threads; `total` counts the
    rows known so far. `then(row, result)`, when given, runs in the workers too (so its Python
    work overlaps other rows' RSA work) and its value takes the result's place.
    """
    cache = key_cache if key_cache is not None else KeyCache()
    streamed = not isinstance(rows, Sized)
    known = [len(rows) if isinstance(rows, Sized) else 0]  # rows received so far

    def one(row: Any) -> Any:
        if parse is not None:
            row = parse(row)
        elif type(row) is str or type(row) is bytes:
            row = orjson.loads(row)
        try:
            result: Any = read_row(row, agent_key, key_cache=cache)
        except UnreadableRow as exc:
            result = exc
        if then is not None:
            result = then(row, result)
        if progress is not None:
            progress(1, known[0])
        return result

    def chunk_of(chunk: list[Any]) -> list[Any]:
        return [one(r) for r in chunk]

    n = workers if workers is not None else (os.cpu_count() or 1)
    with gc_paused():  # one model per row, none in a cycle: collector scans would only cost time
        if n <= 1:
            out = []
            for r in rows:
                if streamed:
                    known[0] += 1
                out.append(one(r))
            return out
        # Chunks, not one task per row: a task costs a few µs of GIL-held bookkeeping, a row ~40 µs.
        size = STREAM_CHUNK if streamed else max(1, min(64, known[0] // (n * 4)))
        with ThreadPoolExecutor(max_workers=n) as pool:
            futures, chunk = [], []
            for r in rows:
                if streamed:
                    known[0] += 1
                chunk.append(r)
                if len(chunk) == size:
                    futures.append(pool.submit(chunk_of, chunk))
                    chunk = []
            if chunk:
                futures.append(pool.submit(chunk_of, chunk))
            return [r for f in futures for r in f.result()]


@dataclass
class Summary:
    """Counts of one GET answer; print `text` first."""

    memories: int
    topics: int
    links: int
    unreadable: int
    other: int
    unreadable_ids: list[str]
    text: str
    unreadable_reasons: dict[str, str] = field(default_factory=dict)


def summarize(results: Sequence[Row | UnreadableRow | None]) -> Summary:
    """A Summary of results from read_rows."""
    mem = sum(isinstance(r, Memory) for r in results)
    top = sum(isinstance(r, TopicEntity) for r in results)
    lnk = sum(isinstance(r, Link) for r in results)
    bad = [r for r in results if isinstance(r, UnreadableRow)]
    other = len(results) - mem - top - lnk - len(bad)
    text = ", ".join(
        [
            plural(mem, "memory", "memories"),
            plural(top, "topic"),
            plural(lnk, "link"),
            f"{len(bad)} unreadable",
        ]
    )
    if other:
        text += f", {other} other"
    return Summary(
        mem, top, lnk, len(bad), other, [str(b.row_id) for b in bad], text, {str(b.row_id): b.reason for b in bad}
    )


def summarize_rows(
    rows: Sequence[Mapping[str, Any]],
    agent_key: AgentKey,
    *,
    key_cache: MutableMapping[str, bytes] | None = None,
    workers: int | None = None,
) -> Summary:
    """`Summary(memories, topics, links, unreadable, other, unreadable_ids, text)` of a GET answer."""
    return summarize(read_rows(rows, agent_key, key_cache=key_cache, workers=workers))
