"""Keep bench/README.md's "Latest figures" section in step with a run (`--write-readme`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from .data import Sizes
from .report import Figure, Machine, markdown

README = Path(__file__).with_name("README.md")
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def write_readme(figures: list[Figure], machine: Machine, sizes: Sizes, *, quick: bool, served_from: str) -> None:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = "\n".join(
        [
            START,
            f"Measured {when} with `python -m bench{' --quick' if quick else ''}` — {sizes.label}, rows {served_from}.",
            "",
            *[f"- {line}" for line in machine.lines()],
            "",
            markdown(figures),
            END,
        ]
    )
    text = README.read_text(encoding="utf-8") if README.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    README.write_text(head + block + tail, encoding="utf-8")
