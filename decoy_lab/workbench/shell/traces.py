"""`decoy-lab` sub-commands that print a Trace step by step: unseal (a served row), seal (a dry
run: nothing is sent) and dump (any base64 blob).
"""

from __future__ import annotations

import argparse
import sys

from decoy_lab.workbench import verbs
from decoy_lab.workbench.shell.terminal import (
    connection,
    full_id,
    note,
    read_text,
)


def cmd_unseal(args: argparse.Namespace) -> int:
    """Re-run the read of one served row step by step; exit 1 when a step fails."""
    with connection(args) as conn:
        trace = conn.unseal(full_id(conn, args.id))
        print(trace.to_text(reveal=args.reveal))
        return 0 if trace.ok else 1


def cmd_seal(args: argparse.Namespace) -> int:
    """Seal a memory exactly as save would, step by step, and send nothing."""
    with connection(args) as conn:
        _, trace = conn.seal_preview(read_text(args.text), topic=args.topic, categories=args.categories or [])
        print(trace.to_text(reveal=args.reveal))
        note("dry run: nothing was sent")
        return 0 if trace.ok else 1


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
