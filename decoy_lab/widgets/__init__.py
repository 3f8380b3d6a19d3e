"""Composite ipywidgets for the workbench; each only calls the modules below it. Their scripts
and styles are in assets/.

html.py        the theme's `--jp-*` colours with fallbacks, escaping, small HTML pieces
pairing_view.py the pairing widget: link, code, QR, status; never blocks the kernel
consent.py     the consent card: what a connection asked for, was granted and holds
stepper.py     the recipe view: a trace stepped through, its bytes annotated
pickers.py     the filters: topic, category, search
grid.py        the memory table, a WAI-ARIA grid (whole in the page when small, paged above)
gridrows.py    its rows and rule, vectorised
topicmap_view.py the live map (`LiveMap`, what `%decoy map` returns)
browser.py     the map and the table joined by a selection
vaultview.py   `%decoy browse`
owner_panel.py the owner's panel, updated in place
owner_parts.py its stateless parts
reach_view.py  who reads what, and why
flows.py       the inspector's flows view
flowdetail.py  one flow opened: its rows, bodies and verdicts
scorecard.py   `%decoy check`: progress, then the scorecard linked to the flows

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
    "OwnerPanel": "owner_panel",
    "PairingWidget": "pairing_view",
    "ReachMatrixView": "reach_view",
    "SteppedTrace": "stepper",
    "Stepper": "stepper",
    "TopicMapWidget": "topicmap_view",
    "VaultView": "vaultview",
    "shown": "stepper",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return __all__
