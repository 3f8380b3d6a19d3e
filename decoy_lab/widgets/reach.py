"""`ReachMatrixView(matrix)` shows a reach_matrix.Matrix: who reads which memory and why, cells that
differ from what the server serves marked."""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from decoy_lab.widgets.html import esc


class ReachMatrixView(W.VBox):
    """Who can read which memory, and why (a reach_matrix.Matrix); differences marked ≠."""

    def __init__(self, matrix: Any):
        frame = matrix.frame
        if frame.empty:
            body = "<i>no memory any of these connections or the owner can open, so no reasons to show</i>"
        else:
            head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
            rows = []
            for rid, rec in frame.iterrows():
                cells = "".join(
                    f"<td style='{'background:#fdd' if '≠' in str(v) else ''}'>{esc(v)}</td>" for v in rec.values
                )
                rows.append(f"<tr><td><code>{esc(str(rid)[:8])}</code></td>{cells}</tr>")
            body = f"<table class='decoy-reach'><tr><th>id</th>{head}</tr>{''.join(rows)}</table>"
        verdict = (
            "✓ every reason matches what the server serves"
            if matrix.agrees
            else f"≠ {len(matrix.differences)} cell(s) differ from what the server serves"
        )
        super().__init__([W.HTML(body), W.HTML(verdict)])
