"""Small display helpers shared by the widgets and magics: colours, escaping, and a progress
bar for slow calls (a Trace renders itself: decoy_lab.recipes.trace). Nothing here prints.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from decoy_lab.client.connection import Connection
    from decoy_lab.vault.read import Vault

T = TypeVar("T")

OK_COLOUR, BAD_COLOUR, PENDING_COLOUR = "#1a7f37", "#cf222e", "#9a6700"


def countdown(seconds: float | None) -> str:
    """`m:ss` left (never below 0:00), or "" when unknown: the pairing widget's and the CLI's clock."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    return f"{s // 60}:{s % 60:02d}"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


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

        start = time.monotonic()
        with tqdm(desc=desc, total=None, unit="rows", leave=False) as bar:
            while worker.is_alive():
                worker.join(poll)
                if progress.total:
                    bar.total = progress.total
                    bar.n = progress.done
                else:
                    bar.n = round(time.monotonic() - start, 1)
                    bar.unit = "s"
                bar.refresh()
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- why a view is empty, and waiting for rows on their way ------------------------------------
def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def waiting_sentence(vault: Vault | None, *, prompt: str = "%decoy") -> str | None:
    """One sentence on what the last read of `vault` is still waiting for and when to read again
    (None when nothing waits). Every view of a vault shows it: frames, the browser, the map, the
    shell's tables. `prompt` is how the user's front end spells a command."""
    answer = getattr(vault, "answer", None) or {}
    retry = answer.get("retry_after_seconds")
    again = f"read again in {retry:g} s ({prompt} memories --wait waits for them)" if retry else "read again soon"
    coming = len(answer.get("preparing") or []) + int(answer.get("preparing_others") or 0)
    if coming:
        return (
            f"{_count(coming, 'row is', 'rows are')} (memories, topics, links) on their way from the owner's "
            f"phone, which has not shared their keys with this connection yet: {again}."
        )
    if answer.get("preparing_unknown"):
        return (
            "No key has been shared under this connection's category, topic or account grant yet; "
            f"Decoy is asking the owner's phone: {again}."
        )
    stopped = len(answer.get("failed") or []) + int(answer.get("failed_others") or 0)
    if stopped:
        return (
            f"{_count(stopped, 'row is', 'rows are')} no longer asked for (stopped_asking): carry on "
            "with what is readable; if the task needs them now, ask the owner once to open Decoy."
        )
    if answer.get("failed_unknown"):
        return (
            "Nothing has been shared under this connection's category, topic or account grants, and Decoy "
            "has stopped asking the owner's phone (stopped_asking)."
        )
    return None


def empty_sentence(
    vault: Vault | None, what: str = "memories", *, filtered: bool = False, prompt: str = "%decoy"
) -> str:
    """Why a view of `vault` shows no `what`: rows on their way, a filter, unreadable rows, or a
    grant that reaches none."""
    waiting = waiting_sentence(vault, prompt=prompt)
    if waiting:
        return f"No {what} yet: {waiting}"
    if filtered:
        return f"No {what} match these filters."
    unreadable = 0
    try:
        unreadable = vault.counts().get("unreadable", 0) if vault is not None else 0
    except AttributeError:
        pass
    if unreadable:
        return f"No {what} could be read: {_count(unreadable, 'row', 'rows')} did not open ({prompt} rows says why)."
    return f"No {what}: none is stored that this connection's grant reaches ({prompt} access shows the grant)."


def is_waiting(vault: Vault | None) -> bool:
    """Rows are still on their way (preparing), so reading again may bring them."""
    answer = getattr(vault, "answer", None) or {}
    return bool(answer.get("preparing") or answer.get("preparing_others") or answer.get("preparing_unknown"))


WAIT_LIMIT = 90.0  # the spec: "still `preparing` after 60 to 90 seconds of reading, you may ask the owner once"


def wait_for_rows(
    conn: Connection,
    vault: Vault,
    *,
    limit: float = WAIT_LIMIT,
    sleep: Callable[[float], Any] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    say: Callable[[str], Any] = print,
    bar: bool = True,
) -> Vault:
    """Read again after the server's `retry_after_seconds` while rows are on their way, for at
    most `limit` seconds of reading, with a progress bar; the last Vault. If rows still wait then,
    say once that the owner may be asked to open Decoy (never earlier)."""
    start = clock()
    progress = None
    if bar and is_waiting(vault):
        from tqdm.auto import tqdm

        progress = tqdm(total=round(limit), desc="waiting for the owner's phone", unit="s")
    try:
        while is_waiting(vault) and clock() - start < limit:
            retry = float(vault.answer.get("retry_after_seconds") or 5.0)
            until = min(start + limit, clock() + max(retry, 0.5))
            while clock() < until:
                sleep(min(0.5, until - clock()))
                if progress is not None:
                    progress.n = min(round(clock() - start), progress.total)
                    progress.refresh()
            vault = conn.load()
    finally:
        if progress is not None:  # the bar ends full and says how it ended (a stale 6 % would puzzle)
            took = round(clock() - start)
            progress.reset(total=max(took, 1))
            progress.update(max(took, 1))
            progress.set_description(
                f"still waiting after {took} s" if is_waiting(vault) else f"the rows arrived after {took} s"
            )
            progress.close()
    if is_waiting(vault):
        say(
            f"Still waiting after {clock() - start:.0f} s: {waiting_sentence(vault)} If the task needs them "
            "now, ask the owner once to open Decoy on their phone."
        )
    return vault


# -- readable results ------------------------------------------------------------------------------
MEMORY_COLUMNS = ("text", "topic", "categories", "updated_at")
HEADERS = {"updated_at": "when", "created_at": "created"}
_FRAME_CSS = (
    "<style>.decoy-frame table.dataframe td{white-space:pre-wrap;text-align:left;vertical-align:top}"
    ".decoy-frame table.dataframe th{text-align:left}"
    ".decoy-frame table.dataframe td.decoy-text{min-width:28em;max-width:60em}"
    ".decoy-frame .decoy-note{color:#57606a;margin:2px 0 6px}</style>"
)


def _plain(value: Any) -> str:
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
        view[c] = [_plain(v) for v in view[c]]
    return view.rename(columns=HEADERS)


class MemoryFrame(pd.DataFrame):
    """A memories DataFrame with every column, shown as the few a person reads (`columns`), with
    a sentence when it is empty or when rows are still on their way. Anything derived from it
    (`df[...]`, `df.head()`) is a plain DataFrame."""

    _metadata: ClassVar[list[str]] = ["decoy_columns", "decoy_note", "decoy_empty"]

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
        return out

    def _repr_html_(self) -> str:
        note = getattr(self, "decoy_empty", None) or getattr(self, "decoy_note", None)
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
            f'<div class="decoy-note">{len(self)} rows; {hidden} more columns in the frame '
            "(<code>--all</code> shows them, <code>%config DecoyMagics.columns</code> picks)</div>"
            if hidden > 0
            else ""
        )
        return f'<div class="decoy-frame">{css}{head}{table}{more}</div>'

    def __repr__(self) -> str:
        note = getattr(self, "decoy_empty", None) or getattr(self, "decoy_note", None)
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
    head = f"Deleted {_count(len(res.deleted), 'row', 'rows')}" + (
        f"; refused {len(res.refused)}" if res.refused else ""
    )
    body = "".join(f"<tr><td><code>{esc(i)}</code></td><td>{esc(s)}</td><td>{esc(w)}</td></tr>" for i, s, w in rows)
    return f"<div class='decoy-result'><p>{esc(head)}.</p><table><tr><th>id</th><th></th><th>why</th></tr>{body}</table></div>"


def sync_html(res: Any) -> str:
    head = f"Sync: {esc(res)}."
    summary = f" The vault now: {esc(res.vault.summary)}." if getattr(res, "vault", None) is not None else ""
    return f"<div class='decoy-result'><p>{head}{summary}</p></div>"


def register_formatters(shell: Any) -> None:
    """Results whose own types live below the workbench show as sentences in a notebook."""
    html_fmt = shell.display_formatter.formatters["text/html"]
    html_fmt.for_type_by_name("decoy_lab.rules.writes", "DeleteResult", delete_html)
    html_fmt.for_type_by_name("decoy_lab.rules.syncfeed", "SyncResult", sync_html)
