"""A Step: what one step of a recipe took in (bytes with named fields, other inputs), what it gave
out, and whether it passed or why not; the marks and colours of its status; and TraceLike, what
every view reads of a trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from decoy_lab.wire.layouts import Field

MARKS = {True: "✓", False: "✗", None: "…"}
COLOURS = {True: "#1a7f37", False: "#cf222e", None: "#9a6700"}


@dataclass
class Step:
    name: str
    ok: bool | None = None
    data: bytes | None = field(default=None, repr=False)
    fields: tuple[Field, ...] = field(default=(), repr=False)
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)
    output: Any = field(default=None, repr=False)
    reason: str | None = None
    secret_output: bool = False  # the output is a raw key or plaintext key text
    secret_fields: frozenset[str] = frozenset()  # fields of `data` that are secret
    note: str = ""

    @property
    def status(self) -> str:
        return MARKS[self.ok]


class TraceLike(Protocol):
    """What every view reads of a trace (model.py's Trace is one). The views are typed against this,
    not Trace, so they import nothing of model.py, whose to_text, to_html and to_dict call them."""

    @property
    def title(self) -> str: ...

    @property
    def verdict(self) -> str: ...

    @property
    def stopped(self) -> str: ...

    @property
    def steps(self) -> list[Step]: ...

    @property
    def source(self) -> object: ...

    @property
    def ok(self) -> bool: ...

    @property
    def failed(self) -> Step | None: ...

    @property
    def start(self) -> int: ...

    def changed(self, step: Step) -> tuple[tuple[int, int], ...]: ...

    def editable(self, step: Step) -> str | None: ...


def as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)
