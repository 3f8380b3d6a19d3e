"""Read one array of a JSON object while the answer is still arriving.

`GET /api/agent/context/memories` answers `{"memories": [...], "preparing": [...], ...}` in one
body of about 1.3 KB a row (13 MB for 10,000 memories). `ArrayStream` takes the body in chunks
as they come off the network and hands out each element of the named array as soon as it is
complete, so rows can be opened while the rest downloads; the object's other members are kept
and returned at the end.

Only complete values are ever handed out: a value is taken once the byte after it has arrived
(so `12` is never mistaken for the start of `123`), and anything that is not JSON, or not an
object at the top, raises ValueError naming the character offset. Each value is parsed by
`json.JSONDecoder.raw_decode`, so what is accepted is exactly what `json.loads` accepts; a row
(an object) is first tried with orjson on the text up to its first `}` — when that text is
valid JSON it is exactly the row, and anything else (a `}` inside a string, a nested object, a
NaN only json takes) falls back to raw_decode.

The cost is linear in the size of the answer, however large one element is: a value still
arriving is parsed again only once a chunk brings the character that could close it (`}` for an
object, `]` for an array, `"` for a string), and the chunks of a value still arriving are kept in
a list and joined once. (Parsing it again on every chunk cost 11.5 s for one 16 MiB element; it
is ~0.1 s now. ijson's C backend, yajl2_c, was measured against it: 3.6 s for that element and
twice the time for 11,000 rows, so the standard library stays.)

Each object element's text can also be fingerprinted (`fingerprints=True`: the SHA-256 of the
text as served, in `.fingerprints`, one per object element, None where not taken), and an element
for whose fingerprint `known.get(fp)` gives something is handed out as that, without being parsed:
an earlier load's row served byte for byte as then (`known` is the load's vault/reuse.py `Reuse`,
handed in when the reader is made, or a dict). With `texts=True`, `.texts` holds per
element the text orjson read it from (None for one it did not, or that came from `known`): a
reader may keep that text instead of the dict (vault/served.py).

Two bounds keep a hostile answer from eating memory or the stack: one value may be at most
`MAX_ELEMENT` characters (1 MiB: a row is at most ~140 KB — 100 KiB of ciphertext is 136,536
base64 characters, plus its wrap and served fields — and even with every `/` escaped as `\\/` it
stays under 280 KB, so 1 MiB leaves a margin of 3.5× over the worst row), and nesting deeper than
the parser's recursion limit is refused by name. A value over the cap ends the read in
`AnswerRefused` (a DecoyError) — except, with `skip_oversized`, an element of the array: that one
is followed to its end without being held (oversized.py) and handed out as an `Oversized` in its
place, so one huge row costs the load that row only.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import orjson

from decoy_lab.errors import AnswerRefused
from decoy_lab.transport.oversized import Oversized, Skipper

MAX_ELEMENT = 1 << 20  # characters in one value (see above: 3.5× the largest row, escaped)
_CLOSER = {"{": "}", "[": "]", '"': '"'}  # the character without which a value cannot be complete
_WS = " \t\n\r"
_NUMBER_GOES_ON = "0123456789.eE+-"
_decoder = json.JSONDecoder()


class Known(Protocol):
    """What the reader asks of `known`: what to hand out for an element whose text has this
    fingerprint, or None (parse it). A dict answers it; so does vault/reuse.py's `Reuse`."""

    def get(self, fingerprint: str, /) -> Any: ...


def fingerprint(text: str) -> str:
    """The SHA-256 of one element's JSON text as served: the same text, the same element."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _has_float(value: Any) -> bool:
    """Does an object orjson read hold a float? (Rows hold none; json keeps an integer past 64
    bits an int where orjson makes it a float, so such a row is left to json.) Objects cannot be
    nested here: the text ended at the first '}'."""
    values = value.values() if type(value) is dict else value
    types = set(map(type, values))
    return float in types or (list in types and any(_has_float(v) for v in values if type(v) is list))


class ArrayStream:
    """Feed chunks with `feed(chunk)` (each call yields the elements completed by it), then call
    `close()` for the object's other members. Elements of `key` are never kept here."""

    def __init__(
        self,
        key: str,
        *,
        max_element: int = MAX_ELEMENT,
        fingerprints: bool = False,
        known: Known | None = None,
        skip_oversized: bool = False,
        texts: bool = False,
    ):
        self.key = key
        self.max_element = max_element
        self.skip_oversized = skip_oversized
        self._skipper: Skipper | None = None  # following an element over the cap to its end
        self._skip_at = 0  # the character where that element began
        self._skip_pending = False  # an element at _pos was found over the cap: skip it next
        self.fingerprints: list[str | None] | None = [] if fingerprints or known is not None else None
        self.known = known
        self._fp: str | None = None  # the fingerprint of the element _value just took, if any
        self.texts: list[str | None] | None = [] if texts else None
        self._raw: str | None = None  # the text orjson read the element _value just took from
        self.rest: dict[str, Any] = {}
        self.count = 0  # elements handed out so far
        self._text = ""
        self._pos = 0  # where parsing resumes in _text
        self._offset = 0  # characters dropped from the front of _text (for error offsets)
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._state = "start"  # what may come next (see _run)
        self._member: str | None = None
        self._waiting: str | None = None  # a value at _pos is incomplete until this character comes
        self._parts: list[str] = []  # chunks of that value that came since, not yet joined
        self._held = 0  # characters of the incomplete value held (in _text past _pos, and _parts)

    # -- public -----------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> list[Any]:
        try:
            text = self._utf8.decode(chunk)
        except UnicodeDecodeError as exc:
            raise ValueError(f"the answer is not UTF-8 (byte {exc.start} of a chunk)") from None
        if self._skipper is not None:
            done = self._skip_through(text)
            return [] if done is None else [done, *self._advance()]
        if self._waiting is not None and self._waiting not in text:  # cannot be complete yet
            self._parts.append(text)
            self._held += len(text)
            if self._check_size(self._held):
                self._join("")
                done = self._begin_skip()
                return [] if done is None else [done, *self._advance()]
            return []
        self._join(text)
        return self._advance()

    @property
    def progress(self) -> int:
        """Grows with each element handed out, member read and the object's end: not with
        whitespace, nor with part of a value (a server trickling bytes makes none)."""
        return self.count + len(self.rest) + (self._state == "done")

    def close(self) -> dict[str, Any]:
        """The object's members other than `key` (which must have been an array, if present)."""
        try:
            self._join(self._utf8.decode(b"", final=True))
        except UnicodeDecodeError as exc:
            raise ValueError(f"the answer ends inside a UTF-8 character (byte {exc.start})") from None
        self._run(final=True)  # an element completed only now means the answer was cut short
        if self._state != "done":
            raise ValueError(f"the answer ends early, at character {self._offset + len(self._text)}")
        if self._text[self._pos :].strip(_WS):
            raise ValueError(f"extra data after the JSON object at character {self._offset + self._pos}")
        return self.rest

    # -- parsing ------------------------------------------------------------------------------
    def _join(self, text: str) -> None:
        """One string from where parsing resumes: the held chunks joined once, not once per chunk."""
        self._text = "".join([self._text[self._pos :], *self._parts, text])
        self._offset += self._pos
        self._pos = 0
        self._parts, self._waiting = [], None

    def _check_size(self, size: int) -> bool:
        """True when the value at _pos is an element over the cap, to be skipped; a value over the
        cap that may not be skipped raises."""
        if size <= self.max_element:
            return False
        if self.skip_oversized and self._state in ("items_open", "items_elem"):
            return True
        raise AnswerRefused(
            f"one value of the answer, at character {self._offset + self._pos}, is over "
            f"{self.max_element:,} characters: no row is that large, so the answer is not read"
        )

    # -- an element over the cap ------------------------------------------------------------
    def _advance(self) -> list[Any]:
        """Parse on from _pos, skipping each element found over the cap while it is incomplete."""
        out = self._run(final=False)
        while self._skip_pending:
            self._skip_pending = False
            done = self._begin_skip()
            if done is None:
                break
            out += [done, *self._run(final=False)]
        return out

    def _begin_skip(self) -> Oversized | None:
        """Follow the element at _pos to its end without holding it (see `_skip_through`)."""
        self._skip_at = self._offset + self._pos
        rest = self._text[self._pos :]
        self._skipper = Skipper(rest[0])
        self._text, self._pos, self._offset = "", 0, self._skip_at
        self._parts, self._waiting, self._held = [], None, 0
        return self._skip_through(rest)

    def _skip_through(self, text: str) -> Oversized | None:
        """The skipped element once `text` brings its end (parsing resumes after it), else None."""
        skipper = self._skipper
        assert skipper is not None
        end = skipper.feed(text)
        if end < 0:
            return None
        self._skipper = None
        self._text, self._pos, self._offset = text[end:], 0, self._skip_at + skipper.size
        self._state = "items_sep"
        self._raw = None
        self._counted(skipper.head[:1], None)
        return Oversized(self.count - 1, self._skip_at, skipper.size, self.max_element, skipper.found_id())

    def _oversized(self, size: int, value: Any) -> Oversized:
        """An element over the cap that came whole in one chunk: its id read from what was parsed."""
        rid = value.get("id") if isinstance(value, dict) else None
        return Oversized(
            self.count, self._offset + self._pos, size, self.max_element, rid if isinstance(rid, str) else None
        )

    def _counted(self, first: str, fp: str | None) -> None:
        self.count += 1
        if self.texts is not None:
            self.texts.append(self._raw)
        if self.fingerprints is not None and first == "{":
            self.fingerprints.append(fp)

    def _skip(self) -> int:
        text, pos = self._text, self._pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self._pos = pos
        return pos

    def _fail(self, what: str) -> ValueError:
        return ValueError(f"{what} at character {self._offset + self._pos}")

    def _value(self, final: bool, element: bool = False) -> tuple[bool, Any]:
        """(True, value) when a whole value starts at _pos; (False, None) when more text is needed.
        `element`: an element of the array (fingerprinted when asked)."""
        text, pos = self._text, self._pos
        self._fp = self._raw = None
        if text[pos] == "{":  # a row: try the text up to its first '}' with orjson, ~2x json's speed
            close = text.find("}", pos) + 1
            if close and (final or close < len(text)):
                raw = text[pos:close]
                if element and self.fingerprints is not None:
                    self._fp = fingerprint(raw)
                    hit = self.known.get(self._fp) if self.known is not None else None
                    if hit is not None:  # served byte for byte as an earlier load's row: not parsed again
                        self._pos = close
                        return True, hit
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    value = None  # a '}' inside a string, a nested object, or what only json takes
                if value is not None and not _has_float(value):  # orjson reads a huge integer as a float
                    if self._check_size(close - pos):
                        value, self._fp = self._oversized(close - pos, value), None
                    else:
                        self._raw = raw
                    self._pos = close
                    return True, value
        self._fp = None  # the text up to its first '}' was not the whole element: not fingerprinted
        try:
            value, end = _decoder.raw_decode(self._text, self._pos)
        except json.JSONDecodeError as exc:
            if final:
                raise ValueError(f"not JSON: {exc.msg} at character {self._offset + exc.pos}") from None
            self._held = len(self._text) - self._pos
            if self._check_size(self._held):
                self._skip_pending = True  # followed to its end, unheld, once the parse returns
                return False, None
            self._waiting = _CLOSER.get(self._text[self._pos])
            return False, None
        except RecursionError:
            raise AnswerRefused(
                f"the answer is nested too deeply to read, at character {self._offset + self._pos}: "
                "no row is nested like that"
            ) from None
        over = self._check_size(end - self._pos)
        if not final and (
            end >= len(self._text) or (self._text[end] in _NUMBER_GOES_ON and isinstance(value, (int, float)))
        ):
            return False, None  # "12" may be the start of "123", "0" of "0.5"
        if over:
            value = self._oversized(end - self._pos, value)
        self._pos = end
        return True, value

    def _items(self, final: bool, out: list[Any]) -> bool:
        """The elements of `key`'s array, one after the other in a tight loop (the states
        items_open → items_sep ⇄ items_elem). True once the array has ended, False when more text
        is needed."""
        text, n = self._text, len(self._text)
        pos, state = self._pos, self._state
        while True:
            while pos < n and text[pos] in _WS:
                pos += 1
            self._pos, self._state = pos, state
            if pos >= n:
                return False
            ch = text[pos]
            if state == "items_sep":
                if ch not in ",]":
                    raise self._fail(f"expected ',' or ']' in {self.key}")
                if ch == "]":
                    self._pos, self._state = pos + 1, "obj_sep"
                    return True
                pos, state = pos + 1, "items_elem"
                continue
            if ch == "]" and state == "items_open":
                self._pos, self._state = pos + 1, "obj_sep"
                return True
            if ch in ",]":
                raise self._fail(f"expected an element of {self.key}")
            ok, value = self._value(final, element=True)
            if not ok:
                return False
            pos, state = self._pos, "items_sep"
            self._counted(ch, self._fp)
            out.append(value)

    def _run(self, final: bool) -> list[Any]:
        """Advance through the text; the states name what may come next:
        start → obj_open → (name) colon → value → obj_sep → obj_key → … → done,
        and for `key`'s array: items_open → items_sep ⇄ items_elem → obj_sep."""
        out: list[Any] = []
        text = self._text
        while True:
            pos = self._skip()
            if pos >= len(text):
                return out
            ch, state = text[pos], self._state
            if state == "start":
                if ch != "{":
                    raise self._fail("the answer is not a JSON object")
                self._pos, self._state = pos + 1, "obj_open"
            elif state in ("obj_open", "obj_key"):
                if ch == "}" and state == "obj_open":
                    self._pos, self._state = pos + 1, "done"
                    continue
                if ch != '"':
                    raise self._fail("expected a member name")
                ok, name = self._value(final)
                if not ok:
                    return out
                self._member, self._state = name, "colon"
            elif state == "colon":
                if ch != ":":
                    raise self._fail("expected ':' after a member name")
                self._pos, self._state = pos + 1, "value"
            elif state == "value":
                if self._member == self.key and ch == "[":
                    self._pos, self._state = pos + 1, "items_open"
                    continue
                ok, value = self._value(final)
                if not ok:
                    return out
                assert self._member is not None  # a value follows its member's name
                self.rest[self._member] = value
                self._state = "obj_sep"
            elif state == "obj_sep":
                if ch not in ",}":
                    raise self._fail("expected ',' or '}' after a member")
                self._pos, self._state = pos + 1, ("obj_key" if ch == "," else "done")
            elif state in ("items_open", "items_elem", "items_sep"):
                if not self._items(final, out):
                    return out
            else:  # done: anything but whitespace is extra data
                raise self._fail("extra data after the JSON object")


def stream_array(chunks: Iterable[bytes], key: str) -> tuple[Iterator[Any], dict[str, Any]]:
    """Convenience for tests and one-shot use: (iterator of elements, dict filled in once the
    iterator is exhausted with the other members)."""
    parser = ArrayStream(key)
    rest: dict[str, Any] = {}

    def elements() -> Iterator[Any]:
        for chunk in chunks:
            yield from parser.feed(chunk)
        rest.update(parser.close())

    return elements(), rest
