"""Per-memory store routes: memory-grantees, memories GET/POST/PUT, delete, memory-wraps, public-key.

The server never decrypts, so every rule here is decided on what it can see: ids, key ids,
revisions, the layouts of the blobs, who wrote a row, which token holds which wrap and for
which `via` reasons, and each connection's live grants. Where the spec states a rule it is
enforced, so a client that breaks it is refused here as it would be by Decoy.

Choices where the spec is silent or loose (documented, and read by the tests):
- `self` is a live reason for the author connection while it holds `memory.save` ("what it
  saved is its own to read and edit while it holds it"). A row's own wrap is kept for exactly
  the `self_via` reasons the saver holds (decoy_lab.memory sends `["self", …]`; with none it keeps no
  wrap, and the owner's phone shares it back later); without `self_via`, for `self` and the
  server-visible reasons it holds.
- The author counts as a writer of its own memory's labels (it "changes text, categories or
  topic"), so it may share into and remove them with `memory-wraps` and a rotation.
- A rotation by anyone but the author is 403 AUTHOR_ONLY (nothing to ask for): the memory
  contract says "agent-initiated rotation is author-only", where the PUT operation names only
  `memory.edit`. memory-wraps follows its operation ("Needs `memory.edit` on the memory", each
  wrap kept only for a reason the caller writes), where the contract's table says "author only":
  the operation's write limit is the narrower, checkable rule, so a non-author writer may share
  into exactly the places it can write, and nowhere else.
- Unknown keys that do not look like plaintext are ignored; plaintext-looking keys anywhere
  are 400 PLAINTEXT_REJECTED. Every row of a POST is validated before any row is written.
- Delete: the author (any time), or `memory.delete` on a reason it reads the memory through.
- Its author's PUT or memory-wraps after `memory.save` ended is 403 GRANT_EXPIRED with the
  `permission_request` (INSUFFICIENT_GRANT when the grant was revoked): "After it ends, calls
  answer `403 GRANT_EXPIRED` with `permission_request`"; the memory is its own, so no 404.
- `removed_reasons` holds labels only (`category:`, `topic:`, `account:`): `all`, `self` and an
  `and:` reason are not labels, no edit removes them, so naming one is 400 and a holder reading
  by one is always owed a wrap of the new key (409 HOLDERS_MISSING otherwise).
- A PUT whose `kid` is absent or unchanged is a plain edit: any `owner_wrap`, `self_wrap` or
  `grantee_wraps` in it are ignored (new wraps for an unchanged key go to `memory-wraps`).
- A reason is live only if the stored wrap records it and a live grant still holds it; a new
  grant reaches a row once the owner's phone records that reason (meanwhile: `preparing`).
- Wraps are kept per recipient token and the recipient key they were made for: after a
  reconnect with a new key the old wraps are never served.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import crypto, wire
from ..errors import WireFormatError
from ..gcpause import gc_paused
from ..vocab import MAX_CIPHERTEXT
from . import auth, readcache
from . import memstore as ms
from .faults import faulty

MAX_ROWS = 200
MAX_WRAPS = 100
MAX_DELETE = 500
KID_RE = re.compile(r"^[0-9a-f]{16}$")

# Keys that only plaintext would carry. Any of them anywhere in a body is refused.
PLAINTEXT_KEYS = frozenset(
    k.lower()
    for k in (
        "text",
        "content",
        "categories",
        "category",
        "name",
        "label",
        "labels",
        "value",
        "values",
        "observation",
        "observations",
        "entity",
        "entities",
        "entityName",
        "entity_name",
        "entityType",
        "relation",
        "relations",
        "relationType",
        "about",
        "about_hint",
        "topic",
        "topic_name",
        "topic_type",
        "account_name",
        "metadata",
        "plaintext",
        "title",
        "summary",
        "memory",
        "note",
        "notes",
        "fact",
        "facts",
        "description",
        "body",
        "message",
        # labels and account names ("Categories/topics/account labels stay encrypted"; "Never put
        # `text`, `categories` or account names in the HTTP body outside ciphertext") and credentials
        # ("Keep credentials out of this memory store")
        "topics",
        "topic_id",
        "topic_ids",
        "relation_type",
        "entity_type",
        "datatypes",
        "tags",
        "tag",
        "keywords",
        "account",
        "accounts",
        "account_names",
        "service_name",
        "service",
        "username",
        "password",
        "secret",
        "email",
        "domain",
        "site",
    )
)


# ── plumbing shared with spaces.py and sync.py ─────────────────────────────────────────────


def problem(status: int, code: str, message: str, **extra: Any) -> Exception:
    """The app's HTTPProblem (imported late: app.py imports this module for its routes)."""
    from .app import HTTPProblem

    return HTTPProblem(status, code, message, **extra)


def bad_request(code: str, message: str, field: str | None = None, **extra: Any) -> Exception:
    if field is not None:
        extra["field"] = field
    return problem(400, code, message, **extra)


def state_of(request: Request) -> Any:
    return request.app.state.sb


def now_of(state: Any) -> float:
    return float(state.clock())


async def agent_of(request: Request) -> Any:
    agent = auth.agent_from_request(request)
    if inspect.isawaitable(agent):
        agent = await agent
    return agent


async def json_body(request: Request) -> dict:
    """The JSON object body, with plaintext-looking keys refused wherever they appear."""
    raw = await request.body()
    try:
        body = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request("INVALID_JSON", f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise bad_request("INVALID_JSON", "the body must be a JSON object")
    reject_plaintext(body)
    return body


def reject_plaintext(obj: Any, path: str = "") -> None:
    """400 PLAINTEXT_REJECTED when a key that only plaintext would carry appears anywhere."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            where = f"{path}.{k}" if path else str(k)
            if str(k).lower() in PLAINTEXT_KEYS:
                raise bad_request(
                    "PLAINTEXT_REJECTED",
                    f"{where!r} looks like plaintext: text, labels and names travel only inside "
                    "the ciphertext (the server never sees them)",
                    field=where,
                )
            reject_plaintext(v, where)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            reject_plaintext(v, f"{path}[{i}]")


def b64(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise bad_request("INVALID_BASE64", f"{field} must be a standard padded base64 string", field)
    try:
        return wire.b64decode(value, field=field)
    except WireFormatError as exc:
        raise bad_request("INVALID_BASE64", str(exc), field, offset=exc.offset) from None


@functools.lru_cache(maxsize=256)
def rsa_bytes(public_key_b64: str) -> int:
    """Size in bytes of an RSA-OAEP output under this public key (256 for RSA-2048)."""
    return (crypto.load_public_key(public_key_b64).key_size + 7) // 8


def envelope(value: Any, field: str, kind: str, recipient_key: str | None) -> str:
    """Check a wrap's layout ("agent_envelope" or "owner_envelope") and, when the recipient is
    known, that its wrapped key is one RSA block of that recipient's key size."""
    data = b64(value, field)
    try:
        layout = wire.parse(data, kind)
    except WireFormatError as exc:
        what = (
            "an owner ENVELOPE ([0x01][0x02] + envelope)"
            if kind == "owner_envelope"
            else "a headerless agent envelope ([2-byte key length][RSA-OAEP key][12-byte IV][ciphertext][16-byte tag])"
        )
        raise bad_request("INVALID_WRAP", f"{field} is not {what}: {exc}", field, offset=exc.offset) from None
    if recipient_key:
        want = rsa_bytes(recipient_key)
        got = len(layout.value("wrapped_key"))
        if got != want:
            hint = (
                " (it starts 01 02: an owner envelope where a headerless one belongs?)"
                if kind == "agent_envelope" and data[:2] == b"\x01\x02"
                else ""
            )
            raise bad_request(
                "INVALID_WRAP",
                f"{field}: wrapped_key is {got} bytes, but an RSA-OAEP wrap to the recipient's key is {want}{hint}",
                field,
            )
    return value


def vault_blob(value: Any, field: str) -> str:
    data = b64(value, field)
    if len(data) > MAX_CIPHERTEXT:
        raise problem(
            400,
            "CIPHERTEXT_TOO_LARGE",
            f"{field} decodes to {len(data)} bytes; the maximum is {MAX_CIPHERTEXT} (100 KiB)",
            field=field,
        )
    try:
        wire.parse(data, "vault")
    except WireFormatError as exc:
        if _looks_like_json(data):
            raise bad_request(
                "PLAINTEXT_REJECTED",
                f"{field} is base64 of plaintext JSON, not a VAULT SealedBlob: seal it under the memory key first",
                field,
            ) from None
        raise bad_request(
            "INVALID_CIPHERTEXT", f"{field} is not a VAULT SealedBlob: {exc}", field, offset=exc.offset
        ) from None
    return value


def _looks_like_json(data: bytes) -> bool:
    if data[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def uuid_text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise bad_request("INVALID_ID", f"{field} must be a UUID string", field)
    try:
        canon = str(uuid.UUID(value))
    except ValueError:
        raise bad_request("INVALID_ID", f"{field} {value!r} is not a UUID", field) from None
    if canon != value:
        raise bad_request("INVALID_ID", f"{field} must be the lowercase hyphenated UUID form ({canon})", field)
    return value


def edit_fields(body: dict) -> tuple[str, int, str]:
    """The fields every PUT of a sealed row carries: (id, expected_rev, ciphertext), checked."""
    for k in ("id", "expected_rev", "ciphertext"):
        if body.get(k) is None:
            raise bad_request("INVALID_REQUEST", f"{k} is required", k)
    rev = body["expected_rev"]
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 1:
        raise bad_request("INVALID_REQUEST", "expected_rev must be an integer ≥ 1", "expected_rev")
    return uuid_text(body["id"], "id"), rev, vault_blob(body["ciphertext"], "ciphertext")


def delete_ids(body: dict) -> list[str]:
    """The `ids` of a delete body: a non-empty array of at most MAX_DELETE uuids."""
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids:
        raise bad_request("INVALID_REQUEST", "ids must be a non-empty array", "ids")
    if len(ids) > MAX_DELETE:
        raise bad_request("TOO_MANY_IDS", f"{len(ids)} ids; at most {MAX_DELETE}", "ids")
    return [uuid_text(v, f"ids[{i}]") for i, v in enumerate(ids)]


def kid_text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not KID_RE.match(value):
        raise bad_request(
            "INVALID_KID", f"{field} must be 16 lowercase hex characters (first 8 bytes of SHA-256 of the key)", field
        )
    return value


def str_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad_request("INVALID_REQUEST", f"{field} must be an array of strings", field)
    return list(dict.fromkeys(value))


def selection_for(permission: str, reason: str | None) -> tuple[str, dict | None]:
    """The permission and the one selection that grant `permission` on access reason `reason`."""
    if reason and reason.startswith("category:"):
        return permission, {"datatypes": [reason.split(":", 1)[1]]}
    if reason and reason.startswith("topic:"):
        return permission, {"about": [reason]}
    if reason and reason.startswith("account:"):
        return permission.replace("memory.", "acctmem."), {"account_id": reason.split(":", 1)[1]}
    return permission, None


def insufficient(
    permission: str,
    message: str,
    reason: str | None = None,
    *,
    con: Any = None,
    agent: Any = None,
    now: float | None = None,
) -> Exception:
    """403 INSUFFICIENT_GRANT with the `permission_request` body that would fix it (grants.py);
    403 GRANT_EXPIRED instead when a grant that ended would have allowed it (given con/agent/now)."""
    from . import grants

    name, selection = selection_for(permission, reason)
    try:
        grants.permission_request(name, selection)
    except grants.RequestError:
        name, selection = permission, None
    if con is not None and agent is not None and now is not None:
        exc = grants.refusal(con, agent.token_id, now, name, selection, message=message)
    else:
        exc = grants.insufficient(name, selection, message=message)
    exc.extra.setdefault("remediation", {"tool": "request_access", "args": exc.extra.get("permission_request")})
    return exc


def permission_request(permission: str, reason: str | None = None) -> dict:
    """The grant-request body for `permission` scoped to one access reason (one selection)."""
    from . import grants

    name, selection = selection_for(permission, reason)
    try:
        return grants.permission_request(name, selection)
    except grants.RequestError:
        return grants.permission_request(permission)


# ── access reasons ─────────────────────────────────────────────────────────────────────────


def is_author(agent: Any, row: ms.MemoryRow) -> bool:
    return row.author_kind == "agent" and row.author_connection == agent.connection_id


def holds(agent: Any, reason: str, row: ms.MemoryRow) -> bool:
    """Does the agent hold this read reason on this row now? `self` = its author with memory.save."""
    if reason == "self":
        return is_author(agent, row) and bool(agent.access.save)
    return bool(agent.access.read.allows_via(reason))


def writes(agent: Any, reason: str, row: ms.MemoryRow) -> bool:
    """May the agent write (label with, share into, remove) this reason on this row?"""
    if is_author(agent, row) and agent.access.save:
        return True
    return reason != "self" and bool(agent.access.write.allows_via(reason))


def usable_wrap(wrap: ms.Wrap | None, row: ms.MemoryRow, agent: Any) -> ms.Wrap | None:
    """The wrap only if it is of the row's current key and for the agent's current public key."""
    if wrap is None or wrap.kid != row.kid or wrap.key_fp != ms.key_fp(agent.public_key):
        return None
    return wrap


def live_via(agent: Any, row: ms.MemoryRow, wrap: ms.Wrap | None) -> list[str]:
    """The wrap's reasons rechecked against live grants ("rechecks reasons … on every read").
    A reason the wrap does not record is not added: a new grant reaches the row once the owner's
    phone records it (until then the row is `preparing`)."""
    if wrap is None:
        return []
    return [v for v in wrap.via if holds(agent, v, row)]


def owed_reason(agent: Any, row: ms.MemoryRow) -> str | None:
    """A reason the server can see that the agent should hold a key to this row: `self`, `all`,
    or a granted topic's own entity row. Labels inside ciphertext are invisible here."""
    if holds(agent, "self", row):
        return "self"
    if agent.access.read.all:
        return "all"
    if agent.access.read.allows_via(f"topic:{row.id}"):
        return f"topic:{row.id}"
    return None


def memory_reasons(wraps: Iterable[ms.Wrap], row: ms.MemoryRow) -> set[str]:
    """The reasons the memory already has: every non-self reason on a wrap of its current key."""
    return {v for w in wraps if w.kid == row.kid for v in w.via if v != "self"}


LABEL_PREFIXES = ("category:", "topic:", "account:")


def is_label(reason: str) -> bool:
    """A reason an edit can remove: a category, a topic or an account (never `all`, `self` or `and:`)."""
    return reason.startswith(LABEL_PREFIXES)


def can_edit(agent: Any, row: ms.MemoryRow, via: list[str]) -> bool:
    """memory.edit on a reason it reads the memory through, or its own memory while it holds save."""
    if is_author(agent, row) and agent.access.save:
        return True
    return any(v != "self" and agent.access.write.allows_via(v) for v in via)


def can_delete(agent: Any, row: ms.MemoryRow, via: list[str]) -> bool:
    if is_author(agent, row):
        return True
    return any(v != "self" and agent.access.delete.allows_via(v) for v in via)


@dataclass
class Reach:
    """What one agent can do with one row right now."""

    row: ms.MemoryRow
    wrap: ms.Wrap | None  # usable wrap, if any
    via: list[str] = field(default_factory=list)  # live reasons on the usable wrap

    @property
    def readable(self) -> bool:
        return self.wrap is not None and bool(self.via)


def reach(con: Any, agent: Any, row: ms.MemoryRow) -> Reach:
    wrap = usable_wrap(ms.get_wrap(con, row.id, agent.token_id), row, agent)
    return Reach(row, wrap, live_via(agent, row, wrap))


def live_agents(con: Any, now: float) -> dict[str, Any]:
    return {a.token_id: a for a in auth.live_agents(con, now)}


def visible_or_404(con: Any, agent: Any, row_id: str, now: float | None = None) -> Reach:
    """The row as this agent reaches it; 404 for a missing id and for one it cannot see alike.
    Its own memory after `memory.save` ended (or was taken away) is no secret to its author: 403
    GRANT_EXPIRED (or INSUFFICIENT_GRANT) with the `permission_request` that gives it back."""
    row = ms.get_memory(con, row_id)
    if row is not None:
        r = reach(con, agent, row)
        if r.readable or (is_author(agent, row) and agent.access.save):
            return r
        if is_author(agent, row):
            raise insufficient(
                "memory.save",
                "this connection saved this memory, but it no longer holds "
                '"Save memories", which makes what it saved its own to read and edit',
                con=con,
                agent=agent,
                now=now,
            )
    raise problem(404, "NOT_FOUND", "no memory with this id is visible to this connection")


# ── wraps from a body ──────────────────────────────────────────────────────────────────────


@dataclass
class WrapIn:
    token_id: str
    via: list[str]
    wrapped_key: str


def parse_wraps(value: Any, field: str, agents: dict[str, Any]) -> list[WrapIn]:
    """Shape-check grantee wraps. Layout is checked against the recipient's key when it is live."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("INVALID_REQUEST", f"{field} must be an array", field)
    if len(value) > MAX_WRAPS:
        raise bad_request("TOO_MANY_WRAPS", f"{field} holds {len(value)} wraps; at most {MAX_WRAPS}", field)
    out = []
    for i, w in enumerate(value):
        f = f"{field}[{i}]"
        if not isinstance(w, dict):
            raise bad_request("INVALID_REQUEST", f"{f} must be an object", f)
        for k in ("token_id", "via", "wrapped_key"):
            if k not in w:
                raise bad_request("INVALID_REQUEST", f"{f}.{k} is required", f"{f}.{k}")
        if not isinstance(w["token_id"], str):
            raise bad_request("INVALID_REQUEST", f"{f}.token_id must be a string", f"{f}.token_id")
        via = str_list(w["via"], f"{f}.via")
        recipient = agents.get(w["token_id"])
        envelope(
            w["wrapped_key"],
            f"{f}.wrapped_key",
            "agent_envelope",
            recipient.public_key if recipient is not None else None,
        )
        out.append(WrapIn(w["token_id"], via, w["wrapped_key"]))
    return out


def admit(
    w: WrapIn,
    caller: Any,
    agents: dict[str, Any],
    row: ms.MemoryRow,
    *,
    check_write: bool,
    existing: set[str] = frozenset(),
    removed: set[str] = frozenset(),
) -> list[str]:
    """The reasons a grantee wrap is kept for: ones its recipient holds now (never `self`, never
    for the caller itself), minus removed labels, and with `check_write` only ones the caller
    writes, the memory already has, or `all`."""
    recipient = agents.get(w.token_id)
    if recipient is None or recipient.token_id == caller.token_id:
        return []
    out = []
    for v in w.via:
        if v == "self" or v in removed or not recipient.access.read.allows_via(v):
            continue
        if check_write and not (v == "all" or v in existing or writes(caller, v, row)):
            continue
        out.append(v)
    return out


def self_reasons(agent: Any, row: ms.MemoryRow, self_via: list[str] | None, extra: Iterable[str]) -> list[str]:
    """The reasons the saver's own wrap is kept for. With `self_via`: exactly those it holds
    ("its own wrap is kept for these only, and with none it keeps no wrap"); without it: `self`
    (its own memory while it holds save) and the reasons the server can see it holds — every
    memory, the row's own topic, and the reasons on its admitted grantee wraps."""
    if self_via is not None:
        return [v for v in dict.fromkeys(self_via) if holds(agent, v, row)]
    out = ["self"] if holds(agent, "self", row) else []
    for v in (["all"] if agent.access.read.all else []) + [f"topic:{row.id}"] + list(extra):
        if v != "self" and v not in out and agent.access.read.allows_via(v):
            out.append(v)
    return out


def rotated_self_reasons(agent: Any, row: ms.MemoryRow, reads_by: list[str], self_via: list[str] | None) -> list[str]:
    """A rotation: "The caller's own wrap keeps the reasons it reads the memory by, plus any in
    `self_via` it holds"."""
    out = ["self"] if holds(agent, "self", row) else []
    for v in list(reads_by) + list(self_via or []):
        if v not in out and holds(agent, v, row):
            out.append(v)
    return out


def store_wrap(con: Any, row: ms.MemoryRow, agent: Any, wrapped_key: str, via: list[str], now: float) -> None:
    ms.put_wrap(con, ms.Wrap(row.id, agent.token_id, ms.key_fp(agent.public_key), row.kid, wrapped_key, via, now))


# ── routes ──────────────────────────────────────────────────────────────────────────────────


def owner_public_key(state: Any) -> str | None:
    owner = getattr(state, "owner", None)
    return getattr(owner, "public_key_b64", None) if owner is not None else None


async def public_key(request: Request) -> JSONResponse:
    """GET /api/agent/public-key — the owner's RSA public key (sealing material, no grant needed)."""
    await agent_of(request)
    pk = owner_public_key(state_of(request))
    if not pk:
        raise problem(404, "no_public_key", "this account has not completed key setup on a device yet")
    return JSONResponse({"public_key": pk})


async def memory_grantees(request: Request) -> JSONResponse:
    """GET memory-grantees — owner key, this connection's reach, and eligible live connections."""
    state = state_of(request)
    agent = await agent_of(request)
    now = now_of(state)
    with state.store.tx() as con:
        agents = auth.live_agents(con, now)
    grantees = [
        {
            "token_id": a.token_id,
            "public_key": a.public_key,
            "connection_id": a.connection_id,
            "selectors": a.access.read.as_json(),
        }
        for a in agents
        if a.token_id != agent.token_id and a.public_key and not a.access.read.is_empty()
    ]
    return JSONResponse(
        {
            "owner_public_key": owner_public_key(state),
            "self": {
                "token_id": agent.token_id,
                "selectors": agent.access.read.as_json(),
                "write_selectors": agent.access.write.as_json(),
            },
            "grantees": grantees,
        }
    )


def served_row(r: Reach, agent: Any) -> dict:
    row = r.row
    return {
        "id": row.id,
        "kid": row.kid,
        "rev": row.rev,
        "ciphertext": row.ciphertext,
        "wrapped_key": r.wrap.wrapped_key if r.wrap else None,
        "via": r.via,
        "mine": is_author(agent, row),
        "author_kind": row.author_kind,
        "created_at": ms.iso(row.created_at),
        "updated_at": ms.iso(row.updated_at),
    }


STREAM_ROWS = 256  # rows per chunk of a large answer: the client starts opening them meanwhile


def readable(con: Any, agent: Any) -> tuple[list[Reach], list, dict[str, ms.Wrap]]:
    """Every row this connection may open now, the rows owed to it that it cannot open yet
    ((row, why) pairs), and its wraps: one snapshot, read in the caller's transaction."""
    wraps = ms.wraps_for_token(con, agent.token_id)
    served, waiting = [], []
    for row in ms.all_memories(con):
        r = Reach(row, usable_wrap(wraps.get(row.id), row, agent))
        r.via = live_via(agent, row, r.wrap)
        if r.readable:
            served.append(r)
        else:
            why = owed_reason(agent, row)
            if why is not None:
                waiting.append((row, why))
    return served, waiting, wraps


def encode(obj: Any) -> bytes:
    """JSON as the API sends it (compact UTF-8, what JSONResponse writes)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def list_memories(request: Request) -> Response:
    """GET memories — every row this connection may open now, plus the preparing/failed report.

    Rows, wraps and the report come from one transaction. The array is kept (readcache) until a
    row, a wrap or this connection's access changes, and an unchanged read sends it again; a
    large array is encoded and sent a chunk at a time (10,000 rows are 13 MB: the client opens
    the first ones meanwhile). The report is always worked out afresh: it follows the clock."""
    from . import sharing

    state = state_of(request)
    agent = await agent_of(request)
    now = now_of(state)
    if not agent.public_key:  # nothing can ever be wrapped to a keyless connection: nothing is owed
        return JSONResponse({"memories": []})
    sharing.maybe_share_on_read(state, now)
    cache = readcache.of(state)
    with gc_paused(), state.store.tx() as con:  # one row object per stored row: no cycles to find
        stamp = readcache.stamp(con, agent)
        found = cache.get(agent.token_id, stamp)
        if found is None:
            served, waiting, wraps = readable(con, agent)
        else:
            waiting, wraps = found.waiting, found.wraps
        report = sharing.report(con, agent, waiting, wraps, now)
    if waiting and "failed_others" not in report:
        # the first read that finds something owed asks the phone at once; after `failed` only the
        # once-a-day read that asks again (it answers `preparing`) does: "stopped asking on its own"
        sharing.nudge(state, now)
    elif report.get("failed_unknown"):
        sharing.ask_for_unknown(state, now)
    elif report.get("preparing_unknown"):
        sharing.ask_for_preparing_unknown(state, agent, now)
    tail = b"," + encode(report)[1:] if report else b"}"
    if found is not None:
        return Response(b'{"memories":' + found.memories_json + tail, media_type="application/json")

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(served), STREAM_ROWS):
            yield encode([served_row(r, agent) for r in served[start : start + STREAM_ROWS]])[1:-1]

    def keep(parts: list[bytes]) -> bytes:
        array = b"[" + b",".join(parts) + b"]"
        cache.put(agent.token_id, readcache.Listing(stamp, array, waiting, wraps))
        return array

    if len(served) <= STREAM_ROWS:
        return Response(b'{"memories":' + keep(list(chunks())) + tail, media_type="application/json")

    async def streamed() -> AsyncIterator[bytes]:  # on the event loop: no thread hop per chunk
        parts: list[bytes] = []
        yield b'{"memories":['
        for part in chunks():
            yield b"," + part if parts else part
            parts.append(part)
        keep(parts)
        yield b"]" + tail

    return StreamingResponse(streamed(), media_type="application/json")


@dataclass
class RowIn:
    id: str
    kid: str
    ciphertext: str
    owner_wrap: str
    self_wrap: str
    self_via: list[str] | None
    grantee_wraps: list[WrapIn]


def parse_row(r: Any, i: int, agent: Any, owner_pk: str | None, agents: dict[str, Any]) -> RowIn:
    f = f"rows[{i}]"
    if not isinstance(r, dict):
        raise bad_request("INVALID_REQUEST", f"{f} must be an object", f)
    for k in ("id", "kid", "ciphertext", "owner_wrap", "self_wrap"):
        if r.get(k) is None:
            raise bad_request(
                "INVALID_REQUEST", f"{f}.{k} is required (owner and self wraps are both mandatory)", f"{f}.{k}"
            )
    return RowIn(
        id=uuid_text(r["id"], f"{f}.id"),
        kid=kid_text(r["kid"], f"{f}.kid"),
        ciphertext=vault_blob(r["ciphertext"], f"{f}.ciphertext"),
        owner_wrap=envelope(r["owner_wrap"], f"{f}.owner_wrap", "owner_envelope", owner_pk),
        self_wrap=envelope(r["self_wrap"], f"{f}.self_wrap", "agent_envelope", agent.public_key),
        self_via=str_list(r["self_via"], f"{f}.self_via") if r.get("self_via") is not None else None,
        grantee_wraps=parse_wraps(r.get("grantee_wraps"), f"{f}.grantee_wraps", agents),
    )


def save_permission_error(con: Any, agent: Any, now: float) -> Exception:
    """The spec's 403 for saving without memory.save (GRANT_EXPIRED when that grant ended)."""
    exc = insufficient(
        "memory.save",
        'Saving memories needs the "Save memories" permission — it adds to the '
        "memory store every connected agent reads.",
        con=con,
        agent=agent,
        now=now,
    )
    exc.extra.update(
        kind="memory",
        request_action="create",
        remediation={"tool": "request_access", "args": {"kind": "memory", "action": "create"}},
    )
    return exc


async def save_memories(request: Request) -> JSONResponse:
    """POST memories — each row lands with its wraps or not at all; the batch is not atomic."""
    from . import sharing

    state = state_of(request)
    agent = await agent_of(request)
    body = await json_body(request)
    rows = body.get("rows")
    if not isinstance(rows, list) or not rows:
        raise bad_request("INVALID_REQUEST", "rows must be a non-empty array", "rows")
    if len(rows) > MAX_ROWS:
        raise bad_request("TOO_MANY_ROWS", f"{len(rows)} rows; at most {MAX_ROWS} per request", "rows")
    if not agent.access.save:
        with state.store.tx() as con:
            raise save_permission_error(con, agent, now_of(state))
    owner_pk = owner_public_key(state)
    if not owner_pk:
        raise problem(409, "OWNER_KEY_MISSING", "the owner has not finished key setup in the app; save later")
    if not agent.public_key:
        raise problem(
            409,
            "AGENT_KEY_MISSING",
            "this connection registered no agent public key, so no self_wrap "
            "can be for it: pair again with agent_public_key",
        )
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
    parsed = [parse_row(r, i, agent, owner_pk, agents) for i, r in enumerate(rows)]
    created: list[str] = []
    existing: list[str] = []
    counts: dict[str, int] = {}
    for p in parsed:
        with state.store.tx() as con:  # one transaction per row: a row is atomic with its wraps
            row = ms.get_memory(con, p.id)
            if row is not None:
                existing.append(p.id)
                if is_author(agent, row) and row.kid == p.kid:
                    fill_missing(con, row, agent, agents, p, now)
                continue
            row = ms.MemoryRow(
                p.id, p.kid, 1, p.ciphertext, p.owner_wrap, "agent", agent.token_id, agent.connection_id, now, now, now
            )
            ms.insert_memory(con, row)
            n, reasons = put_grantee_wraps(con, row, agent, agents, p.grantee_wraps, now, check_write=False)
            own = self_reasons(agent, row, p.self_via, reasons)
            if own:  # "with none it keeps no wrap"
                store_wrap(con, row, agent, p.self_wrap, own, now)
            ms.log_change(con, "context_memory", row.id, "created", now)
            created.append(p.id)
            counts[p.id] = n
    sharing.note_write(state)
    return JSONResponse({"created": created, "existing": existing, "grantee_wraps": counts}, status_code=201)


def put_grantee_wraps(
    con: Any,
    row: ms.MemoryRow,
    caller: Any,
    agents: dict[str, Any],
    wraps: list[WrapIn],
    now: float,
    *,
    check_write: bool,
    existing: set[str] = frozenset(),
    removed: set[str] = frozenset(),
    only_missing: bool = False,
) -> tuple[int, set[str]]:
    """Store the admitted grantee wraps; returns (how many were stored, their reasons)."""
    n, reasons, seen = 0, set(), set()
    for w in wraps:
        if w.token_id in seen:
            continue
        seen.add(w.token_id)
        via = admit(w, caller, agents, row, check_write=check_write, existing=existing, removed=removed)
        if not via:
            continue
        recipient = agents[w.token_id]
        if only_missing and usable_wrap(ms.get_wrap(con, row.id, w.token_id), row, recipient):
            continue
        store_wrap(con, row, recipient, w.wrapped_key, via, now)
        n += 1
        reasons.update(via)
    return n, reasons


def fill_missing(con: Any, row: ms.MemoryRow, agent: Any, agents: dict[str, Any], p: RowIn, now: float) -> None:
    """The author's resend of the same id and key: fill in any wrap an earlier attempt missed."""
    _, reasons = put_grantee_wraps(con, row, agent, agents, p.grantee_wraps, now, check_write=False, only_missing=True)
    own = self_reasons(agent, row, p.self_via, reasons)
    if own and usable_wrap(ms.get_wrap(con, row.id, agent.token_id), row, agent) is None:
        store_wrap(con, row, agent, p.self_wrap, own, now)


async def edit_memory(request: Request) -> JSONResponse:
    """PUT memories — a new revision; with a new kid, a key rotation (author only)."""
    from . import sharing

    state = state_of(request)
    agent = await agent_of(request)
    body = await json_body(request)
    row_id, rev, ciphertext = edit_fields(body)
    new_kid = kid_text(body["kid"], "kid") if body.get("kid") is not None else None
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
        r = visible_or_404(con, agent, row_id, now)
        row = r.row
        if not can_edit(agent, row, r.via):
            raise insufficient(
                "memory.edit",
                "editing this memory needs memory.edit on a reason this connection reads it through",
                reason=r.via[0] if r.via else None,
                con=con,
                agent=agent,
                now=now,
            )
        if rev != row.rev:
            raise problem(
                409, "REV_CONFLICT", "the memory changed since it was read; re-read and re-apply", current_rev=row.rev
            )
        answer: dict[str, Any] = {"id": row.id}
        if new_kid is None or new_kid == row.kid:
            ms.update_memory(
                con, row.id, ciphertext=ciphertext, rev=row.rev + 1, now=now, editor_connection=agent.connection_id
            )
        else:
            answer.update(rotate(con, agent, agents, r, body, ciphertext, new_kid, now))
        ms.log_change(con, "context_memory", row.id, "updated", now)
        answer.update(rev=row.rev + 1, updated_at=ms.iso(now))
    sharing.note_write(state)
    return JSONResponse(answer)


def rotate(
    con: Any, agent: Any, agents: dict[str, Any], r: Reach, body: dict, ciphertext: str, new_kid: str, now: float
) -> dict:
    """A new key: owner and self wraps required, every current holder wrapped (or read only by a
    removed label), every wrap of the old key dropped — all in this one transaction."""
    row = r.row
    if not is_author(agent, row):
        raise problem(403, "AUTHOR_ONLY", "a key rotation (a new kid) is for the memory's author only")
    for k in ("owner_wrap", "self_wrap"):
        if body.get(k) is None:
            raise bad_request("INVALID_REQUEST", f"a new kid is a key rotation: {k} is required", k)
    owner_wrap = envelope(body["owner_wrap"], "owner_wrap", "owner_envelope", None)
    self_wrap = envelope(body["self_wrap"], "self_wrap", "agent_envelope", agent.public_key)
    self_via = str_list(body["self_via"], "self_via") if body.get("self_via") is not None else None
    removed_given = body.get("removed_reasons")
    removed: set[str] | None = set(str_list(removed_given, "removed_reasons")) if removed_given is not None else None
    for v in removed or ():
        if not is_label(v):
            raise bad_request(
                "INVALID_REQUEST",
                f"removed_reasons lists the labels an edit removes (category:…, "
                f"topic:…, account:…); {v!r} is not a label, so no edit removes it",
                "removed_reasons",
            )
        if not writes(agent, v, row):
            raise insufficient("memory.edit", f"removing the label {v!r} needs memory.edit on it", reason=v)
    wraps_in = parse_wraps(body.get("grantee_wraps"), "grantee_wraps", agents)
    old = ms.wraps_of(con, row.id)
    had = memory_reasons(old, row)
    dropped = removed or set()
    given = {
        w.token_id
        for w in wraps_in
        if admit(w, agent, agents, row, check_write=True, existing=had - dropped, removed=dropped)
    }
    missing = []
    for w in old:
        holder = agents.get(w.token_id)
        if holder is None or holder.token_id == agent.token_id or usable_wrap(w, row, holder) is None:
            continue
        via = [v for v in w.via if holds(holder, v, row)]
        if not via or w.token_id in given:
            continue
        # Without removed_reasons, only reasons the caller holds write on count as removed
        # (its write grants, not its authorship: a save-only author must name what it removes).
        gone = removed if removed is not None else {v for v in via if is_label(v) and agent.access.write.allows_via(v)}
        if any(v not in gone for v in via):
            missing.append({"token_id": holder.token_id, "public_key": holder.public_key, "via": via})
    if missing:
        raise problem(
            409,
            "HOLDERS_MISSING",
            "the new key leaves out connections that read this memory now; "
            "wrap it to each one in `missing` and send again",
            missing=missing,
            current_rev=row.rev,
        )
    removed = removed or set()
    ms.delete_wraps(con, row.id)
    ms.update_memory(
        con,
        row.id,
        ciphertext=ciphertext,
        rev=row.rev + 1,
        now=now,
        kid=new_kid,
        owner_wrap=owner_wrap,
        editor_connection=agent.connection_id,
    )
    row = ms.get_memory(con, row.id)
    n, _ = put_grantee_wraps(
        con, row, agent, agents, wraps_in, now, check_write=True, existing=had - removed, removed=removed
    )
    keep = [v for v in r.via if v not in removed]
    own = rotated_self_reasons(agent, row, keep, self_via)
    if own:
        store_wrap(con, row, agent, self_wrap, own, now)
    return {"kid": new_kid, "grantee_wraps": n}


async def share_key(request: Request) -> JSONResponse:
    """POST memory-wraps — add wraps of the current key for reasons the recipient holds and the
    caller writes (or the memory already has, or `all`)."""
    from . import sharing

    state = state_of(request)
    agent = await agent_of(request)
    body = await json_body(request)
    for k in ("row_id", "kid", "wraps"):
        if body.get(k) is None:
            raise bad_request("INVALID_REQUEST", f"{k} is required", k)
    row_id = uuid_text(body["row_id"], "row_id")
    kid = kid_text(body["kid"], "kid")
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
        wraps_in = parse_wraps(body["wraps"], "wraps", agents)
        r = visible_or_404(con, agent, row_id, now)
        row = r.row
        if not can_edit(agent, row, r.via):
            raise insufficient(
                "memory.edit",
                "sharing this memory's key needs memory.edit on it",
                reason=r.via[0] if r.via else None,
                con=con,
                agent=agent,
                now=now,
            )
        if kid != row.kid:
            raise problem(409, "KID_CONFLICT", "the memory's key changed; re-read it before sharing", kid=row.kid)
        had = memory_reasons(ms.wraps_of(con, row.id), row)
        added, changed = 0, False
        for w in wraps_in:
            via = admit(w, agent, agents, row, check_write=True, existing=had)
            if not via:
                continue
            recipient = agents[w.token_id]
            cur = usable_wrap(ms.get_wrap(con, row.id, w.token_id), row, recipient)
            if cur is not None:
                grown = list(dict.fromkeys(cur.via + via))
                if grown != cur.via:
                    ms.set_wrap_via(con, row.id, w.token_id, grown)
                    changed = True
                continue
            store_wrap(con, row, recipient, w.wrapped_key, via, now)
            added += 1
        if added or changed:  # newly readable to someone: the sync feed carries it
            ms.log_change(con, "context_memory", row.id, "updated", now)
    sharing.note_write(state)
    return JSONResponse({"added": added})


async def delete_memories(request: Request) -> JSONResponse:
    """POST memories/delete — per id: deleted (author or memory.delete holder) or refused."""
    from . import sharing

    state = state_of(request)
    agent = await agent_of(request)
    ids = delete_ids(await json_body(request))
    now = now_of(state)
    deleted, refused, remediation = [], [], {}
    with state.store.tx() as con:
        for row_id in dict.fromkeys(ids):
            row = ms.get_memory(con, row_id)
            r = reach(con, agent, row) if row is not None else None
            if r is None or not (r.readable or is_author(agent, row)):
                refused.append(row_id)  # missing and not yours look the same
                continue
            if not can_delete(agent, row, r.via):
                refused.append(row_id)
                remediation[row_id] = permission_request("memory.delete", r.via[0] if r.via else None)
                continue
            holders = [w.token_id for w in ms.wraps_of(con, row_id)]
            if row.author_token:
                holders.append(row.author_token)
            ms.delete_memory(con, row_id)
            ms.log_change(con, "context_memory", row_id, "destroyed", now, holders=holders)
            deleted.append(row_id)
    sharing.note_write(state)
    out: dict[str, Any] = {"deleted": deleted, "refused": refused}
    if remediation:
        out["remediation"] = remediation
    return JSONResponse(out)


routes: list[Route] = [
    Route("/api/agent/public-key", public_key, methods=["GET"]),
    Route("/api/agent/context/memory-grantees", faulty(memory_grantees), methods=["GET"]),
    Route("/api/agent/context/memories", faulty(list_memories), methods=["GET"]),
    Route("/api/agent/context/memories", faulty(save_memories), methods=["POST"]),
    Route("/api/agent/context/memories", faulty(edit_memory), methods=["PUT"]),
    Route("/api/agent/context/memories/delete", faulty(delete_memories), methods=["POST"]),
    Route("/api/agent/context/memory-wraps", faulty(share_key), methods=["POST"]),
]
