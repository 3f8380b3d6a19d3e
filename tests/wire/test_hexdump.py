"""hexdump.py: annotated dumps of bytes and fields, as text and HTML, with changed bytes marked."""

from __future__ import annotations

import hashlib
import re

import pytest

from decoy_lab.wire import layouts as wire
from decoy_lab.wire.hexdump import dump_html, dump_text, fingerprint
from decoy_lab.wire.layouts import Field

from support.markup import parse_html

NONCE = bytes(range(0xA0, 0xAC))
TAG = bytes(range(0xF0, 0x100))


def vault_blob(ct_len: int) -> bytes:
    ct = bytes((i * 7 + 3) % 256 for i in range(ct_len))
    return wire.build("vault", nonce=NONCE, ciphertext=ct, tag=TAG)


def hex_rows(text: str) -> list[tuple[int, list[str], str]]:
    """(offset, hex bytes, ascii) for every byte row of a text dump."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s*([0-9a-f]{6}) (.{%d})  \|(.*?)\|" % (3 * 16), line)
        if m:
            rows.append((int(m.group(1), 16), re.findall(r"[0-9a-f]{2}|••", m.group(2)), m.group(3)))
    return rows


def shown_bytes(text: str) -> bytes:
    return bytes.fromhex("".join(b for r in hex_rows(text) for b in r[1]))


def html_bytes(markup: str) -> bytes:
    """The bytes the <pre> of an HTML dump shows, read back from its text."""
    pre = "".join(parse_html(markup.split("<pre", 1)[1].split(">", 1)[1].split("</pre>")[0]).text)
    out = []
    for line in pre.splitlines():
        m = re.match(r"^[0-9a-f]{6} (.*?)  \|", line)
        if m:
            out += re.findall(r"[0-9a-f]{2}", m.group(1))
    return bytes.fromhex("".join(out))


# -- text --------------------------------------------------------------------------------------
def test_text_dump_shows_every_byte_in_order_with_offsets_and_ascii():
    blob = vault_blob(40)
    text = dump_text(blob, wire.parse(blob).fields, elide=None)
    rows = hex_rows(text)
    assert [r[0] for r in rows] == list(range(0, len(blob), 16))
    assert bytes.fromhex("".join(b for r in rows for b in r[1])) == blob
    ascii_col = "".join(r[2].rstrip() if i == len(rows) - 1 else r[2] for i, r in enumerate(rows))
    assert ascii_col == "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in blob)


def test_text_dump_names_each_field_with_its_byte_range_in_legend_and_margin():
    blob = vault_blob(40)
    layout = wire.parse(blob)
    text = dump_text(blob, layout.fields)
    legend, body = text.split("\n000000", 1)
    for f in layout.fields:
        assert re.search(rf"^\s+{f.name}\s+\[{f.offset}:{f.end}\]\s+{f.length} bytes?", legend, re.M), f.name
        # the margin names the field on the row where it starts
        row_start = f.offset - f.offset % 16
        row = next(line for line in ("000000" + body).splitlines() if line.startswith(f"{row_start:06x}"))
        assert f"{f.name}[{f.offset}:{f.end}]" in row


def test_text_dump_draws_field_boundaries_between_bytes():
    blob = vault_blob(20)
    first = dump_text(blob, wire.parse(blob).fields).splitlines()[6]
    # version | mode | nonce (12 bytes) | ciphertext
    assert first.startswith("000000  01|01|a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab|")


def test_long_field_is_elided_with_its_byte_count():
    blob = vault_blob(2100)
    layout = wire.parse(blob)
    text = dump_text(blob, layout.fields, elide=64)
    m = re.search(r"… ([\d,]+) bytes of ciphertext …", text)
    assert m, text
    elided = int(m.group(1).replace(",", ""))
    assert elided >= 1000 and "," in m.group(1)  # thousands are grouped: "2,048 bytes"
    shown = sum(len(r[1]) for r in hex_rows(text))
    assert shown + elided == len(blob)
    # the header, the first and last rows of the ciphertext and every byte of the tag stay visible
    visible = shown_bytes(text)
    assert visible.startswith(blob[:32]) and visible.endswith(blob[-32:])
    assert text.count("\n") < 20


def test_fields_at_or_under_the_limit_and_elide_none_are_never_elided():
    blob = vault_blob(2100)
    assert "…" not in dump_text(blob, wire.parse(blob).fields, elide=None)
    small = vault_blob(64)
    assert "…" not in dump_text(small, wire.parse(small).fields, elide=64)


def test_unlabelled_bytes_are_dumped_and_listed_as_no_field():
    data = bytes(range(40))
    text = dump_text(data, [Field("head", 0, 4, data[:4])])
    assert re.search(r"\(no field\)\s+\[4:40\]\s+36 bytes", text)
    assert bytes.fromhex("".join(b for r in hex_rows(text) for b in r[1])) == data


def test_fields_past_the_end_are_clipped_not_an_index_error():
    data = b"\x01\x02\x03"
    text = dump_text(data, [Field("partial", 1, 50, data[1:])])
    assert "partial  [1:3]" in text
    assert dump_text(b"", []) == "0 bytes"
    assert dump_text(b"", [Field("x", 0, 4, b"")]).startswith("0 bytes, 1 field")


def test_width_changes_the_row_length():
    data = bytes(range(20))
    rows = [line for line in dump_text(data, [], width=8).splitlines() if re.match(r"^[0-9a-f]{6} ", line)]
    assert [line[:6] for line in rows] == ["000000", "000008", "000010"]
    with pytest.raises(ValueError):
        dump_text(data, [], width=0)


def test_secret_field_is_masked_and_named_by_fingerprint_unless_revealed():
    key = bytes(range(100, 132))
    data = b"\x00\x20" + key
    fields = [Field("key_length", 0, 2, data[:2]), Field("raw_key", 2, 32, key)]
    hidden = dump_text(data, fields, reveal=False, secret={"raw_key"})
    assert key.hex() not in hidden.replace(" ", "").replace("|", "")
    assert key[:4].hex(" ") not in hidden
    assert wire.kid(key) in hidden and "••" in hidden
    assert "00 20" in hidden  # other fields stay visible
    shown = dump_text(data, fields, reveal=True, secret={"raw_key"})
    assert shown_bytes(shown) == data and "••" not in shown


# -- HTML --------------------------------------------------------------------------------------
def test_html_dump_is_balanced_with_a_distinct_colour_and_legend_row_per_field():
    blob = vault_blob(40)
    layout = wire.parse(blob)
    markup = dump_html(blob, layout.fields)
    p = parse_html(markup)
    names = {t for t, _ in p.tags}
    assert not names & {"script", "style", "link"}  # inline styles only: survives export and sanitizers
    text = "".join(p.text)
    for f in layout.fields:
        assert re.search(rf"{f.name}\s*{f.offset}\s*{f.length} bytes?", text), f.name
    colours = {}
    for _tag, attrs in p.tags:
        title = attrs.get("title", "")
        m = re.match(r"(\w+) \[", title)
        if m:
            colours.setdefault(m.group(1), set()).add(re.search(r"background:([^;]+)", attrs["style"]).group(1))
    assert set(colours) == {f.name for f in layout.fields}
    assert all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == len(layout.fields)


def test_html_dump_carries_every_byte():
    blob = vault_blob(30)
    assert html_bytes(dump_html(blob, wire.parse(blob).fields, elide=None)) == blob


def test_html_escapes_names_notes_and_ascii():
    data = b"<script>alert(1)</script>&"
    fields = [Field("<b>name</b>", 0, 8, data[:8], note='"quoted" & <i>'), Field("rest", 8, len(data) - 8, data[8:])]
    markup = dump_html(data, fields)
    assert "<script>" not in markup and "<b>name</b>" not in markup and "<i>" not in markup
    p = parse_html(markup)
    text = "".join(p.text)
    assert "<b>name</b>" in text and '"quoted" & <i>' in text and "<script>" in text


def test_html_masks_secret_fields_unless_revealed():
    key = bytes(range(200, 232))
    fields = [Field("key", 0, 32, key)]
    hidden = dump_html(key, fields, reveal=False, secret={"key"})
    assert key[:2].hex() not in hidden and wire.kid(key) in hidden
    assert html_bytes(dump_html(key, fields, reveal=True, secret={"key"})) == key


def test_dumps_return_strings_and_print_nothing(capsys):
    blob = vault_blob(10)
    assert isinstance(dump_text(blob, wire.parse(blob).fields), str)
    assert isinstance(dump_html(blob, wire.parse(blob).fields), str)
    assert capsys.readouterr() == ("", "")


def test_fingerprint_of_a_key_is_its_kid():
    key = bytes(32)
    assert fingerprint(key) == wire.kid(key) == hashlib.sha256(key).hexdigest()[:16]
