"""`decoy-lab` sub-commands that write: save, edit, delete, and resend (the writes whose outcome
is unknown).
"""

from __future__ import annotations

import argparse
import json

from decoy_lab.errors import TransportError
from decoy_lab.text import escaped, plural
from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.terminal import (
    connection,
    full_id,
    note,
    print_json,
    read_text,
)


def cmd_save(args: argparse.Namespace) -> int:
    """Save one memory (TEXT, or - to read it from stdin); prints its new id."""
    text = read_text(args.text)
    if not text:
        raise verbs.UsageProblem("the memory text is empty", verb="save")
    with connection(args) as conn:
        print(conn.save(text, **verbs.save_options(args)))
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    """Edit a memory in place (removing a label rotates its key)."""
    changes = verbs.edit_changes(args, read_text(args.text) if args.text is not None else None, verbs.SHELL)
    with connection(args) as conn:
        args.id = full_id(conn, args.id)
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
        res = conn.delete([full_id(conn, i) for i in args.ids])
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
    rows or body, from the pending-writes journal beside the profile — memories and the account
    family's writes alike (one not safe to repeat is read back first and only what did not land
    is sent); prints each one's outcome. Exit 1 while one is still unknown or was refused."""
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
            if entry["kind"] in ("save", "edit"):
                print(f"pending  {entry['kind']:<5} {entry['target']}  ({plural(len(entry['ids']), 'row')})")
            else:  # an account write: what it is for, and (its last unknown outcome) what to do
                print(escaped(f"pending  {entry['kind']:<5} {entry['target'] or ''}"))
                if entry.get("why"):  # the library's words (and the server's): in the shell's, inert
                    print(escaped(f"         {verbs.front_words(entry['why'], verbs.SHELL)}"))
        for res in done:
            said = f"  ({res['said']})" if res.get("said") else ""  # an account write: what proved it
            line = f"{res.get('kind', ''):<5} {res.get('target') or ''}  {res['outcome']}{said}"
            print(escaped(verbs.front_words(line, verbs.SHELL)))
    return 1 if left or any(r["outcome"] != "committed" for r in done) else 0
