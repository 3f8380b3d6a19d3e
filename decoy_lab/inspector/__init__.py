"""The inspector: a recording proxy in front of the sandbox or any Decoy server.

model.py    the flow record: Flow, Body, Timings, Row (one opened row), Flow.to_dict
"""

from __future__ import annotations

from decoy_lab.inspector.model import Flow

__all__ = ["Flow"]
