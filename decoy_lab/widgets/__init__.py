"""Composite ipywidgets for the workbench; each only calls the modules below it.

Names load on first use, so showing the pairing widget does not first import the map's
drawing stack (matplotlib takes seconds to import on a busy machine).
"""

from __future__ import annotations

from typing import Any

from decoy_lab import lazy

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
    return lazy.load(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return __all__
