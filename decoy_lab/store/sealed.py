"""Files sealed beside a profile's vault cache, and the cache's writes in flight.

`SealedFile` keeps one value made from the vault — plain lists, dicts, sets, tuples, strings and
numbers — sealed under the profile's cache key, as the cache itself is: one file, 0600 in the
0700 profiles directory, `DLS1 ‖ 12-byte random nonce ‖ AES-256-GCM(marshal(value))`, with the
cache's associated data (profile, server, agent key's fingerprint), the file's purpose and the
marshal layout as the seal's associated data. Nothing in it is read before the tag checks, so a
changed byte, another profile's file, one made under another key or by another Python is never
used: it is removed and made again. One lives beside `<profile>.cache` today:
`<profile>.map`, the built topic map of the vault's latest content (views/mapcache.py).

A value is sealed and written on a thread of its own (`in_background`), after any write of the
same file still in flight; whatever reads, describes or removes a file waits for its writes
(`settle`), so it never meets one half made, or made after it was removed.
"""

from __future__ import annotations

import logging
import marshal
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from decoy_lab.vault import heap

log = logging.getLogger(__name__)
MAGIC = b"DLS1"
NONCE = 12
TAG = 16
# marshal: the standard library's fastest reader of plain values; its layout is the interpreter's own
FORMAT = f"marshal {marshal.version}, Python {sys.version_info[0]}.{sys.version_info[1]}"
BESIDE = ("map",)  # the purposes of the files kept beside a cache: each is `<profile>.<purpose>`


def beside(cache_path: Path, purpose: str) -> Path:
    """The file of `purpose` kept beside the cache file `cache_path` (`<profile>.<purpose>`)."""
    return Path(cache_path).with_suffix(f".{purpose}")


def files_beside(cache_path: Path) -> list[Path]:
    return [beside(cache_path, p) for p in BESIDE]


# -- writes in flight: a load hands its vault back while the file is sealed and written -----------
_writing: dict[Path, threading.Thread] = {}
_writing_lock = threading.Lock()


def settle(path: Path | None = None) -> None:
    """Wait for the writes in flight (of `path`, or all): everything that reads, describes or
    removes a file waits first, so it never meets one half made or made after a clear."""
    with _writing_lock:
        pending = [t for p, t in _writing.items() if path is None or p == Path(path)]
    for thread in pending:
        thread.join()


def in_background(path: Path, write: Callable[[], None]) -> None:
    """Run `write` on a thread of its own (not a daemon: the interpreter waits for it at exit),
    after any write of the same file still in flight."""

    def run() -> None:
        if earlier is not None:
            earlier.join()
        try:
            write()
            heap.give_back()  # what sealing freed goes back to the system
        except Exception as exc:  # what was made is in memory; only the next session loses its head start
            log.warning("%s was not written: %s", path, exc)
        finally:
            with _writing_lock:
                if _writing.get(path) is thread:
                    del _writing[path]

    thread = threading.Thread(target=run, name=f"decoy-lab cache {path.name}")
    with _writing_lock:
        earlier = _writing.get(path)
        _writing[path] = thread
    thread.start()


def write_private(path: Path, pieces: Callable[[Any], None]) -> None:
    """Write a file atomically, 0600 from its first byte: `pieces(fh)` writes its contents."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            pieces(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class SealedFile:
    """One value sealed in a file of its own beside a profile's cache (see the module docstring).
    It never travels: a copy or a pickle of it (of a Vault that holds it) is None."""

    def __init__(self, path: Path, key: bytes, aad: bytes):
        self.path = Path(path)
        self._key = key
        self._aad = aad + b"\0" + self.path.suffix.encode() + b"\0" + FORMAT.encode()

    def __repr__(self) -> str:
        return f"<SealedFile {self.path}>"

    def __reduce__(self) -> tuple:
        return (type(None), ())  # the key stays in this process: a pickled vault keeps nothing on disk

    def read(self) -> Any:
        """The value kept, or None: no file, or one that does not open (removed: made again later)."""
        settle(self.path)
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._drop(f"cannot be read: {exc.strerror}")
        if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + NONCE + TAG:
            return self._drop("not a sealed file of this layout, or cut short")
        at = len(MAGIC)
        try:
            plain = AESGCM(self._key).decrypt(blob[at : at + NONCE], blob[at + NONCE :], self._aad)
        except Exception:  # a wrong key, a flipped byte, another profile's or another Python's file
            return self._drop("it does not open under this profile's cache key and agent key")
        try:  # only bytes this profile's key sealed get here: what keep() made
            return marshal.loads(plain)
        except (EOFError, ValueError, TypeError):
            return self._drop("its contents are not what this version writes")

    def _drop(self, why: str) -> None:
        log.warning("%s was ignored and removed (%s); it is made again", self.path, why)
        self.path.unlink(missing_ok=True)
        return None

    def keep(self, value: Any) -> None:
        """Seal `value` (plain data: marshal raises ValueError on anything else, here and now)
        and write it on a thread of its own, 0600, atomically."""
        data = marshal.dumps(value)

        def write() -> None:
            nonce = os.urandom(NONCE)
            sealed = AESGCM(self._key).encrypt(nonce, data, self._aad)
            write_private(self.path, lambda fh: fh.write(MAGIC + nonce + sealed))

        in_background(self.path, write)
