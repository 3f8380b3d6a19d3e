"""Property tests for wire.py: hostile bytes and text never escape as anything but
WireFormatError, and every blob that parses builds back to the same bytes.

Spec (issue 2): "Truncation, a wrong header, a key length that overruns, url-safe or unpadded
base64 → WireFormatError naming the field and offset. Never an IndexError, never a silent
wrong slice."
"""

from __future__ import annotations

import base64
import binascii

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoy_lab.errors import WireFormatError
from decoy_lab.wire import layouts as wire

KINDS = [None, *wire.KINDS]
FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_or_wire_error(data, kind):
    """parse() either returns a Layout or raises WireFormatError with a field/offset that
    lies inside the data; anything else propagates and fails the test."""
    try:
        layout = wire.parse(data, kind)
    except WireFormatError as exc:
        assert str(exc)
        if exc.offset is not None:
            limit = len(data) if isinstance(data, str) else len(bytes(data))
            assert 0 <= exc.offset <= max(limit, 0) + 2  # base64 offsets are character offsets
        return None
    return layout


def _rebuild(layout: wire.Layout, *, computed: bool) -> bytes:
    """build() from the parsed fields; without `computed`, the constants and key_length are
    left for build() to fill in."""
    names = {n for n, _, const, _ in wire.SPECS[layout.kind] if const is not None} | {"key_length"}
    values = {f.name: f.value for f in layout.fields if computed or f.name not in names}
    return wire.build(layout.kind, **values)


# -- arbitrary input ---------------------------------------------------------------------------
@FAST
@given(data=st.binary(max_size=700), kind=st.sampled_from(KINDS))
def test_parse_arbitrary_bytes_only_raises_wire_format_error(data: bytes, kind):
    layout = _parse_or_wire_error(data, kind)
    if layout is not None:
        assert layout.data == data
        assert sum(f.length for f in layout.fields) == len(data)
        assert _rebuild(layout, computed=True) == data


@FAST
@given(text=st.text(max_size=300), kind=st.sampled_from(KINDS))
def test_parse_arbitrary_text_only_raises_wire_format_error(text: str, kind):
    _parse_or_wire_error(text, kind)


@FAST
@given(
    text=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n", max_size=400),
    kind=st.sampled_from(KINDS),
)
def test_parse_base64_like_text_only_raises_wire_format_error(text: str, kind):
    """Text from the base64 alphabets (standard, url-safe, padding, whitespace) reaches the
    deeper checks more often than arbitrary unicode does."""
    _parse_or_wire_error(text, kind)


@FAST
@given(data=st.binary(min_size=1, max_size=400), kind=st.sampled_from(KINDS))
def test_parse_of_base64_text_equals_parse_of_bytes(data: bytes, kind):
    """Bytes and their standard padded base64 give the same answer: same Layout, or both refused."""
    a = _parse_or_wire_error(data, kind)
    b = _parse_or_wire_error(base64.b64encode(data).decode("ascii"), kind)
    assert (a is None) == (b is None)
    if a is not None:
        assert a.kind == b.kind and a.fields == b.fields


@pytest.mark.parametrize("thing", [None, 3, 2.5, [1, 2], {"a": 1}, object()])
@pytest.mark.parametrize("kind", KINDS)
def test_parse_non_bytes_non_text_is_wire_format_error(thing, kind):
    with pytest.raises(WireFormatError):
        wire.parse(thing, kind)


@given(data=st.binary(max_size=64), kind=st.text(max_size=20).filter(lambda k: k not in wire.KINDS))
@settings(max_examples=100, deadline=None)
def test_unknown_kind_is_wire_format_error(data: bytes, kind: str):
    with pytest.raises(WireFormatError):
        wire.parse(data, kind)
    with pytest.raises(WireFormatError):
        wire.build(kind, ciphertext=data)


# -- base64 ------------------------------------------------------------------------------------
@FAST
@given(data=st.binary(max_size=300))
def test_b64_round_trip(data: bytes):
    assert wire.b64decode(wire.b64encode(data)) == data


@FAST
@given(text=st.text(max_size=200))
def test_b64decode_arbitrary_text_only_raises_wire_format_error(text: str):
    try:
        out = wire.b64decode(text, field="probe")
    except WireFormatError as exc:
        assert exc.field == "probe"
        return
    assert wire.b64encode(out) == text  # whatever it accepts is canonical standard base64


@FAST
@given(data=st.binary(min_size=1, max_size=200).filter(lambda d: set(base64.urlsafe_b64encode(d)) & set(b"-_")))
def test_url_safe_base64_is_refused_with_offset(data: bytes):
    """Spec: "All binary fields are standard padded base64" — the url-safe alphabet is refused."""
    text = base64.urlsafe_b64encode(data).decode("ascii")
    with pytest.raises(WireFormatError) as err:
        wire.b64decode(text, field="ciphertext")
    first = min(i for i, ch in enumerate(text) if ch in "-_")
    assert err.value.offset == first and err.value.field == "ciphertext"


@FAST
@given(data=st.binary(min_size=1, max_size=200).filter(lambda d: len(d) % 3))
def test_unpadded_base64_is_refused(data: bytes):
    text = base64.b64encode(data).decode("ascii").rstrip("=")
    with pytest.raises(WireFormatError) as err:
        wire.b64decode(text, field="owner_wrap")
    assert err.value.field == "owner_wrap"


# -- valid blobs build back ---------------------------------------------------------------------
nonces = st.binary(min_size=wire.NONCE_LEN, max_size=wire.NONCE_LEN)
tags = st.binary(min_size=wire.TAG_LEN, max_size=wire.TAG_LEN)
bodies = st.binary(max_size=600)
wrapped_keys = st.one_of(st.binary(min_size=256, max_size=256), st.binary(min_size=1, max_size=700))


@st.composite
def valid_blobs(draw) -> tuple[str, dict, bytes]:
    kind = draw(st.sampled_from(wire.KINDS))
    if kind == "vault":
        values = {"nonce": draw(nonces), "ciphertext": draw(bodies), "tag": draw(tags)}
        raw = b"\x01\x01" + values["nonce"] + values["ciphertext"] + values["tag"]
    else:
        wk = draw(wrapped_keys)
        values = {"wrapped_key": wk, "iv": draw(nonces), "ciphertext": draw(bodies), "tag": draw(tags)}
        raw = len(wk).to_bytes(2, "big") + wk + values["iv"] + values["ciphertext"] + values["tag"]
        if kind == "owner_envelope":
            raw = b"\x01\x02" + raw
    return kind, values, raw


@FAST
@given(valid_blobs())
def test_build_parse_round_trip_for_every_valid_blob(blob):
    kind, values, raw = blob
    assert wire.build(kind, **values) == raw
    layout = wire.parse(raw, kind)
    assert layout.kind == kind and layout.data == raw
    for name, value in values.items():
        assert layout.value(name) == value
    assert _rebuild(layout, computed=False) == raw
    assert _rebuild(layout, computed=True) == raw
    # Offsets tile the blob exactly, in declared order.
    assert [f.name for f in layout.fields] == wire.field_names(kind)
    pos = 0
    for f in layout.fields:
        assert f.offset == pos and len(f.value) == f.length
        pos = f.end
    assert pos == len(raw)
    # The same blob as base64 text parses to the same fields.
    assert wire.parse(wire.b64encode(raw), kind).fields == layout.fields


@FAST
@given(valid_blobs(), st.data())
def test_every_truncation_of_a_valid_blob_is_refused_or_reframed(blob, data):
    """Cutting bytes off the end never yields an IndexError or a silent slice past the end:
    either WireFormatError, or (envelopes whose ciphertext absorbs the cut) a layout that
    still tiles exactly the shorter bytes."""
    kind, _, raw = blob
    cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    layout = _parse_or_wire_error(raw[:cut], kind)
    if layout is not None:
        assert sum(f.length for f in layout.fields) == cut
        assert _rebuild(layout, computed=True) == raw[:cut]


@pytest.mark.parametrize("kind", wire.KINDS)
def test_minimal_truncations_name_a_field(kind):
    """Every prefix shorter than the smallest valid blob is refused naming a field of the layout."""
    names = set(wire.field_names(kind))
    smallest = {"vault": 2 + 12 + 16, "agent_envelope": 2 + 1 + 12 + 16, "owner_envelope": 4 + 1 + 12 + 16}[kind]
    header = {"vault": b"\x01\x01", "agent_envelope": b"", "owner_envelope": b"\x01\x02"}[kind]
    full = header + (b"\x00\x01" if kind != "vault" else b"") + bytes(smallest)
    refused = 0
    for n in range(smallest):
        with pytest.raises(WireFormatError) as err:
            wire.parse(full[:n], kind)
        assert err.value.field in names and err.value.kind == kind
        refused += 1
    assert refused == smallest


def _parts_from_parse(raw: bytes, kind: str):
    """What aead_parts must return, worked out from the full Layout."""
    layout = wire.parse(raw, kind)
    nonce = layout.value("nonce" if kind == "vault" else "iv")
    wrapped = None if kind == "vault" else layout.value("wrapped_key")
    return wrapped, nonce, layout.value("ciphertext") + layout.value("tag")


@FAST
@given(valid_blobs())
def test_aead_parts_agrees_with_parse_on_every_valid_blob(blob):
    """The bulk-read slicing gives exactly the fields parse() names, for every valid blob."""
    kind, _, raw = blob
    assert wire.aead_parts(raw, kind) == _parts_from_parse(raw, kind)


@FAST
@given(
    st.one_of(st.binary(max_size=400), valid_blobs().map(lambda b: b[2][: len(b[2]) // 2] + b[2][-3:])),
    st.sampled_from(wire.KINDS),
)
def test_aead_parts_refuses_what_parse_refuses_with_the_same_error(raw, kind):
    """On arbitrary and damaged bytes aead_parts either agrees with parse() or raises the very
    WireFormatError parse() raises (same field, same offset)."""
    try:
        expected = _parts_from_parse(raw, kind)
    except WireFormatError as exc:
        with pytest.raises(WireFormatError) as got:
            wire.aead_parts(raw, kind)
        assert (got.value.field, got.value.offset, str(got.value)) == (exc.field, exc.offset, str(exc))
    else:
        assert wire.aead_parts(raw, kind) == expected


@FAST
@given(
    st.one_of(
        st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=24),
        st.binary(max_size=12).map(lambda b: wire.b64encode(b)),
    )
)
def test_b64decode_accepts_exactly_the_canonical_text(text: str):
    """Accepted text is the standard padded encoding of what it decodes to, character for
    character; anything else is a WireFormatError (e.g. "3iSg=", a short padded group)."""
    try:
        out = wire.b64decode(text)
    except WireFormatError:
        try:
            canonical = base64.b64encode(base64.b64decode(text, validate=True)).decode() == text
        except binascii.Error:
            canonical = False
        assert not canonical, f"{text!r} is canonical base64 and was refused"
    else:
        assert wire.b64encode(out) == text
