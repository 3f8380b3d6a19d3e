"""`%decoy` / `%%decoy`: the workbench's magics.

One `decoy` method serves line and cell; its first word picks a sub-command, each a small
function that calls client / memory / topicmap / widgets and returns its value (so
`df = %decoy memories` works) with a display that suits it. Settings are traitlets:
`%config DecoyMagics.profile = "work"`. Mistakes raise `UsageError` with the usage.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display
from traitlets import Bool, Dict, Float, List, Unicode

from . import topicmap
from .display import with_progress
from .errors import DecoyError
from .vocab import USER_NAMES

USAGE = """\
%decoy connect [--sandbox] [--url URL] [--profile P] [--name N] [--permission P ...] [--no-wait]
%decoy unpair [--profile P]                               (end the connection, delete its profile)
%decoy status | access | topics | links | rows | sync | browse | help
%decoy request PERM ... [--datatypes C ...] [--topic NAME] [--reason TEXT]
%decoy memories [--topic T] [--category C] [--search TEXT] [--mine]
%decoy map [--topic T] [--depth N] [--category C]
%decoy unseal ID [--reveal]
%decoy seal TEXT [--topic T] [--categories C ...]        (a dry run: nothing is sent)
%%decoy save [--topic T] [--type TYPE] [--relation R] [--parent TOPIC] [--categories C ...]
                                                          (the cell body is the memory)
%decoy edit ID [--text TEXT] [--topic T] [--categories C ...]   (or %%decoy edit ID: the cell is the text)
%decoy delete ID [ID ...]
%decoy dump BLOB [--key BASE64_KEY | --key PEM_FILE] [--owner] [--reveal]"""

_COMMANDS: dict[str, Callable[..., Any]] = {}


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so IPython shows a UsageError."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"%decoy {self.prog.split()[-1]}: {message}\n\nusage:\n{USAGE}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise _Help()


class _Help(Exception):
    pass


_FLAG: dict[str, Any] = {"action": "store_true"}
_MANY: dict[str, Any] = {"nargs": "+"}
# sub-command -> its arguments (name, argparse options); the functions are bound in _parser().
_SPEC: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "connect": [
        ("--sandbox", _FLAG),
        ("--url", {}),
        ("--profile", {}),
        ("--name", {}),
        ("--permission", {"nargs": "+", "dest": "permissions"}),
        ("--no-wait", _FLAG),
    ],
    "unpair": [("--profile", {})],
    "status": [],
    "access": [],
    "topics": [],
    "links": [],
    "rows": [],
    "sync": [],
    "browse": [],
    "help": [],
    "request": [("permissions", _MANY), ("--datatypes", _MANY), ("--topic", {}), ("--reason", {"default": ""})],
    "memories": [("--topic", {}), ("--category", {}), ("--search", {}), ("--mine", _FLAG)],
    "map": [("--topic", {}), ("--depth", {"type": int}), ("--category", {})],
    "unseal": [("id", {}), ("--reveal", _FLAG)],
    "seal": [("text", _MANY), ("--topic", {}), ("--categories", {"nargs": "+", "default": []})],
    "save": [
        ("text", {"nargs": "*"}),
        ("--topic", {}),
        ("--type", {"default": ""}),
        ("--relation", {}),
        ("--parent", {}),
        ("--categories", {"nargs": "+", "default": []}),
    ],
    "edit": [("id", {}), ("--text", {}), ("--topic", {}), ("--categories", _MANY)],
    "delete": [("ids", _MANY)],
    "dump": [("blob", {}), ("--key", {}), ("--owner", _FLAG), ("--reveal", _FLAG)],
}


def _parser() -> _Parser:
    root = _Parser(prog="decoy", add_help=False)
    sub = root.add_subparsers(dest="command", parser_class=_Parser)
    for name, arguments in _SPEC.items():
        fn = globals()[f"_{name}"]
        p = sub.add_parser(name, prog=f"decoy {name}")
        p.set_defaults(run=fn)
        _COMMANDS[name] = fn
        for arg, options in arguments:
            p.add_argument(arg, **options)
    return root


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
    pairing_timeout = Float(600.0, help="Seconds `connect` waits for the owner's approval.").tag(config=True)
    sandbox_options = Dict(
        help="Options for the embedded sandbox `connect --sandbox` starts (e.g. {'seed': 'none', 'approve': 'manual'})."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kw: Any):
        super().__init__(shell=shell, **kw)
        self.connection: Any = None
        self.pairing: Any = None  # the PairingWidget of the latest `connect`
        self.sandbox: Any = None  # the embedded Sandbox, when `connect` started one
        self.asked: Any = None  # the permission rows the pairing asked for
        self.granted: Any = None  # the Access read when the pairing finished

    @line_cell_magic
    def decoy(self, line: str = "", cell: str | None = None) -> Any:
        """Workbench for Decoy memories. `%decoy help` lists the sub-commands."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%decoy: {exc}\n\nusage:\n{USAGE}") from None
        if not words:
            raise UsageError(f"%decoy needs a sub-command\n\nusage:\n{USAGE}")
        if words[0] not in _COMMANDS:
            raise UsageError(f"%decoy: unknown sub-command {words[0]!r}\n\nusage:\n{USAGE}")
        try:
            args, extra = _PARSER.parse_known_args(words)
        except _Help:
            return _help(self, None, None)
        if extra:  # reported here so the message names the sub-command, not the root parser
            raise UsageError(f"%decoy {words[0]}: unrecognized arguments: {' '.join(extra)}\n\nusage:\n{USAGE}")
        try:
            return args.run(self, args, cell)
        except DecoyError as exc:
            hint = _hint(exc)
            raise UsageError(f"%decoy {words[0]}: {exc}" + (f"\n→ {hint}" if hint else "")) from None

    decoy.__doc__ = f"{decoy.__doc__}\n\n{USAGE}"  # `%decoy?` shows every sub-command

    # -- shared helpers used by the sub-commands -------------------------------------------------
    def conn(self) -> Any:
        """The live Connection, or a UsageError that says how to get one."""
        if self.connection is None:
            if self.pairing is not None and self.pairing.connection is None and self.pairing.error is None:
                raise UsageError(
                    "the pairing is still waiting for the owner's approval (see the pairing "
                    "widget above); run this again once it says done"
                )
            raise UsageError("not connected: run `%decoy connect --sandbox` (or `--url URL`) first")
        return self.connection

    def vault(self) -> Any:
        conn = self.conn()
        return with_progress(lambda progress: conn.load(progress=progress), "loading memories")

    def _connected(self, conn: Any) -> None:
        if conn is self.connection:
            return
        self.connection = conn
        self.granted = conn.access(refresh=False)


def _hint(exc: DecoyError) -> str | None:
    """The `%decoy` command that answers an error, where there is one (the message names the API call)."""
    from .errors import InsufficientGrant, TokenError

    if isinstance(exc, TokenError) and (exc.recovery == "re_pair" or exc.code == "TOKEN_REVOKED"):
        return "pair anew in this notebook: %decoy connect --sandbox (or --url URL)"
    if isinstance(exc, InsufficientGrant) and exc.required_permission:
        return f'ask the owner for it: %decoy request {exc.required_permission} --reason "…"'
    return None


# -- sub-commands -----------------------------------------------------------------------------
def _help(m: DecoyMagics, args: Any, cell: str | None) -> None:
    print(USAGE)


def _connect(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from .client import Connection
    from .widgets.pairing import PairingWidget

    profile = args.profile or m.profile
    url = args.url or (None if args.sandbox else m.base_url or None)
    if url is None and not args.sandbox and not args.permissions and _has_profile(profile):
        conn = Connection.resume(profile)  # reconnect with the same key and tokens
        m._connected(conn)
        return conn
    if url is None:  # the embedded sandbox: nothing to keep on disk, it lives as long as the kernel
        from .sandbox import Sandbox

        if m.sandbox is None:
            opts = {"approve": "auto", **m.sandbox_options}
            m.sandbox = with_progress(lambda _: Sandbox.start(**opts), "starting the sandbox")
        url, profile = m.sandbox.url, None
    handle = Connection.start_pairing(
        url, name=args.name or m.name, permissions=args.permissions or list(m.permissions), profile=profile
    )
    m.asked = handle.rows
    m.pairing = PairingWidget(handle, on_done=m._connected)
    display(m.pairing)
    if args.no_wait:
        return m.pairing
    conn = m.pairing.wait(m.pairing_timeout)
    if url == getattr(m.sandbox, "url", None):
        conn.sandbox_handle = m.sandbox  # the sandbox it paired with (its owner phone, its app-view)
    m._connected(conn)
    return conn  # the widget above shows the pairing and the consent card; the repr has no secrets


def _unpair(m: DecoyMagics, args: Any, cell: str | None) -> None:
    """End the connection at the server and delete its saved profile; `--profile P` a saved one."""
    from .client import Connection

    current = m.connection
    if args.profile and (current is None or current.profile != args.profile):
        conn = Connection.resume(args.profile, check=False)  # a revoked one can still be forgotten
    else:
        conn = m.conn()
    token_id, profile = conn.token_id, conn.profile
    try:
        conn.unpair()
    finally:
        conn.close()
    if conn is current:
        m.connection = m.granted = None
    done = f"Ended connection {token_id} (key {conn.agent_key.fingerprint})"
    print(done + (f" and deleted profile {profile!r}." if profile else "."))


def _has_profile(name: str) -> bool:
    try:
        from .profiles import ProfileStore

        return ProfileStore().exists(name)
    except DecoyError:
        return False


def _status(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    """The consent card (asked · granted · held now) and the Connection (its repr has no secrets)."""
    from .widgets.consent import ConsentCard

    conn = m.conn()
    display(ConsentCard.for_connection(conn, asked=m.asked, granted=m.granted))
    return conn


def _access(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.conn().access()


def _request(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    about = [args.topic] if args.topic else None  # a name or topic:<id>; the client resolves it
    return m.conn().request_access(args.permissions, datatypes=args.datatypes, about=about, reason=args.reason)


def _memories(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return topicmap.select_memories(
        m.vault(), topic=args.topic, category=args.category, search=args.search, mine=args.mine
    )


def _topics(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().topics


def _links(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().links


def _rows(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.vault().rows


def _map(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    if args.depth is not None and args.depth < 0:
        raise UsageError("%decoy map: --depth must be 0 or more")
    return topicmap.build_graph(m.vault(), topic=args.topic, depth=args.depth, category=args.category)


def _unseal(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from .widgets.stepper import shown

    return shown(m.conn().unseal(args.id), reveal=args.reveal or m.reveal)


def _seal(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from .widgets.stepper import shown

    row, trace = m.conn().seal_preview(" ".join(args.text), topic=args.topic, categories=args.categories)
    out = shown(trace, reveal=m.reveal)
    out.row = row
    return out


def _save(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    text = (cell or "").strip() or " ".join(args.text).strip()
    if not text:
        raise UsageError("%%decoy save: the cell body is the memory; it is empty")
    link = {"relation_type": args.relation, "topic": args.parent} if args.relation or args.parent else None
    kw: dict[str, Any] = {"topic": args.topic, "categories": args.categories}
    if args.type:
        kw["topic_type"] = args.type
    if link:
        kw["link"] = link
    return m.conn().save(text, **kw)


def _edit(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    changes: dict[str, Any] = {}
    text = (cell or "").strip() or args.text
    if text:
        changes["text"] = text
    if args.topic is not None:
        changes["topic"] = None if args.topic.lower() in USER_NAMES else args.topic
    if args.categories is not None:
        changes["categories"] = args.categories
    if not changes:
        raise UsageError("%decoy edit: say what changes: --text, --topic, --categories (or a cell body)")
    return m.conn().edit(args.id, **changes)


def _delete(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return m.conn().delete(args.ids)


def _sync(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    return with_progress(lambda _: m.conn().sync(), "syncing")


def _browse(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from .widgets.browser import VaultView

    return VaultView(m.vault(), connection=m.conn(), reveal=m.reveal)


def _dump(m: DecoyMagics, args: Any, cell: str | None) -> Any:
    from .dump import open_blob
    from .widgets.stepper import shown

    key_b64 = key_file = None
    if args.key:
        if Path(args.key).expanduser().is_file():
            key_file = Path(args.key).expanduser()
        else:
            key_b64 = args.key
    private_key = None
    if key_b64 is None and key_file is None:
        if args.owner:
            if m.sandbox is None:
                raise UsageError(
                    "%decoy dump --owner opens with the sandbox owner's key; connect with --sandbox "
                    "first, or give the owner's key as --key PEM_FILE"
                )
            private_key = m.sandbox.owner.key
        elif m.connection is not None:
            private_key = m.connection.agent_key
    trace = open_blob(args.blob.strip(), key_b64=key_b64, key_file=key_file, private_key=private_key)
    return shown(trace, reveal=args.reveal or m.reveal)


_PARSER = _parser()
