"""A cache file's sealed body, written and read in pieces (store/cache.py seals it).

The body is a run of pieces, each `4-byte length ‖ marshal(dict)`: the first holds the answer's
waiting members, the next the memory keys, then the kept rows (snapshot.kept_row), `PIECE` rows a
piece. Each piece is made, sealed (AES-256-GCM, one stream over the whole body) and written before
the next is made, so writing the cache of 100,000 rows holds one piece at a time — not every kept
row, their marshal bytes and the sealed copy at once (that was ~2.5× the served bytes at its peak).
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping
from typing import IO, Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from decoy_lab.errors import UnreadableRow
from decoy_lab.store.snapshot import Snapshot, kept_row, plain_json, row_digest

PIECE = 2_000  # rows a piece: a few MB of marshal at most, written before the next is made
_LEN = 4


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


def read_body(head: dict, plain: bytes) -> Snapshot:
    """The Snapshot the pieces make (raises on pieces that are not what `pieces` writes)."""
    answer: dict = {}
    keys: dict[str, bytes] = {}
    rows: list = []
    view, at = memoryview(plain), 0
    while at < len(view):
        size = int.from_bytes(view[at : at + _LEN], "big")
        end = at + _LEN + size
        if end > len(view):
            raise ValueError("a piece runs past the end of the body")
        piece = marshal.loads(view[at + _LEN : end])
        answer.update(piece.get("answer") or {})
        keys.update(piece.get("keys") or {})
        rows.extend(piece.get("rows") or ())
        at = end
    return Snapshot(head, {"answer": answer, "keys": keys, "rows": rows})
