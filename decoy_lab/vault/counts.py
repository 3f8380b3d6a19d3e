"""The one count vocabulary: what every view and command says a vault holds, in the same words.

Each number is the length of a table the user can open, so a count never disagrees with a view:

- a **memory** is a readable observation, wherever it is stored: the per-memory store or a
  legacy space row ("59 memories (2 from legacy space rows)"), the rows of `memories`;
- a **topic** is a listed topic, same-name copies once (the rows of `topics`, the map's nodes);
- a **link** is a readable relation (the rows of `links`);
- **unreadable** is a served row that did not open, legacy space rows included (`rows` says why);
- a legacy space row that holds a topic or a relation is listed by `rows` only, and said so;
- **shown** is what a filter leaves: "3 of 59 memories shown".

The browse table's count line (widgets/grid.py, grid.js) speaks the same words; a test holds them
together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoy_lab.text import plural
from decoy_lab.vault import frames

SPACE = "space"  # the memories frame's `source` of a row read from a legacy space


def from_space(n: int) -> str:
    return f" ({n:,} from legacy space rows)" if n else ""


def memories_text(shown: int, total: int, space: int = 0) -> str:
    """ "59 memories (2 from legacy space rows)", or "3 of 59 memories shown" under a filter."""
    every = plural(total, "memory", "memories")
    return (every if shown == total else f"{shown:,} of {every} shown") + from_space(space)


@dataclass(frozen=True)
class VaultCounts:
    """The counts of one load, each the length of the table that lists it."""

    memories: int
    memories_from_space: int
    topics: int
    links: int
    unreadable: int
    unreadable_from_space: int
    space_others: int  # readable legacy space rows that hold a topic or a relation

    @classmethod
    def of(cls, vault: Any) -> VaultCounts:
        """Counted from the frames the views show (`Vault.memories`, `.topics`, `.links`) and the
        rows that did not open (a view's stand-in with no rows gives its own `counts()`)."""
        mem = vault.memories
        space_rows = list(getattr(vault, "space_rows", ()))
        readable_space = [r for r in space_rows if r.status == frames.READABLE]
        unreadable_space = len(space_rows) - len(readable_space)
        decoded = getattr(vault, "decoded_rows", None)
        kinds = getattr(decoded, "kinds", None)  # a DecodedRows tells kinds without making its rows
        if decoded is None:
            unreadable = vault.counts()["unreadable"]
        else:
            unreadable = (kinds() if kinds is not None else [r.kind for r in decoded]).count(frames.UNREADABLE)
        return cls(
            memories=len(mem),
            memories_from_space=int((mem["source"] == SPACE).sum()) if len(mem) else 0,
            topics=len(vault.topics),
            links=len(vault.links),
            unreadable=unreadable + unreadable_space,
            unreadable_from_space=unreadable_space,
            space_others=sum(r.text is None for r in readable_space),
        )

    def line(self, shown: int | None = None) -> str:
        """ "59 memories (2 from legacy space rows), 12 topics, 12 links, 0 unreadable" and, when a
        space holds topics or relations, how many rows only `rows` lists."""
        shown = self.memories if shown is None else shown
        text = ", ".join(
            [
                memories_text(shown, self.memories, self.memories_from_space if shown == self.memories else 0),
                plural(self.topics, "topic"),
                plural(self.links, "link"),
                f"{self.unreadable:,} unreadable{from_space(self.unreadable_from_space)}",
            ]
        )
        if self.space_others:
            held = plural(self.space_others, "more legacy space row", "more legacy space rows")
            text += f"; {held} of topics and links (listed under rows)"
        return text
