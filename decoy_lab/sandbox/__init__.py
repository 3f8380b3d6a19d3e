"""A local Decoy server that follows the spec, with a simulated owner phone.

`create_app(db_path, …)` builds the Starlette app (for in-process tests);
`Sandbox.start(…)` serves one on a free loopback port in a background thread.
"""

from __future__ import annotations

from .app import FakeClock, HTTPProblem, create_app
from .server import Sandbox, default_db_path

__all__ = ["FakeClock", "HTTPProblem", "Sandbox", "create_app", "default_db_path"]
