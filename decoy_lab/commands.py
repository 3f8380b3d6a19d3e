"""`decoy-lab` sub-commands over a saved connection: the notebook's `%decoy` sub-commands in a shell.

    decoy-lab pair http://127.0.0.1:8787 --name "My laptop"     # link + code now, then waits
    decoy-lab memories --topic "Lisbon trip"                      # a table; --json for machines
    ID=$(decoy-lab save "Prefers aisle seats." --topic "Lisbon trip" --categories travel)
    decoy-lab unseal "$ID"                                        # every step of reading it
    decoy-lab unpair                                              # end the connection, forget it

Each command resumes the connection saved under `--profile` (default "default") and calls
the same Connection / Vault / topicmap functions the notebook calls; this module only parses
arguments and prints. Tables go to stdout through `DataFrame.to_string`; notes (what is on its
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from .display import countdown
from .errors import DecoyError, InsufficientGrant, ProfileError, ServerError, TokenError, TransportError
from .vocab import USER_NAMES

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


def _cell(value: Any) -> str:
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
    from .topicmap import shorten

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
def _hint(exc: DecoyError, args: argparse.Namespace) -> str | None:
    profile = getattr(args, "profile", DEFAULT_PROFILE)
    flag = "" if profile == DEFAULT_PROFILE else f" --profile {profile}"
    if isinstance(exc, ProfileError):
        from .profiles import ProfileStore, check_name

        try:
            missing = not ProfileStore().exists(check_name(profile))
        except DecoyError:
            return None  # a bad name: the message says what a name may hold
        return f"pair first: decoy-lab pair URL{flag}" if missing else None
    if isinstance(exc, TokenError) and (exc.recovery == "re_pair" or exc.code == "TOKEN_REVOKED"):
        return f"this connection needs a new pairing: decoy-lab pair URL{flag}"
    if isinstance(exc, InsufficientGrant) and exc.required_permission:
        return f'ask the owner for it: decoy-lab request {exc.required_permission} --reason "…"{flag}'
    if getattr(args, "command", None) == "unpair" and isinstance(exc, (TransportError, ServerError)):
        return f"the profile was kept: run decoy-lab unpair{flag} again, or forget it here only with --local"
    return None


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
            hint = _hint(exc, args)
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
    from .client import Connection

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
def cmd_pair(args: argparse.Namespace) -> int:
    """Pair with a Decoy server and save the connection under --profile."""
    from .client import Connection
    from .pairing import authorization_details

    rows = authorization_details(args.permissions or None)

    status = StatusLine()

    def on_link(link: str, code: str) -> None:
        status.print(f"Open {link}\nand approve in the Decoy app; it shows the code {code}.")

    handle = Connection.start_pairing(
        args.url, name=args.name, permissions=rows, profile=args.profile, on_link=on_link, timeout=args.timeout
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
    from .client import Connection
    from .profiles import ProfileStore

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
    from .topicmap import select_memories

    with connection(args) as conn:
        vault = _load(conn)
        df = select_memories(vault, topic=args.topic, category=args.category, search=args.search, mine=args.mine)
        if not args.json:
            note(f"{len(df)} shown (legacy space rows included) · vault: {vault.summary}")
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
        _, trace = conn.seal_preview(_read_text(args.text), topic=args.topic, categories=args.categories)
        print(trace.to_text(reveal=args.reveal))
        note("dry run: nothing was sent")
        return 0 if trace.ok else 1


def cmd_app_view(args: argparse.Namespace) -> int:
    """Every stored row as the sandbox owner's app sees it (GET /_sandbox/app-view)."""
    from .http import Api, expect_object
    from .profiles import ProfileStore

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
        raise DecoyError("the memory text is empty")
    kw: dict[str, Any] = {"topic": args.topic, "categories": args.categories}
    if args.type:
        kw["topic_type"] = args.type
    if args.relation or args.parent:
        kw["link"] = {"relation_type": args.relation, "topic": args.parent}
    with connection(args) as conn:
        print(conn.save(text, **kw))
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    """Edit a memory in place (removing a label rotates its key)."""
    changes: dict[str, Any] = {}
    if args.text is not None:
        changes["text"] = _read_text(args.text)
    if args.topic is not None:
        changes["topic"] = None if args.topic.strip().lower() in USER_NAMES else args.topic
    if args.categories is not None:
        changes["categories"] = args.categories
    if not changes:
        raise DecoyError("say what changes: --text, --topic or --categories")
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


# -- registration -------------------------------------------------------------------------------------
def _parents() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument(
        "--profile", default=DEFAULT_PROFILE, help=f"the saved connection to use (default {DEFAULT_PROFILE!r})"
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")
    return profile, as_json


def add_connection_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register pair, unpair, status, access, request, memories, topics, links, rows, unseal, seal, save,
    edit, delete, sync and app-view on the `decoy-lab` command's subparsers."""
    profile, as_json = _parents()
    many: dict[str, Any] = {"nargs": "+"}

    def add(
        name: str,
        fn: Callable[[argparse.Namespace], int],
        help: str,
        *parents: argparse.ArgumentParser,
        description: str | None = None,
    ) -> argparse.ArgumentParser:
        p = subparsers.add_parser(name, help=help, description=description or fn.__doc__, parents=[profile, *parents])
        p.set_defaults(run=guarded(fn))
        return p

    p = add("pair", cmd_pair, "pair with a Decoy server and save the connection (--profile)")
    p.add_argument("url", metavar="URL", help="the server's base URL, e.g. http://127.0.0.1:8787")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"the name the owner sees (default {DEFAULT_NAME!r})")
    p.add_argument(
        "--permission",
        dest="permissions",
        action="extend",
        nargs="+",
        metavar="P",
        help="a permission to ask for (repeatable; default memory.read and memory.save)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the approval (default 600)")

    p = add("unpair", cmd_unpair, "end the saved connection at the server and delete its profile")
    p.add_argument(
        "--local",
        action="store_true",
        help="only delete the profile here (the server is unreachable); the connection stays live",
    )

    add("status", cmd_status, "the saved connection and what it may do", as_json)
    add("access", cmd_access, "what the connection holds now, permission by permission", as_json)

    p = add("request", cmd_request, "ask the owner for more access on this connection", as_json)
    p.add_argument("permissions", nargs="+", metavar="PERM", help="permission names, e.g. memory.edit")
    p.add_argument("--datatypes", **many, metavar="C", help="only these categories")
    p.add_argument("--topic", metavar="NAME", help="only memories about this topic (a name or topic:<id>)")
    p.add_argument("--reason", default="", help="why, in words the owner reads")
    p.add_argument("--wait", action="store_true", help="wait for the owner's answer (exit 1 unless granted)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (default 600)")
    p.add_argument("--interval", type=float, default=3.0, help="seconds between --wait's checks (default 3)")

    p = add("memories", cmd_memories, "the memories this connection can read", as_json)
    p.add_argument("--topic", help="only this topic (a name or topic:<id>; 'You' for memories about you)")
    p.add_argument("--category", help="only this category")
    p.add_argument("--search", metavar="TEXT", help="only memories whose text contains TEXT (any case)")
    p.add_argument("--mine", action="store_true", help="only memories this connection wrote")

    add("topics", cmd_topics, "the topics, with their memory counts", as_json)
    add("links", cmd_links, "relations between You and topics", as_json)
    add("rows", cmd_rows, "every served row, readable or not, with reasons", as_json)

    p = add("unseal", cmd_unseal, "re-run the read of one row step by step (exit 1 when a step fails)")
    p.add_argument("id", metavar="ID")
    p.add_argument("--reveal", action="store_true", help="show raw keys instead of fingerprints")

    p = add("seal", cmd_seal, "seal a memory step by step without sending it (a dry run)")
    p.add_argument("text", nargs="+", metavar="TEXT", help="the memory text (- reads stdin)")
    p.add_argument("--topic", help="file it under this topic (a new one is only shown, never created)")
    p.add_argument("--categories", nargs="+", default=[], metavar="C")
    p.add_argument("--reveal", action="store_true", help="show the fresh raw key instead of its fingerprint")

    p = add("save", cmd_save, "save a memory; prints its new id")
    p.add_argument("text", nargs="+", metavar="TEXT", help="the memory text, or - to read it from stdin")
    p.add_argument("--topic", help="a topic name (reused by name, else created) or topic:<id>")
    p.add_argument("--type", default="", help="the type of a new topic (trip, person, project, …)")
    p.add_argument("--relation", help="how a new topic relates (e.g. 'is planning')")
    p.add_argument("--parent", metavar="TOPIC", help="nest a new topic under this one")
    p.add_argument("--categories", nargs="+", default=[], metavar="C")

    p = add("edit", cmd_edit, "edit a memory in place", as_json)
    p.add_argument("id", metavar="ID")
    p.add_argument("--text", help="the new text (- reads stdin)")
    p.add_argument("--topic", help="a topic name or topic:<id>; 'You' files it under no topic")
    p.add_argument("--categories", nargs="*", metavar="C", help="the new categories (none: remove them all)")

    p = add("delete", cmd_delete, "delete memories; prints deleted and refused ids", as_json)
    p.add_argument("ids", nargs="+", metavar="ID")

    add("sync", cmd_sync, "follow the change cursor; reload only what changed", as_json)

    p = add(
        "app-view",
        cmd_app_view,
        "sandbox only: every row as the owner's app sees it",
        as_json,
        description="Sandbox only: every stored row as the simulated owner's app sees it, from the "
        "sandbox's /_sandbox/app-view (loopback only). A real Decoy server has no such view.",
    )
    p.add_argument("url", nargs="?", metavar="URL", help="the sandbox URL (default: the profile's server)")
