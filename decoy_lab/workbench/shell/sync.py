"""`decoy-lab` sub-commands that keep the local copy current: sync (follow the change cursor)
and cache (the profile's sealed vault cache).
"""

from __future__ import annotations

import argparse

from decoy_lab.workbench.shell.terminal import (
    connection,
    print_json,
)


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


def cmd_cache(args: argparse.Namespace) -> int:
    """Where the profile's sealed vault cache is and how large (cache.py); --clear removes it."""
    from decoy_lab.store import cache
    from decoy_lab.store.profiles import ProfileStore

    path = cache.profile_cache(ProfileStore(), args.profile)
    if args.clear:
        print(cache.cleared(path))
    else:
        print(cache.describe(path))
    return 0
