"""Composite ipywidgets for the workbench; each only calls the modules below it.

Names load on first use, so showing the pairing widget does not first import the map's
drawing stack (matplotlib takes seconds to import on a busy machine).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# name -> module (under decoy_lab.widgets) that defines it
_EXPORTS = {
    "ConsentCard": "consent",
    "Filters": "pickers",
    "FlowsPanel": "flows",
    "FlowsView": "flows",
    "MemoryBrowser": "browser",
    "MemoryGrid": "grid",
    "OwnerPanel": "owner",
    "PairingWidget": "pairing",
    "ReachMatrixView": "reach",
    "SteppedTrace": "stepper",
    "Stepper": "stepper",
    "TopicMapWidget": "topicmap",
    "VaultView": "vaultview",
    "shown": "stepper",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'decoy_lab.widgets' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
