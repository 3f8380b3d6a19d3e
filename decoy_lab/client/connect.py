"""How a `Connection` is made: paired (in a thread, or waited for), with the sandbox, or resumed
from a saved profile; a saved profile for another server or client is never replaced silently.
The device grant itself is protocol/pairing.py; this only joins it to a Connection and its profile.
Each function takes the class it makes (`cls`, typed by what it is used for: `Connecting`):
client/connection.py imports this module, never the reverse."""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

import httpx

from decoy_lab.client.saved import Saved, drop_journal
from decoy_lab.errors import DecoyError, PairingError, ProfileError
from decoy_lab.protocol.access import Access
from decoy_lab.protocol.pairing import PairingHandle, authorization_details
from decoy_lab.protocol.session import Session
from decoy_lab.store.profiles import Profile, ProfileStore, profile_tokens
from decoy_lab.transport.api import Api, Tokens
from decoy_lab.wire.crypto import AgentKey


class Made(Protocol):
    """What these functions use of the connection they make (client/connection.py's `Connection`,
    which imports this module: the class is handed in as `cls`, a `Connecting`)."""

    saved: Saved
    session: Session
    dropped_pending: list[dict]

    @property
    def profile(self) -> str | None: ...

    def access(self, refresh: bool = True) -> Access: ...

    def save_profile(self) -> None: ...

    def own_sandbox(self, sandbox: Any) -> None: ...


M = TypeVar("M", bound=Made)
M_co = TypeVar("M_co", bound=Made, covariant=True)


class Connecting(Protocol[M_co]):
    """The class that makes connections: called with its constructor's arguments, and paired."""

    def __call__(self, *args: Any, **kwargs: Any) -> M_co: ...

    def start_pairing(self, *args: Any, **kwargs: Any) -> PairingHandle: ...

    def pair(self, *args: Any, **kwargs: Any) -> M_co: ...


DEFAULT_CLIENT_ID = "decoy-lab"
SANDBOX_OPTIONS = ("owner_key", "approve", "seed", "db", "faults", "clock")


def new_client_id() -> str:
    """A client id for a new connection. The server continues a live connection paired again
    with the same client id (a reconnect), so each new pairing gets its own, and a saved profile
    keeps it for the next reconnect."""
    return f"{DEFAULT_CLIENT_ID}-{uuid.uuid4().hex[:12]}"


def start_pairing(
    cls: Connecting[M],
    base_url: str,
    *,
    name: str,
    permissions: Iterable[str | dict] | None,
    client_id: str | None,
    profile: str | None,
    retries: int,
    agent_key: AgentKey | None,
    http: httpx.Client | None,
    transport: httpx.BaseTransport | None,
    store: ProfileStore | None,
    force: bool,
    options: dict[str, Any],
    **handle_options: Any,
) -> PairingHandle:
    """`Connection.start_pairing` (its docstring says what it does)."""
    check_base_url(base_url)
    rows = authorization_details(permissions)
    store = ProfileStore() if store is None and profile else store
    key, client_id = _identity(store, profile, base_url, client_id, agent_key, force)
    api = Api(base_url, http=http, transport=transport, client_id=client_id)

    def make(tokens: Tokens) -> M:
        return cls(
            base_url, tokens=tokens, retries=retries, api=api, agent_key=key, client_id=client_id, name=name,
            profile=profile, store=store, **options,
        )  # fmt: skip

    return _handle(make, api, rows, key, name, client_id, handle_options)


def _handle(
    make: Callable[[Tokens], M],
    api: Api,
    rows: list[dict],
    key: AgentKey,
    name: str,
    client_id: str,
    options: dict[str, Any],
) -> PairingHandle:
    """The pairing's handle, started; once approved it makes the Connection (`make(tokens)`)."""

    def finish(tokens: Tokens) -> M:
        return _finish(make(tokens), handle)

    pub = key.public_key_b64
    handle = PairingHandle(
        api, name=name, client_id=client_id, rows=rows, agent_public_key=pub, finish=finish, **options
    )
    return handle.start()


def _identity(
    store: ProfileStore | None,
    profile: str | None,
    base_url: str,
    client_id: str | None,
    agent_key: AgentKey | None,
    force: bool,
) -> tuple[AgentKey, str]:
    """The key and client id a pairing uses: a reconnect keeps its key, so its memories stay readable."""
    if not force:
        refuse_to_replace(store, profile, base_url, client_id)
    saved = saved_identity(store, profile, base_url)
    if agent_key is None and saved is not None:
        agent_key, client_id = saved[0], client_id or saved[1]
    return agent_key or AgentKey.generate(), client_id or new_client_id()


def _finish(conn: M, handle: PairingHandle) -> M:
    """The pairing's last steps: a grant shows, a new cache and journal, the profile saved."""
    await_grant(conn, handle)
    if conn.saved.kept:  # a new pairing starts a new cache: the old one's key is gone
        conn.saved.clear_cache()
        # and a new journal: what the profile's earlier connection left pending is not this one's to send
        conn.dropped_pending = drop_journal(conn.session.journal, f"pairing profile {conn.profile!r} anew")
    conn.save_profile()
    return conn


def refuse_to_replace(store: ProfileStore | None, profile: str | None, base_url: str, client_id: str | None) -> None:
    """A ProfileError when profile `profile` holds a connection to another server or client."""
    if store is None or not profile or not store.exists(profile):
        return
    p = store.load(profile)  # a profile that cannot be read is a ProfileError too: nothing is replaced
    other = not p.for_server(base_url) or bool(client_id and client_id != p.client_id)
    if other and p.access_token:
        raise ProfileError(
            f"profile {profile!r} holds the connection {p.connection_name or p.client_id!r} to {p.base_url}: "
            f"pairing {base_url} under the same name would replace it. Choose another profile name, or "
            "pass force=True (--force) to replace it; the old connection stays usable until then "
            f"(decoy-lab unpair --profile {profile} ends it)"
        )


def saved_identity(store: ProfileStore | None, profile: str | None, base_url: str) -> tuple[AgentKey, str] | None:
    """The key and client id a saved profile for this server holds (None when there is none)."""
    if store is None or not profile or not store.exists(profile):
        return None
    try:
        p = store.load(profile)
    except DecoyError:
        return None
    if not p.for_server(base_url) or not p.private_key_pem:
        return None
    return AgentKey.from_pem(p.private_key_pem), p.client_id


def print_link(link: str, code: str) -> None:
    print(f"Open {link} and approve in the Decoy app (code {code}).")


def pair(
    cls: Connecting[M],
    base_url: str,
    *,
    on_link: Callable[[str, str], Any] | None,
    timeout: float,
    options: dict[str, Any],
    **given: Any,
) -> M:
    """`Connection.pair`: start pairing and wait for it (Ctrl-C cancels it)."""
    handle = cls.start_pairing(
        base_url, on_link=print_link if on_link is None else on_link, timeout=timeout, **given, **options
    )
    try:
        return handle.result(timeout + 120)
    except KeyboardInterrupt:
        handle.cancel()
        raise


def await_grant(conn: Made, handle: PairingHandle | None = None, attempts: int = 10) -> Access:
    """Return once `/policies` shows a grant: an approved screen is not a working connection."""
    for i in range(attempts):
        acc = conn.access()
        if acc.policies:
            return acc
        if i + 1 < attempts:
            if handle is not None:
                handle.pause(0.2)
            else:
                conn.session.sleep(0.2)
    raise PairingError("the owner approved, but /policies shows no grant for this token", code="no_grant")


def sandbox(cls: Connecting[M], opts: dict[str, Any]) -> M:
    """`Connection.sandbox`: start the embedded sandbox, pair with it, own it."""
    from decoy_lab.sandbox import Sandbox

    sb = Sandbox.start(**{k: opts.pop(k) for k in SANDBOX_OPTIONS if k in opts})
    opts.setdefault("name", "decoy_lab notebook")
    opts.setdefault("profile", None)
    if sb.state.approve == "auto":
        opts.setdefault("on_link", lambda link, code: None)  # approved at once: nothing to show
    try:
        conn = cls.pair(sb.url, **opts)
    except BaseException:
        sb.stop()
        raise
    conn.own_sandbox(sb)
    return conn


def resume(
    cls: Connecting[M],
    profile: str,
    *,
    store: ProfileStore | None,
    check: bool,
    options: dict[str, Any],
    **given: Any,
) -> M:
    """`Connection.resume`: the saved key, token, client id, name and cursor, read back."""
    store = store or ProfileStore()
    p = store.load(profile)
    if not p.private_key_pem or not p.access_token:
        raise DecoyError(f"profile {profile!r} holds no key or token: pair again with Connection.pair(...)")
    conn = cls(p.base_url, **_saved(p), profile=profile, store=store, cache_key=p.cache_key, **given, **options)
    if check:
        conn.access()
    return conn


def _saved(p: Profile) -> dict[str, Any]:
    """What a Connection is made with from a saved profile (besides its name and store)."""
    return {
        "agent_key": AgentKey.from_pem(p.private_key_pem or ""),
        "tokens": profile_tokens(p),
        "client_id": p.client_id or DEFAULT_CLIENT_ID,
        "name": p.connection_name,
        "cursor": p.cursor,
    }


def check_base_url(base_url: str) -> None:
    """Refuse a server URL that is not http(s)://host before any thread starts, in plain words.
    An empty URL is allowed: the requests then go to an in-process transport."""
    if not base_url:
        return
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PairingError(
            f"{base_url!r} is not a server URL: give it as http://host:port or https://host", code="invalid_url"
        )
