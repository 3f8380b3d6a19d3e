"""Traces: the record of each step a seal or unseal recipe took, and every view of one.

A Step keeps what it took in, what it gave out, and whether it passed or why not; a Trace keeps
the steps in order (a failing step keeps every step before it), what its recipe read, so it can
run again on edited bytes, and the blobs as served, so a view marks what an edit changed. This
package is the one place a Trace is rendered: as text, as HTML, and as the plain data the recipe
widget draws; byte dumps come from wire/hexdump.py, which knows only bytes and fields.

One module per concern, each importing only those above it:

    step.py    Step, the marks and colours of its status, TraceLike (what a view reads of a trace)
    wording.py the words every view shares (describe, headline, step_lines, dump_args), trace_text
    as_html.py status_html, trace_html
    data.py    the plain data of JSON export and the recipe widget: masked_bytes, field_tree, view
    record.py  Source, Trace (recording, reading, rerun, its views), run_recipe, reason_of, tracer

The views are typed against TraceLike, not Trace, so none imports record.py; Trace's to_text,
to_html and to_dict call them. (data.py is not named view.py: a module of that name would be
shadowed by the function `view` the package exports.)

Import from the package (`from decoy_lab.recipes.trace import Trace`), not from the modules.
"""

from __future__ import annotations

from decoy_lab.recipes.trace.as_html import status_html, trace_html
from decoy_lab.recipes.trace.data import GROUPS, field_tree, masked_bytes, view
from decoy_lab.recipes.trace.record import NO_TRACE, Source, Trace, Tracer, reason_of, run_recipe, tracer
from decoy_lab.recipes.trace.step import COLOURS, MARKS, Step
from decoy_lab.recipes.trace.wording import describe, dump_args, headline, step_lines, trace_text

__all__ = [
    "COLOURS",
    "GROUPS",
    "MARKS",
    "NO_TRACE",
    "Source",
    "Step",
    "Trace",
    "Tracer",
    "describe",
    "dump_args",
    "field_tree",
    "headline",
    "masked_bytes",
    "reason_of",
    "run_recipe",
    "status_html",
    "step_lines",
    "trace_html",
    "trace_text",
    "tracer",
    "view",
]
