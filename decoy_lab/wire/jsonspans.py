"""Byte ranges of the members of a UTF-8 JSON document, as a nested tree.

A decrypted memory is UTF-8 JSON; its field tree in the recipe view names each member (`v`,
`row_id`, `text`, …) with the bytes it spans, so a click on a member lights up exactly its
bytes. `spans(data)` raises ValueError for bytes that are not UTF-8 JSON.
"""

from __future__ import annotations

import json
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but not in the stubs

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()
MAX_NODES = 2000  # a view needs the shape, not every element of a huge array


def spans(data: bytes, base: int = 0) -> list[dict]:
    """The members of the top-level object or array: [{name, start, end, note, children}]."""
    text = data.decode("utf-8")
    offsets = None if text.isascii() else _byte_offsets(text)
    walker = _Walker(text, offsets, base)
    i = walker.skip(0)
    if i >= len(text) or text[i] not in "{[":
        return []
    nodes, end = walker.container(i)
    if walker.skip(end) != len(text):
        raise ValueError("trailing bytes after the JSON document")
    return nodes


def _byte_offsets(text: str) -> list[int]:
    out = [0]
    for ch in text:
        out.append(out[-1] + len(ch.encode("utf-8")))
    return out


class _Walker:
    def __init__(self, text: str, offsets: list[int] | None, base: int):
        self.text, self.offsets, self.base, self.count = text, offsets, base, 0

    def at(self, i: int) -> int:
        return self.base + (self.offsets[i] if self.offsets is not None else i)

    def skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WS:
            i += 1
        return i

    def value(self, i: int) -> tuple[list[dict], str, int]:
        """(children, note, end) of the value starting at `i`."""
        ch = self.text[i]
        if ch in "{[":
            children, end = self.container(i)
            what = "object" if ch == "{" else "array"
            return children, f"{what} of {len(children)}", end
        obj, end = _DECODER.raw_decode(self.text, i)
        note = json.dumps(obj, ensure_ascii=False)
        return [], (note if len(note) <= 60 else note[:60] + "…"), end

    def container(self, i: int) -> tuple[list[dict], int]:
        close = "}" if self.text[i] == "{" else "]"
        nodes: list[dict] = []
        i = self.skip(i + 1)
        index = 0
        while i < len(self.text) and self.text[i] != close:
            start = i
            if close == "}":
                if self.text[i] != '"':
                    raise ValueError(f"expected a member name at {i}")
                name, i = scanstring(self.text, i + 1)
                i = self.skip(i)
                if self.text[i : i + 1] != ":":
                    raise ValueError(f"expected ':' at {i}")
                i = self.skip(i + 1)
            else:
                name = f"[{index}]"
            children, note, end = self.value(i)
            self.count += 1
            if self.count <= MAX_NODES:
                nodes.append(
                    {"name": name, "start": self.at(start), "end": self.at(end), "note": note, "children": children}
                )
            index += 1
            i = self.skip(end)
            if self.text[i : i + 1] == ",":
                i = self.skip(i + 1)
        if i >= len(self.text):
            raise ValueError("unterminated JSON container")
        return nodes, i + 1
