"""The `decoy-lab` command: the sandbox, blob dumps, the tour, and a connection's memories.

Each sub-command is a small function over the same modules the notebook uses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__


def _cmd_dump(args: argparse.Namespace) -> int:
    """Annotated dump of any base64 blob; opened too when a key is given."""
    from . import wire
    from .errors import DecoyError
    from .hexdump import dump_text

    text = sys.stdin.read().strip() if args.blob == "-" else args.blob
    try:
        layout = wire.parse(text, args.kind)
    except DecoyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{layout.kind}, {len(layout.data)} bytes")
    print(dump_text(layout.data, layout.fields))
    if args.key or args.key_file:
        from .dump import open_blob

        trace = open_blob(layout, key_b64=args.key, key_file=args.key_file)
        print(trace.to_text(reveal=args.reveal))
        return 0 if trace.ok else 1
    return 0


def _cmd_tour(args: argparse.Namespace) -> int:
    """Execute the tour notebook headless into build/tour.html."""
    import subprocess

    root = Path(args.notebooks)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "html",
            "--execute",
            str(root / "01-tour.ipynb"),
            "--output-dir",
            str(out),
            "--output",
            "tour",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="decoy-lab", description="Decoy memory workbench")
    p.add_argument("--version", action="version", version=f"decoy-lab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("dump", help="annotated hex dump of a base64 blob (opened when a key is given)")
    d.add_argument("blob", help="standard base64 text, or - to read it from stdin")
    d.add_argument("--kind", choices=["vault", "owner_envelope", "agent_envelope"], default=None)
    d.add_argument("--key", help="base64 memory key (for a VAULT blob)")
    d.add_argument("--key-file", help="PEM private key file (for an envelope)")
    d.add_argument("--reveal", action="store_true", help="show raw keys instead of fingerprints")
    d.set_defaults(run=_cmd_dump)

    t = sub.add_parser("tour", help="execute notebooks/01-tour.ipynb headless into build/tour.html")
    t.add_argument("--notebooks", default="notebooks")
    t.add_argument("--output", default="build")
    t.set_defaults(run=_cmd_tour)

    try:
        from .sandbox.server import add_cli
    except ImportError:  # the sandbox extra is always installed; guard only partial checkouts
        pass
    else:
        add_cli(sub)
    try:
        from .commands import add_connection_commands
    except ImportError:
        pass
    else:
        add_connection_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    return int(args.run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
