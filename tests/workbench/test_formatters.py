"""display.register_formatters names the result types it formats by module and class name (so
the notebook need not import them first); each name stays true to where the class is defined."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

from decoy_lab.workbench.display import register_formatters


class _Recording:
    def __init__(self) -> None:
        self.names: list[tuple[str, str]] = []

    def for_type_by_name(self, module: str, name: str, func) -> None:
        self.names.append((module, name))


def test_each_formatted_type_is_named_by_the_module_that_defines_it():
    html = _Recording()
    register_formatters(SimpleNamespace(display_formatter=SimpleNamespace(formatters={"text/html": html})))
    assert html.names, "register_formatters registers at least one type"
    for module, name in html.names:
        cls = getattr(importlib.import_module(module), name, None)
        assert isinstance(cls, type), f"{module}.{name} is no class"
        # IPython matches on the class's own __module__, never on a re-export
        assert (cls.__module__, cls.__qualname__) == (module, name)
