"""Opening what a flow carries: each sealed row opened where a key allows, said where none does.

A row is a JSON object with a string `id`, `kid` and `ciphertext` (a memory row, written in
`rows` of `POST /api/agent/context/memories` or as the body of a `PUT`, served in `memories` of
a `GET`). What opens it:

- a written row (`owner_wrap`): the owner's-eye check, the sandbox's own (`appview.check_row`:
  the owner's app opens `owner_wrap`, checks `kid`, opens the ciphertext, decodes the plaintext,
  and names the step that fails), with the sandbox's owner key, or offline with an `owner_key`;
  with an `agent_key` its `self_wrap` is opened too, as the agent will read it back;
- a served row (`wrapped_key`): the agent's key, through decoy_lab.memory's readers, a whole
  answer in parallel as the client's load reads it (`memory.read_rows`);
- a row neither key opens: each blob parsed by its layout (`recipes.dump.identify`), with how
  sure that is; a blob whose layout is not the one its member must hold is flagged.

The legacy space routes are legacy.py's to open, the account family's routes account_bodies.py's (with
the owner's phone, `OwnerEye.accounts`); this module hands each flow to the one whose it is.

Opening never raises: whatever goes wrong is the row's reason, or a note on the flow.
Keys unwrapped along the way are kept by kid, so an edit (`PUT`) that keeps its key opens too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import DecoyError, UnreadableRow
from decoy_lab.inspector import account_bodies, legacy
from decoy_lab.inspector.flow_record import ERROR, LAYOUT, READABLE, UNREADABLE, Flow, Row
from decoy_lab.recipes import dump, sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

OwnerCheck = Callable[[dict, Any], dict]  # (row, trace) -> an app-view entry (check_row's answer)
EXPECTED = {
    "ciphertext": "vault",
    "owner_wrap": "owner_envelope",
    "self_wrap": "agent_envelope",
    "wrapped_key": "agent_envelope",
}
MAX_DEPTH = 8


def owner_check_of(sandbox: Any = None, owner_key: AgentKey | str | bytes | None = None) -> OwnerCheck | None:
    """The sandbox's owner's-eye check of one row: of a running sandbox (its owner key, its
    stored topics), or offline of a fresh empty one holding `owner_key`. None without either."""
    if sandbox is not None:
        owner = sandbox.owner
    elif owner_key is not None:
        from decoy_lab.sandbox import create_app

        owner = create_app(":memory:", owner_key=owner_key, seed="none").state.sb.owner
    else:
        return None

    return OwnerEye(owner, holds_vault_key=sandbox is not None)


class OwnerEye:
    """The owner's-eye check of one row, `(row, trace) -> entry` (the sandbox's public owner API);
    `key` is the owner's private key, for the legacy space keys wrapped to the owner; `accounts`
    the owner's phone's checks of the account family (the vault key only when the sandbox is the
    owner's own, not one made offline to hold an `owner_key`)."""

    def __init__(self, owner: Any, *, holds_vault_key: bool = True):
        self._owner = owner
        self.accounts = account_bodies.PhoneEye(owner.state, holds_vault_key=holds_vault_key)

    @property
    def key(self) -> AgentKey | None:
        return getattr(self._owner, "key", None)

    def __call__(self, row: dict, trace: Any) -> dict:
        return self._owner.check_row(row, trace=trace)


def as_agent_key(key: AgentKey | str | bytes | None) -> AgentKey | None:
    if key is None or isinstance(key, AgentKey):
        return key
    return AgentKey.from_pem(key)


def find_rows(obj: Any, where: str, depth: int = 0) -> Iterable[tuple[str, dict]]:
    """(field path, row) for every sealed memory row in a parsed JSON body."""
    if depth > MAX_DEPTH:
        return
    if isinstance(obj, dict):
        if all(isinstance(obj.get(k), str) for k in ("id", "ciphertext")) and any(
            k in obj for k in ("kid", "owner_wrap", "expected_rev")
        ):
            yield where, obj
            return
        for k, v in obj.items():
            if isinstance(v, (dict, list)):
                yield from find_rows(v, f"{where}.{k}", depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, (dict, list)):
                yield from find_rows(v, f"{where}[{i}]", depth + 1)


class Opener:
    """Opens the rows of finished flows with the keys it was given (any of them may be None)."""

    def __init__(
        self,
        *,
        owner_check: OwnerCheck | None = None,
        agent_key: AgentKey | str | bytes | None = None,
        workers: int | None = None,
        reveal: bool = False,
    ):
        self.owner_check = owner_check
        self.agent_key = as_agent_key(agent_key)
        self.workers = workers
        self.reveal = reveal  # an opened secret (a password, a field's value) shown as it is
        self.key_cache = memory.KeyCache()  # kid -> raw memory key (never shown)
        self._kid_of: dict[str, str] = {}  # row id -> its latest kid
        self.legacy = legacy.LegacyOpener(
            lambda: getattr(self.owner_check, "key", None), self.agent_key, self.key_cache
        )
        self.legacy.kid_of = self._kid_of
        self.accounts = account_bodies.AccountOpener(
            lambda: getattr(self.owner_check, "accounts", None), self.agent_key, reveal=reveal
        )

    def __repr__(self) -> str:
        keys = [n for n, k in (("owner", self.owner_check), ("agent", self.agent_key)) if k is not None]
        return f"<Opener keys: {', '.join(keys) or 'none'}>"

    # -- a flow --------------------------------------------------------------------------------
    def open_flow(self, flow: Flow, request: bytes, response: bytes, served: list | None = None) -> None:
        """Fill `flow.rows` and `flow.notes` from its raw bodies (`served`: the rows of a GET
        answer collected while it streamed, whole even when the body was cut off the record)."""
        rows: list[Row] = []
        try:
            if legacy.handles(flow):  # the legacy space routes and memory-wraps (legacy.py)
                flow.rows = self.legacy.open(flow, legacy.parse(request), legacy.parse(response))
                return
            whole = flow.request_body.complete and not flow.request_body.truncated
            if account_bodies.handles(flow):  # the account family's routes (account_bodies.py)
                flow.rows = self.accounts.open(flow, *self._bodies(flow, request, response, whole))
                return
            sent = _parse(request, whole) if _has_rows_path(flow) else None
            if isinstance(sent, _Unparsed):
                flow.notes.append(f"error: request body {sent.why}")
            elif sent is not None:
                rows.extend(self.written(list(find_rows(sent, "request"))))
            if served is not None:
                rows.extend(self.read([(f"response.memories[{i}]", r) for i, r in enumerate(served)]))
            elif _has_rows_path(flow) and flow.status is not None and flow.status < 300:
                got = _parse(response, flow.response_body.complete and not flow.response_body.truncated)
                if isinstance(got, _Unparsed):
                    flow.notes.append(f"error: response body {got.why}")
                elif got is not None:
                    rows.extend(self.read(list(find_rows(got, "response"))))
        except Exception as exc:  # opening must never stop recording
            flow.notes.append(f"error: opening stopped: {exc!r}")
        flow.rows = rows

    def _bodies(self, flow: Flow, request: bytes, response: bytes, whole: bool) -> tuple[Any, Any]:
        """Both bodies parsed (None for one that is empty or does not parse, said in a note; an
        answer only when it is a success)."""
        ok = flow.status is not None and flow.status < 300
        out = []
        for side, data, complete in (
            ("request", request, whole),
            ("response", response if ok else b"", flow.response_body.complete and not flow.response_body.truncated),
        ):
            parsed = _parse(data, complete)
            if isinstance(parsed, _Unparsed):
                flow.notes.append(f"error: {side} body {parsed.why}")
                parsed = None
            out.append(parsed)
        return out[0], out[1]

    # -- written rows --------------------------------------------------------------------------
    def written(self, found: list[tuple[str, dict]]) -> list[Row]:
        return [self._written(where, row) for where, row in found]

    def _written(self, where: str, row: dict) -> Row:
        rid, kid = str(row.get("id")), str(row.get("kid") or self._kid_of.get(str(row.get("id")), ""))
        if isinstance(row.get("kid"), str):
            self._kid_of[rid] = row["kid"]
        if self.owner_check is not None and not isinstance(row.get("owner_wrap"), str) and kid not in self.key_cache:
            # an edit under a key this record never saw unwrapped (the owner rotated it): the owner's app
            # opens it with the owner_wrap it holds for that kid
            stored = getattr(self.owner_check, "stored_owner_wrap", None)
            wrap = stored(rid, kid) if stored is not None and kid else None
            if isinstance(wrap, str):
                row = {**row, "owner_wrap": wrap}
        if self.owner_check is not None and isinstance(row.get("owner_wrap"), str):
            trace = Trace(f"the owner's app opens row {rid}")
            try:
                entry = self.owner_check({**row, "kid": kid}, trace)
            except Exception as exc:
                return Row(rid, where, ERROR, f"the owner's-eye check stopped: {exc!r}", kid=kid, trace=trace)
            out = _from_entry(rid, where, kid, entry, trace)
            if out.verdict == READABLE:
                self._keep_key(trace, kid)
                self._check_self_wrap(row, out)
            return out
        if kid in self.key_cache:  # an edit that keeps its key (no kid, no owner_wrap sent)
            return self._with_cached_key(where, rid, kid, row)
        if self.agent_key is not None and isinstance(row.get("self_wrap"), str):
            posted = {k: v for k, v in row.items() if k != "wrapped_key"}
            return self._as_agent(where, {**posted, "kid": kid} if kid else posted, "self_wrap")
        return layout_row(where, row)

    def _check_self_wrap(self, row: dict, out: Row) -> None:
        if self.agent_key is None or not isinstance(row.get("self_wrap"), str):
            return
        posted = {k: v for k, v in row.items() if k != "wrapped_key"}
        try:
            memory.read_row(posted, self.agent_key)
        except UnreadableRow as exc:
            out.verdict, out.problem = UNREADABLE, "self_wrap"
            out.reason = f"the owner's app opens it, but the agent cannot read it back: {exc.reason}"
        except Exception as exc:
            out.verdict, out.problem, out.reason = ERROR, "self_wrap", f"reading self_wrap stopped: {exc!r}"

    def _keep_key(self, trace: Trace, kid: str) -> None:
        """The key the owner's app unwrapped (the trace's unwrap output), kept by kid."""
        for step in trace:
            out = step.output
            if isinstance(out, (bytes, bytearray)) and len(out) == 32 and wire.kid(bytes(out)) == kid:
                self.key_cache[kid] = bytes(out)
                return

    def _with_cached_key(self, where: str, rid: str, kid: str, row: dict) -> Row:
        key = self.key_cache[kid]

        def run() -> Trace:
            t = Trace(f"open row {rid} with the key of kid {kid}")
            try:
                memory.decode_plaintext(sealing.open_json(key, row["ciphertext"], row_id=rid, trace=t), rid, trace=t)
            except DecoyError:
                pass
            return t

        try:
            obj = sealing.open_json(key, row["ciphertext"], row_id=rid)
            plain = memory.decode_plaintext(obj, rid)
        except UnreadableRow as exc:
            return Row(rid, where, UNREADABLE, exc.reason, "ciphertext", kid=kid, opened_by="kept key", rerun=run)
        except DecoyError as exc:
            return Row(rid, where, UNREADABLE, str(exc), "ciphertext", kid=kid, opened_by="kept key", rerun=run)
        return Row(
            rid, where, READABLE, "", "", _plain_text(plain), plain.kind, kid, "kept key", plaintext=plain, rerun=run
        )

    # -- served rows ---------------------------------------------------------------------------
    def read(self, found: list[tuple[str, dict]]) -> list[Row]:
        """Served rows as the agent read them: all at once on the client's parallel reader."""
        for _, row in found:  # the kid each row is served under: an edit that sends none keeps it
            if isinstance(row.get("id"), str) and isinstance(row.get("kid"), str):
                self._kid_of[row["id"]] = row["kid"]
        if self.agent_key is None:
            return [layout_row(where, row) for where, row in found]
        key = self.agent_key
        out = memory.read_rows(
            [r for _, r in found],
            key,
            key_cache=self.key_cache,
            workers=self.workers,
            then=lambda row, result: _from_result("", row, result, key),  # in the workers, beside others' RSA
        )
        for (where, _), row in zip(found, out):
            row.field = where
        return out

    def _as_agent(self, where: str, row: dict, member: str) -> Row:
        key = self.agent_key
        assert key is not None
        try:
            result: Any = memory.read_row(row, key, key_cache=self.key_cache)
        except UnreadableRow as exc:
            result = exc
        except Exception as exc:
            return Row(str(row.get("id")), where, ERROR, f"reading {member} stopped: {exc!r}")
        return _from_result(where, row, result, key)


# -- rows from what the readers said ---------------------------------------------------------------
def _from_entry(rid: str, where: str, kid: str, entry: Mapping[str, Any], trace: Trace) -> Row:
    if not entry.get("readable"):
        problem = str(entry.get("problem") or "")
        if trace.failed is None:  # a check the recipe records as an output, not as a failed step
            trace.add(f"the owner's app: {problem or 'cannot open'}", ok=False, reason=str(entry.get("reason") or ""))
        return Row(
            rid, where, UNREADABLE, str(entry.get("reason") or ""), problem, kid=kid, opened_by="owner key", trace=trace
        )
    kind = str(entry.get("kind") or "")
    text = entry.get("text") if kind == "memory" else entry.get("name") if kind == "topic" else None
    if kind == "link":
        text = f"{entry.get('from')} —{entry.get('relation')}→ {entry.get('to')}"
    warnings = "; ".join(str(p) for p in entry.get("problems") or [])
    plain = {k: v for k, v in entry.items() if k not in ("readable", "problems")}
    return Row(rid, where, READABLE, warnings, "", text, kind, kid, "owner key", plaintext=plain, trace=trace)


def _from_result(where: str, row: Mapping[str, Any], result: Any, key: AgentKey) -> Row:
    rid, kid = str(row.get("id")), str(row.get("kid") or "")

    def run() -> Trace:
        t = Trace(f"the agent reads row {rid}")
        try:
            memory.read_row(row, key, trace=t)
        except DecoyError:
            pass
        return t

    if isinstance(result, UnreadableRow):
        return Row(
            rid, where, UNREADABLE, result.reason, _problem(result.reason), kid=kid, opened_by="agent key", rerun=run
        )
    if result is None:
        return Row(
            rid,
            where,
            READABLE,
            "opens, but is neither a memory, a topic nor a link",
            kid=kid,
            opened_by="agent key",
            rerun=run,
        )
    text = getattr(result, "text", None) or getattr(result, "name", None)
    if result.kind == "link":
        text = f"{result.from_} —{result.relation_type}→ {result.to}"
    return Row(rid, where, READABLE, "", "", text, result.kind, kid, "agent key", plaintext=result, rerun=run)


def _problem(reason: str) -> str:
    for word, problem in (("wrapped_key", "wrapped_key"), ("kid check", "kid_mismatch"), ("ciphertext", "ciphertext")):
        if word in reason:
            return problem
    return "plaintext"


def layout_row(where: str, row: Mapping[str, Any]) -> Row:
    """A row no key opens: each blob's layout, and how sure that is; a misfit is flagged."""
    rid, kid = str(row.get("id")), str(row.get("kid") or "")
    said, bad = [], []
    for member, expected in EXPECTED.items():
        blob = row.get(member)
        if not isinstance(blob, str):
            continue
        try:
            raw = wire.b64decode(blob, field=member)
        except DecoyError as exc:
            bad.append(f"{member}: {exc}")
            continue
        kind, sentence, _ = dump.identify(raw)
        if kind != expected:
            bad.append(f"{member} should be {expected.replace('_', ' ')}; it {sentence}")
        else:
            said.append(f"{member} {sentence}")
    ct = row.get("ciphertext")

    def run() -> Trace:
        return dump.open_blob(ct) if isinstance(ct, str) else Trace("no ciphertext")

    if bad:
        return Row(rid, where, UNREADABLE, "; ".join(bad), "layout", kid=kid, certainty="; ".join(said), rerun=run)
    reason = "no key opens it: parsed by layout only"
    return Row(rid, where, LAYOUT, reason, kid=kid, certainty="; ".join(said), rerun=run)


def _plain_text(plain: memory.Plain) -> str | None:
    if plain.kind == "memory":
        return plain.text
    if plain.kind == "topic":
        return plain.name
    if plain.kind == "link":
        return f"{plain.relation_from} —{plain.relation_type}→ {plain.relation_to}"
    return None


class _Unparsed:
    def __init__(self, why: str):
        self.why = why


def _parse(data: bytes, complete: bool) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        if not complete:
            return _Unparsed(f"was cut short ({len(data):,} bytes kept), so its rows cannot be read: {exc}")
        return _Unparsed(f"is not JSON: {exc}")


def _has_rows_path(flow: Flow) -> bool:
    return "/context/memories" in flow.path or "/context/memory" in flow.path
