"""Which agent sent an exchange: the name it paired under, followed through its tokens.

A pairing names its client in `POST /oauth/device` (`name`, `client_id`); the device answer's
`device_code` is exchanged at `POST /oauth/token` for `access_token`, `refresh_token` and
`token_id`; a refresh grant trades a refresh token for new ones. `AgentBook` follows that chain by
fingerprint only (it never holds a raw token), so every later request is named by the token it
carries: the paired name, else the token's fingerprint. A token first seen after its pairing (the
agent paired before the inspector started) is named by its fingerprint.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from decoy_lab.secret import secret_fingerprint


@dataclass
class Agent:
    name: str
    client_id: str = ""
    token_id: str = ""


class AgentBook:
    """Fingerprints of device codes, access and refresh tokens → the agent they belong to."""

    def __init__(self) -> None:
        self._by_fp: dict[str, Agent] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<AgentBook {len({id(a) for a in self._by_fp.values()})} agents>"

    def agents(self) -> list[Agent]:
        seen: dict[int, Agent] = {}
        for a in self._by_fp.values():
            seen.setdefault(id(a), a)
        return list(seen.values())

    def of_token(self, token: str | None) -> Agent | None:
        return self._by_fp.get(secret_fingerprint(token)) if token else None

    def by_fingerprint(self, fp: str) -> Agent | None:
        return self._by_fp.get(fp) if fp else None

    def label(self, fp: str) -> tuple[str, str, str]:
        """(agent, token fingerprint, token_id) for a request whose bearer token has the
        fingerprint `fp` ("": it carried none)."""
        if not fp:
            return "", "", ""
        agent = self._by_fp.get(fp)
        return (agent.name if agent else fp), fp, (agent.token_id if agent else "")

    def follow(self, path: str, request: bytes, response: bytes, status: int | None) -> Agent | None:
        """Learn from one finished exchange (raw bodies); the agent it belongs to, if it names one."""
        if path.endswith("/oauth/device"):
            return self._device(_json(request), _json(response))
        if path.endswith("/oauth/token"):
            form = _form(request)
            return self._token(form, _json(response) if status == 200 else None)
        return None

    def _device(self, asked: Any, answer: Any) -> Agent | None:
        if not isinstance(asked, dict):
            return None
        name = asked.get("name") or asked.get("client_name") or asked.get("client_id") or ""
        agent = Agent(str(name), str(asked.get("client_id") or ""))
        if isinstance(answer, dict) and isinstance(answer.get("device_code"), str):
            with self._lock:
                self._by_fp[secret_fingerprint(answer["device_code"])] = agent
        return agent

    def _token(self, form: dict[str, str], answer: Any) -> Agent | None:
        key = form.get("device_code") or form.get("refresh_token")
        agent = self._by_fp.get(secret_fingerprint(key)) if key else None
        if agent is None and isinstance(answer, dict):
            agent = Agent(form.get("client_id") or "")
        if agent is None:
            return None
        if isinstance(answer, dict):
            if isinstance(answer.get("token_id"), str):
                agent.token_id = answer["token_id"]
            if not agent.name:
                agent.name = secret_fingerprint(answer.get("access_token"))
            with self._lock:
                for member in ("access_token", "refresh_token"):
                    if isinstance(answer.get(member), str):
                        self._by_fp[secret_fingerprint(answer[member])] = agent
        return agent


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except (ValueError, RecursionError):
        return None


def _form(data: bytes) -> dict[str, str]:
    try:
        return dict(parse_qsl(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError):
        return {}
