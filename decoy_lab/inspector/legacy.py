"""Opening the legacy space routes and the memory-wraps a flow carries, where a key allows.

What the Agent API says of them (001, "Legacy space storage"):

- `POST /api/agent/context/spaces` sends a fresh 32-byte space key three ways: `own_wrap` ("space
  key wrapped to your agent key", a headerless agent envelope) and `owner_wrap` ("a SealedBlob
  ENVELOPE to the owner's public key, whose payload is the base64 space key"); `skid` is "first 8
  bytes of SHA-256(space key), hex". The owner's key opens `owner_wrap`, the agent's key
  `own_wrap`; each must give a key whose id is `skid`, and both the same key.
- `GET /api/agent/context/spaces` serves `wrapped_key`, "that key wrapped to your agent public
  key": the agent's key opens it (its id must be the space's `skid`).
- `GET` / `POST` / `PUT /api/agent/context/rows` carry rows "as a SealedBlob VAULT sealed with the
  space key. The plaintext embeds `space_id` and `row_id`; check both after decrypting". A space
  key learned above opens them (recipes.sealing.open_space_row), with that bind check.
- `POST /api/agent/context/memory-wraps` shares a memory key: each `wrapped_key` is a "Headerless
  agent envelope of the 32-byte memory key", for the memory's current `kid`. A wrap the agent's
  own key opens is checked against `kid` (and the key the owner's app opened for that memory);
  a wrap to another agent is parsed by layout, and a `kid` that is not the memory's latest is said.

Keys are kept by key id (never shown); every failure is the row's reason, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from decoy_lab.errors import DecoyError
from decoy_lab.inspector.flow_record import LAYOUT, READABLE, UNREADABLE, Flow, Row
from decoy_lab.recipes import dump, sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

SPACES, ROWS, WRAPS = "/api/agent/context/spaces", "/api/agent/context/rows", "/api/agent/context/memory-wraps"
ROUTES = (SPACES, ROWS, WRAPS)


def handles(flow: Flow) -> bool:
    return flow.path in ROUTES


class LegacyOpener:
    """Space keys learned from the spaces a recording shows, and the rows they open."""

    def __init__(self, owner_key: Callable[[], AgentKey | None], agent_key: AgentKey | None, memory_keys: Any):
        self.owner_key = owner_key  # the owner's private key, when the inspector has one (looked up once asked)
        self.agent_key = agent_key
        self.memory_keys = memory_keys  # kid -> memory key: what the owner's app opened (Opener.key_cache)
        self.kid_of: dict[str, str] = {}  # memory row id -> its latest kid (shared with the Opener)
        self.space_keys: dict[str, bytes] = {}  # skid -> space key
        self.space_skid: dict[str, str] = {}  # space id -> skid
        self.row_space: dict[str, str] = {}  # row id -> space id

    def open(self, flow: Flow, sent: Any, got: Any) -> list[Row]:
        ok = flow.status is not None and flow.status < 300
        sent = sent if isinstance(sent, dict) else {}
        got = got if isinstance(got, dict) and ok else {}
        if flow.path == SPACES and flow.method == "POST":
            return [self._new_space(sent, got)] if sent else []
        if flow.path == SPACES:
            return [self._served_space(i, s) for i, s in enumerate(got.get("spaces") or []) if isinstance(s, dict)]
        if flow.path == ROWS and flow.method == "GET":
            sid = str(got.get("space_id") or "")
            return self._rows("response.rows", sid, got.get("rows"))
        if flow.path == ROWS and flow.method == "POST":
            return self._rows("request.rows", str(sent.get("space_id") or ""), sent.get("rows"))
        if flow.path == ROWS and flow.method == "PUT" and isinstance(sent.get("id"), str):
            return [self._space_row("request", self.row_space.get(sent["id"], ""), sent)]
        if flow.path == WRAPS and flow.method == "POST":
            return self._wraps(sent)
        return []

    # -- space keys ----------------------------------------------------------------------------
    def _new_space(self, sent: dict, got: dict) -> Row:
        space: dict = got["space"] if isinstance(got.get("space"), dict) else {}
        sid = str(space.get("id") or got.get("space_id") or f"{sent.get('kind') or '?'} space")
        skid = str(sent.get("skid") or "")
        opened: dict[str, bytes] = {}
        problems: list[str] = []
        owner = self.owner_key()
        for member, key, unwrap, who in (
            ("owner_wrap", owner, sealing.unwrap_as_owner, "owner key"),
            ("own_wrap", self.agent_key, sealing.unwrap_as_agent, "agent key"),
        ):
            blob = sent.get(member)
            if key is None or not isinstance(blob, str):
                continue
            try:
                opened[who] = unwrap(blob, key)
            except DecoyError as exc:
                problems.append(f"{member} does not open with the {who}: {exc}")
        problems += [f"{who}: the space key's id is {wire.kid(k)}, not skid {skid}" for who, k in opened.items()
                     if wire.kid(k) != skid]  # fmt: skip
        if len(set(opened.values())) > 1:
            problems.append("owner_wrap and own_wrap hold different keys")
        by = ", ".join(opened)
        if problems:
            return Row(
                sid, "request", UNREADABLE, "; ".join(problems), "space_key", kind="space", kid=skid, opened_by=by
            )
        if not opened:
            return _layout(sid, "request", sent, {"owner_wrap": "owner_envelope", "own_wrap": "agent_envelope"}, skid)
        self._learn(sid, skid, next(iter(opened.values())))
        return Row(sid, "request", READABLE, "", "", f"{sent.get('kind')} space", "space", skid, by)

    def _served_space(self, i: int, s: dict) -> Row:
        sid, skid, where = str(s.get("id") or ""), str(s.get("skid") or ""), f"response.spaces[{i}]"
        self.space_skid[sid] = skid
        blob = s.get("wrapped_key")
        if not isinstance(blob, str):
            return Row(sid, where, LAYOUT, "no wrap of this space's key has reached the agent yet", kind="space")
        if self.agent_key is None:
            return _layout(sid, where, s, {"wrapped_key": "agent_envelope"}, skid)
        try:
            key = sealing.unwrap_as_agent(blob, self.agent_key)
        except DecoyError as exc:
            return Row(sid, where, UNREADABLE, f"wrapped_key: {exc}", "wrapped_key", kind="space", kid=skid)
        if wire.kid(key) != skid:
            why = f"wrapped_key holds a key whose id is {wire.kid(key)}, not the space's skid {skid}"
            return Row(sid, where, UNREADABLE, why, "kid_mismatch", kind="space", kid=skid, opened_by="agent key")
        self._learn(sid, skid, key)
        return Row(sid, where, READABLE, "", "", f"{s.get('kind')} space", "space", skid, "agent key")

    def _learn(self, sid: str, skid: str, key: bytes) -> None:
        self.space_keys[skid] = key
        if sid:
            self.space_skid[sid] = skid

    # -- space rows ----------------------------------------------------------------------------
    def _rows(self, where: str, sid: str, rows: Any) -> list[Row]:
        if not isinstance(rows, list):
            return []
        return [self._space_row(f"{where}[{i}]", sid, r) for i, r in enumerate(rows) if isinstance(r, dict)]

    def _space_row(self, where: str, sid: str, row: dict) -> Row:
        rid = str(row.get("id") or "")
        skid = str(row.get("skid") or self.space_skid.get(sid, ""))
        if sid:
            self.row_space[rid] = sid
        key = self.space_keys.get(skid)
        ct = row.get("ciphertext")
        if key is None or not isinstance(ct, str):
            return _layout(rid, where, row, {"ciphertext": "vault"}, skid)

        def run() -> Trace:
            t = Trace(f"open space row {rid} with the key of skid {skid}")
            try:
                sealing.open_space_row(ct, key, space_id=sid, row_id=rid, trace=t)
            except DecoyError:
                pass
            return t

        try:
            plain = sealing.open_space_row(ct, key, space_id=sid, row_id=rid)
        except DecoyError as exc:
            return Row(rid, where, UNREADABLE, str(getattr(exc, "reason", exc)), "ciphertext", kid=skid, rerun=run)
        kind, text = _graph_object(plain)
        if not kind:
            why = "opens, but holds none of entity, observation or relation"
            return Row(rid, where, UNREADABLE, why, "plaintext", kid=skid, opened_by="space key", rerun=run)
        return Row(rid, where, READABLE, "", "", text, kind, skid, "space key", plaintext=plain, rerun=run)

    # -- memory-wraps --------------------------------------------------------------------------
    def _wraps(self, sent: dict) -> list[Row]:
        rid, kid = str(sent.get("row_id") or ""), str(sent.get("kid") or "")
        latest = self.kid_of.get(rid)
        stale = f"kid {kid} is not the memory's current key id {latest}" if latest and latest != kid else ""
        out = []
        for i, w in enumerate(sent.get("wraps") or []):
            if not isinstance(w, dict) or not isinstance(w.get("wrapped_key"), str):
                continue
            where = f"request.wraps[{i}]"
            row = self._wrap(rid, where, kid, w["wrapped_key"])
            if stale and row.verdict != UNREADABLE:
                row.verdict, row.problem, row.reason = UNREADABLE, "kid_mismatch", stale
            row.kind = f"wrap for {w.get('token_id')}"
            out.append(row)
        return out

    def _wrap(self, rid: str, where: str, kid: str, blob: str) -> Row:
        key = None
        if self.agent_key is not None:
            try:
                key = sealing.unwrap_as_agent(blob, self.agent_key)
            except DecoyError:
                key = None  # a wrap to another agent: only its recipient opens it
        if key is None:
            return _layout(rid, where, {"wrapped_key": blob}, {"wrapped_key": "agent_envelope"}, kid)
        known = self.memory_keys.get(kid)
        if wire.kid(key) != kid:
            why = f"wrapped_key holds a key whose id is {wire.kid(key)}, not kid {kid}"
            return Row(rid, where, UNREADABLE, why, "kid_mismatch", kid=kid, opened_by="agent key")
        if known is not None and known != key:
            return Row(rid, where, UNREADABLE, "not the key the owner's app opened", "wrapped_key", kid=kid)
        return Row(rid, where, READABLE, "", "", f"the memory key of kid {kid}", "", kid, "agent key")


def _graph_object(plain: Any) -> tuple[str, str]:
    """("entity" | "observation" | "relation", its text) of a space row's plaintext; ("", "") else."""
    if not isinstance(plain, dict):
        return "", ""
    e, o, r = (plain.get(k) if isinstance(plain.get(k), dict) else None for k in ("entity", "observation", "relation"))
    if e is not None:
        return "entity", f"{e.get('name')} ({e.get('entityType') or 'no type'})"
    if o is not None:
        return "observation", f"{o.get('entityName')}: {o.get('content')}"
    if r is not None:
        return "relation", f"{r.get('from')} —{r.get('relationType')}→ {r.get('to')}"
    return "", ""


def _layout(rid: str, where: str, obj: dict, expected: dict[str, str], kid: str) -> Row:
    """No key opens it: each blob's layout, and a blob that is not the layout its member holds."""
    said: list[str] = []
    bad: list[str] = []
    for member, want in expected.items():
        blob = obj.get(member)
        if not isinstance(blob, str):
            continue
        try:
            kind, sentence, _ = dump.identify(wire.b64decode(blob, field=member))
        except DecoyError as exc:
            bad.append(f"{member}: {exc}")
            continue
        (said if kind == want else bad).append(f"{member} {sentence}" if kind == want else
                                               f"{member} should be {want.replace('_', ' ')}; it {sentence}")  # fmt: skip
    if bad:
        return Row(rid, where, UNREADABLE, "; ".join(bad), "layout", kid=kid, certainty="; ".join(said))
    return Row(rid, where, LAYOUT, "no key opens it: parsed by layout only", kid=kid, certainty="; ".join(said))


def parse(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
