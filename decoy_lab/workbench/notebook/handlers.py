"""The notebook's verbs: each a small function over the client, the views and the widgets that
returns its value (so `df = %decoy memories` works) with a display that suits it; `RUN` is the
table from verb to handler that the magic dispatches through.

A handler gets the magics as a `Notebook`: the settings (`%config DecoyMagics.…`), the
connections of this kernel and the helpers that find the current one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from IPython.display import display

from decoy_lab.errors import DecoyError
from decoy_lab.text import plural
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import MemoryFrame, say, select_said, with_progress
from decoy_lab.workbench.notebook import account_handlers, agents

if TYPE_CHECKING:  # the widgets and the sandbox load on first use
    from decoy_lab.client.connection import Connection
    from decoy_lab.protocol.access import Access
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.vault.read import Vault
    from decoy_lab.widgets.pairing_view import PairingWidget

NB = verbs.NOTEBOOK


class Notebook(Protocol):
    """What a handler uses of `DecoyMagics`: its settings (read only), its state and helpers."""

    connection: Connection | None
    connections: list[Any]
    pairing: PairingWidget | None
    sandbox: Sandbox | None
    asked: Any
    granted: Access | None
    last_vault: Vault | None
    shell: Any  # the IPython shell: its namespace holds the variable an account verb's --from names

    @property
    def base_url(self) -> str: ...
    @property
    def profile(self) -> str: ...
    @property
    def reveal(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def permissions(self) -> list[str]: ...
    @property
    def pairing_timeout(self) -> float: ...
    @property
    def auto_approve_wait(self) -> float: ...
    @property
    def columns(self) -> list[str]: ...
    @property
    def qr(self) -> bool: ...
    @property
    def sandbox_options(self) -> dict[str, Any]: ...

    def conn(self) -> Any: ...
    def vault(self) -> Any: ...
    def _connected(self, conn: Any) -> None: ...
    def number(self, conn: Any) -> int: ...
    def _forget(self, conn: Any) -> None: ...


Handler = Callable[[Notebook, Any, str | None], Any]


def _help(m: Notebook, args: Any, cell: str | None) -> None:
    for verb in verbs.verbs_for(NB):  # what each does, then how to type it
        print(f"{verb.name:<12} {verb.summary_for(NB)}\n{'':<12} {verb.usage(NB)}")
    print("\n%decoy VERB -h explains one verb; Tab completes verbs, flags, topics, categories and ids.")


def _connect(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.client.connection import Connection
    from decoy_lab.widgets.pairing_view import PairingWidget

    profile = args.profile or m.profile
    url = verbs.connect_url(args) or (None if args.sandbox else m.base_url or None)
    if m.pairing is not None and m.pairing.waiting and not args.new:
        print(
            "A pairing is still waiting for the owner (its widget is in the cell that ran connect): "
            "press Cancel there, or run %decoy connect --new."
        )
        return m.pairing
    if not args.new:
        live = _live_for(m, url, args.sandbox, args.profile)
        if live is not None:
            m._connected(live)
            print(
                f"Already connected: {live.name!r} at {live.base_url} (token id {live.token_id}); using it. "
                "%decoy connect --new pairs another; %decoy request PERM asks for more on this one."
            )
            return live
    if url is None and not args.sandbox and not args.permissions and _has_profile(profile):
        conn = Connection.resume(profile)  # reconnect with the same key and tokens
        m._connected(conn)
        return conn
    if url is None:  # the embedded sandbox: nothing to keep on disk, it lives as long as the kernel
        from decoy_lab.sandbox import Sandbox

        if m.sandbox is None:
            opts = {"approve": "auto", **m.sandbox_options}
            m.sandbox = with_progress(lambda _: Sandbox.start(**opts), "starting the sandbox")
        url, profile = m.sandbox.url, None
    handle = Connection.start_pairing(
        url,
        name=args.name or m.name,
        permissions=args.permissions or list(m.permissions),
        profile=profile,
        timeout=args.timeout or m.pairing_timeout,
        force=args.force,
    )
    m.asked = handle.rows
    sandbox = m.sandbox if m.sandbox is not None and url == m.sandbox.url else None
    m.pairing = PairingWidget(handle, on_done=m._connected, qr=m.qr, sandbox=sandbox)
    display(m.pairing)
    if sandbox is not None and sandbox.state.approve == "auto":
        handle._done.wait(m.auto_approve_wait)  # its phone approves at once: connect within this cell
        m.pairing.refresh()
    if m.pairing.connection is not None:
        return m.pairing.connection  # the pairing widget shows the consent card; the repr has no secrets
    return m.pairing  # the owner approves later; the widget says when (and Cancel works meanwhile)


def _live_for(m: Notebook, url: str | None, sandbox: bool, profile: str | None) -> Any:
    """The live connection a plain `connect` means: same profile, or same server."""
    for conn in reversed(m.connections):
        if profile is not None:
            if conn.profile == profile and (url is None or conn.base_url == url.rstrip("/")):
                return conn
        elif url is not None:
            if conn.base_url == url.rstrip("/"):
                return conn
        elif sandbox or not m.base_url:
            if m.sandbox is not None and conn.base_url == m.sandbox.url:
                return conn
            if not sandbox and conn.profile == m.profile:
                return conn
    return None


def _connections(m: Notebook, args: Any, cell: str | None) -> Any:
    import pandas as pd

    rows = [
        {
            "current": "→" if c is m.connection else "",
            "name": c.name,
            "server": c.base_url,
            "profile": c.profile or "(not saved)",
            "token_id": c.token_id,
            "key": c.agent_key.fingerprint,
        }
        for c in m.connections
    ]
    if not rows:
        print("No connections in this notebook: %decoy connect --sandbox (or %decoy connect URL) pairs one.")
    frame = pd.DataFrame(rows, columns=["current", "name", "server", "profile", "token_id", "key"])
    frame.index = pd.Index([m.number(c) for c in m.connections], name="#", dtype="int64")
    return frame


def _unpair(m: Notebook, args: Any, cell: str | None) -> None:
    """End a connection at the server and delete its saved profile: the current one, one from
    `connections` (WHICH: its number or token id), or a saved `--profile P`."""
    from decoy_lab.client.connection import Connection

    if args.which:
        conn = _pick(m, args.which)
    elif args.profile and (m.connection is None or m.connection.profile != args.profile):
        conn = next((c for c in m.connections if c.profile == args.profile), None)
        conn = conn or Connection.resume(args.profile, check=False)  # a revoked one can still be forgotten
    else:
        conn = m.conn()
    token_id, profile, key = conn.token_id, conn.profile, conn.agent_key.fingerprint
    if args.local:
        if profile:
            from decoy_lab.store.profiles import ProfileStore

            ProfileStore().delete(profile)
        m._forget(conn)
        print(f"Forgot connection {token_id} here only; it stays live at {conn.base_url} until the owner revokes it.")
        return
    try:
        conn.unpair()
    finally:
        conn.close()
    m._forget(conn)
    done = f"Ended connection {token_id} (key {key})" + (f" and deleted profile {profile!r}." if profile else ".")
    if m.connection is None and m.connections:
        done += (
            f" {plural(len(m.connections), 'other connection stays', 'other connections stay')} live: "
            "%decoy connections lists them, %decoy connect picks one."
        )
    print(done)


def _pick(m: Notebook, which: str) -> Any:
    numbered = next((c for c in m.connections if which.isdigit() and m.number(c) == int(which)), None)
    if numbered is not None:
        return numbered
    for c in m.connections:
        if c.token_id == which:
            return c
    ids = [str(c.token_id) for c in m.connections]
    near = verbs.closest(which, ids)
    raise verbs.UsageProblem(
        f"no connection {which!r} in this notebook (%decoy connections lists them)"
        + (f" — did you mean {near!r}?" if near else ""),
        verb="unpair",
        usage=verbs.BY_NAME["unpair"].usage(),
    )


def _has_profile(name: str) -> bool:
    try:
        from decoy_lab.store.profiles import ProfileStore

        return ProfileStore().exists(name)
    except DecoyError:
        return False


def _status(m: Notebook, args: Any, cell: str | None) -> Any:
    """The consent card (asked · granted · held now), alone: the connection's repr after it would
    say less than the card (`%decoy connections` lists the connections)."""
    from decoy_lab.widgets.consent import ConsentCard

    display(ConsentCard.for_connection(m.conn(), asked=m.asked, granted=m.granted))


def _access(m: Notebook, args: Any, cell: str | None) -> Any:
    return m.conn().access()


def _request(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.consent import RequestCard

    about = [args.topic] if args.topic else None  # a name or topic:<id>; the client resolves it
    req = m.conn().request_access(args.permissions, datatypes=args.datatypes, about=about, reason=args.reason)
    display(RequestCard(req, asked=args.permissions, reason=args.reason, datatypes=args.datatypes, topic=args.topic))
    return req


def _memories(m: Notebook, args: Any, cell: str | None) -> Any:
    vault = _waited(m, args)
    df = select_said(
        vault, prompt="%decoy", topic=args.topic, category=args.category, search=args.search, mine=args.mine
    )
    filtered = any(x for x in (args.topic, args.category, args.search, args.mine))
    cols = None if args.all else list(m.columns)
    return say(MemoryFrame.of(df, vault=vault, columns=cols, front=NB, filtered=filtered))


def _topics(m: Notebook, args: Any, cell: str | None) -> Any:
    return m.vault().topics


def _accounts(m: Notebook, args: Any, cell: str | None) -> Any:
    """The accounts this connection may see; `memories` counts those of the last load about each.
    An empty frame comes with the sentence that says why."""
    from decoy_lab.workbench.display import accounts_said

    conn = m.conn()
    frame = with_progress(lambda _: conn.accounts(), "reading the accounts")
    if frame.empty:
        print(accounts_said(prompt="%decoy"))
    return frame


def _decoys(m: Notebook, args: Any, cell: str | None) -> Any:
    """The Decoy addresses this connection may see (`Connection.decoys`), filtered by the server;
    an empty frame comes with the sentence that says why."""
    from decoy_lab.workbench.display import addresses_said

    conn = m.conn()
    filters = {"search": args.search, "after": args.after, "before": args.before}
    frame = with_progress(lambda _: conn.decoys(args.status, **filters), "reading the Decoy addresses")
    if frame.empty:
        print(addresses_said(conn, prompt="%decoy", status=args.status, **filters))
    return frame


def _links(m: Notebook, args: Any, cell: str | None) -> Any:
    return m.vault().links


def _rows(m: Notebook, args: Any, cell: str | None) -> Any:
    return m.vault().rows


def _map(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.topicmap_view import LiveMap

    # The graph itself, shown as the live map where widgets run and as its PNG everywhere else.
    return LiveMap.of(m.vault(), topic=args.topic, depth=args.depth, category=args.category)


def _unseal(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.stepper import shown

    return shown(m.conn().unseal(args.id), reveal=args.reveal or m.reveal)


def _seal(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.stepper import shown

    row, trace = m.conn().seal_preview(" ".join(args.text), topic=args.topic, categories=args.categories or [])
    out = shown(trace, reveal=args.reveal or m.reveal)
    out.row = row
    return out


def _save(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.workbench.display import Saved

    text = (cell or "").strip() or " ".join(args.text).strip()
    if not text:
        raise verbs.UsageProblem(
            "the memory text is empty: give it after the flags, or as the %%decoy save cell body",
            verb="save",
            usage=verbs.BY_NAME["save"].usage(),
        )
    kw = verbs.save_options(args)
    return Saved(m.conn().save(text, **kw), topic=kw.get("topic"), categories=kw["categories"])


def _edit(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.workbench.display import Edited

    changes = verbs.edit_changes(args, (cell or "").strip() or args.text)
    return Edited(m.conn().edit(args.id, **changes), changes=changes, memory_id=args.id)


def _delete(m: Notebook, args: Any, cell: str | None) -> Any:
    res = m.conn().delete(args.ids)
    if not res.deleted:  # said the way a refused edit is said: an error naming each id and why
        why = "; ".join(f"{rid}: {res.why.get(rid) or 'refused'}" for rid in res.refused)
        raise DecoyError(f"nothing was deleted ({why})")
    return res  # shown as a sentence and a small table (display.delete_html)


def _sync(m: Notebook, args: Any, cell: str | None) -> Any:
    return with_progress(lambda _: m.conn().sync(), "syncing")


def _resend(m: Notebook, args: Any, cell: str | None) -> Any:
    """Send the pending writes again (the same sealed rows); `--list` only shows them."""
    conn = m.conn()
    if args.list_only:
        return conn.pending
    return conn.resend()


def _cache(m: Notebook, args: Any, cell: str | None) -> Any:
    """Where the profile's sealed vault cache is and how large (cache.py); `--clear` removes it."""
    from decoy_lab.store import cache
    from decoy_lab.store.profiles import ProfileStore

    conn = m.connection
    name = args.profile or (conn.profile if conn is not None and conn.profile else m.profile)
    path = cache.profile_cache(ProfileStore(), name)
    if args.clear:
        print(cache.cleared(path))
        return None
    return cache.describe(path)


def _browse(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.vaultview import VaultView

    vault = _waited(m, args)  # the view itself says why it is empty, and what rows are on their way
    return VaultView(vault, connection=m.conn(), reveal=m.reveal)


def _waited(m: Notebook, args: Any) -> Any:
    """The vault, read again while rows are on their way when `--wait` was given."""
    vault = m.vault()
    if args.wait:
        from decoy_lab.vault.waiting import wait_for_rows

        vault = m.last_vault = wait_for_rows(m.conn(), vault)
    return vault


def _dump(m: Notebook, args: Any, cell: str | None) -> Any:
    from decoy_lab.recipes.dump import open_blob
    from decoy_lab.widgets.stepper import shown

    key_b64, key_file = verbs.dump_key(args)
    private_key = None
    if key_b64 is None and key_file is None:
        if args.owner:
            if m.sandbox is None:
                raise verbs.UsageProblem(
                    "--owner opens with the sandbox owner's key: connect with --sandbox first, "
                    "or give the owner's key as --key-file PEM",
                    verb="dump",
                    usage=verbs.BY_NAME["dump"].usage(),
                )
            private_key = m.sandbox.owner.key
        elif m.connection is not None:
            private_key = m.connection.agent_key
    trace = open_blob(args.blob.strip(), key_b64=key_b64, key_file=key_file, private_key=private_key)
    return shown(trace, reveal=args.reveal or m.reveal)


# verb -> handler: every notebook verb of the table (tests/workbench/test_cli.py checks both ways)
RUN: dict[str, Handler] = {
    "connect": _connect,
    "connections": _connections,
    "unpair": _unpair,
    "status": _status,
    "access": _access,
    "request": _request,
    "memories": _memories,
    "topics": _topics,
    "accounts": _accounts,
    "decoys": _decoys,
    "links": _links,
    "rows": _rows,
    "map": _map,
    "browse": _browse,
    "unseal": _unseal,
    "seal": _seal,
    "save": _save,
    "edit": _edit,
    "delete": _delete,
    "sync": _sync,
    "resend": _resend,
    "cache": _cache,
    "dump": _dump,
    "help": _help,
}
RUN.update(agents.RUN)  # inspect, check: the verbs about other agents (agents.py)
RUN.update(account_handlers.RUN)  # account-new, password, field-…, unlock, protect, decoy-… (account_handlers.py)
