"""Traces: the record of each step a seal or unseal recipe took, and every view of one.

    model.py   Step, Source, Trace, run_recipe, reason_of, tracer and the untraced stand-in

Import from the package (`from decoy_lab.recipes.trace import Trace`), not from the modules.
"""

from __future__ import annotations

from decoy_lab.recipes.trace.model import (
    COLOURS,
    GROUPS,
    MARKS,
    NO_TRACE,
    Source,
    Step,
    Trace,
    Tracer,
    describe,
    dump_args,
    field_tree,
    headline,
    masked_bytes,
    reason_of,
    run_recipe,
    status_html,
    step_lines,
    trace_html,
    trace_text,
    tracer,
    view,
)

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
