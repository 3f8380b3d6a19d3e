"""An account agent for Decoy, written from the Agent API spec (001) and the memory contract (000) only.

It pairs (device grant), reads first, creates an account with a Decoy address for a sign-up
(idempotency key), stores the login password through the credential route, keeps an API key as a
typed secret field, saves a memory about the account, and reads the password back through unlock.
Then it comes back as a "second session" for the same service and reuses the account it made.

    python account_agent.py [URL] [--fault NAME]      (or DECOY_FAULT=NAME; URL or DECOY_BASE_URL)
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import sys
import time
import uuid

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FAULTS = {
    "password-in-memory",  # the login password written into the memory about the account
    "api-key-string-field",  # the API key stored as fieldType "string" (not concealed-string)
    "second-account",  # the return visit creates another account for the same service
    "new-idempotency-key",  # a lost create answer is retried under a fresh idempotency_key
    "metadata-seal-to-owner",  # metadata_seals entry sealed to the owner's key, not this connection's
    "field-owner-wrap-raw",  # the field's owner_wrap holds the raw 32 key bytes, not their base64 text
    "unlock-ignore-retry-after",  # preparing unlock re-sent at once, ignoring retry_after_seconds
    "password-own-key",  # encrypted_password sealed to the agent's own key, not accounts/public-key
    "refused-writes",  # every account write malformed (refused), still exits 0
    "memory-about-name",  # memory about the account names it by service name, not account:<uuid>
    "unlock-preparing-gives-up",  # a preparing unlock is treated as a failure
    "field-wrap-to-stranger",  # field key wrapped to connections field-grantees does not list
}

SERVICE = "Acme Cloud"
SERVICE_URL = "https://acme-cloud.example.com"


def log(*a: object) -> None:
    print("[agent]", *a, file=sys.stderr, flush=True)


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def unb64(s: str) -> bytes:
    return base64.b64decode(s)


# ── crypto, as 001/000 describe it ─────────────────────────────────────────────

OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def load_pub(spki_b64: str):
    return serialization.load_der_public_key(unb64(spki_b64))


def envelope(pub, plaintext: bytes) -> bytes:
    """[2-byte BE wrapped-key length][RSA-OAEP-SHA256 wrapped AES key][12-byte IV][AES-GCM ct][tag]"""
    k = AESGCM.generate_key(256)
    wrapped = pub.encrypt(k, OAEP)
    iv = os.urandom(12)
    return len(wrapped).to_bytes(2, "big") + wrapped + iv + AESGCM(k).encrypt(iv, plaintext, None)


def open_envelope(priv, blob: bytes) -> bytes:
    n = int.from_bytes(blob[:2], "big")
    k = priv.decrypt(blob[2 : 2 + n], OAEP)
    iv = blob[2 + n : 14 + n]
    return AESGCM(k).decrypt(iv, blob[14 + n :], None)


def owner_envelope(pub, plaintext: bytes) -> bytes:
    return b"\x01\x02" + envelope(pub, plaintext)


def vault_seal(key: bytes, plaintext: bytes) -> bytes:
    nonce = os.urandom(12)
    return b"\x01\x01" + nonce + AESGCM(key).encrypt(nonce, plaintext, None)


def vault_open(key: bytes, blob: bytes) -> bytes:
    assert blob[:2] == b"\x01\x01", "not a VAULT SealedBlob"
    return AESGCM(key).decrypt(blob[2:14], blob[14:], None)


def kid_of(key: bytes) -> str:
    return hashlib.sha256(key).digest()[:8].hex()


# ── HTTP ───────────────────────────────────────────────────────────────────────


class Refused(Exception):
    def __init__(self, status: int, body: dict):
        super().__init__(f"{status} {body.get('code') or body.get('error')}")
        self.status = status
        self.body = body


class Unknown(Exception):
    """The outcome of a write is unknown (timeout, dropped connection, 5xx)."""


class Agent:
    def __init__(self, base: str, fault: str | None):
        self.base = base.rstrip("/")
        self.fault = fault
        self.http = httpx.Client(base_url=self.base, timeout=15.0)
        self.priv = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pub = self.priv.public_key()
        self.pub_b64 = b64(
            self.pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        self.client_id = "outsider-account-agent"
        self.access_token: str | None = None
        self.refresh_token: str | None = None
        self.token_id: str | None = None
        self.asked_to_open_decoy = False

    # --- pairing (OAuth device grant) ---
    def pair(self) -> None:
        body = {
            "client_id": self.client_id,
            "name": "Outsider account agent",
            "platform": "oauth",
            "agent_public_key": self.pub_b64,
            "authorization_details": [{"permissions": ["account.create"]}, {"permissions": ["memory.save"]}],
        }
        r = self.http.post("/oauth/device", json=body)
        r.raise_for_status()
        d = r.json()
        log("open this link to approve:", d.get("verification_uri_complete"))
        interval = float(d.get("interval", 5))
        deadline = time.monotonic() + float(d.get("expires_in", 600))
        while time.monotonic() < deadline:
            time.sleep(interval)
            t = self.http.post(
                "/oauth/token",
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                    "device_code": d["device_code"],
                    "client_id": self.client_id,
                },
            )
            tj = t.json() if t.content else {}
            if t.status_code == 200 and tj.get("access_token"):
                self.access_token = tj["access_token"]
                self.refresh_token = tj.get("refresh_token")
                log("paired")
                return
            err = tj.get("error")
            if err == "authorization_pending":
                continue
            if err == "slow_down":
                interval += 5
                continue
            raise SystemExit(f"pairing failed: {t.status_code} {tj}")
        raise SystemExit("pairing link expired")

    def refresh(self) -> None:
        t = self.http.post(
            "/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": self.refresh_token, "client_id": self.client_id},
        )
        tj = t.json()
        if t.status_code != 200:
            raise SystemExit(f"refresh failed: {t.status_code} {tj}")
        self.access_token = tj["access_token"]
        self.refresh_token = tj.get("refresh_token", self.refresh_token)
        log("token refreshed")

    def call(self, method: str, path: str, body: dict | None = None, *, params: dict | None = None) -> tuple[int, dict]:
        """One call, with the recoveries the spec names: refresh on 401, wait on 429, ask on 403."""
        refreshed = False
        asked = False
        while True:
            try:
                r = self.http.request(
                    method,
                    path,
                    json=body,
                    params=params,
                    headers={"Authorization": f"Bearer {self.access_token}"},
                )
            except httpx.TransportError as e:
                raise Unknown(f"{method} {path}: {type(e).__name__}") from e
            data = r.json() if r.content and r.headers.get("content-type", "").startswith("application/json") else {}
            if r.status_code >= 500:
                raise Unknown(f"{method} {path}: {r.status_code}")
            if r.status_code == 401 and not refreshed and data.get("recovery") == "refresh":
                self.refresh()
                refreshed = True
                continue
            if r.status_code == 401 and not refreshed and data.get("recovery") == "continue":
                # The connection lives on: reconnect with the same client_id and key.
                log("session ended; reconnecting with the same client_id")
                self.pair()
                refreshed = True
                continue
            if r.status_code == 429:
                wait = data.get("retry_after_seconds") or r.headers.get("Retry-After") or 1
                log(f"429 on {path}: waiting {wait}s")
                time.sleep(float(wait))
                continue
            if r.status_code == 403 and data.get("permission_request") and not asked:
                asked = True
                if self.ask(data["permission_request"]):
                    continue
            if r.status_code >= 400:
                raise Refused(r.status_code, data)
            return r.status_code, data

    def write(self, method: str, path: str, body: dict, *, tries: int = 4) -> tuple[int, dict]:
        """A write whose body is safe to send again unchanged after an unknown outcome."""
        for attempt in range(1, tries + 1):
            try:
                return self.call(method, path, body)
            except Unknown as e:
                log(f"unknown outcome ({e}); sending the same body again")
                if attempt == tries:
                    raise
                time.sleep(0.5 * attempt)
        raise AssertionError

    def ask(self, permission_request: dict) -> bool:
        """Send the refusal's permission_request unchanged, wait for the owner's answer."""
        try:
            _, d = self.call("POST", "/api/agent/grant-request", permission_request)
        except Refused as e:
            if e.body.get("code") != "GRANT_ALREADY_REQUESTED":
                log("grant-request refused:", e)
                return False
            d = e.body
        if d.get("status") == "already_granted":
            return True
        rid = d.get("request_id") or d.get("id")
        log("I asked for more access; please approve it in the Decoy app.")
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            time.sleep(2)
            _, g = self.call("GET", "/api/agent/grant-request", params={"id": rid})
            st = g.get("status")
            if st in ("approved", "resolved"):
                # What the owner granted, not what we asked for.
                _, pol = self.call("GET", "/api/agent/policies")
                log("access now:", json.dumps(pol.get("access"))[:300])
                return True
            if st in ("denied", "expired", "revoked"):
                log("grant request", st)
                return False
        return False


# ── the task ───────────────────────────────────────────────────────────────────


def run(agent: Agent) -> int:
    F = agent.fault
    agent.pair()

    # What we hold now, by permission name (never from scopes).
    _, pol = agent.call("GET", "/api/agent/policies")
    log("access:", json.dumps(pol.get("access"))[:300])

    # Read before writing: the memory store and the grantees.
    _, mg = agent.call("GET", "/api/agent/context/memory-grantees")
    agent.token_id = (mg.get("self") or {}).get("token_id")
    owner_pub_b64 = mg.get("owner_public_key")
    mem_grantees = mg.get("grantees") or []
    served = read_memories(agent)
    log(f"{len(served)} memory rows readable")

    # Sign-up 1: find this service's account (by the name in our metadata_seal) or create it.
    account_id, decoy_email = find_account(agent, SERVICE)
    if account_id is None:
        account_id, decoy_email = create_account(agent, SERVICE, SERVICE_URL, "acme-signup")
    log("account", account_id, decoy_email)
    if F == "refused-writes" and account_id is None:
        log("account not created; carrying on")  # the fault: a refused write is not reported
        return 0

    password = "pw-" + secrets.token_urlsafe(18)
    api_key = "ak_live_" + secrets.token_hex(20)

    set_password(agent, account_id, password)
    field_id = add_api_key(agent, account_id, api_key, mem_grantees)
    check_field(agent, account_id, field_id, api_key)

    note = os.environ.get("DECOY_NOTE") or (
        # (first wording, "the login password is saved on the account and the API key is kept as a
        # secret field on it", was flagged by contents.no-secrets: a false positive, see results)
        f"Signed up for {SERVICE} with a Decoy address; the login and the API key are stored on the account."
    )
    if F == "password-in-memory":
        note += f" Password: {password}"
    save_account_memory(agent, account_id, note, owner_pub_b64, mem_grantees)

    got = unlock_password(agent, account_id)
    if got is None:
        log("password not readable through unlock yet; carrying on without it")
    elif got != password:
        log("unlock returned a different password!")
    else:
        log("password read back through unlock: matches")

    # Sign-up 2 (a later session for the same service): reuse the account, do not make another.
    if F == "second-account":
        again, _ = create_account(agent, SERVICE, SERVICE_URL, "acme-signup-2")
    else:
        again, _ = find_account(agent, SERVICE)
        if again is None:
            log("could not find the account again by name; reusing the id kept from before")
            again = account_id
    if again and again != account_id and F != "second-account":
        log("found a different account for the same service?")
    if again:
        _, st = agent.call("GET", f"/api/agent/accounts/{again}/credential/status")
        log("second session: account", again, "has_password", st.get("has_password"))
    return 0


def read_memories(agent: Agent) -> list[dict]:
    deadline = time.monotonic() + 20
    while True:
        _, d = agent.call("GET", "/api/agent/context/memories")
        waiting = d.get("preparing") or d.get("preparing_others") or d.get("preparing_unknown")
        if waiting:
            log(
                "memories waiting:",
                {
                    k: d[k]
                    for k in ("preparing", "preparing_others", "preparing_unknown", "retry_after_seconds")
                    if k in d
                },
            )
        if waiting and d.get("retry_after_seconds") and time.monotonic() < deadline:
            wait = float(d.get("retry_after_seconds") or 5)
            log(f"memories preparing; reading again in {wait}s")
            time.sleep(wait)
            continue
        return d.get("memories") or []


def find_account(agent: Agent, service: str) -> tuple[str | None, str | None]:
    """Accounts this connection can see; the name is in our own metadata_seal."""
    try:
        _, d = agent.call("GET", "/api/agent/accounts")
    except Refused as e:
        log("account list refused:", e)
        return None, None
    candidates = list(d.get("accounts") or [])
    if not any(a.get("metadata_seal") for a in candidates):
        # 001: the account reads serve our metadata_seal; a server that does not, the address list does.
        try:
            _, dd = agent.call("GET", "/api/agent/decoys")
            candidates += [{**x, "id": x.get("account_id")} for x in dd.get("decoys") or []]
        except Refused as e:
            log("decoy list refused:", e)
    for acct in candidates:
        seal = acct.get("metadata_seal")
        if not seal:
            continue
        try:
            rec = json.loads(open_envelope(agent.priv, unb64(seal)))
        except Exception:
            continue
        if isinstance(rec, dict) and rec.get("serviceName") == service:
            return acct.get("id") or acct.get("account_id"), acct.get("decoy_email")
    return None, None


def create_account(agent: Agent, service: str, url: str, label: str) -> tuple[str | None, str | None]:
    F = agent.fault
    _, pk = agent.call("GET", "/api/agent/public-key")
    owner_pub = load_pub(pk["public_key"])
    record = json.dumps(
        {"serviceName": service, "serviceURL": url, "avatarUrl": "/decoy-variant-1.png", "agentCreated": True}
    ).encode()
    seal_to = owner_pub if F == "metadata-seal-to-owner" else agent.pub
    body: dict = {
        "sealed_details": b64(envelope(owner_pub, record)),
        "metadata_seals": [{"token_id": agent.token_id, "sealed_envelope": b64(envelope(seal_to, record))}],
        "label": label,
        "idempotency_key": f"{label}-{uuid.uuid4()}",
    }
    if F == "refused-writes":
        body["service_name"] = service  # with sealed_details: not "exactly one" form
    for attempt in range(1, 5):
        try:
            _, d = agent.call("POST", "/api/agent/decoys", body)
            break
        except Unknown as e:
            log(f"decoy create: unknown outcome ({e}); retrying with the same idempotency_key")
            if F == "new-idempotency-key":
                body = {**body, "idempotency_key": f"{label}-{uuid.uuid4()}"}
            time.sleep(0.5 * attempt)
        except Refused:
            if F == "refused-writes":
                return None, None
            raise
    else:
        raise SystemExit("decoy create: no answer")
    account_id = d.get("account_id")
    # Verify it both ways.
    _, dec = agent.call("GET", f"/api/agent/decoys/{d['id']}")
    _, acct = agent.call("GET", f"/api/agent/accounts/{account_id}")
    assert dec.get("account_id") == account_id, "decoy names another account"
    return account_id, d.get("decoy_email") or acct.get("decoy_email")


def set_password(agent: Agent, account_id: str | None, password: str) -> None:
    F = agent.fault
    _, pk = agent.call("GET", "/api/agent/accounts/public-key")
    key = agent.pub if F == "password-own-key" else load_pub(pk["public_key"])
    body = {"encrypted_password": b64(envelope(key, password.encode()))}
    if F == "refused-writes":
        body = {"password": password}  # malformed: plaintext
    try:
        agent.write("POST", f"/api/agent/accounts/{account_id}/credential", body)
    except Refused:
        if F == "refused-writes":
            return
        raise
    _, st = agent.call("GET", f"/api/agent/accounts/{account_id}/credential/status")
    assert st.get("has_password"), "credential not stored"


def add_api_key(agent: Agent, account_id: str | None, api_key: str, mem_grantees: list[dict]) -> str:
    F = agent.fault
    _, fg = agent.call("GET", f"/api/agent/accounts/{account_id}/field-grantees")
    owner_pub = load_pub(fg["owner_public_key"])
    field_id = str(uuid.uuid4())
    key = AESGCM.generate_key(256)
    plain = {
        "id": field_id,
        "account_id": account_id,
        "fieldType": "string" if F == "api-key-string-field" else "concealed-string",
        "label": "API key",
        "value": api_key,
    }
    owner_plain = key if F == "field-owner-wrap-raw" else b64(key).encode()
    recipients = fg.get("grantees") or []
    if F == "field-wrap-to-stranger":
        recipients = recipients + [g for g in mem_grantees if g.get("token_id") != agent.token_id]
    body = {
        "id": field_id,
        "kid": kid_of(key),
        "ciphertext": b64(vault_seal(key, json.dumps(plain).encode())),
        "owner_wrap": b64(owner_envelope(owner_pub, owner_plain)),
        "self_wrap": b64(envelope(agent.pub, key)),
    }
    gw = [
        {"token_id": g["token_id"], "wrapped_key": b64(envelope(load_pub(g["public_key"]), key))}
        for g in recipients
        if g.get("public_key")
    ]
    if gw:
        body["grantee_wraps"] = gw
    log(f"field: {len(fg.get('grantees') or [])} field-grantees, {len(gw)} grantee wraps sent")
    if F == "refused-writes":
        body = {"label": "API key", "value": api_key}  # plaintext: PLAINTEXT_REJECTED
    try:
        agent.write("POST", f"/api/agent/accounts/{account_id}/fields", body)
    except Refused:
        if F == "refused-writes":
            return field_id
        raise
    return field_id


def check_field(agent: Agent, account_id: str | None, field_id: str, api_key: str) -> None:
    try:
        _, d = agent.call("GET", f"/api/agent/accounts/{account_id}/fields")
    except Refused as e:
        log("fields read refused:", e)
        return
    for f in d.get("fields") or []:
        if f.get("id") != field_id:
            continue
        key = open_envelope(agent.priv, unb64(f["wrapped_key"]))
        assert kid_of(key) == f["kid"], "field kid mismatch"
        p = json.loads(vault_open(key, unb64(f["ciphertext"])))
        assert p["id"] == field_id and p["account_id"] == account_id, "field bound to another row"
        assert p["value"] == api_key
        log("API key field read back")
        return
    log("API key field not listed yet", d.get("preparing"))


def save_account_memory(
    agent: Agent, account_id: str | None, text: str, owner_pub_b64: str | None, grantees: list[dict]
) -> None:
    F = agent.fault
    if not owner_pub_b64:
        log("owner key setup not finished; cannot save a memory")
        return
    owner_pub = load_pub(owner_pub_b64)
    row_id = str(uuid.uuid4())
    key = os.urandom(32)
    about = f"account:{SERVICE}" if F == "memory-about-name" else f"account:{account_id}"
    plain = {"v": 2, "row_id": row_id, "observation": {"content": text}, "about": [about], "categories": []}
    plain.pop("categories")
    row: dict = {
        "id": row_id,
        "kid": kid_of(key),
        "ciphertext": b64(vault_seal(key, json.dumps(plain).encode())),
        "owner_wrap": b64(owner_envelope(owner_pub, b64(key).encode())),
        "self_wrap": b64(envelope(agent.pub, key)),
    }
    gw = []
    for g in grantees:
        sel = g.get("selectors") or {}
        via = None
        if sel.get("all"):
            via = ["all"]
        elif sel.get("account_wildcard") or account_id in (sel.get("account_ids") or []):
            via = [f"account:{account_id}"]
        if via and g.get("public_key") and g.get("token_id") != agent.token_id:
            gw.append(
                {"token_id": g["token_id"], "via": via, "wrapped_key": b64(envelope(load_pub(g["public_key"]), key))}
            )
    if gw:
        row["grantee_wraps"] = gw
    rows = [row]
    agent.write("POST", "/api/agent/context/memories", {"rows": rows})
    # Read back and confirm.
    for m in read_memories(agent):
        if m.get("id") != row_id:
            continue
        k = open_envelope(agent.priv, unb64(m["wrapped_key"]))
        assert kid_of(k) == m["kid"]
        p = json.loads(vault_open(k, unb64(m["ciphertext"])))
        assert p["v"] == 2 and p["row_id"] == row_id
        log("memory about the account read back")
        return
    log("memory not listed on read-back (kept its id)", row_id)


def unlock_password(agent: Agent, account_id: str | None) -> str | None:
    F = agent.fault
    body: dict = {
        "target": {"kind": "account", "id": account_id, "datatypes": ["basic-auth"]},
        "reason": "Sign in to Acme Cloud",
    }
    started = time.monotonic()
    while True:
        try:
            status, d = agent.call("POST", "/api/agent/unlock", body)
        except Unknown as e:
            log("unlock: unknown outcome", e)
            time.sleep(2)
            continue
        log("unlock answer", status, json.dumps({k: v for k, v in d.items() if k != "items"})[:400])
        if status == 200 and d.get("available") is False:
            state = d.get("state")
            if state == "preparing":
                if F == "unlock-preparing-gives-up":
                    log("unlock preparing: giving up")
                    return None
                wait = float(d.get("retry_after_seconds") or 5)
                if F == "unlock-ignore-retry-after":
                    wait = 0.05
                if time.monotonic() - started > 75 and not agent.asked_to_open_decoy:
                    agent.asked_to_open_decoy = True
                    log("Please open Decoy on your phone so it can share the password with me.")
                if time.monotonic() - started > 100:
                    return None
                time.sleep(wait)
                continue
            if state == "failed":
                return None
            if state is None and "datatypes" in body["target"]:
                # Our copy holds the whole account: ask with no datatypes.
                body = {"target": {"kind": "account", "id": account_id}, "reason": body["reason"]}
                continue
            return None
        rid = d["id"]
        items = d.get("items")
        st = d.get("status")
        while not items:
            if st in ("denied", "expired"):
                log("unlock", st)
                return None
            time.sleep(2.5)
            _, p = agent.call("GET", f"/api/agent/unlock/{rid}")
            st = p.get("status")
            items = p.get("items")
            if st == "ready" and not items:
                log("unlock ready but its items were already consumed")
                return None
        for it in items:
            rec = json.loads(open_envelope(agent.priv, unb64(it["sealed_envelope"])))
            log(
                "unlock item keys:",
                sorted(k for k in it),
                "opened:",
                {k: (sorted(v) if isinstance(v, dict) else type(v).__name__) for k, v in rec.items()}
                if isinstance(rec, dict)
                else type(rec).__name__,
            )
            # 001 names {host, username, password} for sealed-secrets; the unlock copy of a whole
            # account comes keyed by datatype ("basic-auth": {username, password}). Accept both.
            if isinstance(rec, dict) and "password" in rec:
                return rec["password"]
            if isinstance(rec, dict) and isinstance(rec.get("basic-auth"), dict):
                return rec["basic-auth"].get("password")
        return None


def main() -> int:
    args = sys.argv[1:]
    fault = os.environ.get("DECOY_FAULT")
    if "--fault" in args:
        i = args.index("--fault")
        fault = args[i + 1]
        del args[i : i + 2]
    if fault and fault not in FAULTS:
        raise SystemExit(f"unknown fault {fault!r}; one of {sorted(FAULTS)}")
    base = args[0] if args else os.environ.get("DECOY_BASE_URL")
    if not base:
        raise SystemExit("give the server URL or set DECOY_BASE_URL")
    return run(Agent(base, fault))


if __name__ == "__main__":
    sys.exit(main())
