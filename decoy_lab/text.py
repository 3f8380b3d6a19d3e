"""Text an agent or a server chose, made safe to show: `escaped(text)`; and a count with its noun,
as every view and command writes one: `plural(n, one)`.

A terminal acts on control characters (ESC starts a sequence that can retitle the window, move
the cursor or rewrite what was printed; BEL rings; a C1 CSI does what ESC [ does), a bidi
override reorders what is shown, a lone surrogate cannot be written as UTF-8 at all, and XML 1.0
forbids most control characters even as character references. `escaped` writes each of them as
a visible escape (`\\x1b`, `\\x9b`, `\\u202e`, `\\ud800`, and `\\n`, `\\r`, `\\t`) and leaves every
other character alone, so a one-line field stays one line and nothing shown can act on the
terminal. With `newlines=True` a line break stays a line break (a multi-line block, e.g. a
here-doc). It is a way of showing text, not an encoding: it is not reversed, and a backslash
the text held is shown as it is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["escaped", "plural"]

# the bidi embeddings, overrides and isolates, and the implicit marks: each reorders what follows it
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    """`ch`, or its escape when a terminal would act on it (control, bidi, surrogate, XML's U+FFFE/U+FFFF)."""
    if ch in BIDI or ch in "\ufffe\uffff" or unicodedata.category(ch) in ("Cc", "Cs"):
        return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
    return ch


def escaped(text: str, *, newlines: bool = False) -> str:
    """`text` safe to print or to put in XML: every C0 control (tab and line breaks too), DEL,
    C1 control, bidi control and lone surrogate written as a visible escape. With
    `newlines=True`, "\\n" is kept (each line escaped on its own)."""
    if text.isprintable():
        return text
    if newlines:
        return "\n".join(escaped(line) for line in text.split("\n"))
    return "".join(map(_visible, text))


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` and its noun, thousands separated: "1 memory", "1,204 memories" (`many` defaults to
    `one` + "s")."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"
