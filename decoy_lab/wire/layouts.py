"""The byte layouts of Decoy memory rows, declared once as data.

One table per layout parses, builds and annotates (field names, offsets, lengths), so every
other module names offsets through here and never slices bytes by hand:

    vault           [0x01 version][0x01 mode][12-byte nonce][AES-256-GCM ciphertext][16-byte tag]
    agent_envelope  [2-byte BE key length][RSA-OAEP-SHA256 wrapped key][12-byte IV][ciphertext][16-byte tag]
    owner_envelope  [0x01][0x02] + agent_envelope

All binary fields travel as standard padded base64 (spec: "All binary fields are standard
padded base64"); `b64decode` refuses the url-safe alphabet, missing padding and whitespace.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, NamedTuple

from decoy_lab.errors import WireFormatError

NONCE_LEN = 12
TAG_LEN = 16
KEY_LEN = 32
VAULT_HEADER = b"\x01\x01"
OWNER_HEADER = b"\x01\x02"

KINDS = ("vault", "owner_envelope", "agent_envelope")


def b64encode(data: bytes) -> str:
    """Standard padded base64, as every Decoy binary field is sent."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str | bytes, *, field: str = "base64", kind: str | None = None) -> bytes:
    """Strict standard padded base64. A wrong character, url-safe alphabet, missing padding or
    whitespace is a WireFormatError that names the field and the character offset."""
    out = canonical_b64decode(text) if isinstance(text, str) else None
    return out if out is not None else _b64decode_checked(text, field, kind)


def canonical_b64decode(text: str) -> bytes | None:
    """The bytes `text` stands for when it is standard padded base64 exactly as encoding them
    gives it back (the fast path of every read), else None (`b64decode` then says why)."""
    # A whole number of 4-character groups that strict decoding accepts, as many as the bytes
    # need, is exactly standard padded base64 (strict mode alone lets a padded group be cut short,
    # as in "3iSg=", and takes a whole group of padding after the last, as in "QUJD===="), once
    # the last group holds no stray bits before its padding.
    if len(text) % 4:
        return None
    try:
        out = binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    if len(text) != 4 * ((len(out) + 2) // 3):
        return None
    tail = len(out) % 3  # the last group's last character carries 4 (one byte) or 2 (two) unused bits
    return out if not tail or not _B64_VALUE[text[-3 if tail == 1 else -2]] & _UNUSED[tail] else None


_B64_VALUE = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_UNUSED = (0, 0b1111, 0b11)  # by the bytes of the last group: the bits its last character leaves unused


def _b64decode_checked(text: str | bytes, field: str, kind: str | None) -> bytes:
    """The slow path: find the first offending character and name it."""
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError as exc:
            raise WireFormatError("base64 text is not ASCII", field=field, offset=exc.start, kind=kind) from None
    if not isinstance(text, str):
        raise WireFormatError(f"expected base64 text, got {type(text).__name__}", field=field, kind=kind)
    for i, ch in enumerate(text):
        if ch in "-_":
            raise WireFormatError(
                f"url-safe base64 character {ch!r}; Decoy uses the standard alphabet (+ and /)",
                field=field,
                offset=i,
                kind=kind,
            )
        if not (ch.isascii() and (ch.isalnum() or ch in "+/=")):
            raise WireFormatError(f"character {ch!r} is not standard base64", field=field, offset=i, kind=kind)
    eq = text.find("=")
    if eq != -1 and (text[eq:] not in ("=", "==") or eq < len(text) - 2):
        raise WireFormatError("padding '=' in the middle of base64 text", field=field, offset=eq, kind=kind)
    if len(text) % 4:
        raise WireFormatError(
            f"base64 text of {len(text)} characters is not padded to a multiple of 4",
            field=field,
            offset=len(text),
            kind=kind,
        )
    try:
        out = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise WireFormatError(f"invalid base64: {exc}", field=field, offset=0, kind=kind) from None
    if base64.b64encode(out).decode("ascii") != text:
        # Non-zero bits in the padding: another encoder would not produce this text.
        raise WireFormatError(
            "base64 is not canonical (stray bits before the padding)",
            field=field,
            offset=max(0, len(text) - 3),
            kind=kind,
        )
    return out


def kid(key: bytes) -> str:
    """Key id: lowercase hex of the first 8 bytes of SHA-256(key)."""
    return hashlib.sha256(key).digest()[:8].hex()


class Field(NamedTuple):
    """One named run of bytes inside a layout (a tuple: cheap to make on every row read)."""

    name: str
    offset: int
    length: int
    value: bytes
    note: str = ""

    @property
    def end(self) -> int:
        return self.offset + self.length

    def __repr__(self) -> str:  # never the value: a field may hold a raw key
        return f"Field({self.name!r}, {self.offset}, {self.length})"


@dataclass(frozen=True)
class Layout:
    """A parsed blob: its kind, its bytes and its fields in order."""

    kind: str
    data: bytes = dc_field(repr=False)
    fields: tuple[Field, ...]

    def __getitem__(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def value(self, name: str) -> bytes:
        return self[name].value

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly field table (values in hex), e.g. to export a parse."""
        return {
            "kind": self.kind,
            "length": len(self.data),
            "fields": [
                {"name": f.name, "offset": f.offset, "length": f.length, "hex": f.value.hex(), "note": f.note}
                for f in self.fields
            ],
        }

    def __repr__(self) -> str:
        parts = ", ".join(f"{f.name}[{f.offset}:{f.end}]" for f in self.fields)
        return f"<Layout {self.kind} {len(self.data)} bytes: {parts}>"


# The layouts as data: (name, fixed length or None for "the rest", constant or None, note).
# "key_length" is the one length read from the data; "ciphertext" takes what the fixed fields leave.
_ENVELOPE = (
    ("key_length", 2, None, "big-endian length of wrapped_key"),
    ("wrapped_key", "key_length", None, "RSA-OAEP-SHA256 encryption of the AES-256 key"),
    ("iv", NONCE_LEN, None, "AES-GCM nonce"),
    ("ciphertext", None, None, "AES-256-GCM ciphertext"),
    ("tag", TAG_LEN, None, "AES-GCM authentication tag"),
)
SPECS: dict[str, tuple[tuple[Any, ...], ...]] = {
    "vault": (
        ("version", 1, b"\x01", "SealedBlob version 1"),
        ("mode", 1, b"\x01", "mode 1 = VAULT (symmetric)"),
        ("nonce", NONCE_LEN, None, "AES-GCM nonce"),
        ("ciphertext", None, None, "AES-256-GCM ciphertext"),
        ("tag", TAG_LEN, None, "AES-GCM authentication tag"),
    ),
    "owner_envelope": (
        ("version", 1, b"\x01", "SealedBlob version 1"),
        ("mode", 1, b"\x02", "mode 2 = ENVELOPE (to the owner's RSA key)"),
        *_ENVELOPE,
    ),
    "agent_envelope": _ENVELOPE,
}


class Record(NamedTuple):
    """One record kind of the account family: the byte layout it travels in (one of KINDS), who
    opens it (`opens_with`: "owner", "agent", "field_key"), what its plaintext is, and the
    spec's words for it (001). Its fields are the layout's, their notes naming what they carry."""

    layout: str
    opens_with: str
    plaintext: str
    spec: str


# The account family's record kinds, as data: `parse(blob, "credential")` reads a credential in
# its layout with its own notes, so a dump, a trace and the recipe view name what each byte is.
RECORDS: dict[str, Record] = {
    "account_record": Record(
        "owner_envelope", "owner", "the account record as UTF-8 JSON",
        "the account record … ENVELOPE mode (sealed to the owner's public key, for a connection without the vault key)",
    ),
    "credential": Record(
        "agent_envelope", "owner", "the password's UTF-8 bytes",
        "a headerless envelope to `public_key` from `GET /api/agent/accounts/public-key` … whose plaintext is the "
        "password's UTF-8 bytes. No SealedBlob header and no JSON wrapper.",
    ),
    "field": Record(
        "vault", "field_key", 'UTF-8 JSON {"id","account_id","fieldType","label","value"}',
        "`ciphertext` = VAULT SealedBlob of the JSON … under the field key",
    ),
    "field_owner_wrap": Record(
        "owner_envelope", "owner", "the base64 text of the 32-byte field key (not JSON-quoted)",
        "`owner_wrap` = SealedBlob ENVELOPE to `owner_public_key` (field-grantees) whose plaintext is the base64 text "
        "of the field key",
    ),
    "field_wrap": Record(
        "agent_envelope", "agent", "the raw 32-byte field key",
        "`self_wrap` = the field key wrapped to your own public key (headerless agent envelope)",
    ),
    "sealed_details": Record(
        "agent_envelope", "owner", 'UTF-8 JSON {"serviceName","serviceURL","avatarUrl","agentCreated"}',
        "`sealed_details` … the record sealed to the owner's public key (`GET /api/agent/public-key`)",
    ),
    "metadata_seal": Record(
        "agent_envelope", "agent", "the decoy's details as UTF-8 JSON",
        "`metadata_seals`: … the same record sealed to THIS connection's own public key",
    ),
    "edit_patch": Record(
        "agent_envelope", "owner", 'UTF-8 JSON {"v":1,"set":{…},"unset":[…]}',
        "seal a small patch to the owner's public key … in the same envelope … `encrypted_password` takes",
    ),
    "unlock_answer": Record(
        "agent_envelope", "agent", "UTF-8 JSON: the account's record and the secret kinds asked for",
        "Poll `GET /api/agent/unlock/{requestId}` for the sealed envelope and open it with your agent key",
    ),
}  # fmt: skip
_TO = {"owner": "to the owner's RSA key", "agent": "to this connection's RSA key"}


def _record_spec(record: Record) -> tuple[tuple[Any, ...], ...]:
    """The record's layout with its notes naming the recipient and the plaintext."""
    out = []
    for name, length, const, note in SPECS[record.layout]:
        if name == "wrapped_key" and record.opens_with in _TO:
            note = f"{note}, {_TO[record.opens_with]}"
        elif name == "ciphertext":
            note = f"{note} of {record.plaintext}"
        out.append((name, length, const, note))
    return tuple(out)


SPECS.update({kind: _record_spec(record) for kind, record in RECORDS.items()})


def layout_of(kind: str) -> str:
    """The byte layout a kind travels in: itself for a layout, the record's layout for a record kind."""
    return RECORDS[kind].layout if kind in RECORDS else kind


# Each layout with, per field, the total of the fixed lengths after it (worked out once).
_PLANS = {
    kind: tuple(
        (name, length, const, note, sum(n for _, n, _, _ in spec[i + 1 :] if isinstance(n, int)))
        for i, (name, length, const, note) in enumerate(spec)
    )
    for kind, spec in SPECS.items()
}


def _as_bytes(data: bytes | bytearray | memoryview | str, kind: str | None) -> bytes:
    if isinstance(data, str):
        return b64decode(data, field="base64", kind=kind)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise WireFormatError(f"expected bytes or base64 text, got {type(data).__name__}", kind=kind)


def guess_kind(data: bytes) -> str:
    """Tell the layout from the first bytes: 01 01 is a VAULT blob, 01 02 an owner envelope,
    anything else is read as a headerless agent envelope."""
    if data[:2] == VAULT_HEADER:
        return "vault"
    if data[:2] == OWNER_HEADER:
        return "owner_envelope"
    return "agent_envelope"


def parse(data: bytes | str, kind: str | None = None) -> Layout:
    """Split a blob into its named fields. Bytes or standard padded base64 text.

    Any mismatch (truncation, wrong header, a key length that overruns) raises WireFormatError
    naming the field and offset; no slice is ever taken past the end of the data.
    """
    raw = _as_bytes(data, kind)
    if kind is None:
        kind = guess_kind(raw)
    if kind not in SPECS:
        raise _unknown(kind)
    fields: list[Field] = []
    try:
        _split(raw, kind, fields)
    except WireFormatError as exc:
        # Keep the fields read before the failure, and mark the failing field's own bytes (a wrong
        # constant its byte, a field cut short what remains of it), so a dump shows the partial
        # layout with the error where it happened and the bytes after it as they are.
        exc.fields = tuple(fields)
        if exc.offset is not None and exc.offset < len(raw):
            end = len(raw) if exc.length is None else min(len(raw), exc.offset + exc.length)
            exc.fields += (
                Field(
                    f"✗ {exc.field or 'here'}",
                    exc.offset,
                    end - exc.offset,
                    raw[exc.offset : end],
                    "parsing failed here",
                ),
            )
        raise
    return Layout(kind, raw, tuple(fields))


def _unknown(kind: object) -> WireFormatError:
    return WireFormatError(f"unknown layout {kind!r}; known: {', '.join(KINDS)}")


# What aead_parts needs of each layout, read off SPECS: the constant header, and whether a
# key_length + wrapped_key pair follows it (the fields after are nonce/iv, ciphertext, tag).
_HEADERS = {kind: b"".join(const for _, _, const, _ in spec if const is not None) for kind, spec in SPECS.items()}
_KEYED = {kind: any(name == "key_length" for name, *_ in spec) for kind, spec in SPECS.items()}


def aead_parts(raw: bytes, kind: str) -> tuple[bytes | None, bytes, bytes]:
    """(wrapped_key or None, nonce, ciphertext + tag): what opening a blob of `kind` needs, sliced
    straight from the bytes without building a Layout (the bulk-read path). A blob that does not
    fit is handed to parse(), which raises the WireFormatError naming the field and offset."""
    header = _HEADERS.get(kind)
    if header is None:
        raise _unknown(kind)
    if raw[: len(header)] == header:
        pos, wrapped = len(header), None
        sound = True
        if _KEYED[kind]:
            n = int.from_bytes(raw[pos : pos + 2], "big")
            wrapped, pos = raw[pos + 2 : pos + 2 + n], pos + 2 + n
            sound = n > 0
        if sound and len(raw) >= pos + NONCE_LEN + TAG_LEN:
            return wrapped, raw[pos : pos + NONCE_LEN], raw[pos + NONCE_LEN :]
    layout = parse(raw, kind)  # raises for every blob the slicing above refused
    fields = [f.value for f in layout.fields]  # pragma: no cover - reached only if the two disagree
    return (layout.value("wrapped_key") if _KEYED[kind] else None), fields[-3], fields[-2] + fields[-1]


def _split(raw: bytes, kind: str, fields: list[Field]) -> None:
    """Walk the layout's plan over `raw`, appending each field; raise at the first misfit."""
    pos = 0
    lengths: dict[str, int] = {}
    for name, length, const, note, after in _PLANS[kind]:
        if length is None:  # the variable part: everything but the fixed fields after it
            length = len(raw) - pos - after
            if length < 0:
                raise WireFormatError(
                    f"truncated: {len(raw)} bytes leave no room for {name} and the {after}-byte fields after it",
                    field=name,
                    offset=pos,
                    kind=kind,
                )
        elif length.__class__ is str:
            length = lengths[length]
            if pos + length + after > len(raw):
                raise WireFormatError(
                    f"{name} of {length} bytes (from {length_field_of(name)}) leaves no room for the "
                    f"{after} bytes of fields after it in {len(raw)} bytes: the key length overruns",
                    field=name,
                    offset=pos,
                    kind=kind,
                )
        if pos + length > len(raw):
            what = "overruns the data" if name == "wrapped_key" else "is cut short"
            raise WireFormatError(
                f"{name} needs {length} bytes at offset {pos} but only {len(raw) - pos} remain; the blob {what}",
                field=name,
                offset=pos,
                kind=kind,
            )
        value = raw[pos : pos + length]
        if const is not None and value != const:
            raise WireFormatError(
                f"{name} byte is 0x{value.hex()}, expected 0x{const.hex()} for {kind}",
                field=name,
                offset=pos,
                kind=kind,
                length=length,
            )
        if name == "key_length":
            lengths[name] = int.from_bytes(value, "big")
            if lengths[name] == 0:
                raise WireFormatError(
                    "key_length is 0: no wrapped key", field=name, offset=pos, kind=kind, length=length
                )
            note = f"{note}: {lengths[name]}"
        fields.append(Field(name, pos, length, value, note))
        pos += length
    # Everything after the variable field is fixed, so pos == len(raw) here by construction,
    # except when the variable part is absent; check the ciphertext of an envelope is not negative.
    if pos != len(raw):  # pragma: no cover - guarded by the arithmetic above
        raise WireFormatError("trailing bytes after the tag", field="tag", offset=pos, kind=kind)


def length_field_of(name: str) -> str:
    return "key_length" if name == "wrapped_key" else "its length field"


def build(kind: str, **values: bytes) -> bytes:
    """Inverse of parse: join the named field values of `kind` (constants and key_length are
    filled in when left out). `build(l.kind, **{f.name: f.value for f in l.fields}) == l.data`."""
    if kind not in SPECS:
        raise _unknown(kind)
    out = bytearray()
    for name, length, const, _ in SPECS[kind]:
        if name == "key_length" and name not in values:
            wk = values.get("wrapped_key", b"")
            if not 0 < len(wk) < 65536:
                raise WireFormatError(
                    f"wrapped_key of {len(wk)} bytes cannot be framed", field="wrapped_key", offset=len(out), kind=kind
                )
            out += len(wk).to_bytes(2, "big")
            continue
        value = values.get(name, const)
        if value is None:
            raise WireFormatError(f"missing value for {name}", field=name, offset=len(out), kind=kind)
        value = bytes(value)
        if isinstance(length, int) and len(value) != length:
            raise WireFormatError(
                f"{name} must be {length} bytes, got {len(value)}", field=name, offset=len(out), kind=kind
            )
        out += value
    return bytes(out)


def field_names(kind: str) -> list[str]:
    return [name for name, *_ in SPECS[kind]]


def describe(kinds: Iterable[str] = KINDS) -> str:
    """The layouts as one line each, for help texts and notebooks."""
    lines = []
    for k in kinds:
        parts = []
        for name, length, const, _ in SPECS[k]:
            size = "…" if length is None else length
            parts.append(f"[{name}:{'0x' + const.hex() if const else size}]")
        lines.append(f"{k}: {''.join(parts)}")
    return "\n".join(lines)
