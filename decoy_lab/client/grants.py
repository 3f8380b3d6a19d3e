"""What a connection holds and how it asks for more: `Grants` keeps `/policies` read into `Access`
(named by the topics read so far), reads it again when `access_version` changes, and sends grant
requests on this same connection (protocol/access.py holds the rules of both)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from decoy_lab.errors import DecoyError, GrantAlreadyRequested, MemoryModelError
from decoy_lab.protocol.access import ASKED, Access, GrantRequest, read_policies
from decoy_lab.protocol.pairing import selection_row
from decoy_lab.protocol.session import Session
from decoy_lab.transport import routes
from decoy_lab.transport.api import Tokens, expect_object

log = logging.getLogger(__name__)


class Grants:
    """`held`: the last `/policies` read in this process (None before the first, or once stale).
    `on_version()` is called when a read shows a new `access_version` (the profile saves it)."""

    def __init__(self, session: Session, on_version: Callable[[], None]):
        self.session = session
        self.held: Access | None = None
        self._on_version = on_version

    def access(self, refresh: bool = True) -> Access:
        if self.held is not None and not refresh:
            return self.held
        acc = Access(read_policies(self.session.get(routes.POLICIES)), topic_names=self.topic_names())
        self.held = acc
        t = self.session.api.tokens
        if t is not None and acc.version is not None and acc.version != t.access_version:
            t.access_version = acc.version
            self._on_version()
        return acc

    def forget(self) -> None:
        self.held = None

    def reread(self) -> None:
        self.held = None
        self.access()

    def tokens_changed(self, tokens: Tokens) -> None:
        """A new access_version reads /policies again."""
        held = self.held.version if self.held is not None else None
        if tokens.access_version is not None and held is not None and tokens.access_version != held:
            log.info("access_version %s → %s: reading /policies again", held, tokens.access_version)
            self.held = None
            try:
                self.access()
            except DecoyError:  # the call that triggered the refresh will report any real problem
                pass

    def topic_names(self) -> dict[str, str]:
        """`topic:<id>` -> name for every topic read so far (copies included); no extra request."""
        s = self.session
        topics = [*(s.vault.topic_list if s.vault is not None else []), *s.made_topics]
        names: dict[str, str] = {}
        for t in topics:
            for tid in [t.id, *getattr(t, "ids", [])]:
                tid = str(tid)
                names.setdefault(tid if tid.startswith("topic:") else f"topic:{tid}", t.name)
        return names

    # -- asking for more ---------------------------------------------------------------------------
    def send(self, body: Mapping) -> GrantRequest:
        """POST one ask to grant-request unchanged (e.g. a refusal's `permission_request`)."""
        body = dict(body)
        s = self.session

        def send() -> dict:
            answer = s.api.request("POST", routes.GRANT_REQUEST, json=body)
            return expect_object(answer, "POST /api/agent/grant-request", **ASKED)

        try:  # REVIEW_BUSY is sent again (bounded, with backoff) like an unknown outcome
            ans = s.retry.run(send)
        except GrantAlreadyRequested as exc:  # also what a resend after a lost answer gets
            return GrantRequest(
                s, exc.request_id, "pending", bodies=[body], raw=exc.body,
                message="this exact ask is already open; waiting on it", on_done=self.reread,
            )  # fmt: skip
        return GrantRequest(
            s,
            ans.get("request_id"),
            ans.get("status", "pending"),
            permissions=list(ans.get("permissions") or body.get("permissions") or []),
            bodies=[body],
            renewal=bool(ans.get("renewal")),
            combined=bool(ans.get("combined")),
            ends_at=ans.get("ends_at"),
            message=ans.get("message"),
            raw=ans,
            on_done=self.reread,
        )

    def request(
        self,
        permissions: Sequence[str] | str,
        *,
        about: Sequence[str] | str | None,
        reason: str,
        send: Callable[[Mapping], GrantRequest] | None = None,
        **selection: Any,
    ) -> GrantRequest:
        """`Connection.request_access`: one ask per body the selection makes, joined into one
        request (`send`, the connection's own, sends each)."""
        if about is not None:
            about = [about] if isinstance(about, str) else list(about)
            about = [self.topic_id(a) for a in about]
        result: GrantRequest | None = None
        for body in selection_row(permissions, about=about, **selection):
            body["reason"] = reason
            got = (send or self.send)(body)
            if result is None or got.status == "pending":
                if result is not None:
                    got.permissions = list(dict.fromkeys([*result.permissions, *got.permissions]))
                    got.bodies = [*result.bodies, *got.bodies]
                result = got
        assert result is not None
        return result

    def topic_id(self, value: str) -> str:
        if value.startswith("topic:"):
            return value
        try:
            uuid.UUID(value)
            return f"topic:{value}"
        except ValueError:
            pass
        found = self.session.find_topic(value)
        if found is None:
            raise MemoryModelError(f"no topic named {value!r} is visible to this connection; pass its topic:<id>")
        return found.id
