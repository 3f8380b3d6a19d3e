"""`%decoy` / `%%decoy`: the workbench's magics.

One `decoy` method serves line and cell. The verbs and their arguments come from `verbs/`
(the table the shell's `decoy-lab` is built from too); each verb is a small function in
handlers.py (the table `RUN`) that calls client / memory / topicmap / widgets and returns its
value (so `df = %decoy memories` works) with a display that suits it; this module parses and
dispatches. Settings are traitlets: `%config DecoyMagics.profile =
"work"`. A mistake is one line and a suggestion (`UsageError`); `%decoy help` lists everything.
Tab completes verbs, flags, topic names, categories and ids, and account and address ids from the
last account list (completion.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, Dict, Float, List, Unicode

from decoy_lab.errors import DecoyError
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import MEMORY_COLUMNS, with_progress
from decoy_lab.workbench.notebook import completion
from decoy_lab.workbench.notebook.handlers import RUN

if TYPE_CHECKING:  # the widgets and the sandbox load on first use
    from decoy_lab.client.connection import Connection
    from decoy_lab.inspector.inspector import Inspector
    from decoy_lab.protocol.access import Access
    from decoy_lab.sandbox import Sandbox
    from decoy_lab.vault.read import Vault
    from decoy_lab.widgets.pairing_view import PairingWidget

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
        self.inspector: Inspector | None = None  # the recording proxy of `%decoy inspect`, while it runs
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
            text = verbs.front_words(str(exc), NB)
            raise UsageError(f"%decoy {verb.name}: {text}" + (f"\n→ {said}" if said else "")) from None

    decoy.__doc__ = f"{decoy.__doc__}\n\n{verbs.usage(NB)}"  # `%decoy?` shows every sub-command

    # -- shared helpers used by the sub-commands -------------------------------------------------
    def conn(self) -> Any:
        """The live Connection, or a UsageError that says how to get one."""
        if self.connection is None:
            w = self.pairing
            if w is not None and w.waiting:
                raise UsageError(
                    f"the pairing is still waiting for the owner's approval ({w.handle.status}; its widget is in "
                    "the cell that ran connect). Run this again once it says done, or press Cancel there."
                )
            raise UsageError("not connected: run %decoy connect --sandbox (or %decoy connect URL) first")
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
        return completion.sources(self.last_vault, self._listed(), self._addresses())

    def complete(self, line: str) -> list[str]:
        """What Tab offers at the end of `line` (a `%decoy …` line up to the cursor)."""
        return completion.complete(line, self.last_vault, self._listed(), self._addresses())

    def _listed(self) -> list[Any]:
        """The accounts the current connection's latest account list held (`%decoy accounts`)."""
        return list(self.connection.account_book.last) if self.connection is not None else []

    def _addresses(self) -> list[str]:
        """The address ids the current connection's latest address list held (`%decoy decoys`)."""
        return list(self.connection.account_book.last_addresses) if self.connection is not None else []

    def _matcher(self) -> Callable[[Any], dict]:
        """An IPython context matcher: on a `%decoy` line only our words are offered."""
        return completion.matcher(self.complete)


def _one_line(exc: verbs.UsageProblem) -> str:
    where = f"%decoy {exc.verb}" if exc.verb else "%decoy"
    return f"{where}: {exc}" + (f"\nusage: {exc.usage}" if exc.usage else "")
