"""The narrow session the rules of talking to Decoy work through (writes, legacy, access).

A `Session` is what those rules need of a connection, and nothing more: the `Api`, the agent's
key, the retry policy (`retry`: a transport.retry.RetryPolicy), the key cache, `get` / `send` under the
spec's retry rules, the rows served now, the last load and the topics made since, and the
pending-writes journal. `Connection` builds one and stays a facade over it; a test of a write
rule can hand the rule a fake session instead of a paired connection.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from decoy_lab import memory
from decoy_lab.errors import NotFound, ServerError, TransportError
from decoy_lab.store.journal import Journal
from decoy_lab.transport import routes
from decoy_lab.transport.api import Api, expect_object
from decoy_lab.transport.retry import RetryPolicy
from decoy_lab.wire.crypto import AgentKey

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.vault.read import Vault

log = logging.getLogger(__name__)

MEMORIES, GRANTEES = routes.MEMORIES, routes.GRANTEES


class Session:
    """One connection's state as the rules see it. `load` reads the vault again (the connection
    passes its own `load`); `on_change` is called when something worth saving in the profile
    changed (a token id learnt from the grantees answer)."""

    def __init__(
        self,
        api: Api,
        agent_key: AgentKey,
        *,
        retries: int = 5,
        backoff: float = 0.25,
        sleep: Callable[[float], Any] = time.sleep,
        load: Callable[[], Vault] | None = None,
        on_change: Callable[[], None] | None = None,
        journal: Journal | None = None,
    ):
        self.api = api
        self.agent_key = agent_key
        self.retry = RetryPolicy(retries, backoff, sleep)
        self.key_cache = memory.KeyCache()  # kid -> raw key, this session only, never on disk
        self.journal = journal if journal is not None else Journal()  # in memory without a profile
        self.vault: Vault | None = None  # the last load
        self.made_topics: list[memory.Topic] = []  # topics written since the last load listed them
        self.resends = 0  # how many times a write was sent again after an unknown outcome
        self.last_verify: Any = None  # verify.Verified: what the last save or edit read back as
        self.written: set[str] = set()  # ids this session's writes sent (for reconciling deletes)
        self.editing: tuple[Journal, dict] | None = None  # the edit whose PUT is being journaled
        self.skipped_spaces = 0  # legacy spaces the last load could not read (legacy.load_spaces)
        self.reached = 0  # sends that may have reached the server (all but a refused connection)
        self._load = load
        self._on_change = on_change

    # The policy's parts, as the rules and the facade read and set them.
    @property
    def retries(self) -> int:
        return self.retry.retries

    @retries.setter
    def retries(self, value: int) -> None:
        self.retry.retries = value

    @property
    def backoff(self) -> float:
        return self.retry.backoff

    @backoff.setter
    def backoff(self, value: float) -> None:
        self.retry.backoff = value

    @property
    def sleep(self) -> Callable[[float], Any]:
        return self.retry.sleep

    @sleep.setter
    def sleep(self, value: Callable[[float], Any]) -> None:
        self.retry.sleep = value

    def load(self) -> Vault:
        """Read the vault again (through the connection's load, so every view sees it)."""
        if self._load is None:
            raise RuntimeError("this session has no loader")
        return self._load()

    # -- sending ------------------------------------------------------------------------------
    def get(self, path: str, params: dict | None = None, **members: Any) -> dict:
        """A read: safe to repeat, so an unknown outcome — or an answer that is not an object with
        `members` of the shapes named (http.expect_object) — is simply asked again."""

        def read() -> dict:
            return expect_object(self.api.request("GET", path, params=params), f"GET {path}", **members)

        return self.retry.run(read)

    def send(
        self,
        method: str,
        path: str,
        body: Any,
        members: dict[str, Any] | None = None,
        check: Callable[[dict], str | None] | None = None,
    ) -> dict:
        """Send one write under the retry rules (the same body every time). An answer that is not an
        object with `members` of the shapes named, or that `check` finds does not prove what was
        asked (it returns why), is an unknown outcome, like a lost one: the same body is sent
        again, and it is never taken for success or refusal."""
        where = f"{method} {path}"

        def send() -> dict:
            try:
                ans = expect_object(self.api.request(method, path, json=body), where, **(members or {}))
            except TransportError as exc:
                self.reached += exc.sent
                raise
            except ServerError:
                self.reached += 1
                raise
            self.reached += 1
            why = check(ans) if check is not None else None
            if why:
                raise TransportError(f"{where}: {why}; the outcome is unknown")
            return ans

        def retried(attempt: int, exc: BaseException) -> None:
            self.resends += 1
            log.info(
                "%s %s: %s; sending the same body again (attempt %d)", method, path, type(exc).__name__, attempt + 1
            )

        return self.retry.run(send, on_retry=retried)

    def intent(self, kind: str, what: Any) -> str:
        """An HMAC of what a write asks, keyed by this agent's private key: the same ask gives the
        same value (to find its journal entry), and the value tells nothing of the text."""
        key = hashlib.sha256(self.agent_key.to_pem().encode()).digest()
        data = json.dumps([kind, what], sort_keys=True, default=str, ensure_ascii=True).encode()
        return hmac.new(key, data, hashlib.sha256).hexdigest()

    # -- what the server holds now ------------------------------------------------------------
    def served(self) -> list[dict]:
        """The memory rows served to this connection now (one read, not the last load)."""
        answer = self.get(MEMORIES, memories=list)
        if not isinstance(answer.get("memories"), list):
            raise TransportError(f"GET {MEMORIES}: the answer has no memories array; ask again")
        return [r for r in answer["memories"] if isinstance(r, dict)]

    def served_row(self, row_id: str) -> dict:
        row = next((r for r in self.served() if r.get("id") == row_id), None)
        if row is None:
            raise NotFound(404, "NOT_FOUND", f"no memory {row_id} is served to this connection")
        return row

    def keys(self) -> memory.RecipientKeys:
        """Who a new key is wrapped to, from `GET /api/agent/context/memory-grantees`."""
        body = self.get(GRANTEES, owner_public_key=str, grantees=list)
        keys = memory.RecipientKeys.from_response(body, self.agent_key.public_key_b64)
        tokens = self.api.tokens
        if tokens is not None and not tokens.token_id and keys.self_token_id:
            tokens.token_id = keys.self_token_id
            if self._on_change is not None:
                self._on_change()
        return keys

    # -- topics -------------------------------------------------------------------------------
    def topics(self) -> list[memory.Topic]:
        """The topics of the last load (loading first when there is none) and those made since."""
        vault = self.vault if self.vault is not None else self.load()
        return [*vault.topic_list, *self.made_topics]

    def find_topic(self, topic: Any) -> memory.Topic | None:
        return memory.find_topic(self.topics(), topic)

    def forget_listed_topics(self) -> None:
        """Drop the topics made here that the last load lists now."""
        if self.made_topics and self.vault is not None:
            known = {i for t in self.vault.topic_list for i in t.ids}
            self.made_topics = [t for t in self.made_topics if t.id not in known]
