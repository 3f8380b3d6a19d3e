"""The same task as memory_agent.py, through the workbench's own `decoy_lab.Connection`.

    DECOY_BASE_URL=http://127.0.0.1:8787 python workbench_agent.py [--topic NAME]

`decoy-lab check` holds the workbench to its own rules: this script must score clean.
"""

from __future__ import annotations

import argparse
import os
import sys

from decoy_lab import Connection


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("DECOY_BASE_URL", "http://127.0.0.1:8787"))
    p.add_argument("--topic", default="Lisbon trip")
    args = p.parse_args(argv)
    conn = Connection.pair(args.url, name="Workbench agent", permissions=["memory.save"], profile=None, timeout=120)
    vault = conn.load()
    print(f"Read {len(vault.memories)} memories.", flush=True)
    mid = conn.save(
        f"{args.topic}: flight search, intermediate result.\nStatus: no flight chosen yet.",
        topic=args.topic,
        categories=["travel"],
    )
    print(f"Saved memory {mid[:8]}…", flush=True)
    conn.load()
    conn.edit(mid, text=f"{args.topic}: flight search, intermediate result.\nStatus: chose the Friday flight.")
    print("Corrected it.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
