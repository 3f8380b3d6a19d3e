"""Names a package exports, imported on first use: `import decoy_lab` and `decoy-lab --help` stay
quick because the drawing stack, the sandbox and the proxy load only when a name from them is read.

A package lists `_EXPORTS` (name → its module, relative to the package) and says

    def __getattr__(name): return lazy.load(__name__, _EXPORTS, name)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib import import_module
from typing import Any


def load(package: str, exports: Mapping[str, str], name: str) -> Any:
    """The value of `package.name`, imported from its module and kept in the package from then on."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", package), name)
    setattr(sys.modules[package], name, value)
    return value
