"""`decoy-lab` sub-commands over a saved connection: the notebook's `%decoy` verbs in a shell.

    decoy-lab connect http://127.0.0.1:8787 --name "My laptop"  # link + code now, then waits
    decoy-lab memories --topic "Lisbon trip"                      # a table; --json for machines
    ID=$(decoy-lab save "Prefers aisle seats." --topic "Lisbon trip" --categories travel)
    decoy-lab unseal "$ID"                                        # every step of reading it
    decoy-lab unpair                                              # end the connection, forget it

Each command resumes the connection saved under `--profile` (default "default") and calls
the same Connection / Vault / topicmap functions the notebook calls. The verbs, their arguments
and the translations (save options, edit changes, hints) come from `verbs.py`, the table the
magics are built from too; this module only prints. Tables go to stdout through `DataFrame.to_string`; notes (what is on its
way, what a dry run did not send) go to stderr. Tokens, the private key and raw memory keys are
never printed (`--reveal` shows raw keys in traces). Exit codes: 0 done, 1 a step or part of
the work failed (unseal, seal, delete, request --wait), 2 bad arguments or a `DecoyError`
(printed as `error: …` with the server's code and recovery), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from decoy_lab.errors import DecoyError, TransportError
from decoy_lab.workbench import verbs
from decoy_lab.workbench.display import countdown

DEFAULT_PROFILE = "default"
DEFAULT_NAME = "decoy-lab command line"
INTERRUPTED = 130
MIN_TEXT_WIDTH = 16


# -- printing -------------------------------------------------------------------------------------
def note(text: str) -> None:
    """A message for the person at the terminal (stderr, so stdout stays the result)."""
    print(text, file=sys.stderr, flush=True)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def frame_records(df: Any) -> list[dict]:
    """A DataFrame as JSON-ready records (NA → null, times → ISO 8601 UTC, lists kept)."""
    return json.loads(df.to_json(orient="records", date_format="iso"))


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(ch: str) -> str:
    """`ch`, or its escape when a terminal would act on it (control, bidi override, surrogate)."""
    if ch in _BIDI or unicodedata.category(ch) in ("Cc", "Cs"):
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or (
            f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
        )
    return ch


def escaped(text: str) -> str:
    """`text` safe to print: what a vault holds never reaches the terminal as a command."""
    return text if text.isprintable() else "".join(map(_visible, text))


def _cell(value: Any) -> str:
    return escaped(_cell_text(value))


def _cell_text(value: Any) -> str:
    import pandas as pd

    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if value is None or (not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


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


# -- running a command ------------------------------------------------------------------------------
def guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command: a DecoyError → `error: …` on stderr and exit 2; Ctrl-C → exit 130."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(fn(args) or 0)
        except DecoyError as exc:
            text = str(exc)
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

    conn = Connection.resume(args.profile)
    try:
        yield conn
    finally:
        conn.close()


def _read_text(words: list[str] | str | None) -> str:
    """Text from the words given, or from stdin when it is `-`."""
    if words is None:
        return ""
    text = words if isinstance(words, str) else " ".join(words)
    if text.strip() == "-":
        return sys.stdin.read().strip()
    return text.strip()


# -- pairing and access -------------------------------------------------------------------------------
def cmd_connect(args: argparse.Namespace) -> int:
    """Pair with a Decoy server and save the connection under --profile (a live one is reused
    unless --new)."""
    from decoy_lab.client.connection import Connection
    from decoy_lab.rules.pairing import authorization_details
    from decoy_lab.store.profiles import ProfileStore

    url = verbs.connect_url(args)
    if not url:
        raise verbs.UsageProblem("give the server's URL, e.g. http://127.0.0.1:8787", verb="connect")
    if ProfileStore().exists(args.profile):
        saved = ProfileStore().load(args.profile)
        if args.new:  # pairing over it would leave the saved connection live at the server, unlisted
            raise verbs.UsageProblem(
                f"profile {args.profile!r} holds a connection ({saved.token_id}); pair the new one under "
                f"another name with --profile NAME, or end this one first with decoy-lab unpair",
                verb="connect",
            )
        if saved.base_url.rstrip("/") == url.rstrip("/"):
            with Connection.resume(args.profile) as conn:
                print(
                    f"Already connected: profile {args.profile!r} is {conn.name!r} at {conn.base_url} "
                    f"(token id {conn.token_id}); using it. `decoy-lab connect {url} --new` pairs again; "
                    "`decoy-lab request PERM` asks for more on this one."
                )
            return 0
    rows = authorization_details(args.permissions or None)

    status = StatusLine()

    def on_link(link: str, code: str) -> None:
        status.print(f"Open {link}\nand approve in the Decoy app; it shows the code {code}.")

    handle = Connection.start_pairing(
        url,
        name=args.name or DEFAULT_NAME,
        permissions=rows,
        profile=args.profile,
        on_link=on_link,
        timeout=args.timeout or 600.0,
        force=args.force,
    )
    try:
        while not handle.done():
            left = handle.seconds_left()
            clock = f" — {countdown(left)} left" if left is not None else ""
            status.show(f"{handle.status}: {handle.message}{clock}", steady=f"{handle.status}: {handle.message}")
            time.sleep(0.2)
    except KeyboardInterrupt:
        handle.cancel()
        status.clear()
        try:
            handle.result(10)
        except (DecoyError, TimeoutError):
            pass
        note("pairing cancelled: nothing was granted and no profile was saved")
        return INTERRUPTED
    status.clear()
    conn = handle.result(0)
    try:
        acc = conn.access(refresh=False)
        print(
            f"Paired {conn.name!r} with {conn.base_url} — saved as profile {args.profile!r} "
            f"(token id {conn.token_id}, key {conn.agent_key.fingerprint})"
        )
        print("Asked for: " + "; ".join(_row_text(r) for r in rows))
        print("Granted:")
        print(str(acc))
    finally:
        conn.close()
    return 0


def cmd_connections(args: argparse.Namespace) -> int:
    """The saved connections (profiles); the one --profile names is marked."""
    import pandas as pd

    from decoy_lab.store.profiles import ProfileStore

    store = ProfileStore()
    rows: list[dict[str, str | None]] = []
    for name in store.names():
        try:
            p = store.load(name)
        except DecoyError as exc:
            rows.append({"": "", "profile": name, "server": f"(unreadable: {exc})", "name": "", "token_id": ""})
            continue
        mark = "→" if name == args.profile else ""
        rows.append({"": mark, "profile": name, "server": p.base_url, "name": p.name, "token_id": p.token_id})
    df = pd.DataFrame(rows, columns=["", "profile", "server", "name", "token_id"])
    print(table(df, list(df.columns), empty="(no saved connections: decoy-lab connect URL pairs one)"))
    return 0


def _row_text(row: dict) -> str:
    sel = [
        f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in row.items()
        if k not in ("permissions", "type")
    ]
    return ", ".join(row.get("permissions") or []) + (f" ({'; '.join(sel)})" if sel else "")


def cmd_status(args: argparse.Namespace) -> int:
    """Which connection a profile holds and what it may do (never its tokens or key)."""
    with connection(args) as conn:
        acc = conn.access(refresh=False)
        facts = {
            "profile": args.profile,
            "server": conn.base_url,
            "name": conn.name,
            "client_id": conn.client_id,
            "token_id": conn.token_id,
            "key_fingerprint": conn.agent_key.fingerprint,
            "access_version": conn.access_version,
            "sync_cursor": conn.cursor,
        }
        if args.json:
            print_json({**facts, "access": acc.summary_lines(), "permissions": sorted(acc.names)})
            return 0
        for k, v in facts.items():
            print(f"{k:<16}{'' if v is None else v}")
        print()
        print(acc.summary)
    return 0


def cmd_access(args: argparse.Namespace) -> int:
    """What the connection holds now: the plain summary, then each permission and its end."""
    with connection(args) as conn:
        acc = conn.access(refresh=False)
        if args.json:
            print_json(
                {
                    "summary": acc.summary_lines(),
                    "version": acc.version,
                    "permissions": frame_records(acc.frame.drop(columns=["row"])),
                }
            )
        else:
            print(str(acc))
    return 0


def cmd_request(args: argparse.Namespace) -> int:
    """Ask the owner for more access on this same connection (never pair again to widen it)."""
    with connection(args) as conn:
        about = [args.topic] if args.topic else None  # a name or topic:<id>; the client resolves it
        req = conn.request_access(args.permissions, datatypes=args.datatypes, about=about, reason=args.reason)
        if args.wait and not req.done:
            status = StatusLine()
            status.show(f"{req.status}: waiting for the owner to answer")
            try:
                req.wait(
                    args.timeout,
                    args.interval,
                    on_status=lambda r: status.show(
                        f"the owner answered: {r.status}" if r.done else f"{r.status}: waiting for the owner"
                    ),
                )
            except KeyboardInterrupt:
                status.clear()
                note(f"stopped waiting; the request stays open ({req.request_id})")
                return INTERRUPTED
            status.clear()
        if args.json:
            print_json(
                {
                    "request_id": req.request_id,
                    "status": req.status,
                    "permissions": req.permissions,
                    "granted": req.granted,
                    "message": req.message,
                }
            )
        else:
            print(str(req))
            if args.wait and req.done:
                print()
                print(conn.access(refresh=False).summary)
        return 1 if args.wait and not req.granted else 0


def cmd_unpair(args: argparse.Namespace) -> int:
    """End the saved connection at the server (its tokens are revoked) and delete its profile."""
    from decoy_lab.client.connection import Connection
    from decoy_lab.store.profiles import ProfileStore

    store = ProfileStore()
    if args.local:
        saved = store.load(args.profile)
        store.delete(args.profile)
        print(f"Deleted profile {args.profile!r} (token id {saved.token_id}) on this machine only.")
        note(f"the connection stays live at {saved.base_url} until the owner revokes it in the Decoy app")
        return 0
    conn = Connection.resume(args.profile, store=store, check=False)  # a revoked one can still be forgotten
    token_id, key = conn.token_id, conn.agent_key.fingerprint
    try:
        conn.unpair()
    finally:
        conn.close()
    print(f"Ended connection {token_id} (key {key}) at {conn.base_url} and deleted profile {args.profile!r}.")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """Where the profile's sealed vault cache is and how large (cache.py); --clear removes it."""
    from decoy_lab.store import cache
    from decoy_lab.store.profiles import ProfileStore

    path = cache.profile_cache(ProfileStore(), args.profile)
    if args.clear:
        print(f"Removed {path}." if cache.clear(path) else f"No cache at {path}: nothing to remove.")
    else:
        print(cache.describe(path))
    return 0


# -- reading ----------------------------------------------------------------------------------------
def _load(conn: Any) -> Any:
    vault = conn.load()
    for line in vault.notes:
        note(line)
    return vault


def _listing(args: argparse.Namespace, df: Any, columns: list[str], long: tuple[str, ...], what: str) -> int:
    if args.json:
        print_json(frame_records(df))
    else:
        print(table(df, columns, long=long, empty=f"(no {what})"))
    return 0


def cmd_memories(args: argparse.Namespace) -> int:
    """The memories this connection can read, filtered like the notebook's table and map."""
    from decoy_lab.vault.waiting import empty_sentence, wait_for_rows, waiting_sentence
    from decoy_lab.views.topicmap import select_memories

    with connection(args) as conn:
        vault = _load(conn)
        if args.wait:
            vault = wait_for_rows(conn, vault, say=note, bar=sys.stderr.isatty())
        df = select_memories(vault, topic=args.topic, category=args.category, search=args.search, mine=args.mine)
        filtered = any(x for x in (args.topic, args.category, args.search, args.mine))
        if not args.json:
            note(f"{len(df)} shown (legacy space rows included) · vault: {vault.summary}")
            said = empty_sentence(vault, filtered=filtered, prompt="decoy-lab") if len(df) == 0 else None
            said = said or waiting_sentence(vault, prompt="decoy-lab")
            if said:
                note(said)
        return _listing(args, df, ["id", "topic", "categories", "text"], ("topic", "text"), "memories")


def cmd_topics(args: argparse.Namespace) -> int:
    """Topics: the things memories are about, with how many memories each holds."""
    with connection(args) as conn:
        return _listing(args, _load(conn).topics, ["id", "type", "memories", "name"], ("name",), "topics")


def cmd_links(args: argparse.Namespace) -> int:
    """Relations between You and topics, and between topics."""
    with connection(args) as conn:
        return _listing(args, _load(conn).links, ["id", "from", "relation_type", "to"], ("from", "to"), "links")


def cmd_rows(args: argparse.Namespace) -> int:
    """Every row served, readable or not, with the reason a row cannot be read."""
    with connection(args) as conn:
        return _listing(args, _load(conn).rows, ["id", "kind", "status", "label"], ("label",), "rows")


def cmd_unseal(args: argparse.Namespace) -> int:
    """Re-run the read of one served row step by step; exit 1 when a step fails."""
    with connection(args) as conn:
        trace = conn.unseal(args.id)
        print(trace.to_text(reveal=args.reveal))
        return 0 if trace.ok else 1


def cmd_seal(args: argparse.Namespace) -> int:
    """Seal a memory exactly as save would, step by step, and send nothing."""
    with connection(args) as conn:
        _, trace = conn.seal_preview(_read_text(args.text), topic=args.topic, categories=args.categories or [])
        print(trace.to_text(reveal=args.reveal))
        note("dry run: nothing was sent")
        return 0 if trace.ok else 1


def cmd_app_view(args: argparse.Namespace) -> int:
    """Every stored row as the sandbox owner's app sees it (GET /_sandbox/app-view)."""
    from decoy_lab.store.profiles import ProfileStore
    from decoy_lab.transport.api import Api, expect_object

    url = args.url or ProfileStore().load(args.profile).base_url
    api = Api(url)
    try:
        rows = (
            expect_object(
                api.request("GET", "/_sandbox/app-view", auth=False), "GET /_sandbox/app-view", rows=list[dict]
            ).get("rows")
            or []
        )
    finally:
        api.close()
    if args.json:
        print_json(rows)
        return 0
    import pandas as pd

    df = pd.DataFrame(
        [
            {
                "id": r.get("id"),
                "kind": r.get("kind"),
                "readable": bool(r.get("readable")),
                "shared": len(r.get("shared_with") or []),
                "problems": len(r.get("problems") or []),
                "what": _app_label(r),
            }
            for r in rows
            if isinstance(r, dict)
        ]
    )
    print(table(df, ["id", "kind", "readable", "shared", "problems", "what"], long=("what",), empty="(no rows)"))
    return 0


def _app_label(row: dict) -> str:
    if not row.get("readable"):
        return f"cannot open: {row.get('reason') or row.get('problem') or ''}"
    if row.get("text") is not None:
        return str(row["text"])
    if row.get("name") is not None:
        return f"{row['name']} ({row['type']})" if row.get("type") else str(row["name"])
    if row.get("relation") is not None:
        return f"{row.get('from')} —{row['relation']}→ {row.get('to')}"
    return str(row.get("summary") or "")


# -- writing ----------------------------------------------------------------------------------------
def cmd_save(args: argparse.Namespace) -> int:
    """Save one memory (TEXT, or - to read it from stdin); prints its new id."""
    text = _read_text(args.text)
    if not text:
        raise verbs.UsageProblem("the memory text is empty", verb="save")
    with connection(args) as conn:
        print(conn.save(text, **verbs.save_options(args)))
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    """Edit a memory in place (removing a label rotates its key)."""
    changes = verbs.edit_changes(args, _read_text(args.text) if args.text is not None else None)
    with connection(args) as conn:
        ans = conn.edit(args.id, **changes)
    if args.json:
        print_json(ans)
    else:
        print(f"edited {ans.get('id', args.id)}" + (f" (rev {ans['rev']})" if ans.get("rev") is not None else ""))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    """Delete memories, topic rows or legacy space rows; prints which were deleted and which refused,
    and why (exit 1 if any was refused)."""
    with connection(args) as conn:
        res = conn.delete(args.ids)
    if args.json:
        print_json({"deleted": res.deleted, "refused": res.refused, "why": res.why, "remediation": res.remediation})
    else:
        for rid in res.deleted:
            print(f"deleted  {rid}")
        for rid in res.refused:
            print(f"refused  {rid}" + (f"  ({res.why[rid]})" if res.why.get(rid) else ""))
        if res.remediation:
            note(f"the server says: {json.dumps(res.remediation, ensure_ascii=False)}")
    return 1 if res.refused else 0


def cmd_resend(args: argparse.Namespace) -> int:
    """Send every pending write (its outcome unknown: retries ran out) again with the SAME sealed
    rows, from the pending-writes journal beside the profile; prints each one's outcome. Exit 1
    while one is still unknown or was refused."""
    with connection(args) as conn:
        pending = conn.pending
        if args.list_only or not pending:
            done: list[dict] = []
        else:
            try:
                done = conn.resend()
            except TransportError as exc:
                done = [{"outcome": f"still unknown: {exc}"}]
        left = conn.pending
    if args.json:
        print_json({"pending": pending, "results": done, "still_pending": left})
    else:
        if not pending:
            print("nothing pending: every write's outcome is known")
        for entry in pending if args.list_only else []:
            print(f"pending  {entry['kind']:<5} {entry['target']}  ({len(entry['ids'])} rows)")
        for res in done:
            print(f"{res.get('kind', ''):<5} {res.get('target') or ''}  {res['outcome']}")
    return 1 if left or any(r["outcome"] != "committed" for r in done) else 0


def cmd_sync(args: argparse.Namespace) -> int:
    """Follow the change cursor and reload only what changed."""
    with connection(args) as conn:
        res = conn.sync()
    if args.json:
        print_json(
            {
                "created": res.created,
                "updated": res.updated,
                "destroyed": res.destroyed,
                "full_reload": res.full_reload,
                "reason": res.reason,
                "cursor": res.cursor,
                "summary": res.vault.summary if res.vault is not None else None,
            }
        )
    else:
        print(str(res))
        if res.vault is not None:
            print(res.vault.summary)
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    """Annotated dump of any base64 blob, with the layout it fits and how sure; opened too when
    a key is given. Bytes no layout fits are dumped plain and exit 1."""
    from decoy_lab.recipes.dump import identify, open_blob
    from decoy_lab.wire import layouts as wire
    from decoy_lab.wire.hexdump import dump_text

    key_b64, key_file = verbs.dump_key(args)  # a key file that is no PEM file is refused first
    text = sys.stdin.read().strip() if args.blob == "-" else args.blob
    raw = wire.b64decode(text, field="blob")
    if args.kind:
        layout: wire.Layout | None = wire.parse(raw, args.kind)
        kind: str | None = args.kind
        verdict = f"read as {args.kind}, as asked"
    else:
        kind, verdict, layout = identify(raw)
    print(f"{len(raw)} bytes: {verdict}")
    if layout is None:  # no layout fits, or a damaged blob of one kind: the trace shows how far it parsed
        print(dump_text(raw) if kind is None else open_blob(raw).to_text())
        return 1
    print(dump_text(layout.data, layout.fields))
    if key_b64 or key_file:
        trace = open_blob(layout, key_b64=key_b64, key_file=key_file)
        print(trace.to_text(reveal=args.reveal))
        return 0 if trace.ok else 1
    return 0


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


# -- registration -------------------------------------------------------------------------------------
RUN: dict[str, Callable[[argparse.Namespace], int]] = {
    "connect": cmd_connect,
    "connections": cmd_connections,
    "unpair": cmd_unpair,
    "status": cmd_status,
    "access": cmd_access,
    "request": cmd_request,
    "memories": cmd_memories,
    "topics": cmd_topics,
    "links": cmd_links,
    "rows": cmd_rows,
    "unseal": cmd_unseal,
    "seal": cmd_seal,
    "save": cmd_save,
    "edit": cmd_edit,
    "delete": cmd_delete,
    "sync": cmd_sync,
    "resend": cmd_resend,
    "cache": cmd_cache,
    "dump": cmd_dump,
    "app-view": cmd_app_view,
}
DESCRIPTIONS = {
    "app-view": "Sandbox only: every stored row as the simulated owner's app sees it, from the "
    "sandbox's /_sandbox/app-view (loopback only). A real Decoy server has no such view.",
}


def add_connection_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register every shell verb of the verb table on the `decoy-lab` command's subparsers."""
    for verb in verbs.verbs_for(verbs.SHELL):
        fn = RUN[verb.name]
        p = subparsers.add_parser(
            verb.name,
            aliases=list(verb.aliases),
            help=verb.summary,
            description=DESCRIPTIONS.get(verb.name, fn.__doc__),
        )
        if "--profile" not in verb.flags(verbs.SHELL):
            p.add_argument("--profile", help=f"the saved connection to use (default {DEFAULT_PROFILE!r})")
        verbs.add_arguments(p, verb, verbs.SHELL)
        p.set_defaults(run=guarded(fn), profile=DEFAULT_PROFILE, command=verb.name)
