"""A small memory agent over raw HTTP, written from the spec's recipes (httpx + cryptography only).

    DECOY_BASE_URL=http://127.0.0.1:8787 python memory_agent.py [--topic NAME] [--bug NAME] [--key PEM]

It pairs (device grant, polling every `interval`, +5 s on `slow_down`), reads every row it can
open (waiting `retry_after_seconds` while rows are `preparing`), reuses the topic of that name or
creates it with its first memory in one POST, resends the SAME sealed rows after an unknown
outcome, reads them back, and corrects the memory by id (re-reading on `409 REV_CONFLICT`). A
`403` with a `permission_request` is sent unchanged to `POST /api/agent/grant-request`, polled
every 2 s until the owner answers, then `GET /api/agent/policies` is read (a denial ends the task:
nothing is asked again, exit 0); a `401 TOKEN_EXPIRED` is refreshed once; a `401` with
`recovery: continue` (SESSION_ENDED) is met by reconnecting with the same `client_id`. Then it saves a reminder, removes one of its labels
(rotating its key: a new key and `kid` with both wraps), adds another (the same key, wrapped with
`POST memory-wraps` to the connections it newly reaches), deletes it and reads back to see it gone.

When its grant holds Edit all memories (`memory.edit`: the check's `read-write` scenario), it
corrects the text of a memory another wrote, leaving its labels as they were.

When its grant lets it create accounts (the pairing's `authorization_details` name
`account.create`: the check's `accounts` scenario), it then signs up for a service: the account
with its Decoy address (`POST /api/agent/decoys`, one `idempotency_key` kept across resends),
the login password through `…/credential`, an API key as a concealed secret field, a memory
about the account (no credential in its text), the address renamed through a queued edit (polled
by its id until the owner's phone applies it, never queued twice) and the password read back
through unlock.

When its grant holds Read on some account's logins (an `account.read` row: the check's
`slow-unlock` scenario), it reads an account a memory it read is filed under through unlock:
the owner is asked (`pending`), and it polls that one request every 2.5 s, never asking again.

`--bug NAME` plants ONE deliberate mistake, so `decoy-lab check` can be seen to catch it (the
names are in BUGS). It prints what it does, never a token or a key.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import secrets
import sys
import time
import unicodedata
import uuid

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
MEMORIES = "/api/agent/context/memories"
BUGS = (
    "no-self-wrap", "bad-kid", "raw-owner-wrap", "new-topic", "topic-alone", "user-topic", "two-about",
    "long-relation", "new-rows-on-retry", "ignore-retry-after", "preparing-as-missing",
    "overwrite-on-conflict", "no-read-back", "ignore-slow-down", "poll-fast", "token-in-url", "repair-for-access", "refresh-twice",
    "self-wrap-other-key", "no-rotation", "rotate-without-wraps", "no-verify-delete", "delete-used-topic",
    "unpadded-base64", "password-in-text", "text-in-body", "correct-as-new", "one-key", "wrap-too-far",
    "wrap-one-reader", "ignore-rate-limit", "stale-labels", "bare-pairing",
    "credentials-in-memory", "api-key-as-password", "no-idempotency-key", "second-address", "headered-password",
    "write-first", "topic-in-metadata", "local-client-uri", "poll-grant-fast", "no-policies-read",
    "ask-again-after-denial", "no-share-on-add", "relabel-others", "account-name-in-memory", "copy-to-relabel",
    "fixture-wraps", "ask-held", "ask-without-reason", "ask-with-level", "new-client-on-continue",
    "unlock-retry-fast", "unlock-ask-again", "edit-assumed", "edit-twice",
)  # fmt: skip
# the ask-* bugs' asks of the agent's own (not a refusal's permission_request), sent once it is paired
CARDS = {"permissions": ["personal.read"], "record_type": "cards", "reason": "Pay for the trip's booking."}
EXTRA_ASKS = {
    # held since the pairing in the check's missing-permission scenario (its owner grants personal emails)
    "ask-held": {"permissions": ["personal.read"], "record_type": "emails", "reason": "Read the booking email."},
    "ask-without-reason": {k: v for k, v in CARDS.items() if k != "reason"},
    "ask-with-level": {**CARDS, "level": "read"},
}
# the spec's example self_wrap (POST memories), for a discarded test key: only the fixture-wraps bug sends it
FIXTURE_WRAP = "AQBN7UA0MS7gKpdwFyJokbYLMPHh1XG+w4TsosfQFCOmZm+SGEnOvUBsM51Opqe4EdRxS6QMQAZd0oPRbvjP7na5qLBEaKywCQvd7R37FGejE1JbucnN31wx0X9Rc+x7qFtJRvWds5NXPxnuH7HroDSx3CKkpHerPC5BSt6KHOovWTLnBEf+lzHf8zBdpHP+VN8h0Qlde0eRpq0tLPJBs0KRB3PtZeJfQrgW8Jli21s+O1moH9SWJ2p+V5+A/1BWF3IuxQBpIGDT9HjyNja5iI0D+zvNyBCklOuYUHh7ApnF8cPj4WT6G2SKt/fnUEpYo606eWiKnPRGNxqpRz3jFdsVQi/fSotd1sNqpZ5j7N1ZAfPBB0QGNRnxXh0zTWNghJs4+1fDx046Baim7cSyRIDtaUfZS9yYYvYm3Wpp"
DECOYS, ACCOUNTS, UNLOCK = "/api/agent/decoys", "/api/agent/accounts", "/api/agent/unlock"
OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


class Unknown(Exception):
    """The outcome of a request is unknown (network error, 5xx): send the same request again."""


class Denied(Exception):
    """The owner denied (or let expire) what the agent asked for: the denial stands, the task stops here."""


# -- the byte formats ("Exact formats") -----------------------------------------------------------
def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def reasons_for(sel: dict, plain: dict) -> list[str]:
    """The reasons a grant (`selectors` from memory-grantees) reaches a row by its labels (000 "Who reads a topic")."""
    topics = {t if str(t).startswith("topic:") else f"topic:{t}" for t in sel.get("topics") or []}
    accounts = {f"account:{a}" for a in sel.get("account_ids") or []}
    about = (plain.get("about") or [""])[0]
    out: list[str] = []
    if "observation" in plain:
        if sel.get("all") and not about.startswith("account:"):
            out.append("all")
        out += [f"category:{c}" for c in plain.get("categories") or [] if c in (sel.get("categories") or [])]
        if about in topics or about in accounts or (about.startswith("account:") and sel.get("account_wildcard")):
            out.append(about)
    elif "entity" in plain:
        out += ["all"] if sel.get("all") else []
        out += [f"topic:{plain['row_id']}"] if f"topic:{plain['row_id']}" in topics else []
    elif "relation" in plain:
        ends = [e for e in plain.get("endpoints") or [] if e != "user"]
        if sel.get("all"):
            out.append("all")
        elif ends and all(e in topics for e in ends):
            out.append(ends[0] if len(ends) == 1 else "and:" + "+".join(ends))
    return list(dict.fromkeys(out))


def any_reason(sel: dict) -> str:
    """A reason the grant holds, whatever the row (the wrap-too-far bug's via)."""
    if sel.get("all"):
        return "all"
    for c in sel.get("categories") or []:
        return f"category:{c}"
    for t in sel.get("topics") or []:
        return t if str(t).startswith("topic:") else f"topic:{t}"
    for a in sel.get("account_ids") or []:
        return f"account:{a}"
    return ""


def envelope(public_key_b64: str, plaintext: bytes) -> bytes:
    """[2-byte BE key length][RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-GCM ct][tag]"""
    pub = serialization.load_der_public_key(base64.b64decode(public_key_b64))
    aes, iv = os.urandom(32), os.urandom(12)
    wrapped = pub.encrypt(aes, OAEP)  # type: ignore[union-attr]
    return len(wrapped).to_bytes(2, "big") + wrapped + iv + AESGCM(aes).encrypt(iv, plaintext, None)


def open_envelope(private_key: rsa.RSAPrivateKey, blob: bytes) -> bytes:
    n = int.from_bytes(blob[:2], "big")
    aes = private_key.decrypt(blob[2 : 2 + n], OAEP)
    iv = blob[2 + n : 14 + n]
    return AESGCM(aes).decrypt(iv, blob[14 + n :], None)


def seal(key: bytes, obj: dict) -> str:
    nonce = os.urandom(12)
    return b64(b"\x01\x01" + nonce + AESGCM(key).encrypt(nonce, json.dumps(obj).encode("utf-8"), None))


def unseal(key: bytes, blob: str) -> dict:
    raw = base64.b64decode(blob)
    if raw[:2] != b"\x01\x01":
        raise ValueError("not a VAULT sealed blob")
    return json.loads(AESGCM(key).decrypt(raw[2:14], raw[14:], None))


def kid_of(key: bytes) -> str:
    return hashlib.sha256(key).digest()[:8].hex()


def normalize(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).lower().split()).strip().strip("\"'“”‘’")


class Agent:
    def __init__(self, base_url: str, bug: str | None, name: str, key_file: str | None = None):
        self.http = httpx.Client(base_url=base_url, timeout=30.0)
        self.bug, self.name, self.client_id = bug, name, "check-example-agent"
        if key_file:  # a key kept in a file, so `decoy-lab check --agent-key` can open what it seals
            with open(key_file, "rb") as f:
                loaded = serialization.load_pem_private_key(f.read(), password=None)
            assert isinstance(loaded, rsa.RSAPrivateKey), "--key takes an RSA private key (PEM)"
            self.key = loaded
        else:
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        spki = self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.public_b64 = b64(spki)
        self.access = self.refresh_token = self.token_id = ""
        self.granted: list[dict] = []  # the pairing's authorization_details: what the owner granted
        self.owner_key: str | None = None
        self.grantees: list[
            dict
        ] = []  # other connections (memory-grantees): each new row is wrapped to those it reaches
        self.one_key = os.urandom(32)  # the one-key bug's key for every row

    def say(self, text: str) -> None:
        print(text, flush=True)

    # -- pairing (RFC 8628) -----------------------------------------------------------------------
    def pair(self) -> None:
        ask = {
            "client_id": self.client_id,
            "name": self.name,
            "agent_public_key": self.public_b64,
            "authorization_details": [{"permissions": ["memory.save"]}],
        }
        if self.bug == "bare-pairing":
            del ask["authorization_details"]
        # its site, for the icon the owner sees (001: "The host must be a public domain name")
        ask["client_uri"] = (
            "https://localhost:8443/agent" if self.bug == "local-client-uri" else "https://agent.example.com"
        )
        dev = self.http.post("/oauth/device", json=ask).json()
        self.say(f"Open {dev['verification_uri_complete']} and approve in the Decoy app.")
        interval, deadline = float(dev.get("interval") or 5), time.monotonic() + float(dev.get("expires_in") or 600)
        form = {"grant_type": DEVICE_GRANT, "device_code": dev["device_code"], "client_id": self.client_id}
        while time.monotonic() < deadline:
            time.sleep(1.0 if self.bug == "poll-fast" else interval)
            answer = self.http.post("/oauth/token", data=form)
            body = answer.json()
            if answer.status_code == 200:
                self.access, self.refresh_token = body["access_token"], body["refresh_token"]
                self.token_id = str(body.get("token_id") or "")
                self.granted = [d for d in body.get("authorization_details") or [] if isinstance(d, dict)]
                self.say("Paired.")
                return
            error = body.get("error")
            if error == "slow_down" and self.bug != "ignore-slow-down":
                interval = max(interval + 5, float(body.get("interval") or 0))
            elif error not in ("authorization_pending", "slow_down"):
                raise SystemExit(f"pairing failed: {error}")
        raise SystemExit("pairing expired")

    def refresh(self) -> None:
        form = {"grant_type": "refresh_token", "refresh_token": self.refresh_token, "client_id": self.client_id}
        body = self.http.post("/oauth/token", data=form).json()
        if self.bug == "refresh-twice":
            body = self.http.post("/oauth/token", data=form).json()
        self.access, self.refresh_token = body["access_token"], body["refresh_token"]
        self.say("Refreshed the access token.")

    # -- one authenticated call: unknown outcome, expiry and missing access handled --------------
    def call(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        for _ in range(6):
            params = {"access_token": self.access} if self.bug == "token-in-url" and method == "GET" else None
            try:
                r = self.http.request(
                    method, path, json=body, params=params, headers={"Authorization": f"Bearer {self.access}"}
                )
            except httpx.TransportError as exc:
                raise Unknown(repr(exc)) from exc
            if r.status_code >= 500:
                raise Unknown(f"{r.status_code}")
            if r.status_code == 429:  # "`429`: wait `retry_after_seconds`", then send the same again
                wait = float(r.json().get("retry_after_seconds") or r.headers.get("Retry-After") or 1)
                self.say(f"{method} {path}: rate limited; sending again in {wait:g} s")
                time.sleep(0.1 if self.bug == "ignore-rate-limit" else wait)
                continue
            if r.status_code == 401 and r.json().get("code") == "TOKEN_EXPIRED":
                self.refresh()
                continue
            if (
                r.status_code == 401 and r.json().get("recovery") == "continue"
            ):  # SESSION_ENDED: the connection lives on
                self.say("This session ended; reconnecting with the same client_id.")
                if self.bug == "new-client-on-continue":  # a new client_id: another connection, not this one
                    self.client_id += "-again"
                self.pair()
                continue
            if r.status_code == 403 and isinstance(r.json().get("permission_request"), dict):
                self.ask_for(r.json()["permission_request"])
                continue
            return r
        raise SystemExit(f"{method} {path}: gave up")

    def ask_for(self, request: dict, asked: int = 1) -> None:
        """Send the refusal's permission_request unchanged; poll every 2 s until the owner answers
        (001 "The loop": every few seconds, up to about ten minutes); then read what it holds."""
        if self.bug == "repair-for-access":
            self.pair()
            return
        r = self.http.post("/api/agent/grant-request", json=request, headers={"Authorization": f"Bearer {self.access}"})
        answer = r.json()
        if r.status_code >= 400 or answer.get("status") == "already_granted":
            self.say(f"The ask was answered {r.status_code} {answer.get('status') or answer.get('code')}.")
            return
        rid = answer.get("request_id")
        self.say("I asked for access; approve it in the Decoy app.")
        for _ in range(300):
            time.sleep(0.1 if self.bug == "poll-grant-fast" else 2.0)
            status = self.call("GET", f"/api/agent/grant-request?id={rid}").json().get("status")
            if status in ("approved", "resolved"):
                if self.bug != "no-policies-read":  # "Read GET /api/agent/policies for what you now hold"
                    access = self.call("GET", "/api/agent/policies").json().get("access") or {}
                    self.say(f"The owner answered ({status}); memories: {sorted(access.get('memories') or {})}.")
                return
            if status in ("denied", "expired", "revoked"):
                if self.bug == "ask-again-after-denial" and asked == 1:
                    self.say("The owner said no; asking once more.")
                    self.ask_for(request, asked + 1)
                    return
                raise Denied(status)
        raise Denied("no answer in ten minutes")

    def retried(self, method: str, path: str, make_body) -> httpx.Response:
        """Send; after an unknown outcome send the SAME body again (make_body is called once)."""
        body = make_body()
        for attempt in range(1, 5):
            try:
                return self.call(method, path, body)
            except Unknown as exc:
                self.say(f"{method} {path}: outcome unknown ({exc}); sending the same rows again")
                if self.bug == "new-rows-on-retry":
                    body = make_body()
                time.sleep(0.5 * attempt)
        raise SystemExit(f"{method} {path}: no answer after 4 attempts")

    # -- reading -----------------------------------------------------------------------------------
    def read_all(self) -> tuple[list[dict], dict[str, dict]]:
        """Every served row opened: (served rows, id -> plaintext); waits while rows are preparing."""
        started = time.monotonic()
        while True:
            served = self.retried("GET", MEMORIES, lambda: None).json()
            owed = served.get("preparing") or served.get("preparing_others") or served.get("preparing_unknown")
            if not owed or self.bug == "preparing-as-missing" or time.monotonic() - started > 60:
                break
            wait = 0.2 if self.bug == "ignore-retry-after" else float(served.get("retry_after_seconds") or 5)
            self.say(f"Some memories are still being shared by the owner's phone; reading again in {wait:g} s.")
            time.sleep(wait)
        opened = {}
        for row in served.get("memories") or []:
            try:
                key = open_envelope(self.key, base64.b64decode(row["wrapped_key"]))
                if kid_of(key) != row["kid"]:
                    continue
                plain = unseal(key, row["ciphertext"])
                if plain.get("v") == 2 and plain.get("row_id") == row["id"]:
                    opened[row["id"]] = {"plain": plain, "key": key, "row": row}
            except Exception:
                continue
        self.say(f"Read {len(opened)} rows.")
        return served.get("memories") or [], opened

    def find_topic(self, opened: dict[str, dict], name: str) -> dict | None:
        found = []
        for rid, o in opened.items():
            p = o["plain"]
            if isinstance(p.get("entity"), dict) and normalize(p["entity"].get("name") or "") == normalize(name):
                found.append((o["row"].get("created_at") or "", {"id": f"topic:{rid}", "name": p["entity"]["name"]}))
        return sorted(found, key=lambda t: t[0])[0][1] if found else None

    # -- writing -----------------------------------------------------------------------------------
    def row(self, plain: dict, rotating: bool = False) -> dict:
        key = self.one_key if self.bug == "one-key" and not rotating else os.urandom(32)
        rid = plain["row_id"]
        ciphertext = seal(key, plain)
        if self.bug == "unpadded-base64":
            ciphertext = ciphertext.rstrip("=") or ciphertext
        kid = hashlib.sha256(base64.b64decode(ciphertext)).digest()[:8].hex() if self.bug == "bad-kid" else kid_of(key)
        owner_plain = key if self.bug == "raw-owner-wrap" else b64(key).encode("ascii")
        out = {
            "id": rid,
            "kid": kid,
            "ciphertext": ciphertext,
            "owner_wrap": b64(b"\x01\x02" + envelope(self.owner_key or "", owner_plain)),
        }
        if self.bug != "no-self-wrap":
            mine = os.urandom(32) if self.bug == "self-wrap-other-key" else key
            out["self_wrap"] = b64(envelope(self.public_b64, mine))
        if self.bug == "text-in-body" and "observation" in plain:
            out["preview"] = plain["observation"]["content"].splitlines()[0]
        wraps = []
        for g in self.grantees:
            via = reasons_for(g.get("selectors") or {}, plain)
            if self.bug == "wrap-too-far" and not via and any_reason(g.get("selectors") or {}):
                via = [any_reason(g.get("selectors") or {})]
            if via:
                wrapped = FIXTURE_WRAP if self.bug == "fixture-wraps" else b64(envelope(g["public_key"], key))
                wraps.append({"token_id": g["token_id"], "via": via, "wrapped_key": wrapped})
            if self.bug == "wrap-one-reader" and wraps:
                break
        if wraps:
            out["grantee_wraps"] = wraps
        return out

    def topic_rows(self, name: str) -> tuple[dict, list[dict]]:
        tid, lid = str(uuid.uuid4()), str(uuid.uuid4())
        relation = "is planning" + (" and keeps coming back to" * 6 if self.bug == "long-relation" else "")
        topic = {"v": 2, "row_id": tid, "entity": {"name": name, "entityType": "trip"}, "about": []}
        link = {"v": 2, "row_id": lid, "relation": {"from": "default_user", "to": name, "relationType": relation}, "endpoints": ["user", f"topic:{tid}"], "about": []}  # fmt: skip
        return {"id": f"topic:{tid}", "name": name}, [self.row(topic), self.row(link)]

    def memory_row(self, topic: dict, text: str, row_id: str | None = None) -> dict:
        about = ["user", topic["id"]] if self.bug == "two-about" else [topic["id"]]
        labels = ["travel", "misc"] if text.startswith("Reminder:") else ["travel"]
        plain = {"v": 2, "row_id": row_id or str(uuid.uuid4()), "observation": {"entityName": topic["name"], "content": text}, "about": about, "categories": labels}  # fmt: skip
        if self.bug == "topic-in-metadata":  # the topic named in the free notes too: it files nothing there
            plain["metadata"] = {"topic": topic["name"]}
        return self.row(plain)

    def run(self, subject: str) -> None:
        self.pair()
        if self.bug in EXTRA_ASKS:
            self.ask_for(EXTRA_ASKS[self.bug])
        g = self.call("GET", "/api/agent/context/memory-grantees").json()
        self.owner_key = g.get("owner_public_key")
        self.grantees = [x for x in g.get("grantees") or [] if x.get("public_key") != self.public_b64]
        if self.bug == "write-first":  # a note saved before anything was read
            note = {"v": 2, "row_id": str(uuid.uuid4()), "observation": {"entityName": "default_user",
                    "content": f"Started a task: {subject}."}, "about": ["user"], "categories": ["misc"]}  # fmt: skip
            row = self.row(note)
            self.retried("POST", MEMORIES, lambda: {"rows": [row]})
        _served, opened = self.read_all()
        topic = None if self.bug == "new-topic" else self.find_topic(opened, subject)
        text = f"{subject}: flight search, intermediate result.\nStatus: no flight chosen yet."
        state: dict = {}

        def make_rows() -> dict:
            rows: list[dict] = []
            t = topic
            if t is None:
                t, rows = self.topic_rows("me" if self.bug == "user-topic" else subject)
            state["memory"] = self.memory_row(t, text)
            state["topic"] = t
            state["mine"] = [r["id"] for r in rows] + [state["memory"]["id"]]
            return {"rows": [*rows, state["memory"]]}

        if topic is None and self.bug == "topic-alone":
            topic, rows = self.topic_rows(subject)
            self.retried("POST", MEMORIES, lambda: {"rows": rows})
        self.retried("POST", MEMORIES, make_rows)
        memory_id = state["memory"]["id"]
        self.say(f"Saved memory {memory_id[:8]}… under {state['topic']['name']!r}.")
        if self.bug == "no-read-back":
            return
        self.correct(memory_id, "Status: no flight chosen yet.", "Status: chose the Friday 08:10 direct flight.")
        self.relabel_and_forget(state["topic"])
        if any("memory.edit" in (d.get("permissions") or []) for d in self.granted):
            self.correct_others(set(state["mine"]))
        if any("account.create" in (d.get("permissions") or []) for d in self.granted):
            self.sign_up("Acme Tickets", "https://tickets.acme.example")
        if any("account.read" in (d.get("permissions") or []) for d in self.granted):
            self.read_filed_account(opened)

    def read_filed_account(self, opened: dict[str, dict]) -> None:
        """The account a memory it read is filed under (`about: ["account:<id>"]`), read through unlock."""
        abouts = (o["plain"].get("about") for o in opened.values())  # one id, or a list of them
        about = (a for ab in abouts for a in ([ab] if isinstance(ab, str) else ab or []) if isinstance(a, str))
        account_id = next((a.removeprefix("account:") for a in about if a.startswith("account:")), None)
        if account_id is None:
            return
        got = self.unlock(account_id, wait=60.0, reason="Check the account a memory names before booking.")
        self.say(f"The account {account_id[:8]}… through unlock: {'read' if got is not None else 'not read'}.")

    # -- an account: its Decoy address, password, API key, a memory about it, unlock ---------------
    def sign_up(self, service: str, url: str) -> None:
        """001 `decoy_create`: the account and its address in one call, the details sealed to the
        owner (`sealed_details`, with this connection's own copy in `metadata_seals`) and the record
        an owner ENVELOPE (`account_encrypted_data`); the same `idempotency_key` on every resend."""
        owner_pk = self.call("GET", "/api/agent/public-key").json()["public_key"]
        details = json.dumps({"serviceName": service, "serviceURL": url, "agentCreated": True}).encode("utf-8")
        password, api_key = f"Tk-{secrets.token_urlsafe(12)}", f"sk_live_{secrets.token_hex(16)}"
        record = {"name": service, "url": url, "notes": "Signed up for the trip's ticket alerts.", "agentCreated": True}

        def create(key: str) -> dict:
            body = {
                "sealed_details": b64(envelope(owner_pk, details)),
                "metadata_seals": [
                    {"token_id": self.token_id, "sealed_envelope": b64(envelope(self.public_b64, details))}
                ],
                "account_encrypted_data": b64(b"\x01\x02" + envelope(owner_pk, json.dumps(record).encode("utf-8"))),
                "label": "acme-tickets",
            }
            if self.bug != "no-idempotency-key":
                body["idempotency_key"] = key
            return body

        made = self.retried("POST", DECOYS, lambda: create(f"sign-up-{uuid.uuid4()}")).json()
        account_id, email = made["account_id"], str(made.get("email") or "")
        self.say(f"Created account {account_id[:8]}… with its Decoy address.")
        if self.bug == "second-address":  # "it timed out": a new key for the same sign-up mints another
            self.retried("POST", DECOYS, lambda: create(f"sign-up-{uuid.uuid4()}"))
            self.say("Created the address again.")
        account_pk = self.call("GET", f"{ACCOUNTS}/public-key").json()["public_key"]
        self.set_credential(account_id, account_pk, password)
        if self.bug == "api-key-as-password":  # the API key through the password's route
            self.set_credential(account_id, account_pk, api_key)
        else:
            self.add_field(account_id, "API key", api_key)
        text = f"{service}: signed up with a Decoy address for the trip's ticket alerts; the login and API key are on the account."
        if self.bug == "credentials-in-memory":
            text += f"\nCredentials: {email} / {password}"
        observation = {"content": text}
        if self.bug == "account-name-in-memory":  # the account named in the memory: its id is all it carries
            observation["entityName"] = service
        plain = {"v": 2, "row_id": str(uuid.uuid4()), "observation": observation,
                 "about": [f"account:{account_id}"], "categories": ["technology"]}  # fmt: skip
        note = self.row(plain)
        self.retried("POST", MEMORIES, lambda: {"rows": [note]})
        _served, opened = self.read_all()
        back = "read back" if note["id"] in opened else "NOT read back"
        self.say(f"Saved memory {note['id'][:8]}… about the account ({back}).")
        self.rename(str(made.get("id") or made.get("decoy_id") or ""), owner_pk, f"{service} alerts")
        opened_account = self.unlock(account_id)
        basic = (opened_account or {}).get("basic-auth")
        got = basic.get("password") if isinstance(basic, dict) else None
        said = "verified" if got == password else "NOT verified" if got is not None else "not read back"
        self.say(f"The account's password through unlock: {said}.")

    def set_credential(self, account_id: str, public_key: str, secret: str) -> None:
        """`POST …/credential`: a headerless envelope to the account key, the password's UTF-8 bytes."""
        blob = envelope(public_key, secret.encode("utf-8"))
        if self.bug == "headered-password":  # a SealedBlob header where the headerless envelope belongs
            blob = b"\x01\x02" + blob
        r = self.retried("POST", f"{ACCOUNTS}/{account_id}/credential", lambda: {"encrypted_password": b64(blob)})
        self.say(f"Set the account's password ({r.status_code}).")

    def add_field(self, account_id: str, label: str, value: str) -> None:
        """001 `account_field_create` steps 1–4: a field key and id, the VAULT ciphertext bound to
        both ids, `owner_wrap` (the key's base64 text), `self_wrap`, a wrap for each field-grantee."""
        readers = self.call("GET", f"{ACCOUNTS}/{account_id}/field-grantees").json()
        key, fid = os.urandom(32), str(uuid.uuid4())
        plain = {"id": fid, "account_id": account_id, "fieldType": "concealed-string", "label": label, "value": value}
        body = {
            "id": fid,
            "kid": kid_of(key),
            "ciphertext": seal(key, plain),
            "owner_wrap": b64(b"\x01\x02" + envelope(readers["owner_public_key"], b64(key).encode("ascii"))),
            "self_wrap": b64(envelope(self.public_b64, key)),
            "grantee_wraps": [
                {"token_id": g["token_id"], "wrapped_key": b64(envelope(g["public_key"], key))}
                for g in readers.get("grantees") or []
                if g.get("token_id") and g.get("public_key") and g.get("token_id") != self.token_id
            ],
        }
        r = self.retried("POST", f"{ACCOUNTS}/{account_id}/fields", lambda: body)
        self.say(f"Stored the {label} as a secret field ({r.status_code}).")

    def rename(self, decoy_id: str, owner_pk: str, name: str, wait: float = 40.0) -> None:
        """001 `decoy_edit_request`: the patch sealed to the owner's key and queued ONCE; "The call
        answers `202` at once; poll `GET …/edits/{editId}` for `applied`" — until then the address
        keeps its old name. "Queued edits are never dropped": a pending edit is waited for, not resent."""
        patch = json.dumps({"v": 1, "set": {"serviceName": name}}).encode("utf-8")
        body = {"sealed_patch": b64(envelope(owner_pk, patch))}
        edits = f"{DECOYS}/{decoy_id}/edits"
        edit_id = self.retried("POST", edits, lambda: body).json()["edit_id"]
        if self.bug == "edit-assumed":  # 202 taken for done: never polled
            self.say(f"Renamed the address to {name!r}.")
            return
        deadline, status = time.monotonic() + wait, "pending"
        while status == "pending" and time.monotonic() < deadline:
            time.sleep(2.0)
            status = str(self.call("GET", f"{edits}/{edit_id}").json().get("status"))
            if status == "pending" and self.bug == "edit-twice":  # "it did not take": queued again
                edit_id = self.retried("POST", edits, lambda: body).json()["edit_id"]
        self.say(f"The address's rename to {name!r}: {status}.")

    def unlock(
        self, account_id: str, wait: float = 30.0, reason: str = "Check the saved password reads back."
    ) -> dict | None:
        """001 `unlock_request`: `preparing` → the same request again after `retry_after_seconds`;
        `pending` (the owner is asked) → poll `GET /api/agent/unlock/{id}` every 2.5 s until
        `ready`, never asking again meanwhile; the envelope opened."""
        ask = {"target": {"kind": "account", "id": account_id}, "reason": reason}
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            answer = self.retried("POST", UNLOCK, lambda: ask).json()
            if answer.get("available") is False:
                if answer.get("state") != "preparing":
                    return None
                time.sleep(1.0 if self.bug == "unlock-retry-fast" else float(answer.get("retry_after_seconds") or 5))
                continue
            while time.monotonic() < deadline:
                polled = self.call("GET", f"{UNLOCK}/{answer['id']}").json()
                if polled.get("status") == "ready":
                    items = [i for i in polled.get("items") or [] if isinstance(i, dict)]
                    if not items:
                        return None
                    opened = json.loads(open_envelope(self.key, base64.b64decode(items[0]["sealed_envelope"])))
                    return opened if isinstance(opened, dict) else None
                if polled.get("status") in ("denied", "expired"):
                    return None
                time.sleep(2.5)
                if polled.get("status") == "pending" and self.bug == "unlock-ask-again":  # "no answer yet": ask anew
                    answer = self.retried("POST", UNLOCK, lambda: ask).json()
        return None

    def relabel_and_forget(self, topic: dict) -> None:
        """Save a reminder, drop one of its labels (which rotates its key), then delete it and check
        it is gone: the contract's Editing and Verify steps for a label removed and a deletion."""
        secret = " TAP login password: Lisb0n-2026!" if self.bug == "password-in-text" else ""
        note = self.memory_row(topic, "Reminder: check in online 24 h before the flight." + secret)
        self.retried("POST", MEMORIES, lambda: {"rows": [note]})
        _served, opened = self.read_all()
        current = opened.get(note["id"])
        if current is None:
            raise SystemExit(f"memory {note['id']} does not read back")
        plain = dict(current["plain"], categories=[c for c in current["plain"]["categories"] if c != "misc"])
        if self.bug == "no-rotation":  # the label goes, the key stays
            body = {"id": note["id"], "expected_rev": current["row"]["rev"], "ciphertext": seal(current["key"], plain)}
        else:  # a new key and kid, both wraps, the removed label, and wraps for every reader still reached
            fresh = self.row(plain, rotating=True)
            body = {"expected_rev": current["row"]["rev"], **fresh, "removed_reasons": ["category:misc"]}
            if self.bug == "rotate-without-wraps":
                body = {k: v for k, v in body.items() if k not in ("owner_wrap", "self_wrap")}
        r = self.retried("PUT", MEMORIES, lambda: body)
        self.say(f"Removed the label 'misc' from {note['id'][:8]}… ({r.status_code}).")
        self.add_label(note["id"], "food")
        ids = [note["id"], *([topic["id"].removeprefix("topic:")] if self.bug == "delete-used-topic" else [])]
        done = self.retried("POST", f"{MEMORIES}/delete", lambda: {"ids": ids}).json()
        self.say(f"Deleted {len(done.get('deleted') or [])}, refused {len(done.get('refused') or [])}.")
        if self.bug == "no-verify-delete":
            return
        _served, opened = self.read_all()
        self.say("The reminder is gone." if note["id"] not in opened else "The reminder is STILL there.")

    def correct_others(self, mine: set[str]) -> None:
        """With Read & write on every memory (`memory.edit`), correct the text of one another wrote:
        its text only, its labels byte-identical (000 "a connection editing someone else's memory with
        Read & write may correct its text, and must leave its labels byte-identical")."""
        _served, opened = self.read_all()
        theirs = [
            o
            for rid, o in opened.items()
            if rid not in mine
            and isinstance(o["plain"].get("observation"), dict)
            and not str((o["plain"].get("about") or [""])[0]).startswith("account:")  # those are acctmem.*
        ]
        if not theirs:
            return
        o = theirs[0]
        plain = dict(o["plain"], observation=dict(o["plain"]["observation"]))
        plain["observation"]["content"] = plain["observation"]["content"].rstrip() + " (Checked with the person.)"
        if self.bug == "relabel-others":  # a label of its own choosing on a memory another wrote
            plain["categories"] = [*(plain.get("categories") or []), "misc"]
        body = {"id": o["row"]["id"], "expected_rev": o["row"]["rev"], "ciphertext": seal(o["key"], plain)}
        r = self.retried("PUT", MEMORIES, lambda: body)
        self.say(f"Corrected the text of memory {o['row']['id'][:8]}…, which another wrote ({r.status_code}).")

    def add_label(self, memory_id: str, category: str) -> None:
        """An edit that only adds a label keeps the key (a plain PUT, no `kid`); the key then goes to
        each connection the new label newly reaches, with `POST memory-wraps` (001 "An edit that
        only adds labels … keeps the key; the writer wraps it to the newly eligible connections")."""
        _served, opened = self.read_all()
        current = opened.get(memory_id)
        if current is None:
            return
        before = current["plain"]
        after = dict(before, categories=[*(before.get("categories") or []), category])
        if self.bug == "copy-to-relabel":  # the same memory again under the new labels, a new id and key
            copy = self.row(dict(after, row_id=str(uuid.uuid4())))
            self.retried("POST", MEMORIES, lambda: {"rows": [copy]})
            self.say(f"Saved a copy of {memory_id[:8]}… with the label {category!r}.")
            return
        body = {"id": memory_id, "expected_rev": current["row"]["rev"], "ciphertext": seal(current["key"], after)}
        r = self.retried("PUT", MEMORIES, lambda: body)
        self.say(f"Added the label {category!r} to {memory_id[:8]}… ({r.status_code}).")
        if r.status_code >= 300:
            return
        wraps = []
        for g in self.grantees:
            sel = g.get("selectors") or {}
            if reasons_for(sel, after) and not reasons_for(sel, before):  # newly eligible: it had no reason before
                wrapped = b64(envelope(g["public_key"], current["key"]))
                wraps.append({"token_id": g["token_id"], "via": reasons_for(sel, after), "wrapped_key": wrapped})
        if wraps and self.bug != "no-share-on-add":
            share = {"row_id": memory_id, "kid": current["row"]["kid"], "wraps": wraps}
            done = self.retried("POST", "/api/agent/context/memory-wraps", lambda: share)
            self.say(f"Shared its key with {len(wraps)} newly eligible connection(s) ({done.status_code}).")

    def correct(self, memory_id: str, old: str, new: str) -> None:
        """Update the same memory by id; on 409 REV_CONFLICT re-read, re-apply and retry."""
        _served, opened = self.read_all()
        current = opened.get(memory_id)
        if current is None:
            raise SystemExit(f"memory {memory_id} does not read back")
        mine = dict(current["plain"], observation=dict(current["plain"]["observation"]))
        rev = current["row"]["rev"]
        if self.bug == "correct-as-new":  # the correction as another memory, beside the one it corrects
            mine["observation"]["content"] = mine["observation"]["content"].replace(old, new)
            self.retried("POST", MEMORIES, lambda: {"rows": [self.row(dict(mine, row_id=str(uuid.uuid4())))]})
            self.say("Saved the correction as a new memory.")
            return
        labels = list(mine.get("categories") or [])
        for _ in range(4):
            mine["observation"]["content"] = mine["observation"]["content"].replace(old, new)
            body = {"id": memory_id, "expected_rev": rev, "ciphertext": seal(current["key"], mine)}
            r = self.retried("PUT", MEMORIES, lambda b=body: b)
            if r.status_code != 409:
                break
            self.say("The memory changed since I read it; reading it again.")
            if self.bug == "overwrite-on-conflict":
                rev = r.json().get("current_rev", rev + 1)
                continue
            _served, opened = self.read_all()
            current = opened[memory_id]
            mine, rev = dict(current["plain"], observation=dict(current["plain"]["observation"])), current["row"]["rev"]
            if self.bug == "stale-labels":
                mine["categories"] = labels
        _served, opened = self.read_all()
        self.say(
            f"Corrected memory {memory_id[:8]}…: {'verified' if new in opened[memory_id]['plain']['observation']['content'] else 'NOT verified'}."
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("DECOY_BASE_URL", "http://127.0.0.1:8787"))
    p.add_argument("--topic", default="Lisbon trip")
    p.add_argument("--bug", choices=BUGS)
    p.add_argument("--name", default="Check example agent")
    p.add_argument("--key", metavar="PEM", help="the agent's RSA private key (default: a fresh one)")
    args = p.parse_args(argv)
    try:
        Agent(args.url, args.bug, args.name, args.key).run(args.topic)
    except Denied as exc:  # the person said no: the task ends here, nothing more is asked
        print(f"The owner did not grant what this task needs ({exc}); I saved nothing and asked no more.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
