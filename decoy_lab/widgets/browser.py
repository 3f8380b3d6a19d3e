"""Memory browser: the memory table of a Vault (grid.py), and the unseal stepper of the row
picked in it. The stepper stays open while filters change, and follows the picked row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as W
import networkx as nx
import pandas as pd

from decoy_lab.errors import MemoryModelError
from decoy_lab.vault.waiting import empty_sentence
from decoy_lab.views import topicmap
from decoy_lab.widgets.grid import MemoryGrid
from decoy_lab.widgets.pickers import ANY
from decoy_lab.widgets.stepper import Stepper

if TYPE_CHECKING:
    from decoy_lab.client.connection import Connection
    from decoy_lab.vault.read import Vault

_UNSET = object()


class MemoryBrowser(W.VBox):
    """The table, and the unseal stepper of its picked row."""

    def __init__(
        self,
        vault: Vault,
        *,
        connection: Connection | None = None,
        reveal: bool = False,
        graph: nx.DiGraph | None = None,
    ):
        self.vault = vault
        self.connection = connection
        self.reveal = reveal
        self.graph = graph if graph is not None else topicmap.build_graph(vault)
        self.grid = MemoryGrid(vault, empty_reason=empty_sentence(vault), graph=self.graph)
        self._unseal = W.Button(
            description="Step through unseal",
            icon="key",
            disabled=True,
            layout=W.Layout(width="auto"),
            tooltip="re-run the read of the picked row step by step" if connection else "needs a connection",
        )
        self._stepper = W.VBox()
        self._unseal.on_click(lambda _b: self.open_stepper())
        self.grid.observe(self._picked, names="picked")
        super().__init__([self.grid, self._unseal, self._stepper])
        self.add_class("decoy-browser")

    def __repr__(self) -> str:
        return f"<MemoryBrowser {self.grid.count}>"

    @property
    def frame(self) -> pd.DataFrame:
        """The memories the table shows, in its order."""
        return self.grid.frame

    @property
    def selected(self) -> str | None:
        return self.grid.picked or None

    @property
    def stepper(self) -> Stepper | None:
        """The open unseal stepper, if any."""
        return self._stepper.children[0] if self._stepper.children else None

    def select(self, row_id: str) -> None:
        """Pick a row, as a click on it does."""
        self.grid.picked = row_id

    def set_filters(
        self,
        *,
        topic: str | object | None = _UNSET,
        category: str | object | None = _UNSET,
        search: str | object = _UNSET,
        mine: bool | object = _UNSET,
    ) -> None:
        """Set any filter from Python (the page follows); `topic` by name or id, None for all."""
        if topic is not _UNSET:
            node = None if topic is None else topicmap.find_node(self.graph, str(topic))
            if topic is not None and node is None:
                raise MemoryModelError(f"no topic named {topic!r} among the memories")
            self.grid.topic = node or ANY
        if category is not _UNSET:
            self.grid.category = category or ANY  # type: ignore[assignment]
        if search is not _UNSET:
            self.grid.search = str(search or "")
        if mine is not _UNSET:
            self.grid.mine = bool(mine)

    def _picked(self, change: dict) -> None:
        self._unseal.disabled = self.connection is None or not change["new"]
        if not change["new"]:
            self._stepper.children = []
        elif self._stepper.children:  # an open stepper follows the picked row
            self.open_stepper()

    def open_stepper(self) -> Stepper | None:
        """Unseal the picked memory step by step and show the stepper under the table."""
        if not self.grid.picked or self.connection is None:
            return None
        stepper = Stepper(self.connection.unseal(self.grid.picked), reveal=self.reveal)
        self._stepper.children = [stepper]
        return stepper
