"""decoy_lab: a Jupyter/IPython workbench for Decoy's end-to-end-encrypted agent memory API.

`%load_ext decoy_lab` registers the `%decoy` magics. From plain Python:

    from decoy_lab import Connection, Sandbox
    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="My notebook")
        conn.load().memories

Public names load on first use, so `import decoy_lab` (and the `decoy-lab` command) stays quick.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_EXPORTS = {
    "Access": "rules.access",
    "AgentKey": "wire.crypto",
    "Connection": "client.connection",
    "DecoyError": "errors",
    "GrantRequest": "rules.access",
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
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'decoy_lab' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext decoy_lab`: register the %decoy / %%decoy magics."""
    from decoy_lab.workbench.notebook.magics import DecoyMagics

    ipython.register_magics(DecoyMagics)
