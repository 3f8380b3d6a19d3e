"""`%decoy` / `%%decoy`: the workbench's magics.

One `decoy` method serves line and cell. The verbs and their arguments come from `verbs.py`
(the table the shell's `decoy-lab` is built from too); each verb here is a small function that
calls client / memory / topicmap / widgets and returns its value (so `df = %decoy memories`
works) with a display that suits it. Settings are traitlets: `%config DecoyMagics.profile =
"work"`. A mistake is one line and a suggestion (`UsageError`); `%decoy help` lists everything.
Tab completes verbs, flags, topic names, categories and ids.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display
from traitlets import Bool, Dict, Float, List, Unicode

from decoy_lab.errors import DecoyError
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import MEMORY_COLUMNS, MemoryFrame, with_progress

if TYPE_CHECKING:  # the widgets and the sandbox load on first use
    from decoy_lab.client.connection import Connection
    from decoy_lab.rules.access import Access
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.vault.read import Vault
    from decoy_lab.widgets.pairing import PairingWidget

NB = verbs.NOTEBOOK


@magics_class
class DecoyMagics(Magics):
    """`%decoy` and `%%decoy`. Configure with `%config DecoyMagics.<name> = …`."""

    base_url = Unicode("", help="Decoy API base URL for `connect`; empty means the embedded sandbox.").tag(config=True)
    profile = Unicode("default", help="Profile that stores the connection (key, tokens).").tag(config=True)
    reveal = Bool(False, help="Show raw keys in traces (otherwise fingerprints only).").tag(config=True)
    name = Unicode("decoy_lab notebook", help="The connection's name the owner sees when pairing.").tag(config=True)
    permissions = List(
        Unicode(),
        default_value=["memory.read", "memory.save"],
        help="What `connect` asks for when no --permission is given.",
    ).tag(config=True)
    pairing_timeout = Float(600.0, help="Seconds a pairing waits for the owner's approval.").tag(config=True)
    auto_approve_wait = Float(
        10.0,
        help="Seconds `connect` stays in the cell for an owner who approves at once (the sandbox's "
        "auto-approving phone), so the connection is there in the next line; otherwise it returns at once.",
    ).tag(config=True)
    columns = List(
        Unicode(),
        default_value=list(MEMORY_COLUMNS),
        help="The columns a memories frame shows (the returned DataFrame keeps all; `--all` shows them).",
    ).tag(config=True)
    qr = Bool(
        False,
        help="Also draw the pairing link as a QR code. Off by default: Decoy's pairing guide says \"Never render "
        'the QR / `qr_data` yourself. Always send the link." (on a desktop, the page the link opens shows a code '
        "for the phone).",
    ).tag(config=True)
    sandbox_options = Dict(
        help="Options for the embedded sandbox `connect --sandbox` starts (e.g. {'seed': 'none', 'approve': 'manual'})."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kw: Any):
        super().__init__(shell=shell, **kw)
        self.connection: Connection | None = None  # the current Connection
        self.connections: list[Any] = []  # every live connection of this kernel, oldest first
        self._numbers: dict[Any, int] = {}  # connection -> its number in `connections` (see number())
        self.pairing: PairingWidget | None = None  # the PairingWidget of the latest `connect`
        self.sandbox: Sandbox | None = None  # the embedded Sandbox, when `connect` started one
        self.asked: Any = None  # the permission rows the pairing asked for
        self.granted: Access | None = None  # the Access read when the pairing finished
        self.last_vault: Vault | None = None  # the latest load, for completion and suggestions
        if shell is not None:
            from decoy_lab.workbench.display import register_formatters

            shell.Completer.custom_matchers.append(self._matcher())
            register_formatters(shell)

    @line_cell_magic
    def decoy(self, line: str = "", cell: str | None = None) -> Any:
        """Workbench for Decoy memories. `%decoy help` lists the sub-commands."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%decoy: {exc} (quote a value with spaces in '…')") from None
        verb, args = None, None
        try:
            parsed = verbs.parse(words, NB)
            if parsed is None:  # -h printed the verb's help
                return None
            verb, args = parsed
            return RUN[verb.name](self, args, cell)
        except verbs.UsageProblem as exc:
            raise UsageError(_one_line(exc)) from None
        except DecoyError as exc:
            assert verb is not None and args is not None  # a DecoyError comes after the parse
            said = verbs.hint(exc, NB, verb=verb.name, profile=getattr(args, "profile", None))
            said = said or verbs.value_suggestion(exc, verb, args, self._sources())
            raise UsageError(f"%decoy {verb.name}: {exc}" + (f"\n→ {said}" if said else "")) from None

    decoy.__doc__ = f"{decoy.__doc__}\n\n{verbs.usage(NB)}"  # `%decoy?` shows every sub-command

    # -- shared helpers used by the sub-commands -------------------------------------------------
    def conn(self) -> Any:
        """The live Connection, or a UsageError that says how to get one."""
        if self.connection is None:
            w = self.pairing
            if w is not None and w.waiting:
                raise UsageError(
                    f"the pairing is still waiting for the owner's approval ({w.handle.status}; see the pairing "
                    "widget above). Run this again once it says done, or press Cancel there."
                )
            raise UsageError("not connected: run `%decoy connect --sandbox` (or `%decoy connect URL`) first")
        return self.connection

    def vault(self) -> Any:
        conn = self.conn()
        self.last_vault = with_progress(lambda progress: conn.load(progress=progress), "loading memories")
        return self.last_vault

    def _connected(self, conn: Any) -> None:
        """A pairing finished or a profile was resumed: it becomes the current connection."""
        if self.sandbox is not None and conn.base_url == self.sandbox.url:
            conn.sandbox_handle = self.sandbox  # the sandbox it paired with (its owner phone, its app-view)
        if conn not in self.connections:
            self.connections.append(conn)
        self.number(conn)
        if conn is not self.connection:
            self.connection = conn
            self.granted = conn.access(refresh=False)

    def number(self, conn: Any) -> int:
        """A connection's number in `%decoy connections`: given once and never reused in this
        kernel, so `unpair 2` means the same connection however many were ended before it."""
        if conn not in self._numbers:
            self._numbers[conn] = max(self._numbers.values(), default=0) + 1
        return self._numbers[conn]

    def _forget(self, conn: Any) -> None:
        if conn in self.connections:
            self.connections.remove(conn)
        if conn is self.connection:  # never switch silently: the user picks the next one
            self.connection = self.granted = None

    def _sources(self) -> dict[str, Callable[[], list[str]]]:
        """What completion and suggestions offer: names and ids from the latest load."""
        v = self.last_vault

        def column(frame: str, col: str) -> Callable[[], list[str]]:
            def read() -> list[str]:
                if v is None:
                    return []
                df = getattr(v, frame)
                if col not in df:
                    return []
                values = df[col].explode() if col == "categories" else df[col]
                return [str(x) for x in values.dropna().unique()]

            return read

        return {
            "topic": lambda: ["You", *column("topics", "name")()],
            "category": column("memories", "categories"),
            "id": column("memories", "id"),
            "permission": lambda: list(verbs.PERMISSIONS),
        }

    def complete(self, line: str) -> list[str]:
        """What Tab offers at the end of `line` (a `%decoy …` line up to the cursor)."""
        parts = line.lstrip().split(None, 1)
        return verbs.complete(parts[1] if len(parts) > 1 else "", NB, self._sources())

    def _matcher(self) -> Callable[[Any], dict]:
        """An IPython context matcher: on a `%decoy` line only our words are offered (Python
        names from Jedi would only be noise there)."""
        from IPython.core.completer import SimpleCompletion, context_matcher

        @context_matcher()
        def decoy_matcher(context: Any) -> dict:
            line = context.line_with_cursor[: context.cursor_position]
            if not line.lstrip().startswith(("%decoy", "%%decoy")):
                return {"completions": []}
            token = context.token
            found = self.complete(line)
            stem = line[: len(line) - len(token)] if token else line
            if stem.endswith(("'", '"')):  # the quote is already typed: offer the rest of the value
                found = [w[1:] if w[:1] in "'\"" else w for w in found]
            words = found
            return {"completions": [SimpleCompletion(w, type="decoy") for w in words], "suppress": True}

        return decoy_matcher


def _one_line(exc: verbs.UsageProblem) -> str:
    where = f"%decoy {exc.verb}" if exc.verb else "%decoy"
    return f"{where}: {exc}" + (f"\nusage: {exc.usage}" if exc.usage else "")


# -- sub-commands -----------------------------------------------------------------------------
def _help(m: DecoyMagics, args: Any, cell: str | None) -> None:
    print(verbs.usage(NB))
    print("\n`%decoy VERB -h` explains one verb; Tab completes verbs, flags, topics, categories and ids.")


def _connect(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.client.connection import Connection
    from decoy_lab.widgets.pairing import PairingWidget

    profile = args.profile or m.profile
    url = verbs.connect_url(args) or (None if args.sandbox else m.base_url or None)
    if m.pairing is not None and m.pairing.waiting and not args.new:
        print("A pairing is still waiting for the owner (the widget above): Cancel it there, or `connect --new`.")
        return m.pairing
    if not args.new:
        live = _live_for(m, url, args.sandbox, args.profile)
        if live is not None:
            m._connected(live)
            print(
                f"Already connected: {live.name!r} at {live.base_url} (token id {live.token_id}); using it. "
                "`%decoy connect --new` pairs another; `%decoy request PERM` asks for more on this one."
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
        return m.pairing.connection  # the widget above shows the consent card; the repr has no secrets
    return m.pairing  # the owner approves later; the widget says when (and Cancel works meanwhile)


def _live_for(m: DecoyMagics, url: str | None, sandbox: bool, profile: str | None) -> Any:
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


def _connections(m: DecoyMagics, args: Any, cell: str | None) -> Any:
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
        print("No connections in this notebook: `%decoy connect --sandbox` (or `%decoy connect URL`) pairs one.")
    frame = pd.DataFrame(rows, columns=["current", "name", "server", "profile", "token_id", "key"])
    frame.index = pd.Index([m.number(c) for c in m.connections], name="#", dtype="int64")
    return frame


def _unpair(m: DecoyMagics, args: Any, cell: str | None) -> None:
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
            f" {len(m.connections)} other(s) stay live: `%decoy connections` lists them, `%decoy connect` picks one."
        )
    print(done)


def _pick(m: DecoyMagics, which: str) -> Any:
    numbered = next((c for c in m.connections if which.isdigit() and m.number(c) == int(which)), None)
    if numbered is not None:
        return numbered
    for c in m.connections:
        if c.token_id == which:
            return c
    ids = [str(c.token_id) for c in m.connections]
    near = verbs.closest(which, ids)
    raise verbs.UsageProblem(
        f"no connection {which!r} in this notebook (`%decoy connections` lists them)"
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


def _status(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    """The consent card (asked · granted · held now) and the Connection (its repr has no secrets)."""
    from decoy_lab.widgets.consent import ConsentCard

    conn = m.conn()
    display(ConsentCard.for_connection(conn, asked=m.asked, granted=m.granted))
    return conn


def _access(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.conn().access()


def _request(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.consent import RequestCard

    about = [args.topic] if args.topic else None  # a name or topic:<id>; the client resolves it
    req = m.conn().request_access(args.permissions, datatypes=args.datatypes, about=about, reason=args.reason)
    display(RequestCard(req, asked=args.permissions, reason=args.reason))
    return req


def _memories(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.views import topicmap

    vault = m.vault()
    if args.wait:
        from decoy_lab.vault.waiting import wait_for_rows

        vault = m.last_vault = wait_for_rows(m.conn(), vault)
    df = topicmap.select_memories(vault, topic=args.topic, category=args.category, search=args.search, mine=args.mine)
    filtered = any(x for x in (args.topic, args.category, args.search, args.mine))
    return MemoryFrame.of(df, vault=vault, columns=None if args.all else list(m.columns), front=NB, filtered=filtered)


def _topics(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().topics


def _links(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().links


def _rows(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().rows


def _map(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.views import topicmap

    return topicmap.build_graph(m.vault(), topic=args.topic, depth=args.depth, category=args.category)


def _unseal(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.stepper import shown

    return shown(m.conn().unseal(args.id), reveal=args.reveal or m.reveal)


def _seal(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.stepper import shown

    row, trace = m.conn().seal_preview(" ".join(args.text), topic=args.topic, categories=args.categories or [])
    out = shown(trace, reveal=args.reveal or m.reveal)
    out.row = row
    return out


def _save(m: DecoyMagics, args: Any, cell: str | None) -> Any:
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


def _edit(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.workbench.display import Edited

    changes = verbs.edit_changes(args, (cell or "").strip() or args.text)
    return Edited(m.conn().edit(args.id, **changes), changes=changes, memory_id=args.id)


def _delete(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    res = m.conn().delete(args.ids)
    if not res.deleted:  # said the way a refused edit is said: an error naming each id and why
        why = "; ".join(f"{rid}: {res.why.get(rid) or 'refused'}" for rid in res.refused)
        raise DecoyError(f"nothing was deleted ({why})")
    return res  # shown as a sentence and a small table (display.delete_html)


def _sync(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return with_progress(lambda _: m.conn().sync(), "syncing")


def _resend(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    """Send the pending writes again (the same sealed rows); `--list` only shows them."""
    conn = m.conn()
    if args.list_only:
        return conn.pending
    return conn.resend()


def _cache(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    """Where the profile's sealed vault cache is and how large (cache.py); `--clear` removes it."""
    from decoy_lab.store import cache
    from decoy_lab.store.profiles import ProfileStore

    conn = m.connection
    name = args.profile or (conn.profile if conn is not None and conn.profile else m.profile)
    path = cache.profile_cache(ProfileStore(), name)
    if args.clear:
        print(f"Removed {path}." if cache.clear(path) else f"No cache at {path}: nothing to remove.")
        return None
    return cache.describe(path)


def _browse(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from decoy_lab.widgets.vaultview import VaultView

    return VaultView(m.vault(), connection=m.conn(), reveal=m.reveal)


def _dump(m: DecoyMagics, args: Any, cell: str | None) -> Any:
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


RUN: dict[str, Callable[[DecoyMagics, Any, str | None], Any]] = {
    v.name: globals()[f"_{v.name.replace('-', '_')}"] for v in verbs.verbs_for(NB)
}
