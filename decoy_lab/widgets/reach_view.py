"""`ReachMatrixView(matrix)` shows a reach_matrix.Matrix: who reads which memory and why, cells that
differ from what the server serves marked. It shows the rows a reason singles out
(`Matrix.notable`: a category, a topic, an account, a connection's own row, a difference), says
what the others have in common, and lists every row one click away ("Show all N rows")."""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from decoy_lab.widgets.html import esc


def _table(frame: Any) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for rid, rec in frame.iterrows():
        cells = "".join(f"<td style='{'background:#fdd' if '≠' in str(v) else ''}'>{esc(v)}</td>" for v in rec.values)
        rows.append(f"<tr><td><code>{esc(str(rid)[:8])}</code></td>{cells}</tr>")
    return f"<table class='decoy-reach'><tr><th>id</th>{head}</tr>{''.join(rows)}</table>"


class ReachMatrixView(W.VBox):
    """Who can read which memory, and why (a reach_matrix.Matrix); differences marked ≠. The
    `toggle` button shows every row, or again only those a reason singles out (`show_all`)."""

    def __init__(self, matrix: Any):
        self.matrix = matrix
        self.everything = False
        self._table = W.HTML()
        self._note = W.HTML()
        self.toggle = W.Button(layout=W.Layout(width="auto"))
        self.toggle.add_class("decoy-reach-toggle")
        self.toggle.on_click(lambda _b: self.show_all(not self.everything))
        verdict = (
            "✓ every reason matches what the server serves"
            if matrix.agrees
            else f"≠ {len(matrix.differences)} cell(s) differ from what the server serves"
        )
        super().__init__([self._table, W.HTML(verdict), W.HBox([self._note, self.toggle])])
        self.add_class("decoy-reach-view")
        self.show_all(False)

    def show_all(self, everything: bool) -> None:
        """Show every row (True), or only the rows a reason singles out (False)."""
        self.everything = everything
        frame = self.matrix.frame
        notable = int(self.matrix.notable.sum())
        if frame.empty:
            self._table.value = "<i>no memory any of these connections or the owner can open, so no reasons to show</i>"
        elif not everything and not notable:
            self._table.value = "<i>no row is singled out by a reason: every one is read alike</i>"
        else:
            self._table.value = _table(self.matrix.shown(everything))
        left_out = self.matrix.left_out()
        self.toggle.layout.display = None if left_out else "none"
        if everything:
            self._note.value = f"all {len(frame)} rows" if left_out else ""
            self.toggle.description = f"Show only the {notable} rows with a reason"
        else:
            self._note.value = f"<i>{esc(left_out)}.</i>" if left_out else ""
            self.toggle.description = f"Show all {len(frame)} rows"
