"""What every `decoy-lab` sub-command shares at a terminal: notes on stderr, JSON and tables on
stdout (what a vault holds escaped, never acted on), the status line, the saved connection, and
`guarded`, which turns errors into `error: …` lines and exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from decoy_lab.errors import DecoyError
from decoy_lab.text import escaped
from decoy_lab.workbench import verbs

DEFAULT_PROFILE = "default"
INTERRUPTED = 130
MIN_TEXT_WIDTH = 16
SHORT_ID = 8  # the shortest id prefix a table shows (a UUID's first group), longer only to stay unique


def note(text: str) -> None:
    """A message for the person at the terminal (stderr, so stdout stays the result). Its control
    characters are shown, never acted on: an error carries the server's own words."""
    print(escaped(text, newlines=True), file=sys.stderr, flush=True)


def print_json(value: Any) -> None:
    """`value` as JSON on stdout. json escapes C0 controls only: a C1 control, a bidi control or a
    lone surrogate in what a file or a server said is written as its \\u escape — the same JSON,
    shown, never acted on by the terminal (and a lone surrogate cannot be printed as UTF-8)."""
    lines = json.dumps(value, indent=2, ensure_ascii=False, default=str).split("\n")
    print("\n".join(line if line.isprintable() else "".join(map(_json_visible, line)) for line in lines))


def _json_visible(ch: str) -> str:
    return ch if escaped(ch) == ch else f"\\u{ord(ch):04x}"  # all BMP: escaped() leaves the rest as it is


def frame_records(df: Any) -> list[dict]:
    """A DataFrame as JSON-ready records (NA → null, times → ISO 8601 UTC, lists kept)."""
    return json.loads(df.to_json(orient="records", date_format="iso"))


def _cell(value: Any) -> str:
    from decoy_lab.workbench.display import cell_text  # pandas and the displays load with the first table

    return escaped(json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else cell_text(value))


def table(
    df: Any, columns: list[str], *, long: tuple[str, ...] = (), width: int | None = None, empty: str = "(none)"
) -> str:
    """`columns` of `df` as left-aligned text through `DataFrame.to_string`; the `long` text
    columns are shortened (at a word, with an ellipsis) so a row fits `width` (the terminal's,
    or $COLUMNS)."""
    from decoy_lab.views.topicmap import shorten

    if df is None or len(df) == 0:
        return empty
    view = df[columns].copy()
    for col in columns:
        view[col] = [_cell(v) for v in view[col]]
    width = width or shutil.get_terminal_size((120, 24)).columns
    fixed = sum(max(len(c), *(len(v) for v in view[c])) + 1 for c in columns if c not in long)
    if long:
        room = max(MIN_TEXT_WIDTH, (width - fixed) // len(long) - 1)
        for col in long:
            view[col] = [shorten(v, room) if len(v) > room else v for v in view[col]]
    for col in columns:  # left-align everything: pad each column to its widest cell
        w = max(len(col), *(len(v) for v in view[col]))
        view[col] = [v.ljust(w) for v in view[col]]
    return view.to_string(index=False, justify="left")


def short_ids(shown: list[str], among: list[str]) -> list[str]:
    """`shown` ids cut to the shortest prefix (at least SHORT_ID) that no two of `among` share, as
    git shortens a commit id; commands that take an ID take the prefix too (`full_id`)."""
    ids = list(dict.fromkeys(among))
    n = SHORT_ID
    while n < max(map(len, ids), default=0) and len({i[:n] for i in ids}) < len(ids):
        n += 1
    return [i[:n] for i in shown]


def full_id(conn: Any, given: str) -> str:
    """The served id that the prefix `given` (as a table shows it) stands for; `given` itself when
    it is whole or matches none (the server then says what it is)."""
    if len(given) >= 36 or ":" in given:
        return given
    ids = [r.get("id") for r in conn.load().served]
    hits = sorted({i for i in ids if isinstance(i, str) and i.startswith(given)})
    if len(hits) > 1:
        raise verbs.UsageProblem(
            f"the id {given!r} is the start of {len(hits)} ids ({', '.join(hits[:3])}, …): give more of it"
        )
    return hits[0] if hits else given


class StatusLine:
    """One status line on stderr: rewritten in place on a terminal, else printed when it changes.
    `print` puts a line on stdout above it (safe from another thread)."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = ""
        self._shown = ""
        self._lock = threading.Lock()

    def show(self, text: str, steady: str | None = None) -> None:
        """`text` on a terminal; `steady` (text without a countdown) decides when to print otherwise."""
        with self._lock:
            if self.tty:
                text = text[: shutil.get_terminal_size((120, 24)).columns - 1]
                if text != self._shown:
                    self.stream.write("\r" + text + "\x1b[K")
                    self.stream.flush()
                    self._shown = text
            elif (steady or text) != self._last:
                self._last = steady or text
                print(self._last, file=self.stream, flush=True)

    def _clear(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = ""

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def print(self, text: str) -> None:
        with self._lock:
            self._clear()
            print(text, flush=True)


def guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command: a DecoyError → `error: …` on stderr and exit 2; Ctrl-C → exit 130."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(fn(args) or 0)
        except DecoyError as exc:
            text = verbs.front_words(str(exc), verbs.SHELL)
            recovery = getattr(exc, "recovery", None)
            if recovery and f"recovery: {recovery}" not in text:
                text += f" (recovery: {recovery})"
            note(f"error: {text}")
            hint = verbs.hint(exc, verbs.SHELL, verb=getattr(args, "command", None), profile=args.profile)
            hint = hint or _value_hint(exc, args)
            if hint:
                note(f"hint: {hint}")
            return 2
        except KeyboardInterrupt:
            note("interrupted")
            return INTERRUPTED
        except BrokenPipeError:  # `decoy-lab … | head`: the reader has what it wanted
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
            return 0

    run.__doc__ = fn.__doc__
    return run


@contextmanager
def connection(args: argparse.Namespace) -> Iterator[Any]:
    """The connection saved under `--profile`, closed afterwards."""
    from decoy_lab.client.connection import Connection
    from decoy_lab.errors import ProfileError
    from decoy_lab.store.profiles import ProfileStore, check_name

    store = ProfileStore()
    if not store.exists(check_name(args.profile)):  # said in shell words; the hint gives the command
        known = ", ".join(store.names()) or "none"
        raise ProfileError(f"no saved profile {args.profile!r} in {store.profiles_dir} (saved profiles: {known})")
    conn = Connection.resume(args.profile)
    try:
        yield conn
    finally:
        conn.close()


def read_text(words: list[str] | str | None) -> str:
    """Text from the words given, or from stdin when it is `-`."""
    if words is None:
        return ""
    text = words if isinstance(words, str) else " ".join(words)
    if text.strip() == "-":
        return sys.stdin.read().strip()
    return text.strip()


def _value_hint(exc: DecoyError, args: argparse.Namespace) -> str | None:
    """ "did you mean …" for a topic or category the server's vault does not hold."""
    verb = verbs.BY_NAME.get(getattr(args, "command", "") or "")
    if verb is None or not any(a.completes in ("topic", "category") for a in verb.args):
        return None
    try:
        with connection(args) as conn:
            vault = conn.load()
    except DecoyError:
        return None
    sources = {
        "topic": lambda: ["You", *vault.topics["name"].dropna()],
        "category": lambda: list(vault.memories["categories"].explode().dropna().unique()),
    }
    return verbs.value_suggestion(exc, verb, args, sources)
