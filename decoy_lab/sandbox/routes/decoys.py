"""Decoy addresses: create one with its account, read it, update it, and queue an edit of its name.

`POST /api/agent/decoys`: "**Create an account.** This call creates the account and its Decoy
email address in one call … Needs `account.create`. Without it the call answers `403
SCOPE_MISSING` naming `decoy.write`". "A request carries the record in exactly one of three forms":
`encrypted_data` (VAULT), `sealed_details` with `metadata_seals` (one entry, this connection's own
copy), or `service_name` / `service_url` / `avatar` in plain text. `idempotency_key`: "Repeating
the same key (same token) returns the ORIGINAL decoy with `idempotent_replay: true` instead of
creating another." Limit: "One connection creates at most 40 addresses in 10 minutes and 200 in 24
hours … A refused request and a repeat of an `idempotency_key` are not counted".

`PATCH …/{decoyId}`: "A plaintext `avatar` or `service_name` (without `encrypted_data`) is refused
with `400` `code: ENCRYPTED_DATA_REQUIRED`"; "every write of the decoy's metadata blob
(`encrypted_data`) increments its `rev` … `label`/`status` changes don't bump `rev`, but are
refused the same way when `expected_rev` is stale."

`POST …/{decoyId}/edits`: a patch "sealed to the owner's public key … the owner's devices … apply
it", `202` at once; "One connection may queue 10 edits a minute (`429 RATE_LIMITED` …) and hold 20
pending edits; a user holds 100 in total (`429 TOO_MANY_PENDING_EDITS`)"; "At most 8192 bytes
sealed (`413 SEALED_PATCH_TOO_LARGE`)". `GET …/edits/{editId}`: "The agent that queued the edit can
always read it; any other agent needs `decoy.read` and `acctmail.edit` on the decoy's account".
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks.acctbodies import (
    expected_rev,
    rev_conflict,
    sealed_record,
    sealed_to,
    status_value,
    wrapped_len,
)
from decoy_lab.sandbox.checks.acctshapes import decoy_json, edit_json
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import rsa_bytes, uuid_text, vault_blob
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.checks.grants import new_id
from decoy_lab.sandbox.core import (
    HTTPProblem,
    SandboxState,
    bad_request,
    json_body,
    optional_json_body,
    state_of,
)
from decoy_lab.sandbox.phone import acctopen, keeper
from decoy_lab.sandbox.stores import acctstore as acs

EDITS_PER_MINUTE, PENDING_PER_CONNECTION, PENDING_PER_USER = 10, 20, 100
VAULT_ONLY = ("resolves_edit_id", "metadata_seals", "vault_key_fp")  # "Vault-key surfaces only"
FP_RE = re.compile(r"[0-9a-f]{16}")
MAX_SEALS = 200  # metadata_seals: "maxItems: 200"


def _metadata_seal(body: dict[str, Any], agent: Agent) -> str:
    """The one `metadata_seals` entry: this connection's own copy of the record."""
    seals = body.get("metadata_seals")
    if not seals:
        raise bad_request("METADATA_SEAL_REQUIRED", "sealed_details goes with metadata_seals (this connection's copy)")
    if not isinstance(seals, list) or len(seals) != 1 or not isinstance(seals[0], dict):
        raise bad_request("INVALID_METADATA_SEALS", "metadata_seals is one entry {token_id, sealed_envelope}")
    if seals[0].get("token_id") != agent.token_id:
        raise bad_request("METADATA_SEAL_NOT_FOR_CALLER", "the one entry is for this connection's own token_id")
    if not agent.public_key:
        raise bad_request("METADATA_SEAL_NO_KEY", "this connection registered no public key to seal a copy to")
    data = sealed_to(
        seals[0].get("sealed_envelope"),
        "metadata_seals[0].sealed_envelope",
        code="INVALID_METADATA_SEALS",
        too_large="METADATA_SEAL_TOO_LARGE",
    )
    if wrapped_len(data) != rsa_bytes(agent.public_key):
        raise bad_request("INVALID_METADATA_SEALS", "the wrapped key is not the size of this connection's key")
    return seals[0]["sealed_envelope"]


def _details(body: dict[str, Any], agent: Agent, owner_pk: str | None) -> dict[str, Any]:
    """The decoy's details in the one form the request carries them in."""
    plain = any(body.get(k) is not None for k in ("service_name", "service_url", "avatar"))
    forms = [
        k
        for k, v in (("encrypted_data", body.get("encrypted_data")), ("sealed_details", body.get("sealed_details")))
        if v is not None
    ]
    if body.get("sealed_details") is not None and (plain or len(forms) > 1):
        raise bad_request("INVALID_SEALED_DETAILS", "sealed_details is not sent with encrypted_data or service_name")
    if len(forms) + plain != 1:
        raise bad_request("INVALID_REQUEST", "exactly one of encrypted_data, sealed_details or service_name")
    if body.get("sealed_details") is not None:
        if not owner_pk:
            raise bad_request("NO_USER_PUBLIC_KEY", "the owner has no public key on file")
        data = sealed_to(
            body["sealed_details"],
            "sealed_details",
            code="INVALID_SEALED_DETAILS",
            too_large="SEALED_DETAILS_TOO_LARGE",
        )
        if wrapped_len(data) != 256 or rsa_bytes(owner_pk) != 256:  # "The wrapped key is 256 bytes"
            raise bad_request("INVALID_SEALED_DETAILS", "the wrapped key must be 256 bytes (the owner's RSA-2048 key)")
        return {"details_mode": "sealed", "sealed_details": body["sealed_details"], "seal": _metadata_seal(body, agent)}
    if body.get("encrypted_data") is not None:
        return {"details_mode": "vault", "encrypted_data": vault_blob(body["encrypted_data"], "encrypted_data")}
    name = body.get("service_name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise bad_request("INVALID_REQUEST", "service_name is text of 1 to 200 characters", "service_name")
    url, avatar = body.get("service_url"), body.get("avatar")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise bad_request("INVALID_REQUEST", "service_url is an http or https URL", "service_url")
    if avatar is not None and not isinstance(avatar, str):
        raise bad_request("INVALID_REQUEST", "avatar is a variant name", "avatar")
    return {"details_mode": "plain", "service_name": name.strip(), "service_url": url, "avatar": avatar}


def _replay(con: sqlite3.Connection, agent: Agent, key: Any, now: float) -> dict | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > 128:
        raise bad_request("INVALID_REQUEST", "idempotency_key is text of at most 128 characters", "idempotency_key")
    decoy = acs.decoy_by_key(con, agent.token_id, key)
    return None if decoy is None else {**decoy_json(con, decoy, agent, now), "idempotent_replay": True}


async def create_decoy(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_create(con, agent, now)
        replay = _replay(con, agent, body.get("idempotency_key"), now)
        if replay is not None:
            return JSONResponse(replay, status_code=200)
        details = _details(body, agent, state.owner.public_key_b64)
        label = label_value(body.get("label"))
        access.need_address_room(con, agent, now)
        # "Optional client-sealed VAULT account record", and for a keyless agent the owner's key:
        # "Seal the record to this key (SealedBlob **ENVELOPE** mode …) and send it as
        # `account_encrypted_data`": either mode, kept with its mode so the phone opens it.
        account_blob, account_mode = body.get("account_encrypted_data"), None
        if account_blob is not None:
            account_blob, account_mode = sealed_record(account_blob, "account_encrypted_data")
        decoy_id, account_id, seal = new_id(), new_id(), details.pop("seal", None)
        acs.insert_account(
            con,
            id=account_id,
            encrypted_data=account_blob,
            blob_mode=account_mode,
            service_name=details.get("service_name"),
            decoy_id=decoy_id,
            created_by_token_id=agent.token_id,
            created_at=now,
            updated_at=now,
        )
        acs.insert_decoy(
            con,
            id=decoy_id,
            account_id=account_id,
            email=acs.new_address(con),
            label=label,
            forward_enabled=int(body.get("forward_enabled") is True),
            created_by_token_id=agent.token_id,
            idempotency_key=body.get("idempotency_key"),
            created_at=now,
            updated_at=now,
            **details,
        )
        decoy = acs.get_decoy(con, decoy_id)
        assert decoy is not None
        if seal is not None:
            acs.put_decoy_seal(con, decoy_id, agent.token_id, seal, agent.public_key, now)
        elif details["details_mode"] == "plain" and agent.public_key:  # "the server … seals them"
            sealed = keeper.seal_details(state, decoy, agent.public_key)
            acs.put_decoy_seal(con, decoy_id, agent.token_id, sealed, agent.public_key, now)
        out = {**decoy_json(con, decoy, agent, now), "account_id": account_id}
    if details["details_mode"] == "plain":
        out.update(service_name=details["service_name"], service_url=details["service_url"])
    elif details["details_mode"] == "sealed":
        out["metadata_seals_stored"] = 1
    keeper.ask(state, now)
    return JSONResponse(out, status_code=201)


def _decoy(con: sqlite3.Connection, request: Request) -> tuple[sqlite3.Row, sqlite3.Row | None]:
    decoy = access.decoy_or_404(con, request.path_params["decoy_id"])
    return decoy, access.decoy_account(con, decoy)


def _editable(
    con: sqlite3.Connection, request: Request, agent: Agent, now: float, scope: str, what: str
) -> sqlite3.Row:
    """`x-scope: <scope>` with `acctmail.edit`, then the right to edit the path's decoy (403
    otherwise): the decoy."""
    access.need_scope(con, agent, now, scope, "acctmail.edit", what=what)
    decoy, account = _decoy(con, request)
    access.require_edit_decoy(con, agent, now, decoy, account)
    return decoy


async def get_decoy(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.read", "acctmail.read", what="reading a decoy")
        decoy, account = _decoy(con, request)
        if not access.may_read_decoy(agent, decoy, account):
            raise access.refuse_decoy(con, agent, now, decoy, "acctmail.read")
        return JSONResponse(decoy_json(con, decoy, agent, now))


def _vault_fp(state: SandboxState, body: dict[str, Any]) -> None:
    """ "Compared with the account's recorded fingerprint before anything is written, never
    recorded: 409 `VAULT_KEY_DRIFT` if they differ, 409 `VAULT_KEY_UNRECORDED` if the account has none.\""""
    fp = body["vault_key_fp"]
    if not isinstance(fp, str) or not FP_RE.fullmatch(fp):
        raise bad_request("INVALID_REQUEST", "vault_key_fp is 16 lowercase hex characters", "vault_key_fp")
    recorded = acctopen.recorded_fp(state)
    if recorded is None:
        raise HTTPProblem(409, "VAULT_KEY_UNRECORDED", "the account has no recorded vault-key fingerprint to check")
    if fp != recorded:
        raise HTTPProblem(409, "VAULT_KEY_DRIFT", "vault_key_fp is not the account's recorded fingerprint")


def _resolving(con: sqlite3.Connection, decoy: sqlite3.Row, edit_id: Any, now: float) -> sqlite3.Row:
    edit = acs.get_edit(con, edit_id) if isinstance(edit_id, str) else None
    if edit is None or edit["decoy_id"] != decoy["id"]:
        raise HTTPProblem(404, "EDIT_NOT_FOUND", "resolves_edit_id is not an edit of this decoy")
    status = edit_json(edit, now)["status"]
    if status != "pending":
        msg = f"the edit is already {status}: nothing was written"
        raise HTTPProblem(
            409, "EDIT_ALREADY_RESOLVED", msg, error={"code": "EDIT_ALREADY_RESOLVED", "message": msg, "status": status}
        )
    return edit


def _new_seals(con: sqlite3.Connection, decoy: sqlite3.Row, seals: Any, now: float) -> dict[str, tuple[str, str]]:
    """`metadata_seals` on a vault-key write: token id → (envelope, the recipient's key). "A seal for a
    connection that is not a recipient at write time is dropped.\""""
    if not isinstance(seals, list) or len(seals) > MAX_SEALS or not all(isinstance(x, dict) for x in seals):
        raise bad_request(
            "INVALID_METADATA_SEALS", f"metadata_seals is at most {MAX_SEALS} {{token_id, sealed_envelope}}"
        )
    readers = {a.token_id: a.public_key for a in keeper.recipients(con, decoy, now)}
    out: dict[str, tuple[str, str]] = {}
    for i, seal in enumerate(seals):
        data = sealed_to(
            seal.get("sealed_envelope"),
            f"metadata_seals[{i}].sealed_envelope",
            code="INVALID_METADATA_SEALS",
            too_large="METADATA_SEAL_TOO_LARGE",
        )
        key = readers.get(seal.get("token_id"))
        if key is None:
            continue
        if wrapped_len(data) != rsa_bytes(key):
            raise bad_request("INVALID_METADATA_SEALS", f"metadata_seals[{i}] is not sealed to that recipient's key")
        out[seal["token_id"]] = (seal["sealed_envelope"], key)
    return out


def label_value(value: Any) -> str | None:
    """An address's `label` ("`label` is plain text in every form"; `nullable` on update): text of at
    most 200 characters (the sandbox's bound), or None."""
    if value is not None and (not isinstance(value, str) or len(value) > 200):
        raise bad_request("INVALID_REQUEST", "label is text of at most 200 characters", "label")
    return value


async def update_decoy(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await optional_json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        decoy = _editable(con, request, agent, now, "decoy.write", what="updating a decoy")
        plain = [k for k in ("service_name", "avatar") if k in body]
        if plain and body.get("encrypted_data") is not None:
            raise bad_request("INVALID_REQUEST", "encrypted_data cannot be combined with avatar or service_name")
        if plain:
            raise bad_request(
                "ENCRYPTED_DATA_REQUIRED",
                "the name and avatar are sealed: re-seal encrypted_data, or queue POST …/edits without the vault key",
                plain[0],
            )
        if any(body.get(k) is not None for k in VAULT_ONLY):
            access.need_vault_key(con, agent, now)  # "Without the vault key: 403 `VAULT_KEY_REQUIRED`"
        if body.get("encrypted_data") is None and any(body.get(k) is not None for k in VAULT_ONLY[:2]):
            raise bad_request("ENCRYPTED_DATA_REQUIRED", "resolves_edit_id and metadata_seals go with encrypted_data")
        if body.get("vault_key_fp") is not None:
            _vault_fp(state, body)
            if not any(k in body for k in ("encrypted_data", "label", "status")):  # "only this check"
                return JSONResponse({"decoy_id": decoy["id"], "vault_key_fp_verified": True})
        values: dict[str, Any] = {}
        if body.get("encrypted_data") is not None:
            values.update(encrypted_data=vault_blob(body["encrypted_data"], "encrypted_data"), details_mode="vault")
            values["rev"] = decoy["rev"] + 1
        if "label" in body:
            values["label"] = label_value(body["label"])  # "`label` is plain text in every form"
        if "status" in body:
            values["status"] = status_value(body["status"])
        want = expected_rev(body.get("expected_rev"))
        if want is not None and want != decoy["rev"]:
            raise rev_conflict(f"the decoy changed since it was read (rev {decoy['rev']} now)", decoy["rev"])
        edit = _resolving(con, decoy, body["resolves_edit_id"], now) if body.get("resolves_edit_id") else None
        seals = _new_seals(con, decoy, body["metadata_seals"], now) if body.get("metadata_seals") is not None else None
        acs.update_decoy(con, decoy["id"], updated_at=now, **values)
        out: dict[str, Any] = {"decoy_id": decoy["id"], "updated": True, "rev": values.get("rev", decoy["rev"])}
        if "encrypted_data" in values:
            # "every write of `encrypted_data` … empties, in the same step, the copy of each connection it carries no seal for"
            acs.drop_decoy_seals(con, decoy["id"], keep=())
            for token_id, (envelope, key) in (seals or {}).items():
                acs.put_decoy_seal(con, decoy["id"], token_id, envelope, key, now)
            if any(a.token_id not in (seals or {}) for a in keeper.recipients(con, decoy, now)):
                keeper.ask(state, now)  # "the owner's phone is asked with a silent push"
        if seals is not None:
            out["metadata_seals_stored"] = len(seals)
        if edit is not None:
            acs.update_edit(con, edit["id"], status="applied", applied_rev=out["rev"], resolved_at=now)
            out["resolved_edit"] = {"edit_id": edit["id"], "status": "applied", "applied_rev": out["rev"]}
        if body.get("vault_key_fp") is not None:
            out["vault_key_fp_verified"] = True
    return JSONResponse(out)


async def queue_edit(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        decoy = _editable(con, request, agent, now, "decoy.write", what="queuing a decoy edit")
        if body.get("account_id") is not None and uuid_text(body["account_id"], "account_id") != decoy["account_id"]:
            raise bad_request("ACCOUNT_NOT_LINKED", "account_id is not the account this decoy belongs to", "account_id")
        sealed_to(
            body.get("sealed_patch"),
            "sealed_patch",
            code="INVALID_SEALED_PATCH",
            too_large="SEALED_PATCH_TOO_LARGE",
            cap=8192,
        )
        wait = access.limited(acs.edits_since(con, agent.token_id, now - 60.0), now, ((60.0, EDITS_PER_MINUTE),))
        if wait is not None:
            raise HTTPProblem(429, "RATE_LIMITED", "10 edits a minute from one connection", retry_after_seconds=wait)
        if (
            len(acs.pending_edits(con, agent.token_id)) >= PENDING_PER_CONNECTION
            or len(acs.pending_edits(con)) >= PENDING_PER_USER
        ):
            raise HTTPProblem(
                429, "TOO_MANY_PENDING_EDITS", "retry once the queued edits are applied", retry_after_seconds=60
            )
        edit_id = new_id()
        acs.insert_edit(
            con,
            id=edit_id,
            decoy_id=decoy["id"],
            token_id=agent.token_id,
            sealed_patch=body["sealed_patch"],
            account_id=decoy["account_id"],
            base_rev=body.get("base_rev") if isinstance(body.get("base_rev"), int) else None,
            created_at=now,
        )
    return JSONResponse({"edit_id": edit_id, "status": "pending"}, status_code=202)


async def edit_status(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        edit = acs.get_edit(con, request.path_params["edit_id"])
        if edit is None or edit["decoy_id"] != request.path_params["decoy_id"]:
            raise HTTPProblem(404, "EDIT_NOT_FOUND", "no such edit of this decoy")
        if edit["token_id"] != agent.token_id:
            _editable(con, request, agent, now, "decoy.read", what="reading a decoy edit")
    return JSONResponse(edit_json(edit, now))


routes = [
    Route("/api/agent/decoys", faulty(create_decoy), methods=["POST"]),
    Route("/api/agent/decoys/{decoy_id}", get_decoy, methods=["GET"]),
    Route("/api/agent/decoys/{decoy_id}", update_decoy, methods=["PATCH"]),
    Route("/api/agent/decoys/{decoy_id}/edits", faulty(queue_edit), methods=["POST"]),
    Route("/api/agent/decoys/{decoy_id}/edits/{edit_id}", edit_status, methods=["GET"]),
]
