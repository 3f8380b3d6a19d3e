"""An element of a streamed array that is over the size cap, passed over without being held.

A row is at most ~140 KB, so an element over jsonstream's cap (1 MiB) is no row this client can
read; one such element must not cost the load its other rows. `Skipper` follows the element's
text chunk by chunk — strings, escapes and nesting only, never parsing it — to where it ends,
keeping just its first and last `KEPT` characters (where a row's `id` is found when it is served
beside the huge member). `Oversized` is what the reader hands out in the element's place: where
it was, how large, the cap, and the id when it could be read from those kept ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEPT = 4096  # characters of each end of a skipped element kept to find its id
_IN_STRING = re.compile(r'[\\"]')  # inside a string only a quote or an escape matters
_STRUCTURE = re.compile(r'["{}\[\]]')  # outside strings: a string's start, nesting
_SCALAR_END = re.compile(r"[,\]\s]")  # a number or a literal ends at the next separator
_ID = re.compile(r'(?<!\\)"id"\s*:\s*"([^"\\]{1,200})"')


@dataclass(frozen=True)
class Oversized:
    """An element over the cap, skipped unread: its place in the array (`index`, 0 first), the
    character of the answer where it began (`at`), its length in characters (`size`), the cap,
    and the row's id when it could be read cheaply (None otherwise)."""

    index: int
    at: int
    size: int
    cap: int
    id: str | None = None

    @property
    def reason(self) -> str:
        named = f"row {self.id}" if self.id else "a row whose id could not be read cheaply"
        return (
            f"{named}, element {self.index + 1:,} of the answer (at character {self.at:,}), is "
            f"{self.size:,} characters, over the {self.cap:,}-character cap on one row: skipped "
            "unread (a row is at most ~140 KB: 100 KiB of ciphertext, base64, and its served fields)"
        )


class Skipper:
    """Follows one element from its first character to its end. `feed(text)` gives the index in
    `text` just past the element's end, or -1 when all of `text` belongs to it."""

    def __init__(self, first: str):
        self.size = 0  # characters consumed so far
        self.head = ""
        self.tail = ""
        self._scalar = first not in '{["'
        self._depth = 0
        self._in_string = False
        self._escaped = False  # the chunk ended on a backslash: the next character is escaped

    def feed(self, text: str) -> int:
        end = self._scan(text)
        taken = text if end < 0 else text[:end]
        self.size += len(taken)
        if len(self.head) < KEPT:
            self.head += taken[: KEPT - len(self.head)]
        self.tail = (self.tail + taken[-KEPT:])[-KEPT:]
        return end

    def found_id(self) -> str | None:
        """The row's `id`, when one of the kept ends names it (an object element only)."""
        if not self.head.startswith("{"):
            return None
        match = _ID.search(self.head) or _ID.search(self.tail)
        return match.group(1) if match else None

    def _scan(self, text: str) -> int:
        pos, n = 0, len(text)
        if self._scalar:
            match = _SCALAR_END.search(text)
            return match.start() if match else -1
        if self._escaped and n:
            pos, self._escaped = 1, False
        while pos < n:
            if self._in_string:
                match = _IN_STRING.search(text, pos)
                if match is None:
                    return -1
                if match.group() == "\\":
                    pos = match.end() + 1
                    self._escaped = pos > n
                    continue
                self._in_string, pos = False, match.end()
                if self._depth == 0:  # the element was a string
                    return pos
                continue
            match = _STRUCTURE.search(text, pos)
            if match is None:
                return -1
            ch, pos = match.group(), match.end()
            if ch == '"':
                self._in_string = True
            elif ch in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth <= 0:
                    return pos
        return -1
