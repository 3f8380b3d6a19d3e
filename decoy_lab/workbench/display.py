"""Small display helpers of the magics and the shell: a progress bar for slow calls, frames and
sentences for results (a Trace renders itself: decoy_lab.recipes.trace; escaping, colours and
the countdown are the widgets', decoy_lab.widgets.html). Nothing here prints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pandas as pd

from decoy_lab.errors import DecoyError
from decoy_lab.text import plural
from decoy_lab.vault.waiting import empty_sentence, waiting_sentence
from decoy_lab.widgets.html import MUTED, esc

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.vault.read import Vault

T = TypeVar("T")


class Progress:
    """A thread-safe count that a long call advances (`progress(n, total)`) and a bar reads."""

    def __init__(self) -> None:
        self.done = 0
        self.total: int | None = None
        self._lock = threading.Lock()

    def __call__(self, n: int, total: int | None = None) -> None:
        with self._lock:
            self.done += n
            if total is not None:
                self.total = total


def with_progress(fn: Callable[[Progress], T], desc: str, *, after: float = 1.0, poll: float = 0.1) -> T:
    """Run `fn(progress)` in a worker thread; show a `tqdm.auto` bar if it takes longer than
    `after` seconds: rows done of the total when `fn` reports them, else the time elapsed.

    The bar is made and updated in the calling thread, so in a notebook it lands in the running cell.
    """
    box: dict[str, Any] = {}
    progress = Progress()

    def work() -> None:
        try:
            box["value"] = fn(progress)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"decoy:{desc}", daemon=True)
    worker.start()
    worker.join(after)
    if worker.is_alive():
        from tqdm.auto import tqdm

        # Rows done of the total once `fn` reports one, else only the time taken: no rate either
        # way (the rows arrive in bursts, and seconds per second says nothing).
        rows, clock = "{desc}: {percentage:3.0f}% {bar} {n:,} of {total:,} rows [{elapsed}]", "{desc} for {elapsed}"
        with tqdm(desc=desc, total=None, leave=False, bar_format=clock) as bar:
            while worker.is_alive():
                worker.join(poll)
                if progress.total:
                    bar.bar_format, bar.total, bar.n = rows, progress.total, progress.done
                bar.refresh()
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- why a view is empty, and waiting for rows on their way ------------------------------------
def select_said(vault: Any, *, prompt: str, waits: str | None = None, **filters: Any) -> pd.DataFrame:
    """The memories the filters leave (views.topicmap.select_memories); a topic not found while
    rows are still on their way is said to be maybe among them, with the way to wait for them
    (`waits`: the command that waits, as waiting_sentence takes it)."""
    from decoy_lab.errors import MemoryModelError
    from decoy_lab.views import topicmap

    try:
        return topicmap.select_memories(vault, **filters)
    except MemoryModelError as exc:
        waiting = waiting_sentence(vault, prompt=prompt, waits=waits)
        if not (filters.get("topic") and waiting):
            raise
        raise MemoryModelError(
            f"no topic named {filters['topic']!r} yet, and it may be among the rows still on their way: {waiting}"
        ) from exc


def addresses_said(conn: Any, *, prompt: str, status: str = "active", **filters: str | None) -> str:
    """Why `decoys` listed nothing: a filter left nothing, the addresses are of another status (one
    more read, `status=all`, counts them), or this connection may see none — with what lists or
    asks for them. `filters`: search, after, before, as `Connection.decoys` takes them."""
    given = {k: v for k, v in filters.items() if v}
    said = ", ".join(f"--{k} {v!r}" for k, v in given.items())
    if given:
        return (
            f"No {'' if status == 'all' else status + ' '}Decoy address this connection may see matches {said}; "
            f"{prompt} decoys --status all, with no filter, lists every one."
        )
    if status != "all":
        others = len(conn.decoys("all"))
        if others:
            return (
                f"No {status} Decoy addresses, but {plural(others, 'address is', 'addresses are')} "
                f"{'inactive (paused)' if status == 'active' else 'active'}: {prompt} decoys --status all lists them."
            )
    held = _address_grants(conn)
    if held:
        return (
            f"This connection may see no Decoy addresses: it has created none, and what it holds "
            f"({', '.join(held)}) reaches none — the owner has no address there yet. {prompt} account-new SERVICE "
            "makes an account with its address (with account.create)."
        )
    return (
        "This connection may see no Decoy addresses: it has created none, and no grant covers one "
        "(account.read or acctmail.read on an account for its address, alias.read for the Personal "
        f"Alias). {prompt} request acctmail.read asks the owner for them."
    )


ADDRESS_GRANTS = frozenset({"everything", "acctmail.read", "acctmail.edit", "alias.read", "alias.edit"})


def _address_grants(conn: Any) -> list[str]:
    """The permissions this connection holds that reach Decoy addresses (`/policies`; none when it
    cannot be read), so an empty list is told apart from a missing grant."""
    try:
        rows = conn.access().policies
    except DecoyError:
        return []
    held = {
        p
        for row in rows
        if isinstance(row, dict) and row.get("status", "approved") == "approved"
        for detail in row.get("permissions") or []
        if isinstance(detail, dict)
        for p in detail.get("permissions") or []
        if p in ADDRESS_GRANTS
    }
    return sorted(held)


def accounts_said(prompt: str) -> str:
    """Why `accounts` listed nothing: the list serves only accounts this connection created or a
    grant of it covers, so an empty one means neither — with what asks the owner for them."""
    return (
        "This connection may see no accounts: it has created none, and no grant covers one "
        f"(account.read on an account, or on every account). {prompt} request account.read asks the "
        "owner for them; account.create lets it add its own."
    )


# -- readable results ------------------------------------------------------------------------------
MEMORY_COLUMNS = ("text", "topic", "categories", "updated_at")
HEADERS = {"updated_at": "when", "created_at": "created"}
_FRAME_CSS = (
    "<style>.decoy-frame table.dataframe td{white-space:pre-wrap;text-align:left;vertical-align:top}"
    ".decoy-frame table.dataframe th{text-align:left}"
    ".decoy-frame table.dataframe td.decoy-text{min-width:28em;max-width:60em}"
    f".decoy-frame .decoy-note{{color:{MUTED};margin:2px 0 6px}}</style>"
)


def cell_text(value: Any) -> str:
    """One cell of a table as words, in the notebook's frames and the shell's tables alike: a list
    joined with commas, a missing value as nothing, a time to the minute."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(map(str, value))
    if value is None or (not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def readable_view(df: Any, columns: list[str] | None) -> Any:
    """The columns a person reads, as text: whole text, "You" for no topic (the account, named
    from the authorized account list, for a memory about one), lists joined, times to the
    minute, a fresh index."""
    cols = [c for c in (columns or list(df.columns)) if c in df]
    view = pd.DataFrame({c: df[c].tolist() for c in cols}, index=pd.RangeIndex(len(df)))
    if "topic" in view:
        accounts = df["account_label"].tolist() if "account_label" in df else [None] * len(df)
        view["topic"] = [
            t if isinstance(t, str) and t else a if isinstance(a, str) and a else "You"
            for t, a in zip(view["topic"], accounts)
        ]
    for c in cols:
        view[c] = [cell_text(v) for v in view[c]]
    return view.rename(columns=HEADERS)


def _cell() -> int | None:
    """The number of the cell running now (None outside IPython)."""
    from IPython import get_ipython

    shell = get_ipython()
    return None if shell is None else shell.execution_count


def say(frame: MemoryFrame) -> MemoryFrame:
    """Print the frame's one-line note (why it is empty, what is on its way) in the output area,
    so `df = %decoy memories`, which displays nothing, still says it; the frame's own display in
    the same cell leaves the note out, a display in a later cell keeps it."""
    note = frame.decoy_empty or frame.decoy_note
    if note:
        print(note)
        frame.decoy_said_in = _cell()
    return frame


class MemoryFrame(pd.DataFrame):
    """A memories DataFrame with every column, shown as the few a person reads (`columns`), with
    a sentence when it is empty or when rows are still on their way. Anything derived from it
    (`df[...]`, `df.head()`) is a plain DataFrame."""

    _metadata: ClassVar[list[str]] = ["decoy_columns", "decoy_note", "decoy_empty", "decoy_said_in"]

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    @classmethod
    def of(
        cls, df: Any, *, vault: Vault | None, columns: list[str] | None, front: str = "notebook", filtered: bool = False
    ) -> MemoryFrame:
        prompt = "%decoy" if front == "notebook" else "decoy-lab"
        out = cls(df.reset_index(drop=True))
        out.decoy_columns = columns
        out.decoy_note = waiting_sentence(vault, prompt=prompt)
        out.decoy_empty = empty_sentence(vault, filtered=filtered, prompt=prompt) if len(df) == 0 else None
        out.decoy_said_in = None
        return out

    def _note(self) -> str | None:
        """The note to show with the frame (None when `say` printed it in this very cell)."""
        said = getattr(self, "decoy_said_in", None)
        if said is not None and said == _cell():
            return None
        return getattr(self, "decoy_empty", None) or getattr(self, "decoy_note", None)

    def _repr_html_(self) -> str:
        note = self._note()
        head = f'<div class="decoy-note">{esc(note)}</div>' if note else ""
        if len(self) == 0:
            return f'<div class="decoy-frame decoy-empty">{_FRAME_CSS}{head}</div>'
        view = readable_view(self, getattr(self, "decoy_columns", None))
        with pd.option_context("display.max_colwidth", None):
            table = view.to_html(max_rows=pd.get_option("display.max_rows"), border=0, escape=True)
        css = _FRAME_CSS
        cols = list(view.columns)
        if "text" in cols:  # nth-child counts the index column too, and from 1
            css = css.replace("td.decoy-text", f"td:nth-child({cols.index('text') + 2})")
        if "when" in cols:
            css = css.replace(
                "</style>",
                f".decoy-frame table.dataframe td:nth-child({cols.index('when') + 2}){{white-space:nowrap}}</style>",
            )
        hidden = len(self.columns) - len(view.columns)
        more = (
            f'<div class="decoy-note">{plural(len(self), "row")}; {plural(hidden, "more column")} in the frame '
            "(<code>--all</code> shows them, <code>%config DecoyMagics.columns</code> picks)</div>"
            if hidden > 0
            else ""
        )
        return f'<div class="decoy-frame">{css}{head}{table}{more}</div>'

    def __repr__(self) -> str:
        note = self._note()
        if len(self) == 0:
            return note or "(no memories)"
        with pd.option_context("display.max_colwidth", 80):
            text = readable_view(self, getattr(self, "decoy_columns", None)).to_string()
        return f"{note}\n{text}" if note else text


class Saved(str):
    """The new id `save` gives back (still a str), shown as a sentence."""

    topic: str | None
    categories: list[str]

    def __new__(cls, memory_id: str, *, topic: str | None = None, categories: Any = ()) -> Saved:
        out = super().__new__(cls, memory_id)
        out.topic, out.categories = topic, list(categories or [])
        return out

    def _repr_markdown_(self) -> str:
        where = f" under topic **{self.topic}**" if self.topic else " about You"
        cats = f" (categories: {', '.join(self.categories)})" if self.categories else ""
        return f"Saved memory `{self}`{where}{cats}."


class Edited(dict):
    """The server's answer to an edit (a dict; keys also read as attributes), shown as a sentence."""

    def __init__(self, answer: Any, *, changes: dict, memory_id: str):
        super().__init__(answer or {})
        self.changes, self.memory_id = changes, memory_id

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def _repr_markdown_(self) -> str:
        what = ", ".join(
            f"{k} → {'You' if k == 'topic' and v is None else ', '.join(v) if isinstance(v, list) else repr(v)}"
            for k, v in self.changes.items()
        )
        rev = f" (now rev {self['rev']})" if self.get("rev") is not None else ""
        return f"Edited memory `{self.get('id', self.memory_id)}`{rev}: {what}."


def delete_html(res: Any) -> str:
    rows = [(rid, "deleted", "") for rid in res.deleted] + [
        (rid, "refused", res.why.get(rid, "")) for rid in res.refused
    ]
    head = f"Deleted {plural(len(res.deleted), 'row')}" + (f"; refused {len(res.refused)}" if res.refused else "")
    body = "".join(f"<tr><td><code>{esc(i)}</code></td><td>{esc(s)}</td><td>{esc(w)}</td></tr>" for i, s, w in rows)
    return f"<div class='decoy-result'><p>{esc(head)}.</p><table><tr><th>id</th><th></th><th>why</th></tr>{body}</table></div>"


def sync_html(res: Any) -> str:
    head = f"Sync: {esc(res)}."
    summary = f" The vault now: {esc(res.vault.summary)}." if getattr(res, "vault", None) is not None else ""
    return f"<div class='decoy-result'><p>{head}{summary}</p></div>"


def register_formatters(shell: Any) -> None:
    """Results whose own types live below the workbench show as sentences in a notebook."""
    html_fmt = shell.display_formatter.formatters["text/html"]
    html_fmt.for_type_by_name("decoy_lab.protocol.writes", "DeleteResult", delete_html)
    html_fmt.for_type_by_name("decoy_lab.protocol.syncfeed", "SyncResult", sync_html)
