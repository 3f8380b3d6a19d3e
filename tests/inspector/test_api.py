"""The inspector's surface is pinned, and its docstring lists every module it holds."""

from __future__ import annotations

from pathlib import Path

import decoy_lab.inspector as inspector


def test_the_surface_is_pinned_and_sorted():
    assert inspector.__all__ == ["Flow", "Inspector"]
    assert inspector.Inspector.__module__ == "decoy_lab.inspector.inspector"


def test_the_docstring_lists_the_modules():
    here = Path(inspector.__file__).parent
    doc = inspector.__doc__ or ""
    mine = ["flow_record", "masking", "senders", "opening", "recorder", "proxy", "serve", "har", "inspector", "command"]
    places = [doc.index(f"    {m}.py") for m in mine]
    assert places == sorted(places)  # in order, bottom first
    assert all((here / f"{m}.py").is_file() for m in mine)
