"""`pair_agent`: run the real device flow against a sandbox, for tests that need a token.

Device authorization → (the owner approves: at once with `approve="auto"`, otherwise through
`POST /_sandbox/approve`) → token exchange. No client library involved, so memory tests do
not depend on client.py.
"""

from __future__ import annotations

from typing import Any

import httpx

from decoy_lab.vocab import DEVICE_GRANT


def pair_agent(
    client_or_url: httpx.Client | str,
    agent_key: Any = None,
    permissions: list[dict] | None = None,
    name: str = "Test agent",
    *,
    client_id: str | None = None,
    approve_pending: bool = True,
) -> dict[str, Any]:
    """Pair one agent; returns `{"access_token", "refresh_token", "token_id", "access_version", "token"}`.

    `agent_key` is an AgentKey (its public key is registered), a base64 SPKI string, or None.
    `permissions` are authorization_details rows, e.g. `[{"permissions": ["memory.save"]}]`.
    In manual mode the pairing is approved through the owner surface unless `approve_pending=False`
    (then a `PairingError` with code `authorization_pending` is raised)."""
    from decoy_lab.errors import PairingError

    own = isinstance(client_or_url, str)
    client = httpx.Client(base_url=client_or_url, timeout=10) if isinstance(client_or_url, str) else client_or_url
    try:
        public_key = getattr(agent_key, "public_key_b64", agent_key)
        body: dict[str, Any] = {
            "client_id": client_id or name.lower().replace(" ", "-"),
            "name": name,
            "authorization_details": permissions or [],
        }
        if public_key is not None:
            body["agent_public_key"] = public_key
        r = client.post("/oauth/device", json=body)
        if r.status_code != 200:
            raise PairingError(f"device authorization refused: {r.status_code} {r.text}", code="device_refused")
        dev = r.json()
        form = {"grant_type": DEVICE_GRANT, "device_code": dev["device_code"], "client_id": body["client_id"]}
        t = client.post("/oauth/token", data=form)
        if t.status_code == 400 and t.json().get("error") == "authorization_pending" and approve_pending:
            a = client.post("/_sandbox/approve", json={"ref": dev["user_code"]})
            if a.status_code != 200:
                raise PairingError(f"owner approval failed: {a.status_code} {a.text}", code="approve_failed")
            t = client.post("/oauth/token", data=form)
        if t.status_code != 200:
            err = t.json().get("error")
            raise PairingError(f"token exchange refused: {t.status_code} {t.text}", code=err)
        tok = t.json()
        return {
            "access_token": tok["access_token"],
            "refresh_token": tok["refresh_token"],
            "token_id": tok["token_id"],
            "access_version": tok["access_version"],
            "token": tok,
            "user_code": dev["user_code"],
        }
    finally:
        if own:
            client.close()


def bearer(token: dict[str, Any] | str) -> dict[str, str]:
    """`{"Authorization": "Bearer …"}` for a pair_agent result or a raw access token."""
    value = token["access_token"] if isinstance(token, dict) else token
    return {"Authorization": f"Bearer {value}"}
