"""`VaultView`: the topic map and the memory table side by side, two views of one Vault.

The views are siblings joined only through public traits: the map's `selected` topic is the
table's `topic` filter and the pickers' topic; the table's `picked_topic` is the map's `ringed`
topic. Each pair is linked in the kernel (`dlink`) and in the page (`jsdlink`), so a page with
no kernel (the tour's HTML) still answers a click on the map with the table filtered, and a
page with one does not wait for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as W

from decoy_lab.vault.counts import VaultCounts
from decoy_lab.vault.waiting import empty_sentence, waiting_sentence
from decoy_lab.views import mapcache
from decoy_lab.widgets.browser import MemoryBrowser
from decoy_lab.widgets.html import esc
from decoy_lab.widgets.pickers import Filters
from decoy_lab.widgets.topicmap_view import TopicMapWidget

if TYPE_CHECKING:
    from decoy_lab.client.connection import Connection
    from decoy_lab.vault.read import Vault


def header_text(vault: Vault) -> str:
    """The counts above both views, in the words every view and command uses (vault/counts.py)."""
    return VaultCounts.of(vault).line()


class VaultView(W.VBox):
    """The pickers, then the map and the table over one Vault."""

    def __init__(self, vault: Vault, *, connection: Connection | None = None, reveal: bool = False):
        self.vault = vault
        self.map = TopicMapWidget(vault)
        self.browser = MemoryBrowser(vault, connection=connection, reveal=reveal, graph=self.map.graph)
        self.filters = Filters(vault, self.map.graph)
        grid = self.browser.grid
        # A derived trait flows one way only (dlink), so the page and the kernel, which both
        # write it, write the same value in the same order; two-way links in both places would
        # bounce quick clicks back and forth until the views disagreed.
        self.links = [
            W.link((self.filters, "topic"), (self.map, "selected")),
            W.dlink((self.map, "selected"), (grid, "topic")),
            W.jsdlink((self.map, "selected"), (grid, "topic")),
            W.dlink((grid, "picked_topic"), (self.map, "ringed")),
            W.jsdlink((grid, "picked_topic"), (self.map, "ringed")),
            W.link((self.filters, "category"), (grid, "category")),
            W.link((self.filters, "category"), (self.map, "category")),
            W.link((self.filters, "mine"), (grid, "mine")),
        ]
        # what is on its way (browse --wait waits for it), or why a view with no memories is empty
        waiting = waiting_sentence(vault, verb="browse") or (empty_sentence(vault) if vault.memories.empty else None)
        notes = f"<div class='decoy-view-note'>{esc(waiting)}</div>" if waiting else ""
        head = W.HTML(f"<b class='decoy-view-counts'>{esc(header_text(vault))}</b>{notes}")
        side = W.Layout(flex="1 1 48%", min_width="480px", margin="0 12px 0 0")
        self.map.layout, self.browser.layout = side, W.Layout(flex="1 1 48%", min_width="480px")
        body = W.HBox([self.map, self.browser], layout=W.Layout(flex_flow="row wrap"))
        super().__init__([head, self.filters, body])
        self.add_class("decoy-vaultview")
        mapcache.keep(vault)  # what the map, the table and the pickers made: the next session reads it

    def __repr__(self) -> str:
        return f"<VaultView {self.browser!r} {self.map!r}>"
