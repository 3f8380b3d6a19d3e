"""Composite ipywidgets for the workbench; each only calls the modules below it."""

from __future__ import annotations

from .browser import MemoryBrowser, VaultView
from .consent import ConsentCard
from .pairing import PairingWidget
from .stepper import SteppedTrace, Stepper, shown
from .topicmap import TopicMapWidget

__all__ = [
    "ConsentCard",
    "MemoryBrowser",
    "PairingWidget",
    "SteppedTrace",
    "Stepper",
    "TopicMapWidget",
    "VaultView",
    "shown",
]
