"""jsonstream.ArrayStream against json.loads: the same elements and members, whatever the chunking."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoy_lab.transport.jsonstream import ArrayStream, fingerprint, stream_array

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def answers(draw) -> tuple[bytes, list, dict]:
    rows = draw(st.lists(values, max_size=12))
    rest = draw(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "memories"), values, max_size=4))
    members = [(k, v) for k, v in rest.items()]
    at = draw(st.integers(min_value=0, max_value=len(members)))
    members.insert(at, ("memories", rows))
    indent = draw(st.sampled_from([None, 1]))
    text = json.dumps(dict(members), indent=indent, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8"), rows, rest


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@FAST
@given(answers(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_same_elements_and_members_as_json_loads_for_any_chunking(answer, cuts):
    data, rows, rest = answer
    elements, got_rest = stream_array(_chunks(data, cuts), "memories")
    assert list(elements) == rows
    assert got_rest == rest


@FAST
@given(answers())
def test_byte_by_byte(answer):
    """Every cut, multi-byte UTF-8 characters split in two included."""
    data, rows, rest = answer
    elements, got_rest = stream_array([data[i : i + 1] for i in range(len(data))], "memories")
    assert list(elements) == rows and got_rest == rest


def test_elements_come_out_as_soon_as_they_are_complete():
    p = ArrayStream("memories")
    assert p.feed(b'{"memories": [{"id": 1}, {"id": 2') == [{"id": 1}]
    assert p.feed(b"}, 12") == [{"id": 2}]
    assert p.feed(b"3") == [], "a number is taken only once the byte after it has arrived"
    assert p.feed(b'], "preparing": ["a"]}') == [123]
    assert p.close() == {"preparing": ["a"]}


def test_an_answer_without_the_array_gives_no_elements():
    elements, rest = stream_array([b'{"code": "X", "message": "m"}'], "memories")
    assert list(elements) == [] and rest == {"code": "X", "message": "m"}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[1, 2]",
        b'{"memories": [1, 2',
        b'{"memories": [1 2]}',
        b'{"memories": [1,]}',
        b'{"memories": [,1]}',
        b'{"memories" [1]}',
        b'{"memories": [1]} x',
        b'{"a": 1,}',
        b'{"a": tru}',
        b'{"memories": [{"a": 1]}',
        b'\xff{"memories": []}',
        b'{"memories": ["\xe2\x82"]}',
        b"{'memories': []}",
    ],
)
def test_malformed_answers_raise_value_error(body):
    for chunking in ([body], [body[i : i + 1] for i in range(len(body))]):
        with pytest.raises(ValueError):
            elements, _ = stream_array(chunking, "memories")
            list(elements)


def test_error_names_the_character_offset():
    with pytest.raises(ValueError, match=r"character 19"):
        list(stream_array([b'{"memories": [1, 2 3]}'], "memories")[0])


def _counting_decoder(monkeypatch) -> list[int]:
    """Counts the parse attempts ArrayStream makes (each is a pass over the value so far)."""
    from decoy_lab.transport import jsonstream

    calls: list[int] = []
    real = jsonstream._decoder

    class Counting:
        def raw_decode(self, text, pos):
            calls.append(len(text) - pos)
            return real.raw_decode(text, pos)

    monkeypatch.setattr(jsonstream, "_decoder", Counting())
    return calls


def test_a_large_element_is_parsed_once_it_can_be_complete_not_once_per_chunk(monkeypatch):
    """The reader's cost is linear in the element's size: 4 MiB in 64 KiB chunks is parsed once
    when its closing brace arrives (it was parsed again on every chunk: 4× the time per doubling)."""
    calls = _counting_decoder(monkeypatch)
    blob = "A" * (4 << 20)
    data = json.dumps({"memories": [{"id": "x", "ciphertext": blob}], "n": 1}).encode()
    p = ArrayStream("memories", max_element=8 << 20)
    got = [e for i in range(0, len(data), 1 << 16) for e in p.feed(data[i : i + (1 << 16)])]
    assert p.close() == {"n": 1}
    assert got == [{"id": "x", "ciphertext": blob}]
    parsed = sum(calls)
    assert parsed < 3 * len(data), f"{parsed:,} characters parsed for a {len(data):,}-byte answer"


def test_an_element_over_the_cap_is_refused_while_it_arrives_and_when_it_comes_whole():
    """Rows are at most ~140 KB; one value over MAX_ELEMENT is refused before it is held whole."""
    from decoy_lab.errors import AnswerRefused, DecoyError
    from decoy_lab.transport.jsonstream import MAX_ELEMENT

    big = json.dumps({"memories": [{"ciphertext": "A" * (MAX_ELEMENT + 10)}]}).encode()
    p = ArrayStream("memories")
    with pytest.raises(AnswerRefused, match="over 1,048,576 characters"):
        for i in range(0, len(big), 1 << 16):
            p.feed(big[i : i + (1 << 16)])
    assert p._held <= MAX_ELEMENT + (1 << 16), "refused as soon as it is over, not after the whole"
    with pytest.raises(DecoyError):
        ArrayStream("memories").feed(big)
    row = json.dumps({"memories": [{"ciphertext": "A" * 140_000}]}).encode()  # the largest row fits
    assert len(ArrayStream("memories").feed(row)) == 1


def test_deep_nesting_is_a_typed_error_not_recursion_error():
    from decoy_lab.errors import AnswerRefused

    deep = b'{"memories": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}"
    with pytest.raises(AnswerRefused, match="nested too deeply"):
        list(stream_array([deep], "memories")[0])


def test_rows_that_orjson_cannot_take_whole_are_read_as_json_loads_reads_them():
    """A '}' inside a string, a nested object, NaN and a 100-digit integer: the text up to the
    first '}' is not the row (or not what orjson takes), so the standard parser decides."""
    body = b'{"memories": [{"a": "x}"}, {"b": {"c": 1}, "d": 2}, {"n": NaN}, {"big": ' + b"9" * 100 + b"}, {}]}"
    want = json.loads(body)["memories"]
    for chunking in ([body], [body[i : i + 1] for i in range(len(body))]):
        elements, _ = stream_array(chunking, "memories")
        got = list(elements)
        assert got[:2] + got[3:] == want[:2] + want[3:] and got[2]["n"] != got[2]["n"]  # NaN is NaN


# -- fingerprints and known elements (the local cache, cache.py) -----------------------------------
def _feed_all(parser: ArrayStream, data: bytes, cuts: list[int]) -> list:
    out = []
    for chunk in _chunks(data, cuts):
        out += parser.feed(chunk)
    parser.close()
    return out


@FAST
@given(answers(), st.lists(st.integers(min_value=0), max_size=6))
def test_fingerprints_name_each_object_element_by_its_text_whatever_the_chunking(answer, cuts):
    """One fingerprint per object element, in order: the SHA-256 of the element's text as served
    (None for an object that is not read whole from its first '}'); none for other elements."""
    data, rows, _rest = answer
    parser = ArrayStream("memories", fingerprints=True)
    assert _feed_all(parser, data, cuts) == rows
    objects = [r for r in rows if isinstance(r, dict)]
    assert parser.fingerprints is not None and len(parser.fingerprints) == len(objects)
    text = data.decode("utf-8")
    spans = {  # every piece of the body from a '{' to a '}', by fingerprint
        fingerprint(text[i : j + 1]): text[i : j + 1]
        for i, a in enumerate(text)
        if a == "{"
        for j in range(i + 1, len(text))
        if text[j] == "}"
    }
    for fp, row in zip(parser.fingerprints, objects):
        if fp is not None:
            assert fp in spans and json.loads(spans[fp]) == row


def test_a_known_element_is_handed_out_as_its_copy_and_never_parsed(monkeypatch):
    rows = [{"id": "a", "rev": 1}, {"id": "b", "rev": 2}, [1, 2], {"id": "c", "n": {"x": 1}}]
    data = json.dumps({"memories": rows}).encode()
    copy = {"id": "b", "rev": 2, "kept": True}
    known = {fingerprint(json.dumps(rows[1])): copy}
    parser = ArrayStream("memories", known=known)
    out = _feed_all(parser, data, [7, 30])
    assert out[1] is copy and out[0] == rows[0] and out[2:] == rows[2:]
    assert parser.fingerprints == [fingerprint(json.dumps(rows[0])), fingerprint(json.dumps(rows[1])), None]


# -- elements over the cap, skipped (skip_oversized) ---------------------------------------------
@FAST
@given(answers(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=20), st.integers(4, 40))
def test_elements_over_a_small_cap_are_skipped_in_place_and_the_rest_read_for_any_chunking(answer, cuts, cap):
    """With a cap of a few characters most elements are over it: each is handed out in its place
    as an Oversized of its exact size (its text as json.dumps wrote it), the others as parsed,
    whatever the chunking; the object's other members are still read (they may not be skipped:
    a member over the cap still refuses the answer)."""
    from decoy_lab.errors import AnswerRefused
    from decoy_lab.transport.oversized import Oversized

    data, rows, rest = answer
    parser = ArrayStream("memories", max_element=cap, skip_oversized=True, texts=True)
    try:
        got = [e for c in _chunks(data, cuts) for e in parser.feed(c)]
        got_rest = parser.close()
    except AnswerRefused:  # a member other than the array, or a name, over the cap
        return
    assert got_rest == rest and len(got) == len(rows) == len(parser.texts)
    text = data.decode("utf-8")
    for i, (element, row) in enumerate(zip(got, rows)):
        if isinstance(element, Oversized):
            assert element.index == i and element.size > cap
            assert json.loads(text[element.at : element.at + element.size]) == row
            assert parser.texts[i] is None
        else:
            assert element == row
            assert parser.texts[i] is None or json.loads(parser.texts[i]) == row


def test_an_oversized_element_is_followed_through_escapes_split_across_chunks():
    """A backslash at the end of one chunk escapes the first character of the next: `\\"` inside
    the skipped string does not end it."""
    from decoy_lab.transport.oversized import Oversized

    big = {"id": "r1", "ciphertext": 'x\\"}]' * 50_000}
    data = json.dumps({"memories": [big, {"id": "r2"}], "n": 1}).encode()
    for size in (1, 7, 4096, 65_536):
        parser = ArrayStream("memories", max_element=1000, skip_oversized=True)
        got, held = [], 0
        for i in range(0, len(data), size):
            got += parser.feed(data[i : i + size])
            held = max(held, len(parser._text) - parser._pos + sum(map(len, parser._parts)))
        assert parser.close() == {"n": 1}
        assert isinstance(got[0], Oversized) and got[0].id == "r1" and got[1] == {"id": "r2"}
        assert got[0].size == len(json.dumps(big)), size
        assert held <= 1000 + 2 * size, f"the skipped element is not held ({held:,} characters at most)"
