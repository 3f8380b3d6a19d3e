"""`decoy-lab` sub-commands that read the vault as tables: memories, topics, accounts, Decoy
addresses, links, rows, and the sandbox's app-view.

A read waits for rows on their way from the owner's phone (right after `connect` the keys take a
few seconds to arrive) and says so on stderr, at most the spec's 90 s: at a shell prompt nothing
else can happen meanwhile, and a script's next line needs the rows. `--no-wait` reads once.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from decoy_lab.text import plural
from decoy_lab.workbench.shell.terminal import (
    connection,
    frame_records,
    note,
    print_json,
    short_ids,
    table,
)


def _load(conn: Any, args: argparse.Namespace, verb: str = "memories") -> Any:
    """The vault, read again while rows are on their way (unless --no-wait), then its notes."""
    from decoy_lab.vault import waiting
    from decoy_lab.vault.waiting import is_waiting, on_their_way, wait_for_rows

    vault = conn.load()
    if is_waiting(vault) and not getattr(args, "no_wait", False):
        coming = on_their_way(vault.answer)
        what = f"{plural(coming, 'row')} (memories, topics, links)" if coming else "rows"
        note(
            f"waiting for {what} on their way from the owner's phone, which has not shared their keys with "
            f"this connection yet (at most {waiting.WAIT_LIMIT:g} s; --no-wait reads once without waiting)"
        )
        vault = wait_for_rows(
            conn,
            vault,
            limit=waiting.WAIT_LIMIT,
            say=note,
            bar=sys.stderr.isatty(),
            prompt="decoy-lab",
            waits=f"decoy-lab {verb}",
        )
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
    """The memories this connection can read, filtered by topic, category, text or author
    (--mine). Rows on their way from the owner's phone are waited for (--no-wait reads once)."""
    from decoy_lab.vault.counts import memories_text
    from decoy_lab.vault.waiting import empty_sentence, waiting_sentence
    from decoy_lab.workbench.display import readable_view, select_said

    waits = "decoy-lab memories"  # a shell read waits without a flag
    with connection(args) as conn:
        vault = _load(conn, args)
        filters = {"topic": args.topic, "category": args.category, "search": args.search, "mine": args.mine}
        df = select_said(vault, prompt="decoy-lab", waits=waits, **filters)
        if args.json:
            return _listing(args, df, [], (), "memories")
        shown = "" if len(df) == len(vault.memories) else f"{memories_text(len(df), len(vault.memories))}; vault: "
        note(shown + vault.summary)
        filtered = any(filters.values())
        said = empty_sentence(vault, filtered=filtered, prompt="decoy-lab", waits=waits) if len(df) == 0 else None
        said = said or waiting_sentence(vault, prompt="decoy-lab", waits=waits)
        if said:
            note(said)
        # what the notebook shows (whole text, "You" for no topic), ids cut as git cuts them
        view = readable_view(df, ["id", "topic", "categories", "text"])
        view["id"] = short_ids(list(df["id"]), list(vault.memories["id"]))
        return _listing(args, view, ["id", "topic", "categories", "text"], ("text",), "memories")


def cmd_topics(args: argparse.Namespace) -> int:
    """Topics: the things memories are about, with how many memories each holds."""
    with connection(args) as conn:
        return _listing(
            args, _load(conn, args, "topics").topics, ["id", "type", "memories", "name"], ("name",), "topics"
        )


def cmd_accounts(args: argparse.Namespace) -> int:
    """Accounts: each one this connection may see — its name where this connection can open it,
    its Decoy address, whether a password is set, its secret fields, and the memories about it.
    An empty list says why on stderr."""
    from decoy_lab.workbench.display import accounts_said

    with connection(args) as conn:
        _load(conn, args, "accounts")  # the memories about each account are counted in this load
        df = conn.accounts()
        if df.empty:
            note(accounts_said(prompt="decoy-lab"))
        view = df.assign(field_labels=[", ".join(x) if isinstance(x, list) else "" for x in df["field_labels"]])
        view["id"] = short_ids(list(df["id"]), list(df["id"]))
        columns = ["id", "service", "username", "decoy_email", "has_password", "fields", "memories", "created_by"]
        if args.json:
            print_json(frame_records(df))
            return 0
        shown = _listing(args, view, columns, ("service", "decoy_email"), "accounts")
        _say_unnamed(df)
        return shown


def _say_unnamed(df: Any) -> None:
    """Why a row's service is blank (its record is sealed to the owner, say), on stderr: a blank
    cell alone reads as a name lost, and the reason is in `--json`'s `service_from` only."""
    unnamed = df[df["service"].isna()] if len(df) else df
    for why, rows in unnamed.groupby("service_from", sort=False) if len(unnamed) else ():
        ids = short_ids(list(rows["id"]), list(df["id"]))
        which = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
        note(f"{plural(len(rows), 'account')} with no service shown ({which}): {str(why).removeprefix('no name: ')}")


def cmd_decoys(args: argparse.Namespace) -> int:
    """Decoy addresses: each one this connection may see — its email, its name where this
    connection can open it, its label, status and account. `--status`, `--search`, `--after` and
    `--before` are the server's filters; an empty list says why on stderr."""
    from decoy_lab.workbench import verbs
    from decoy_lab.workbench.display import addresses_said

    verbs.check(verbs.BY_NAME["decoys"], args, verbs.SHELL)
    filters = {"search": args.search, "after": args.after, "before": args.before}
    with connection(args) as conn:
        df = conn.decoys(args.status, **filters)
        if df.empty:
            note(addresses_said(conn, prompt="decoy-lab", status=args.status, **filters))
        if args.json:
            print_json(frame_records(df))
            return 0
        # a Personal Alias has no account: pandas holds its account_id as NaN, which is truthy
        linked = [a if isinstance(a, str) else "" for a in df["account_id"]]
        view = df.assign(account=short_ids(linked, [a for a in linked if a]))
        view["id"] = short_ids(list(df["id"]), list(df["id"]))
        columns = ["id", "email", "name", "label", "status", "account"]
        return _listing(args, view, columns, ("email", "name"), "Decoy addresses")


def cmd_links(args: argparse.Namespace) -> int:
    """Relations between You and topics, and between topics."""
    with connection(args) as conn:
        return _listing(
            args, _load(conn, args, "links").links, ["id", "from", "relation_type", "to"], ("from", "to"), "links"
        )


def cmd_rows(args: argparse.Namespace) -> int:
    """Every row served, readable or not, with the reason a row cannot be read."""
    with connection(args) as conn:
        return _listing(args, _load(conn, args, "rows").rows, ["id", "kind", "status", "label"], ("label",), "rows")


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
