"""decoy_lab: a Jupyter/IPython workbench for Decoy's end-to-end-encrypted agent memory API.

`%load_ext decoy_lab` registers the `%decoy` magics. From plain Python:

    from decoy_lab import Connection, Sandbox
    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="My notebook")
        conn.load().memories

Public names load on first use, so `import decoy_lab` (and the `decoy-lab` command) stays quick.
"""

from __future__ import annotations

from typing import Any

from decoy_lab import lazy

__version__ = "0.1.0"

# name -> module that defines it
_EXPORTS = {
    "Access": "protocol.access",
    "AgentKey": "wire.crypto",
    "Connection": "client.connection",
    "DecoyError": "errors",
    "GrantRequest": "protocol.access",
    "Inspector": "inspector",
    "Memory": "memory",
    "RecipientKeys": "memory",
    "Sandbox": "sandbox",
    "Trace": "recipes.trace",
    "UnreadableRow": "errors",
    "Vault": "vault.read",
    "WireFormatError": "errors",
    "open_blob": "recipes.dump",
}

__all__ = sorted([*_EXPORTS, "__version__", "load_ipython_extension"])


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return __all__


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext decoy_lab`: register the %decoy / %%decoy magics."""
    from decoy_lab.workbench.notebook.magics import DecoyMagics

    ipython.register_magics(DecoyMagics)
