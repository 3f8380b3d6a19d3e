"""A sealed local cache of a profile's vault: a notebook reopened tomorrow opens no RSA key.

What it holds, per profile: the memory keys this connection unwrapped (by kid), and for each
row of the last load its id, kid, rev, the SHA-256 of its ciphertext, the fields served beside
it and what it read as (the plaintext model's fields, or why it was unreadable); the answer's
waiting members; the sync cursor the rows were read at; and the access_version, server and
agent key it was read under.

How it is kept: one file, `<profile>.cache` beside the profile (0600 in the 0700 directory):
`DLC5 ‖ head length ‖ head ‖ head tag ‖ 12-byte random nonce ‖ AES-256-GCM(body)`. The head, in
the clear, holds only what a reopen asks the server about first — the sync cursor, the
access_version, and whether every row was kept and nothing was waiting — so the feed is asked
while the body is opened on a worker thread. Nothing of it is used before it checks: the head tag
is an HMAC-SHA256 over the profile name, server, agent key's fingerprint and the head, under a
key derived from the cache key, and it is checked (a few microseconds) before the cursor is sent
anywhere; the same clear part is the seal's associated data, so a changed head, another
profile's file or one made under another key does not open, and its cursor never reaches the
server. The body is a run of marshal pieces (body.py: made, sealed and written one at a time,
so a write holds one piece, not the whole body twice over); marshal is the standard library's
fastest reader of plain lists, dicts, strings and bytes, and safe here because nothing reaches
it before the AES-GCM tag is checked, and only this profile's cache key makes a tag that checks
(the head names the layout: a file from another Python is rebuilt). The cache key is 32 random bytes kept in the profile
store (keyring, or the 0600 profile file) next to the agent's private key: whoever can open the
cache can already read that private key, which opens every row the cache holds, so the cache adds
no new way in.

How it is used (client/loader.py drives it: `VaultCache.open`, then `keep`): a row is taken from it
only when the id, kid, rev and ciphertext hash the server serves now match (vault/reuse.py);
anything else is opened afresh. With a saved sync cursor, a reopen first asks `/api/agent/sync`
what changed: nothing (and nothing was waiting for a key, and access_version is the same) → the
vault is rebuilt from the cache with no GET of the rows and no RSA work; anything changed → one
full read, unchanged rows from the cache (a row whose JSON text is the same byte for byte as when
it was kept — the SHA-256 of it is kept — is not even parsed: jsonstream hands out the cache's
copy); a pruned cursor (410) → one full read, anchored again at `/api/agent/sync/head`. A file that
does not open (truncated, a flipped byte, another profile's, a changed key, an older layout) is
removed with a `CacheIgnored` warning and rebuilt by that load: it is never trusted, not even in
part. A load hands its vault back first and seals and writes the file on a thread of its own
(~0.1 s for 11,000 rows); whatever reads, describes or removes the file waits for that write
(`settle`).

Beside it, sealed under the same key (sealed.py): `<profile>.map`, the topic map built from the
vault's latest content, so a reopened vault with nothing changed lays nothing out again. A vault
loaded through the cache carries that file (`Vault.map_file`); clearing the cache removes it too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import mmap
import os
import warnings
from collections.abc import Iterator, Mapping, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson  # 5-10x the standard library's speed on the 1 MB per 1,000 rows a cache holds
from cryptography.exceptions import InvalidTag

from decoy_lab.errors import ProfileError
from decoy_lab.store import body
from decoy_lab.store.sealed import FORMAT, SealedFile, beside, files_beside, in_background, settle, write_private
from decoy_lab.store.snapshot import DIGEST, Snapshot
from decoy_lab.vault.read import Vault
from decoy_lab.vault.served import ServedRows
from decoy_lab.vault.waiting import answer_waits

log = logging.getLogger(__name__)
MAGIC = b"DLC5"  # decoy-lab cache, layout 5 (a file of another layout does not open: it is rebuilt)
NONCE = 12
HEAD_TAG = 32  # HMAC-SHA256 over the head, checked before anything in the head is used
# FORMAT (sealed.py): marshal, the standard library's fastest reader of plain lists, dicts and
# strings (11,000 rows in ~2/3 of orjson's time); its layout is the interpreter's own, so the head names it
__all__ = ["FORMAT", "CacheIgnored", "CacheInfo", "VaultCache", "clear", "cleared", "describe", "settle"]


class CacheIgnored(UserWarning):
    """A cache file that does not open was removed; the load reads afresh and writes a new one."""


def new_cache_key() -> str:
    """A fresh cache key, base64 (what the profile store keeps)."""
    return base64.b64encode(os.urandom(32)).decode("ascii")


@dataclass
class CacheInfo:
    """Where a profile's cache is and how large (`%decoy cache`, `decoy-lab cache`)."""

    path: Path
    size: int | None  # bytes; None when there is no cache file
    beside: tuple[tuple[Path, int], ...] = ()  # the files kept beside it (sealed.py) and their sizes

    def __str__(self) -> str:
        if self.size is None:
            return f"no cache yet ({self.path} is written by the next load)"
        text = f"{self.path}: {self.size:,} bytes, sealed with AES-256-GCM (key in the profile store)"
        for path, size in self.beside:
            text += f"; beside it, the built {path.suffix[1:]} {path}: {size:,} bytes, sealed the same way"
        return text

    __repr__ = __str__


def rebuilt(vault: Vault | None) -> bool:
    """Was `vault` rebuilt from a cache, in whole or in part (rows that carry digests, not
    ciphertexts)? A load after it matches rows against the cache file again, not against it.
    Only a row kept as a dict can be the cache's (a served text is the server's): no text is parsed."""
    if vault is None:
        return False
    served = vault.served
    rows = served.dicts() if isinstance(served, ServedRows) else served
    return any(DIGEST in row for row in rows)


def profile_cache(store: Any, name: str) -> Path:
    """The cache file of the profile `name` in `store` (a ProfileStore). A ProfileError when no
    profile of that name is saved and no cache of it is left: asking for it is a mistake (a
    misspelt name, or one already unpaired), never "no cache yet"."""
    path = store.cache_path(name)
    if not store.exists(name) and not path.exists():
        saved = ", ".join(store.names()) or "none"
        raise ProfileError(f"no saved profile {name!r} (saved profiles: {saved}), so no cache of it either")
    return path


def describe(path: Path) -> CacheInfo:
    settle(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return CacheInfo(path, None)
    return CacheInfo(path, size, tuple((p, n) for p in files_beside(path) if (n := _size(p)) is not None))


def _size(path: Path) -> int | None:
    settle(path)
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def cleared(path: Path) -> str:
    """Clear the cache (`clear`) and say what was removed (`%decoy cache --clear`, `decoy-lab cache --clear`)."""
    kept = [p for p in files_beside(path) if _size(p) is not None]
    if not clear(path):
        return f"No cache at {path}: nothing to remove." + "".join(f" Removed {p}." for p in kept)
    return f"Removed {path}" + "".join(f" and {p}" for p in kept) + "."


def clear(path: Path) -> bool:
    """Remove the cache file and the files kept beside it (sealed.py: the built map), after any
    write of them in flight; True when there was a cache file."""
    for other in files_beside(path):
        settle(other)
        other.unlink(missing_ok=True)
    settle(path)
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


# -- the file -----------------------------------------------------------------------------------
class VaultCache:
    """One profile's cache file, sealed under `key` (base64, from the profile store)."""

    def __init__(self, path: Path, key: str, *, profile: str, base_url: str, agent_fingerprint: str):
        self.path = Path(path)
        self._key = base64.b64decode(key)
        self._aad = "\0".join(["decoy-lab cache", profile, base_url.rstrip("/"), agent_fingerprint]).encode()
        self._head_key = hmac.new(self._key, b"decoy-lab cache head tag", hashlib.sha256).digest()

    def _head_tag(self, clear_part: bytes) -> bytes:
        """The tag over the clear head (and what it was made for: profile, server, agent key)."""
        return hmac.new(self._head_key, self._aad + b"\0" + clear_part, hashlib.sha256).digest()

    def __repr__(self) -> str:
        return f"<VaultCache {self.path}>"

    def info(self) -> CacheInfo:
        return describe(self.path)

    def clear(self) -> bool:
        return clear(self.path)

    def _ignore(self, why: str) -> None:
        warnings.warn(f"the vault cache {self.path} was ignored and removed ({why}); reading afresh", CacheIgnored, 3)
        self.clear()

    def _blob(self) -> bytes | mmap.mmap | None:
        """The file's bytes, mapped rather than read into memory: at 100,000 rows the file is
        ~73 MB, and a copy of it is as many freshly touched pages again (on a machine that lends
        memory lazily each costs several µs) only to be decrypted once and dropped. Safe to map:
        the file is only ever replaced whole (`write_private`), never written in place."""
        settle(self.path)
        try:
            with open(self.path, "rb") as fh:
                try:
                    return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError):  # an empty file, or a file system that cannot map
                    return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._ignore(f"cannot be read: {exc.strerror}")
            return None

    def head(self, blob: bytes | mmap.mmap) -> tuple[dict, int] | None:
        """The file's head (in the clear, its tag checked) and where the sealed part starts; None
        for a file of another layout, one cut short, or a head whose tag does not check under this
        profile's cache key and agent key (removed with a warning: nothing of it is used)."""
        start = len(MAGIC) + 4
        size = int.from_bytes(blob[len(MAGIC) : start], "big") if blob[: len(MAGIC)] == MAGIC else -1
        if size < 0 or len(blob) < start + size + HEAD_TAG + NONCE + 16:
            self._ignore("not a decoy-lab cache of this layout, or cut short")
            return None
        end = start + size
        if not hmac.compare_digest(blob[end : end + HEAD_TAG], self._head_tag(blob[:end])):
            self._ignore("its head does not check under this profile's cache key and agent key")
            return None
        try:
            head = orjson.loads(blob[start:end])
        except orjson.JSONDecodeError:
            head = None
        if not isinstance(head, dict):
            self._ignore("its head is damaged")
            return None
        return head, end + HEAD_TAG

    def read(self, blob: bytes | mmap.mmap | None = None) -> Snapshot | None:
        """The cache's contents, or None (no file; or one that does not open, removed with a warning)."""
        if blob is None:
            with _released(self._blob()) as mine:
                return None if mine is None else self.read(mine)
        found = self.head(blob)
        if found is None:
            return None
        head, at = found
        nonce, aad = blob[at : at + NONCE], self._aad + b"\0" + blob[:at]
        try:  # nothing is parsed before the tag over the whole body checks (body.py)
            with memoryview(blob) as view:  # the sealed part as it lies in the file, not a copy of it
                if head.get("format") != FORMAT:  # made by another Python: marshal's layout is its own
                    body.check_sealed(self._key, nonce, aad, view[at + NONCE :])  # authentic, or not at all
                    self._ignore(f"it was written as {head.get('format')!r}, this is {FORMAT!r}")
                    return None
                return body.open_sealed(head, self._key, nonce, aad, view[at + NONCE :])
        except InvalidTag:  # a wrong key, a flipped byte, another profile's file: nothing in it is used
            self._ignore("it does not open under this profile's cache key and agent key")
            return None
        except Exception:  # authentic, yet not what write() makes
            self._ignore("its contents are not what this version writes")
            return None

    def write(
        self,
        vault: Vault,
        keys: Mapping[str, bytes],
        *,
        cursor: str | None,
        access_version: Any,
        snapshot: Snapshot | None = None,
    ) -> None:
        """Seal what `vault` read (and the keys) into the file, atomically, 0600. Rows the load took
        from `snapshot` are written back as it kept them (their served fields brought up to date)."""
        taken = snapshot.taken if snapshot is not None else {}
        head = {
            "format": FORMAT,
            "cursor": cursor,
            "access_version": access_version,
            "complete": body.complete(vault, taken),
            "waiting": answer_waits(vault.answer),  # keys may arrive with no change logged
        }
        head_bytes = orjson.dumps(head, default=str)
        clear_part = MAGIC + len(head_bytes).to_bytes(4, "big") + head_bytes
        clear_part += self._head_tag(clear_part)
        nonce = os.urandom(NONCE)

        def contents(fh: Any) -> None:
            fh.write(clear_part + nonce)
            pieces = body.pieces(vault, keys, taken)
            body.write_sealed(fh, self._key, nonce, self._aad + b"\0" + clear_part, pieces)

        write_private(self.path, contents)

    def beside(self, purpose: str) -> SealedFile:
        """The sealed file of `purpose` kept beside this cache, under its key (sealed.py)."""
        return SealedFile(beside(self.path, purpose), self._key, self._aad)

    # -- a load through the cache: opened while the feed is asked, written back after -------------
    def open(self, *, first: bool, key_cache: MutableMapping[str, bytes]) -> Opening:
        """Begin a load through this cache. On a `first` load of this process the file is opened on
        a worker — its keys go to `key_cache`, its rows are rebuilt — while the loader asks the sync
        feed what changed (`Opening.cursor_if_unchanged`) and, if anything did, while the server
        prepares its answer; a later load in the same process matches rows against the vault it
        holds, and gets an Opening of nothing. Nothing of the file is used unless its head's tag
        checks (`head`): a cursor is sent only from a head this profile's key wrote."""
        blob = self._blob() if first else None
        found = self.head(blob) if blob is not None else None
        if blob is None or found is None:
            with _released(blob):
                return Opening()
        pool = ThreadPoolExecutor(max_workers=1)
        opening = Opening(pool.submit(self._open, blob), key_cache, found[0])
        pool.shutdown(wait=False)  # its one task runs on; `Opening` waits for it
        return opening

    def keep(
        self,
        vault: Vault,
        keys: Mapping[str, bytes],
        *,
        cursor: str | None,
        access_version: Any,
        snapshot: Snapshot | None,
    ) -> Vault:
        """Seal `vault` and `keys` (as of this load: later loads may add keys meanwhile) into the
        file on a thread of its own (`write`: rows the load took from `snapshot` written back as it
        kept them); `vault` is handed back at once, carrying the map kept beside the file."""
        in_background(
            self.path,
            lambda: self.write(vault, keys, cursor=cursor, access_version=access_version, snapshot=snapshot),
        )
        return self.carry_map(vault)

    def carry_map(self, vault: Vault) -> Vault:
        """A vault loaded through this cache keeps its built map beside it (views/mapcache.py)."""
        vault.map_file = self.beside("map")
        return vault

    def _open(self, blob: bytes | mmap.mmap) -> Snapshot | None:
        with _released(blob):  # read whole: the file is let go before a write replaces it
            snap = self.read(blob)
        if snap is not None:
            snap.prebuild()
        return snap


@contextmanager
def _released(blob: bytes | mmap.mmap | None) -> Iterator[bytes | mmap.mmap | None]:
    """`blob`, its mapping of the file closed once used."""
    try:
        yield blob
    finally:
        if isinstance(blob, mmap.mmap):
            blob.close()


class Opening:
    """A cache file being opened for one load, on a worker (`VaultCache.open`); an Opening of
    nothing when there is no file to open. `snapshot()` waits for it (once: later calls give the
    same) and restores its keys to the key cache before handing it out. As a context manager it
    waits for the worker on the way out, whatever the load did meanwhile."""

    def __init__(
        self,
        future: Future[Snapshot | None] | None = None,
        key_cache: MutableMapping[str, bytes] | None = None,
        head: Mapping[str, Any] | None = None,
    ):
        self._future, self._key_cache = future, key_cache
        self.head: Mapping[str, Any] = head or {}  # the file's head, its tag checked
        self._done = False

    def __enter__(self) -> Opening:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._future is not None:
            wait([self._future])

    def cursor_if_unchanged(self, access_version: Any) -> str | None:
        """The cursor to ask the sync feed about, when the vault may be rebuilt from the file alone
        should the feed report no change (`_unchanged_if_the_feed_says_so`): only when
        `access_version` — as /policies gave it in this process, None when it was not read — is
        the one the file was written under. None: read the rows (a file that did not open is a
        cold load, anchored afresh)."""
        if self._future is None or not _unchanged_if_the_feed_says_so(self.head, access_version):
            return None
        return str(self.head["cursor"])

    def snapshot(self) -> Snapshot | None:
        if self._future is None:
            return None
        snap = self._future.result()
        if snap is not None and not self._done and self._key_cache is not None:
            self._key_cache.update(snap.keys)
        self._done = True
        return snap


def _unchanged_if_the_feed_says_so(head: Mapping, access_version: Any) -> bool:
    """May the vault be rebuilt from the file alone when the feed reports no change? Only when
    every row was kept, nothing was waiting for a key (keys may arrive with no change logged),
    and the access is the one /policies gave in this process."""
    return bool(
        head.get("complete")
        and head.get("cursor") is not None
        and not head.get("waiting")
        and access_version is not None
        and head.get("access_version") == access_version
    )
