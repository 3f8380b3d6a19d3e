"""Opening the account family's bodies a flow carries, as the owner's app would, where a key allows.

What each route carries (001, the account family's operations; wire/layouts.py `RECORDS` names
each record kind) and what opens it:

- an account record, `encrypted_data` (`POST` / `PATCH /api/agent/accounts…`, their `GET`
  answers) or `account_encrypted_data` (`POST /api/agent/decoys`): "VAULT mode (sealed with the
  vault key) or ENVELOPE mode (sealed to the owner's public key …)": the owner key, or the vault key
  the sandbox's owner phone holds;
- a credential, `encrypted_password` (`POST` / `GET …/credential`): "a headerless envelope to
  `public_key` … No SealedBlob header and no JSON wrapper": the owner key;
- a secret field (`POST …/fields`, `PUT …/fields/{fieldId}`): `owner_wrap` gives the field key,
  checked against `kid`, which opens `ciphertext`, whose plaintext must name the field's `id` and
  `account_id`; with the agent's key `self_wrap` is opened too, as the agent will read it back;
  each `grantee_wraps` entry is parsed by layout (only its recipient opens it); a `PUT` that keeps
  its key opens with the key this record learned for that `kid`;
- a served field (`GET …/fields`): its `wrapped_key` with the agent's key (`records.open_field`);
- a Decoy address (`POST` / `GET` / `PATCH /api/agent/decoys…`): `sealed_details` (the owner key),
  `metadata_seals` and a served `metadata_seal` (the agent's key; without it, a create's own entry
  that the owner's key opens is flagged as sealed to the wrong key), VAULT `encrypted_data` details
  (the vault key); an edit's `sealed_patch` (`POST …/edits`): the owner key;
- an account read (`GET /api/agent/accounts`, `GET …/accounts/{id}`): its record as above, and the
  `metadata_seal` of its address, opened as the address reads' is ("returned to this connection as
  `metadata_seal` on … the account reads");
- an unlock answer, `items[].sealed_envelope` (`GET /api/agent/unlock/{requestId}`): the agent's key;
- accounts in bulk, `accounts[].encrypted_data` (`POST /api/agent/accounts/batch`): "a base64
  **VAULT** SealedBlob": the vault key; a protected account's new address, `decoy_encrypted_data`
  (`POST …/protect`): the vault key;
- the pending edits a vault-key surface lists, `edits[].sealed_patch` (`GET /api/agent/decoy-edits`):
  the owner key;
- a saved login, `items[].sealed_envelope` (`GET /api/agent/sealed-secrets`): "`kind: "account"` →
  `{ host, username, password }`", the agent's key.

A blob sealed to the owner is opened twice over: by the recipe (recipes/account_records.py) into a Trace
that names the step that fails, and by the owner's phone's own check (sandbox/phone/acctopen.py,
through `PhoneEye`, the sandbox's public functions), whose verdict and words are the owner app's.
A blob no key opens is parsed by its record's layout, with how sure that is. A secret (a
password, a concealed field's value, an unlock answer's secrets) is masked in the row's text and
plaintext unless the inspector reveals: only its length is shown (a fingerprint of a password
would let anyone holding the record test guesses). Opening never raises: whatever goes wrong is
the row's reason. Field keys learned along the way are kept by kid, never shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

from decoy_lab.errors import CryptoError, DecoyError, UnreadableRow
from decoy_lab.inspector.flow_record import ERROR, LAYOUT, READABLE, UNREADABLE, Flow, Row
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes import dump, sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.sandbox.phone import acctopen
from decoy_lab.text import plural
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey

Opened = tuple[Any, str | None]  # the phone's answer: (what opened, or None; why not, or None)

_ACCOUNTS = re.compile(
    r"/api/agent/accounts(?:/(?P<account>[^/]+)(?:/(?P<sub>credential|fields|protect)(?:/(?P<field>[^/]+))?)?)?"
)
_DECOYS = re.compile(r"/api/agent/decoys(?:/(?P<decoy>[^/]+)(?:/(?P<sub>edits))?)?")
_UNLOCK = re.compile(r"/api/agent/unlock(?:/(?P<request>[^/]+))?")
_EDITS = re.compile(r"/api/agent/decoy-edits")
_SECRETS = re.compile(r"/api/agent/sealed-secrets")
_NOT_IDS = ("public-key", "generate-email")  # sibling routes that carry no sealed body

# What each kind is called on a row, and the layout its blob must fit (wire.RECORDS, or a layout).
KINDS = {
    "account_record": "account",
    "credential": "credential",
    "field": "field",
    "sealed_details": "sealed details",
    "metadata_seal": "metadata seal",
    "decoy_details": "decoy details",
    "edit_patch": "edit patch",
    "unlock_answer": "unlock answer",
    "sealed_secret": "sealed login",
}
# Members whose values are secrets in an opened record (a field's `value` only when concealed).
SECRET_VALUES = frozenset({"password", "totp", "secret", "seed", "otp", "value"})
MASK = "••••••"


class PhoneEye:
    """The owner's phone's checks of the account family (sandbox/phone/acctopen.py) on one sandbox
    state, through its public functions. `holds_vault_key`: the sandbox is the owner's own (a
    throwaway one made to hold an `owner_key` offline has a vault key of its own, not the owner's)."""

    def __init__(self, state: Any, *, holds_vault_key: bool = True):
        self._state = state
        self.holds_vault_key = holds_vault_key

    def __repr__(self) -> str:
        return f"<PhoneEye owner {self.key.fingerprint}{', vault key' if self.holds_vault_key else ''}>"

    @property
    def key(self) -> AgentKey:
        """The owner's private key."""
        return self._state.owner.key

    def vault_key(self) -> bytes | None:
        return acctopen.vault_key(self._state) if self.holds_vault_key else None

    def record(self, blob: str, mode: str) -> Opened:
        """An account record (or a decoy's VAULT details): "vault" or "envelope"."""
        return acctopen.open_record(self._state, blob, mode)

    def password(self, blob: str) -> Opened:
        return acctopen.open_password(self._state, blob)

    def sealed(self, blob: str, what: str) -> Opened:
        """A headerless envelope to the owner key holding JSON (`sealed_details`, `sealed_patch`)."""
        return acctopen.open_sealed(self._state, blob, what)

    def field(self, field: dict[str, Any]) -> tuple[dict | None, bytes | None, str | None]:
        """(plaintext, field key, None), or (None, key or None, why not)."""
        return acctopen.open_field(self._state, cast(Any, field))


def handles(flow: Flow) -> bool:
    return _match(flow.path) is not None


def _match(path: str) -> tuple[str, dict[str, str | None]] | None:
    path = path.rstrip("/")
    routes = (("accounts", _ACCOUNTS), ("decoys", _DECOYS), ("unlock", _UNLOCK), ("edits", _EDITS),
              ("secrets", _SECRETS))  # fmt: skip
    for name, pattern in routes:
        m = pattern.fullmatch(path)
        if m is not None:
            ids = m.groupdict()
            if any(v in _NOT_IDS for v in ids.values()):
                return None
            return name, ids
    return None


class AccountOpener:
    """The account family's rows of each flow, opened with the keys there are (any may be None)."""

    def __init__(self, eye: Callable[[], PhoneEye | None], agent_key: AgentKey | None, *, reveal: bool = False):
        self.eye = eye  # the owner's phone, when the inspector has the owner's key (looked up once asked)
        self.agent_key = agent_key
        self.reveal = reveal
        self.field_keys: dict[str, bytes] = {}  # kid -> field key (never shown)
        self.field_kid: dict[str, str] = {}  # field id -> its latest kid

    def __repr__(self) -> str:
        return f"<AccountOpener {len(self.field_keys)} field keys kept{', revealing' if self.reveal else ''}>"

    def open(self, flow: Flow, sent: Any, got: Any) -> list[Row]:
        found = _match(flow.path)
        if found is None:
            return []
        route, ids = found
        sent = sent if isinstance(sent, dict) else {}
        got = got if isinstance(got, dict) and flow.status is not None and flow.status < 300 else {}
        if route == "accounts":
            return self._accounts(flow.method, ids, sent, got)
        if route == "decoys":
            return self._decoys(flow.method, ids, sent, got)
        if route == "edits":
            return [
                row
                for i, e in enumerate(_list(got.get("edits")))
                for row in self._owned(
                    str(e.get("edit_id") or e.get("id")),
                    f"response.edits[{i}].sealed_patch",
                    "edit_patch",
                    e,
                    member="sealed_patch",
                )
            ]
        if route == "secrets":
            return [
                row
                for i, item in enumerate(_list(got.get("items")))
                for row in self._agent_blob(
                    str(item.get("target_id") or ""),
                    f"response.items[{i}].sealed_envelope",
                    "sealed_secret",
                    item.get("sealed_envelope"),
                )
            ]
        return self._unlock(got)

    # -- routes --------------------------------------------------------------------------------
    def _accounts(self, method: str, ids: dict[str, str | None], sent: dict, got: dict) -> list[Row]:
        account, sub, field = ids.get("account"), ids.get("sub"), ids.get("field")
        if account == "batch":
            if sub is not None or method != "POST":
                return []
            made = {r.get("index"): r.get("id") for r in _list(got.get("results"))}
            return [
                row
                for i, a in enumerate(_list(sent.get("accounts")))
                for row in self._owned(
                    str(made.get(i) or f"batch row {i}"), f"request.accounts[{i}].encrypted_data", "account_record", a
                )
            ]
        if sub == "protect":
            if method != "POST":
                return []
            rid = str(got.get("decoy_id") or f"new address of {account}")
            return self._owned(
                rid, "request.decoy_encrypted_data", "decoy_details", sent, member="decoy_encrypted_data"
            )
        if account is None and method == "POST":
            return self._owned(str(got.get("id") or "new account"), "request.encrypted_data", "account_record", sent)
        if account is None:
            return [
                row
                for i, a in enumerate(_list(got.get("accounts")))
                for row in self._account_read(str(a.get("id")), f"response.accounts[{i}]", a)
            ]
        if sub is None and method == "GET":
            return self._account_read(account, "response", got)
        if sub is None:
            body, side = (sent, "request") if method in ("PATCH", "PUT") else (got, "response")
            return self._owned(account, f"{side}.encrypted_data", "account_record", body)
        if sub == "credential":
            body, side = (sent, "request") if method == "POST" else (got, "response")
            return self._owned(account, f"{side}.encrypted_password", "credential", body, member="encrypted_password")
        if field is None and method == "POST":
            return [self._written_field("request", account, sent)] if sent else []
        if field is None:
            return [self._served_field(f"response.fields[{i}]", f) for i, f in enumerate(_list(got.get("fields")))]
        if method == "PUT" and sent:
            return [self._written_field("request", account, {**sent, "id": field})]
        return []

    def _decoys(self, method: str, ids: dict[str, str | None], sent: dict, got: dict) -> list[Row]:
        decoy, sub = ids.get("decoy"), ids.get("sub")
        if sub == "edits":
            if method != "POST" or not isinstance(sent.get("sealed_patch"), str):
                return []
            rid = str(got.get("edit_id") or f"edit of {decoy}")
            return self._owned(rid, "request.sealed_patch", "edit_patch", sent, member="sealed_patch")
        if method == "GET" and decoy is None:
            return [
                row for i, d in enumerate(_list(got.get("decoys"))) for row in self._decoy(f"response.decoys[{i}]", d)
            ]
        if method == "GET":
            return self._decoy("response", got)
        rid = str(decoy or got.get("id") or "new decoy")
        rows = []
        if method == "POST" and decoy is None:
            rows += self._owned(
                str(got.get("account_id") or "new account"),
                "request.account_encrypted_data",
                "account_record",
                sent,
                member="account_encrypted_data",
            )
            rows += self._owned(rid, "request.sealed_details", "sealed_details", sent, member="sealed_details")
        rows += self._owned(rid, "request.encrypted_data", "decoy_details", sent)
        for i, seal in enumerate(_list(sent.get("metadata_seals"))):
            own = method == "POST"  # a create carries this connection's own copy; a PATCH, every reader's
            rows += self._agent_blob(rid, f"request.metadata_seals[{i}].sealed_envelope", "metadata_seal",
                                     seal.get("sealed_envelope"), own=own)  # fmt: skip
        if method == "POST" and not sent.get("metadata_seals"):  # a copy the server sealed itself
            rows += self._agent_blob(rid, "response.metadata_seal", "metadata_seal", got.get("metadata_seal"))
        return rows

    def _account_read(self, account: str, where: str, a: dict) -> list[Row]:
        """An account as a read serves it: its record, then this connection's copy of its address's
        details — the create's `metadata_seals` entry is "returned to this connection as
        `metadata_seal` on `GET /api/agent/decoys`, `GET /api/agent/decoys/{decoyId}` and the account
        reads" (001), so it opens as the address reads' does: with the agent's key, or, without it,
        flagged when the owner's key opens it and parsed by layout otherwise. The row is the address's."""
        rows = self._owned(account, f"{where}.encrypted_data", "account_record", a)
        address = str(a.get("decoy_id") or f"address of account {account}")
        rows += self._agent_blob(address, f"{where}.metadata_seal", "metadata_seal", a.get("metadata_seal"))
        return rows

    def _decoy(self, where: str, d: dict) -> list[Row]:
        rid = str(d.get("id") or d.get("decoy_id") or "")
        rows = self._owned(rid, f"{where}.encrypted_data", "decoy_details", d)
        rows += self._agent_blob(rid, f"{where}.metadata_seal", "metadata_seal", d.get("metadata_seal"))
        return rows

    def _unlock(self, got: dict) -> list[Row]:
        rid = str(got.get("id") or "")
        return [
            row
            for i, item in enumerate(_list(got.get("items")))
            for row in self._agent_blob(
                str(item.get("target_id") or rid), f"response.items[{i}].sealed_envelope", "unlock_answer",
                item.get("sealed_envelope"),
            )
        ]  # fmt: skip

    # -- what is sealed to the owner -------------------------------------------------------------
    def _owned(self, rid: str, where: str, kind: str, body: dict, *, member: str = "encrypted_data") -> list[Row]:
        """The row of `body[member]`, sealed to the owner (or VAULT, with the vault key); [] when absent."""
        blob = body.get(member)
        if not isinstance(blob, str) or not blob:
            return []
        eye = self.eye()
        vault = _is_vault(blob)
        vault_key = eye.vault_key() if eye is not None and vault else None
        if kind == "decoy_details" and not vault:
            return [_layout_row(rid, where, kind, blob, "decoy details travel as a VAULT SealedBlob")]
        if eye is None or (vault and vault_key is None):
            no_key = (
                "VAULT mode: it opens with the owner's vault key, which this inspector does not hold" if vault else ""
            )
            return [_layout_row(rid, where, kind, blob, no_key)]
        trace = Trace(f"the owner's app opens the {KINDS[kind]} of {rid}")
        value, failed = None, None
        try:
            value = _owner_recipe(kind, blob, eye.key, vault_key, trace)
        except DecoyError as exc:
            failed = exc
        except Exception as exc:
            return [_row(rid, where, kind, ERROR, f"opening stopped: {exc!r}", trace=trace)]
        opened, why = _phone(eye, kind, blob, vault)
        if why is not None:
            return [_row(rid, where, kind, UNREADABLE, _cannot(trace, why), kind, opened_by="owner key", trace=trace)]
        warning = ""
        if failed is not None:  # the phone opens what the recipe refuses: the phone is the owner's app
            said = trace.failed.name if trace.failed is not None else "the recipe"
            warning = f"the owner's app opens it, but {said} fails: {getattr(failed, 'reason', None) or failed}"
            value = opened
        text, plain = self._describe(kind, value)
        by = "vault key" if vault else "owner key"
        return [_row(rid, where, kind, READABLE, warning, "", text, by, plain, trace)]

    # -- secret fields ---------------------------------------------------------------------------
    def _written_field(self, side: str, account: str, body: dict) -> Row:
        """A field as sent (`POST …/fields`, or a `PUT`): the owner's view, then the agent's."""
        fid = str(body.get("id") or "")
        kid = str(body.get("kid") or self.field_kid.get(fid, ""))
        if isinstance(body.get("kid"), str):
            self.field_kid[fid] = body["kid"]
        field = {"id": fid, "account_id": account, "kid": kid, "ciphertext": body.get("ciphertext"),
                 "owner_wrap": body.get("owner_wrap")}  # fmt: skip
        eye = self.eye()
        if not isinstance(field["ciphertext"], str):
            return Row(fid, side, UNREADABLE, "no ciphertext was sent", "ciphertext", kind="field", kid=kid)
        if eye is not None and isinstance(field["owner_wrap"], str):
            row = self._owner_field(side, field, eye)
        elif kid in self.field_keys:  # a change that keeps its key (no owner_wrap sent)
            row = self._kept_field(side, field)
        else:
            return _field_layout(side, field, body)
        if row.verdict == READABLE:
            self._check_self_wrap(body, field, row)
            self._check_grantee_wraps(body, row)
        return row

    def _owner_field(self, where: str, field: dict, eye: PhoneEye) -> Row:
        fid, kid = field["id"], field["kid"]
        trace = Trace(f"the owner's app opens field {fid}")
        try:
            key = records.open_record("field_owner_wrap", field["owner_wrap"], private_key=eye.key, trace=trace)
            _kid_step(trace, key, kid)
            _bound(trace, records.open_record("field", field["ciphertext"], key=key, trace=trace), field)
        except DecoyError:
            pass
        except Exception as exc:
            return _row(fid, where, "field", ERROR, f"opening stopped: {exc!r}", kid=kid, trace=trace)
        plain, key, why = eye.field(field)
        if why is not None or plain is None:
            reason = _cannot(trace, why or "the field does not open")
            return _row(fid, where, "field", UNREADABLE, reason, "field", kid=kid, opened_by="owner key", trace=trace)
        if key is not None:
            self.field_keys[kid] = key
        text, shown = self._describe("field", plain)
        return _row(fid, where, "field", READABLE, "", "", text, "owner key", shown, trace, kid=kid)

    def _kept_field(self, where: str, field: dict) -> Row:
        fid, kid = field["id"], field["kid"]
        key = self.field_keys[kid]
        trace = Trace(f"open field {fid} with the key of kid {kid}")
        try:
            plain = _bound(trace, records.open_record("field", field["ciphertext"], key=key, trace=trace), field)
        except DecoyError as exc:
            reason = f"the kept key of kid {kid} does not open it: {getattr(exc, 'reason', None) or exc}"
            return _row(fid, where, "field", UNREADABLE, reason, "ciphertext", kid=kid, opened_by="kept key",
                        trace=trace)  # fmt: skip
        text, shown = self._describe("field", plain)
        return _row(fid, where, "field", READABLE, "", "", text, "kept key", shown, trace, kid=kid)

    def _check_self_wrap(self, body: dict, field: dict, row: Row) -> None:
        """With the agent's key: `self_wrap` must give the very key the owner's app opened."""
        blob = body.get("self_wrap")
        if self.agent_key is None or not isinstance(blob, str):
            return
        try:
            key = sealing.unwrap_as_agent(blob, self.agent_key)
        except DecoyError as exc:
            row.verdict, row.problem = UNREADABLE, "self_wrap"
            row.reason = f"the owner's app opens it, but the agent cannot read it back: {exc}"
            return
        if key != self.field_keys.get(field["kid"]):
            row.verdict, row.problem = UNREADABLE, "self_wrap"
            row.reason = f"self_wrap holds another key (kid {wire.kid(key)}) than the field's (kid {field['kid']})"
        else:
            row.opened_by += ", agent key"

    def _check_grantee_wraps(self, body: dict, row: Row) -> None:
        """Each grantee wrap by layout: only its recipient's key opens it."""
        said: list[str] = []
        bad: list[str] = []
        for i, w in enumerate(_list(body.get("grantee_wraps"))):
            blob = w.get("wrapped_key")
            if not isinstance(blob, str):
                bad.append(f"grantee_wraps[{i}] carries no wrapped_key")
                continue
            ok, sentence = _fits(blob, "field_wrap")
            (said if ok else bad).append(f"grantee_wraps[{i}] {sentence}")
        if bad:
            row.verdict, row.problem, row.reason = UNREADABLE, "grantee_wraps", "; ".join(bad)
        row.certainty = "; ".join(said)

    def _served_field(self, where: str, served: dict) -> Row:
        fid, kid = str(served.get("id") or ""), str(served.get("kid") or "")
        if kid:
            self.field_kid[fid] = kid
        if self.agent_key is None:
            return _field_layout(where, served, served)
        trace = Trace(f"the agent reads field {fid}")
        try:
            plain = records.open_field(served, self.agent_key, trace=trace)
        except DecoyError as exc:
            step = trace.failed.name if trace.failed is not None else "reading"
            reason = f"the agent cannot open it: {step} failed ({getattr(exc, 'reason', None) or exc})"
            return _row(fid, where, "field", UNREADABLE, reason, "wrapped_key", kid=kid, opened_by="agent key",
                        trace=trace)  # fmt: skip
        except Exception as exc:
            return _row(fid, where, "field", ERROR, f"opening stopped: {exc!r}", kid=kid, trace=trace)
        for step in trace:  # the field key the unwrap gave, kept for a change that keeps it
            out = step.output
            if isinstance(out, (bytes, bytearray)) and len(out) == wire.KEY_LEN and wire.kid(bytes(out)) == kid:
                self.field_keys[kid] = bytes(out)
                break
        text, shown = self._describe("field", plain)
        return _row(fid, where, "field", READABLE, "", "", text, "agent key", shown, trace, kid=kid)

    # -- what is sealed to the agent -------------------------------------------------------------
    def _agent_blob(self, rid: str, where: str, kind: str, blob: Any, *, own: bool = True) -> list[Row]:
        """A blob sealed to a connection's key (a metadata seal, an unlock answer). `own`: it is
        this connection's own copy, so a key that does not open it is a fault, not another reader's."""
        if not isinstance(blob, str) or not blob:
            return []
        if self.agent_key is None:
            mistaken = self._sealed_to_owner(rid, where, blob) if own and kind == "metadata_seal" else None
            return [mistaken or _layout_row(rid, where, kind, blob, "")]
        trace = Trace(f"the agent opens the {KINDS[kind]} of {rid}")
        try:
            if kind in ("unlock_answer", "sealed_secret"):  # the same envelope: JSON sealed to this key
                value: Any = records.open_unlock_answer(blob, self.agent_key, trace=trace)
            else:
                value = records.open_details(blob, self.agent_key, kind=kind, trace=trace)
        except DecoyError as exc:
            if not own:
                return [_layout_row(rid, where, kind, blob, "sealed to another connection's key")]
            step = trace.failed.name if trace.failed is not None else "reading"
            reason = f"the agent cannot open it: {step} failed ({getattr(exc, 'reason', None) or exc})"
            return [_row(rid, where, kind, UNREADABLE, reason, kind, opened_by="agent key", trace=trace)]
        except Exception as exc:
            return [_row(rid, where, kind, ERROR, f"opening stopped: {exc!r}", trace=trace)]
        text, shown = self._describe(kind, value)
        return [_row(rid, where, kind, READABLE, "", "", text, "agent key", shown, trace)]

    def _sealed_to_owner(self, rid: str, where: str, blob: str) -> Row | None:
        """001: a `metadata_seals` entry is "the same record sealed to this connection's own public
        key". Without the agent's key, one the owner's key opens was sealed to the wrong key."""
        eye = self.eye()
        if eye is None:
            return None
        try:
            records.open_details(blob, eye.key, kind="metadata_seal")
        except Exception:  # sealed to some other key (the agent's, as it should be): not the owner's
            return None
        reason = "it opens with the owner's key: this connection's own copy is sealed to its own public key"
        return _row(rid, where, "metadata_seal", UNREADABLE, reason, "metadata_seal", opened_by="owner key")

    # -- words -----------------------------------------------------------------------------------
    def secret(self, value: Any) -> str:
        """A secret as the record shows it: its length only, unless revealing."""
        if self.reveal:
            return str(value)
        n = len(value) if isinstance(value, str) else 0
        return f"{MASK} ({plural(n, 'character')})"

    def masked(self, obj: Any, depth: int = 0) -> Any:
        """`obj` with every secret value masked (a field's `value` when it is not a plain `string`)."""
        if self.reveal or depth > 16:
            return obj
        if isinstance(obj, dict):
            plain_field = obj.get("fieldType") == "string"
            return {
                k: self.secret(v)
                if k in SECRET_VALUES and isinstance(v, str) and not (k == "value" and plain_field)
                else self.masked(v, depth + 1)
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self.masked(v, depth + 1) for v in obj]
        return obj

    def _describe(self, kind: str, value: Any) -> tuple[str | None, Any]:
        """(the row's text, its plaintext), secrets masked."""
        if kind == "credential":
            return f"password {self.secret(value)}", {"password": self.secret(value)}
        shown = self.masked(value)
        if not isinstance(value, dict):
            return None, shown
        if kind == "account_record":
            return acctopen.record_name(value) or "(no name)", shown
        if kind == "field":
            return f"{value.get('label') or '(no label)'}: {shown.get('value')}", shown
        if kind == "edit_patch":
            changes: dict = value["set"] if isinstance(value.get("set"), dict) else {}
            sets = [f"{k} → {v!r}" for k, v in changes.items()]
            unsets = [f"unset {k}" for k in value.get("unset") or [] if isinstance(k, str)]
            return "; ".join(sets + unsets) or "(no change)", shown
        if kind == "unlock_answer":
            return self._unlock_text(value, shown), shown
        if kind == "sealed_secret":
            who = f"username {shown.get('username')}; " if shown.get("username") else ""
            return f"login for {value.get('host') or 'a site not named'}: {who}password {shown.get('password')}", shown
        name = value.get("serviceName")
        url = value.get("serviceURL")
        return (f"{name} ({url})" if url else str(name)) if name else "(no name)", shown

    def _unlock_text(self, value: dict, shown: dict) -> str:
        parts = [acctopen.record_name(value.get("record")) or f"account {value.get('account_id')}"]
        auth = shown.get("basic-auth")
        if isinstance(auth, dict):
            if auth.get("username"):
                parts.append(f"username {auth['username']}")
            if auth.get("password") is not None:
                parts.append(f"password {auth['password']}")
        fields = shown.get("custom-fields")
        if isinstance(fields, list) and fields:
            labels = [str(f.get("label")) for f in fields if isinstance(f, dict)]
            parts.append(f"{plural(len(labels), 'field')}: {', '.join(labels)}")
        return "; ".join(parts)


# -- the recipes, the phone, the layouts -----------------------------------------------------------
def _owner_recipe(kind: str, blob: str, owner_key: AgentKey, vault_key: bytes | None, t: Trace) -> Any:
    """The recipe the owner's app runs on `blob`, recorded into `t`; raises where it fails."""
    if vault_key is not None and _is_vault(blob):  # VAULT mode: an account record, details, a password
        return sealing.open_json(vault_key, blob, trace=t)
    if kind == "account_record":
        return records.open_account_record(blob, owner_key, trace=t)
    if kind == "credential":
        return records.open_credential(blob, owner_key, trace=t)
    if kind == "sealed_details":
        return records.open_details(blob, owner_key, kind="sealed_details", trace=t)
    return records.open_record(kind, blob, private_key=owner_key, trace=t)


def _phone(eye: PhoneEye, kind: str, blob: str, vault: bool) -> Opened:
    """The owner's phone's own check of `blob` (its verdict and words)."""
    try:
        if kind in ("account_record", "decoy_details"):
            return eye.record(blob, "vault" if vault else "envelope")
        if kind == "credential":
            return eye.password(blob)
        return eye.sealed(blob, "sealed_patch" if kind == "edit_patch" else kind)
    except Exception as exc:  # the phone's check stopped: said, never raised
        return None, f"the owner's phone stopped: {exc!r}"


def _cannot(t: Trace, why: str) -> str:
    """The owner's reason, naming the recipe's step that fails (added to `t` when none did)."""
    if t.failed is None:
        t.add(f"the owner's app: {why}", ok=False, reason=why)
        return f"the owner's app cannot open it: {why}"
    return f"the owner's app cannot open it: {t.failed.name} failed ({why})"


def _kid_step(t: Trace, key: bytes, kid: str) -> None:
    with t.step("kid check", inputs={"field kid": kid}) as s:
        if wire.kid(key) != kid:
            raise CryptoError(f"the key in owner_wrap is kid {wire.kid(key)}, not the field's kid {kid}",
                                      step="kid check")  # fmt: skip
        s.output = "matches"


def _bound(t: Trace, plain: Any, field: dict) -> dict:
    """001: "A blob that names another row must be rejected": its `id` and `account_id`."""
    with t.step("bind check: id and account_id", inputs={"id": field["id"], "account_id": field["account_id"]}) as s:
        if not isinstance(plain, dict):
            raise UnreadableRow(field["id"], "the field's plaintext is not a JSON object")
        if plain.get("id") != field["id"] or plain.get("account_id") != field["account_id"]:
            raise UnreadableRow(field["id"], "the field's plaintext names another row (its id or account_id)")
        s.output = "bound"
    return plain


def _is_vault(blob: str) -> bool:
    raw = wire.canonical_b64decode(blob) or b""
    return raw[:2] == wire.VAULT_HEADER


def _record_kind(kind: str, blob: str) -> str:
    """The RECORDS kind (or the layout) a row's blob is parsed as: VAULT mode is a VAULT blob; a
    sealed login travels as an unlock answer does (JSON in an envelope to the agent's key)."""
    if kind == "decoy_details" or (kind in ("account_record", "credential") and _is_vault(blob)):
        return "vault"
    return "unlock_answer" if kind == "sealed_secret" else kind


def _fits(blob: str, kind: str) -> tuple[bool, str]:
    """Does `blob` fit the layout `kind` travels in? (and the sentence that says how sure)."""
    try:
        raw = wire.b64decode(blob, field=kind)
    except DecoyError as exc:
        return False, str(exc)
    found, sentence, _ = dump.identify(raw)
    want = wire.layout_of(kind)
    if found != want:
        return False, f"should be {want.replace('_', ' ')}; it {sentence}"
    return True, sentence


def _layout_row(rid: str, where: str, kind: str, blob: str, why: str) -> Row:
    """No key opens it: its record's layout, and how sure that is; a misfit is flagged."""
    record = _record_kind(kind, blob)
    ok, sentence = _fits(blob, record)

    def run() -> Trace:
        return dump.open_blob(blob, record=record) if record in wire.RECORDS else dump.open_blob(blob)

    member = where.rsplit(".", 1)[-1]
    if not ok:
        return Row(rid, where, UNREADABLE, f"{member} {sentence}", "layout", kind=KINDS[kind], rerun=run)
    reason = f"no key opens it: {why}" if why else "no key opens it: parsed by layout only"
    return Row(rid, where, LAYOUT, reason, kind=KINDS[kind], certainty=f"{member} {sentence}", rerun=run)


def _field_layout(where: str, field: dict, body: dict) -> Row:
    """A field no key opens: its ciphertext and each wrap by layout."""
    fid, kid = str(field.get("id") or ""), str(field.get("kid") or "")
    said: list[str] = []
    bad: list[str] = []
    members = [("ciphertext", "field"), ("owner_wrap", "field_owner_wrap"), ("self_wrap", "field_wrap"),
               ("wrapped_key", "field_wrap")]  # fmt: skip
    for member, kind in members:
        blob = body.get(member)
        if isinstance(blob, str):
            ok, sentence = _fits(blob, kind)
            (said if ok else bad).append(f"{member} {sentence}")
    ct = body.get("ciphertext")

    def run() -> Trace:
        return dump.open_blob(ct, record="field") if isinstance(ct, str) else Trace("no ciphertext")

    if bad:
        return Row(fid, where, UNREADABLE, "; ".join(bad), "layout", kind="field", kid=kid,
                   certainty="; ".join(said), rerun=run)  # fmt: skip
    reason = "no key opens it: parsed by layout only"
    return Row(fid, where, LAYOUT, reason, kind="field", kid=kid, certainty="; ".join(said), rerun=run)


def _row(
    rid: str,
    where: str,
    kind: str,
    verdict: str,
    reason: str = "",
    problem: str = "",
    text: str | None = None,
    opened_by: str = "",
    plaintext: Any = None,
    trace: Trace | None = None,
    *,
    kid: str = "",
) -> Row:
    return Row(rid, where, verdict, reason, problem, text, KINDS[kind], kid, opened_by, plaintext=plaintext,
               trace=trace)  # fmt: skip


def _list(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
