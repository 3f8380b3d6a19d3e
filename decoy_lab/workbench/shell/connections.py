"""`decoy-lab` sub-commands about the connection itself: connect (pair), connections, status,
access, request (ask for more on this connection) and unpair.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from decoy_lab.errors import DecoyError
from decoy_lab.widgets.html import countdown, status_parts
from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.terminal import (
    DEFAULT_PROFILE,
    INTERRUPTED,
    StatusLine,
    connection,
    frame_records,
    note,
    print_json,
    table,
)

if TYPE_CHECKING:
    from decoy_lab.client.connection import Connection

DEFAULT_NAME = "decoy-lab command line"


def cmd_connect(args: argparse.Namespace) -> int:
    """Pair with a Decoy server and save the connection under --profile (a live one is reused
    unless --new)."""
    from decoy_lab.client.connection import Connection
    from decoy_lab.protocol.pairing import authorization_details
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
                    f"(token id {conn.token_id}); using it. decoy-lab connect {url} --new --profile NAME "
                    "pairs another beside it; decoy-lab request PERM asks for more on this one."
                )
                missing = _not_held(conn, args.permissions or [])
            if missing:  # the reused connection is not what was asked for: a script must not carry on
                also = f" --profile {args.profile}" if args.profile != DEFAULT_PROFILE else ""
                note(
                    f"it does not hold {', '.join(missing)}, asked for here: decoy-lab request "
                    f"{' '.join(missing)}{also} asks the owner for {'it' if len(missing) == 1 else 'them'} "
                    "on this connection"
                )
                return 1
            return 0
        if not args.force:  # a URL that cannot pair is said for what it is, before the name clash
            _reachable(url)
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
            said = "".join(status_parts(handle.status, handle.message))  # "waiting for the owner…", once
            status.show(f"{said}{clock}", steady=said)
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


def _not_held(conn: Connection, asked: list[str]) -> list[str]:
    """The permission names in `asked` the connection does not hold now (`everything` holds all)."""
    if not asked:
        return []
    held = conn.access().names
    return [] if "everything" in held else [p for p in dict.fromkeys(asked) if p not in held]


def _reachable(url: str) -> None:
    """The URL's form first, then the server's OAuth metadata: what is wrong with the URL is said."""
    from decoy_lab.client.connect import check_base_url
    from decoy_lab.transport.api import Api

    check_base_url(url)
    api = Api(url)
    try:
        api.metadata()
    finally:
        api.close()


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
        named = p.connection_name or "(unnamed)"  # the name the owner approved, not the profile's
        rows.append({"": mark, "profile": name, "server": p.base_url, "name": named, "token_id": p.token_id})
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
