"""A cache file's sealed body, written and read in pieces (store/cache.py seals it).

The body is a run of pieces, each `4-byte length ‖ marshal(dict)`: the first holds the answer's
waiting members, the next the memory keys, then the kept rows (snapshot.kept_row), `PIECE` rows a
piece. Each piece is made, sealed (AES-256-GCM, one stream over the whole body) and written before
the next is made, so writing the cache of 100,000 rows holds one piece at a time — not every kept
row, their marshal bytes and the sealed copy at once (that was ~2.5× the served bytes at its peak).

It is read the same way, in two passes over the sealed bytes as they lie in the file: the first
checks the tag over the whole body, decrypting into one small buffer used again and again (no
plaintext is kept, none is parsed); only then does the second decrypt it again a piece at a
time, each piece parsed and dropped before the next. At 100,000 rows that is ~70 MB of plaintext
never held at once — as many freshly touched pages, each costing several µs on a machine that
lends memory lazily — for a second AES pass of ~30–50 ms.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping
from typing import IO, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from decoy_lab.errors import UnreadableRow
from decoy_lab.store.snapshot import Snapshot, kept_row, plain_json, row_digest

PIECE = 2_000  # rows a piece: a few MB of marshal at most, written before the next is made
_LEN = 4
_TAG = 16
_CHUNK = 1 << 20  # what the checking pass decrypts at a time, into one buffer


def _is_model(result: Any) -> bool:
    return result is not None and not isinstance(result, UnreadableRow)


def complete(vault: Any, taken: Mapping[str, list]) -> bool:
    """Will every served row be kept (an id, a kid and a ciphertext or its digest each, no id
    twice)? Asked before the rows are made (the head that says so is sealed first). A row that
    read as a model had all three (its reader checked them), so only the others are parsed."""
    seen: set[str] = set()
    served = vault.served
    for i, result in enumerate(vault.results):
        if _is_model(result):
            rid = result.id
        else:
            row = served[i]
            rid = row.get("id")
            if not isinstance(rid, str):
                return False
            if rid not in taken and (not isinstance(row.get("kid"), str) or row_digest(row) is None):
                return False
        if rid in seen:
            return False
        seen.add(rid)
    return True


def row_pieces(vault: Any, taken: Mapping[str, list]) -> Iterator[list]:
    """The kept rows in served order, `PIECE` at a time; rows the load took from the cache are
    kept as the cache kept them (`taken`, their served fields brought up to date)."""
    fps = vault.fingerprints
    fps = fps if fps is not None and len(fps) == len(vault.served) else None
    seen: set[str] = set()
    piece: list = []
    strings: dict[str, str] = {}  # each string written once a piece (snapshot._same)
    for i, (row, result) in enumerate(zip(vault.served, vault.results)):
        rid = row.get("id")
        kept = taken.get(rid) if isinstance(rid, str) and rid not in seen else None
        kept = kept if kept is not None else kept_row(row, result, fps[i] if fps is not None else None, strings)
        if kept is None or kept[0]["id"] in seen:  # a row that cannot be kept, or a further copy
            continue
        seen.add(kept[0]["id"])
        piece.append(kept)
        if len(piece) == PIECE:
            yield piece
            piece, strings = [], {}
    if piece:
        yield piece


def pieces(vault: Any, keys: Mapping[str, bytes], taken: Mapping[str, list]) -> Iterator[bytes]:
    """The body's pieces as marshal bytes, each made when the one before was written."""
    yield marshal.dumps({"answer": plain_json(vault.answer)})
    items = [(str(k), bytes(v)) for k, v in keys.items()]
    for at in range(0, len(items), 10 * PIECE):
        yield marshal.dumps({"keys": dict(items[at : at + 10 * PIECE])})
    for rows in row_pieces(vault, taken):
        yield marshal.dumps({"rows": rows})


def write_sealed(fh: IO[bytes], key: bytes, nonce: bytes, aad: bytes, body: Iterator[bytes]) -> None:
    """AES-256-GCM over the pieces as one stream, written as it goes: `ciphertext ‖ tag`, the
    layout AESGCM's one-shot decrypt opens."""
    enc = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
    enc.authenticate_additional_data(aad)
    for piece in body:
        fh.write(enc.update(len(piece).to_bytes(_LEN, "big")))
        fh.write(enc.update(piece))
    fh.write(enc.finalize())
    fh.write(enc.tag)


def open_sealed(head: dict, key: bytes, nonce: bytes, aad: bytes, sealed: memoryview) -> Snapshot:
    """The Snapshot of a sealed body (`ciphertext ‖ tag`, as write_sealed wrote it). Raises
    cryptography's InvalidTag before anything of it is parsed when the tag does not check, and
    ValueError (or marshal's errors) on pieces that are not what `pieces` writes."""
    check_sealed(key, nonce, aad, sealed)
    ciphertext, tag = sealed[:-_TAG], bytes(sealed[-_TAG:])
    return _read_pieces(head, Cipher(algorithms.AES(key), modes.GCM(nonce, tag)).decryptor(), ciphertext)


def check_sealed(key: bytes, nonce: bytes, aad: bytes, sealed: memoryview) -> None:
    """The first pass: the whole body authenticated (InvalidTag if not), its plaintext decrypted
    `_CHUNK` at a time into one buffer and dropped."""
    if len(sealed) < _TAG:
        raise InvalidTag
    ciphertext, tag = sealed[:-_TAG], bytes(sealed[-_TAG:])
    dec = Cipher(algorithms.AES(key), modes.GCM(nonce, tag)).decryptor()
    dec.authenticate_additional_data(aad)
    scratch = bytearray(_CHUNK + 15)  # update_into's room: the chunk and a block's worth more
    for at in range(0, len(ciphertext), _CHUNK):
        dec.update_into(ciphertext[at : at + _CHUNK], scratch)
    dec.finalize()  # InvalidTag unless every byte is as sealed


def _read_pieces(head: dict, dec: Any, ciphertext: memoryview) -> Snapshot:
    """The second pass (the tag already checked): each piece decrypted, parsed and dropped in turn.
    It is never finalized: the tag was checked by the first pass, over these same bytes."""
    answer: dict = {}
    keys: dict[str, bytes] = {}
    rows: list = []
    at, end = 0, len(ciphertext)
    while at < end:
        if at + _LEN > end:
            raise ValueError("a piece's length runs past the end of the body")
        size = int.from_bytes(dec.update(ciphertext[at : at + _LEN]), "big")
        at += _LEN
        if at + size > end:
            raise ValueError("a piece runs past the end of the body")
        piece = marshal.loads(dec.update(ciphertext[at : at + size]))
        answer.update(piece.get("answer") or {})
        keys.update(piece.get("keys") or {})
        rows.extend(piece.get("rows") or ())
        at += size
    return Snapshot(head, {"answer": answer, "keys": keys, "rows": rows})
