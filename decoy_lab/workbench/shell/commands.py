"""`decoy-lab` sub-commands over a saved connection: the notebook's `%decoy` verbs in a shell.

    decoy-lab connect http://127.0.0.1:8787 --name "My laptop"  # link + code now, then waits
    decoy-lab memories --topic "Lisbon trip"                      # a table; --json for machines
    ID=$(decoy-lab save "Prefers aisle seats." --topic "Lisbon trip" --categories travel)
    decoy-lab unseal "$ID"                                        # every step of reading it
    decoy-lab unpair                                              # end the connection, forget it

Each command resumes the connection saved under `--profile` (default "default") and calls
the same Connection / Vault / topicmap functions the notebook calls. The verbs, their arguments
and the translations (save options, edit changes, hints) come from `verbs/`, the table the
magics are built from too; the commands only print. This module is the table from verb to
command; the commands live by family:

    terminal.py     notes, tables, JSON, the status line, `guarded`, the saved connection
    connections.py  connect, connections, status, access, request, unpair
    reading.py      memories, topics, accounts, decoys, links, rows, app-view
    writing.py      save, edit, delete, resend
    account_writes.py  account-new, account-save, account-update, account-delete, password,
                    field-add, field-set, field-delete, unlock, protect, decoy-rename, decoy-edit,
                    decoy-update, decoy-pause, decoy-burn, account-burn-decoy, account-import (a
                    secret never on the command line; a burn asked first)
    traces.py       unseal, seal, dump
    sync.py         sync, cache

Tables go to stdout through `DataFrame.to_string`; notes (what is on its way, what a dry run
did not send) go to stderr. Tokens, the private key and raw memory keys are
never printed (`--reveal` shows raw keys in traces, and unlocked secrets). Exit codes: 0 done, 1 a
step or part of the work failed (unseal, seal, delete, request --wait; an account write the server
refused or whose outcome is unknown, an unlock not ready, an address or imported row not done),
2 bad arguments or a `DecoyError` (printed as `error: …` with the server's code and recovery),
130 interrupted.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell import account_writes
from decoy_lab.workbench.shell.connections import (
    cmd_access,
    cmd_connect,
    cmd_connections,
    cmd_request,
    cmd_status,
    cmd_unpair,
)
from decoy_lab.workbench.shell.reading import (
    cmd_accounts,
    cmd_app_view,
    cmd_decoys,
    cmd_links,
    cmd_memories,
    cmd_rows,
    cmd_topics,
)
from decoy_lab.workbench.shell.sync import cmd_cache, cmd_sync
from decoy_lab.workbench.shell.terminal import DEFAULT_PROFILE, guarded
from decoy_lab.workbench.shell.traces import cmd_dump, cmd_seal, cmd_unseal
from decoy_lab.workbench.shell.writing import cmd_delete, cmd_edit, cmd_resend, cmd_save

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
    "accounts": cmd_accounts,
    "decoys": cmd_decoys,
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
    **account_writes.RUN,  # account-…, password, field-…, unlock, protect, decoy-…
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
            help=verb.summary_for(verbs.SHELL),
            description=DESCRIPTIONS.get(verb.name, fn.__doc__),
        )
        verbs.add_arguments(p, verb, verbs.SHELL)
        p.set_defaults(run=guarded(fn), profile=DEFAULT_PROFILE, command=verb.name)
