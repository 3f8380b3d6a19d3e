"""A sealed local cache of a profile's vault: a notebook reopened tomorrow opens no RSA key.

What it holds, per profile: the memory keys this connection unwrapped (by kid), and for each
row of the last load its id, kid, rev, the SHA-256 of its ciphertext, the fields served beside
it and what it read as (the plaintext model's fields, or why it was unreadable); the answer's
waiting members; the sync cursor the rows were read at; and the access_version, server and
agent key it was read under.

How it is kept: one file, `<profile>.cache` beside the profile (0600 in the 0700 directory):
`DLC3 ‖ head length ‖ head ‖ 12-byte random nonce ‖ AES-256-GCM(body)`. The head, in the clear,
holds only what a reopen asks the server about first — the sync cursor, the access_version, and
whether every row was kept and nothing was waiting — so the feed is asked while the body is
opened on a worker thread; it is bound into the seal with the profile name, server and agent
key's fingerprint as associated data, so a changed head, another profile's file or one made under
another key does not open. The body is marshal's: the standard library's fastest reader of plain
lists, dicts, strings and bytes, and safe here because nothing reaches it before the AES-GCM tag
is checked, and only this profile's cache key makes a tag that checks (the head names the layout:
a file from another Python is rebuilt). The cache key is 32 random bytes kept in the profile
store (keyring, or the 0600 profile file) next to the agent's private key: whoever can open the
cache can already read that private key, which opens every row the cache holds, so the cache adds
no new way in.

How it is used (`VaultCache.load`): a row is taken from it only when the id, kid, rev and
ciphertext hash the server serves now match; anything else is opened afresh. With a saved sync
cursor, a reopen first asks `/api/agent/sync` what changed: nothing (and nothing was waiting for
a key, and access_version is the same) → the vault is rebuilt from the cache with no GET of the
rows and no RSA work; anything changed → one full read, unchanged rows from the cache (a row
whose JSON text is the same byte for byte as when it was kept — the SHA-256 of it is kept — is
not even parsed: jsonstream hands out the cache's copy); a pruned
cursor (410) → one full read, anchored again at `/api/agent/sync/head`. A file that does not
open (truncated, a flipped byte, another profile's, a changed key, an older layout) is removed
with a `CacheIgnored` warning and rebuilt by that load: it is never trusted, not even in part.
"""

from __future__ import annotations

import base64
import hashlib
import marshal
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson  # 5-10x the standard library's speed on the 1 MB per 1,000 rows a cache holds
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import frames, memory
from .errors import APIError, UnreadableRow
from .vault import Vault, decoded, meta_values

MAGIC = b"DLC3"  # decoy-lab cache, layout 3 (a file of another layout does not open: it is rebuilt)
NONCE = 12
# marshal: the standard library's fastest reader of plain lists, dicts and strings (11,000 rows in
# ~2/3 of orjson's time); its layout is the interpreter's own, so the head names it
FORMAT = f"marshal {marshal.version}, Python {sys.version_info[0]}.{sys.version_info[1]}"
SYNC, HEAD = "/api/agent/sync", "/api/agent/sync/head"
MAX_SYNC_PAGES = 1000  # a feed that says "more" for longer than this is read in full instead
WAITING_KEYS = ("preparing", "preparing_others", "preparing_unknown")  # keys may arrive with no change logged
_BLOBS = ("ciphertext", "wrapped_key", "self_wrap", "owner_wrap", "grantee_wraps")  # never kept: not needed
DIGEST = "ciphertext_sha256"  # what a row rebuilt from the cache carries instead of its ciphertext
_MODELS: dict[str, Any] = {"memory": memory.Memory, "topic": memory.TopicEntity, "link": memory.Link}
_SERVED = {f.name for f in fields(memory.Served)}  # the served fields every model carries
_PLAIN = {kind: [f.name for f in fields(cls) if f.name not in _SERVED] for kind, cls in _MODELS.items()}


class CacheIgnored(UserWarning):
    """A cache file that does not open was removed; the load reads afresh and writes a new one."""


def new_cache_key() -> str:
    """A fresh cache key, base64 (what the profile store keeps)."""
    return base64.b64encode(os.urandom(32)).decode("ascii")


def digest(ciphertext: Any) -> str | None:
    return hashlib.sha256(ciphertext.encode("ascii", "replace")).hexdigest() if isinstance(ciphertext, str) else None


def row_digest(row: Mapping) -> str | None:
    """The SHA-256 of a row's ciphertext (a row rebuilt from the cache carries it instead)."""
    got = digest(row.get("ciphertext"))
    return got if got is not None else row.get(DIGEST)


@dataclass
class CacheInfo:
    """Where a profile's cache is and how large (`%decoy cache`, `decoy-lab cache`)."""

    path: Path
    size: int | None  # bytes; None when there is no cache file

    def __str__(self) -> str:
        if self.size is None:
            return f"no cache yet ({self.path} is written by the next load)"
        return f"{self.path}: {self.size:,} bytes, sealed with AES-256-GCM (key in the profile store)"

    __repr__ = __str__


def rebuilt(vault: Vault | None) -> bool:
    """Was `vault` rebuilt from a cache, in whole or in part (rows that carry digests, not
    ciphertexts)? A load after it matches rows against the cache file again, not against it."""
    return vault is not None and any(DIGEST in row for row in vault.served)


def describe(path: Path) -> CacheInfo:
    try:
        return CacheInfo(path, path.stat().st_size)
    except FileNotFoundError:
        return CacheInfo(path, None)


def clear(path: Path) -> bool:
    """Remove the cache file; True when there was one."""
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


# -- what one file holds --------------------------------------------------------------------------
class Snapshot:
    """The contents of a cache file that opened: rows in served order, keys, cursor."""

    def __init__(self, head: dict, body: dict):
        self.cursor: str | None = head.get("cursor")
        self.access_version = head.get("access_version")
        self.complete: bool = bool(head.get("complete"))  # every served row is kept: the vault can be rebuilt
        self.answer: dict = body.get("answer") or {}
        self.keys: dict[str, bytes] = body.get("keys") or {}
        # per row: [served fields (the ciphertext's digest in its place), kind, plaintext fields |
        #           reason, the served fields the model holds when not the row's own (else None),
        #           the fingerprint of the row's JSON text as served]
        self.rows: list[list] = body.get("rows") or []
        self.taken: dict[str, list] = {}  # id -> the row as the cache keeps it, for rows reuse() gave out

    @cached_property
    def _by_id(self) -> dict[str, list]:
        return {r[0]["id"]: r for r in self.rows}

    @cached_property
    def by_fingerprint(self) -> dict[str, dict]:
        """Fingerprint of a row's JSON text as it was served → the cache's copy of that row: a row
        served byte for byte as then is handed out as this copy without being parsed (jsonstream)."""
        return {r[4]: r[0] for r in self.rows if r[4] is not None and r[1] != "unreadable"}

    def _rebuild(self, row: Mapping, kept: list, same: bool) -> tuple[frames.DecodedRow, Any]:
        """What `row` reads as, from what the cache kept. `same`: its served fields are those the
        kept ones were read from, so the model's served fields are as kept."""
        _served, kind, value, checked, _fp = kept
        if kind == "unreadable":
            err = UnreadableRow(row.get("id"), value)
            return decoded(row, err), err
        if kind == "other":
            return decoded(row, None), None
        if not same:
            model = _MODELS[kind](*value, **vars(memory.served_fields(row)))
            return decoded(row, model), model
        if checked is not None:  # the model's served fields are not the row's own (kept as checked)
            rev, kid, via, mine, author, created, updated = checked
            model = _MODELS[kind](
                *value,
                rev=rev,
                kid=kid,
                via=via,
                mine=mine,
                author_kind=author,
                created_at=_when(created),
                updated_at=_when(updated),
            )
            return decoded(row, model), model
        # nearly every row: its served fields, of the types the reader checks, are the model's as they are
        kid, rev, via, mine, author = row["kid"], row["rev"], row["via"], row["mine"], row["author_kind"]
        created, updated = row.get("created_at"), row.get("updated_at")
        model = _MODELS[kind](
            *value,
            rev=rev,
            kid=kid,
            via=list(via),
            mine=mine,
            author_kind=author,
            created_at=_when(created),
            updated_at=_when(updated),
        )
        return decoded(row, model, (kid, rev, list(via), mine, author, created, updated)), model

    def reuse(self, row: Mapping) -> tuple[frames.DecodedRow, Any] | None:
        """What `row` read as, when the cache holds it with the same id, kid, rev and ciphertext
        hash and it was readable then; None means: open it afresh."""
        rid = row.get("id")
        kept = self._by_id.get(rid)  # type: ignore[arg-type]
        if kept is None or kept[1] == "unreadable":
            return None
        if row is kept[0]:  # the stream knew it by its fingerprint: served byte for byte as kept
            self.taken[rid] = kept  # type: ignore[index]
            return self._rebuild(row, kept, True)
        was = kept[0]
        if was.get("kid") != row.get("kid") or was.get("rev") != row.get("rev") or was[DIGEST] != row_digest(row):
            return None
        same = _served_part(row) == _served_part(was)
        try:
            out = self._rebuild(row, kept, same)
        except (UnreadableRow, TypeError, KeyError):  # served fields the reader refuses: read it afresh
            return None
        again = kept if same else _kept_row(row, out[1], None)
        if again is not None:
            self.taken[str(rid)] = again  # what write() keeps of it
        return out

    def vault(self, space_rows: Iterable[frames.DecodedRow]) -> Vault:
        """The vault of the last load, rebuilt with no request and no RSA work."""
        served, pairs = [], []
        for kept in self.rows:
            served.append(kept[0])  # the snapshot's own dict: handed out once, with the digest it stands for
            pairs.append(self._rebuild(kept[0], kept, True))
        return Vault(
            served=served,
            decoded_rows=[d for d, _ in pairs],
            models=[m for _, m in pairs if m is not None and not isinstance(m, UnreadableRow)],
            answer=dict(self.answer),
            space_rows=list(space_rows),
            read=0,
            results=[m for _, m in pairs],
            fingerprints=[kept[4] for kept in self.rows],
        )


def _served_part(row: Mapping) -> dict:
    return {k: v for k, v in row.items() if k not in _BLOBS and k != DIGEST}


def _kept_row(row: Mapping, result: Any, fp: str | None) -> list | None:
    """One served row as the cache keeps it, or None when it cannot be kept (no id, kid or ciphertext)."""
    rid, kid, dig = row.get("id"), row.get("kid"), row_digest(row)
    if not isinstance(rid, str) or not isinstance(kid, str) or dig is None:
        return None
    served = _served_part(row)
    served[DIGEST] = dig
    if isinstance(result, UnreadableRow):
        return [served, "unreadable", result.reason, None, None]
    if result is None:
        return [served, "other", None, None, fp]
    kind = result.kind
    times = [t.isoformat() if t is not None else None for t in (result.created_at, result.updated_at)]
    checked: list | None = [result.rev, result.kid, result.via, result.mine, result.author_kind, *times]
    if _as_served(served, result):
        checked = None  # nearly every row: the model holds the served fields as they are, not kept twice
    return [served, kind, [getattr(result, name) for name in _PLAIN[kind]], checked, fp]


def _as_served(served: Mapping, result: Any) -> bool:
    """Does the model hold `served`'s fields exactly as served, of the types the reader checks (so
    a rebuild may take them from the row unchecked)?"""
    plain = tuple(served.get(k) for k in ("kid", "rev", "via", "mine", "author_kind", "created_at", "updated_at"))
    return (
        meta_values(served) == plain
        and None not in plain[:5]
        and (result.kid, result.rev, result.via, result.mine, result.author_kind) == plain[:5]
        and (result.created_at, result.updated_at) == (_when(plain[5]), _when(plain[6]))
    )


def _plain_json(value: Any) -> Any:
    """A JSON answer as lists, dicts and scalars only (marshal keeps nothing else)."""
    return orjson.loads(orjson.dumps(value, default=str))


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None


# -- the file -----------------------------------------------------------------------------------
class VaultCache:
    """One profile's cache file, sealed under `key` (base64, from the profile store)."""

    def __init__(self, path: Path, key: str, *, profile: str, base_url: str, agent_fingerprint: str):
        self.path = Path(path)
        self._key = base64.b64decode(key)
        self._aad = "\0".join(["decoy-lab cache", profile, base_url.rstrip("/"), agent_fingerprint]).encode()

    def __repr__(self) -> str:
        return f"<VaultCache {self.path}>"

    def info(self) -> CacheInfo:
        return describe(self.path)

    def clear(self) -> bool:
        return clear(self.path)

    def _ignore(self, why: str) -> None:
        warnings.warn(f"the vault cache {self.path} was ignored and removed ({why}); reading afresh", CacheIgnored, 3)
        self.clear()

    def _blob(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._ignore(f"cannot be read: {exc.strerror}")
            return None

    def head(self, blob: bytes) -> tuple[dict, int] | None:
        """The file's head (in the clear, bound to the sealed part) and where the sealed part starts;
        None for a file of another layout or one cut short (removed with a warning)."""
        start = len(MAGIC) + 4
        size = int.from_bytes(blob[len(MAGIC) : start], "big") if blob.startswith(MAGIC) else -1
        if size < 0 or len(blob) < start + size + NONCE + 16:
            self._ignore("not a decoy-lab cache of this layout, or cut short")
            return None
        try:
            head = orjson.loads(blob[start : start + size])
        except orjson.JSONDecodeError:
            head = None
        if not isinstance(head, dict):
            self._ignore("its head is damaged")
            return None
        return head, start + size

    def read(self, blob: bytes | None = None) -> Snapshot | None:
        """The cache's contents, or None (no file; or one that does not open, removed with a warning)."""
        blob = self._blob() if blob is None else blob
        if blob is None:
            return None
        found = self.head(blob)
        if found is None:
            return None
        head, at = found
        nonce, aad = blob[at : at + NONCE], self._aad + b"\0" + blob[:at]
        try:
            plain = AESGCM(self._key).decrypt(nonce, blob[at + NONCE :], aad)
        except Exception:  # a wrong key, a flipped byte, another profile's file: nothing in it is used
            self._ignore("it does not open under this profile's cache key and agent key")
            return None
        if head.get("format") != FORMAT:  # authentic, but made by another Python: marshal's layout is its own
            self._ignore(f"it was written as {head.get('format')!r}, this is {FORMAT!r}")
            return None
        try:  # only bytes this profile's key sealed get here (the tag was checked): what write() made
            return Snapshot(head, marshal.loads(plain))
        except Exception:
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
        rows, complete, seen = [], True, set()
        taken = snapshot.taken if snapshot is not None else {}
        fps = (
            vault.fingerprints
            if vault.fingerprints is not None and len(vault.fingerprints) == len(vault.served)
            else None
        )
        for i, (row, result) in enumerate(zip(vault.served, vault.results)):
            rid = row.get("id")
            kept = taken.get(rid) if isinstance(rid, str) and rid not in seen else None
            kept = kept if kept is not None else _kept_row(row, result, fps[i] if fps is not None else None)
            if kept is None or kept[0]["id"] in seen:  # a row that cannot be kept, or a further copy
                complete = False
                continue
            seen.add(kept[0]["id"])
            rows.append(kept)
        head = {
            "format": FORMAT,
            "cursor": cursor,
            "access_version": access_version,
            "complete": complete,
            "waiting": any(vault.answer.get(k) for k in WAITING_KEYS),
        }
        body = {"answer": _plain_json(vault.answer), "keys": {str(k): bytes(v) for k, v in keys.items()}, "rows": rows}
        head_bytes = orjson.dumps(head, default=str)
        clear_part = MAGIC + len(head_bytes).to_bytes(4, "big") + head_bytes
        nonce = os.urandom(NONCE)
        plain = marshal.dumps(body)
        sealed = clear_part + nonce + AESGCM(self._key).encrypt(nonce, plain, self._aad + b"\0" + clear_part)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(sealed)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- reopening: cached rows + sync --------------------------------------------------------
    def load(
        self,
        *,
        first: bool,
        get: Callable[..., dict],
        read: Callable[[Snapshot | None], Vault],
        key_cache: MutableMapping[str, bytes],
        space_rows: Callable[[], list[frames.DecodedRow]],
        access_version: Any,
    ) -> Vault:
        """A load through the cache. `read(snapshot)` is one full read that takes unchanged rows
        from the snapshot; `get(path, params, **members)` a plain GET; `space_rows()` reads the
        legacy space rows (with the keys restored first). On a `first` load of this process the
        file is opened (its keys go to `key_cache`) and the sync cursor followed; the vault is
        rebuilt with no read only when `access_version` — as /policies gave it in this process,
        None when it was not read — is the one the cache was written under."""
        blob = self._blob() if first else None
        found = self.head(blob) if blob is not None else None
        snap, changed = None, None
        if found is not None:
            head = found[0]
            if (
                head.get("complete")
                and head.get("cursor") is not None
                and not head.get("waiting")  # keys may arrive with no change logged: read in full
                and access_version is not None
                and head.get("access_version") == access_version
            ):
                # the sealed part is opened on a worker while the feed is asked what changed
                with ThreadPoolExecutor(max_workers=1) as pool:
                    opening = pool.submit(self.read, blob)
                    changed = changes_since(get, str(head["cursor"]))
                    snap = opening.result()
            else:
                snap = self.read(blob)
        if snap is not None:
            key_cache.update(snap.keys)
        spaces = space_rows()
        if snap is not None and changed is False:
            return snap.vault(spaces)
        cursor = anchor(get)  # before the read: a change made meanwhile is seen again next time, never lost
        vault = read(snap)
        self.write(vault, key_cache, cursor=cursor, access_version=access_version, snapshot=snap)
        return vault


def anchor(get: Callable[..., dict]) -> str | None:
    """The sync head now (None when the server keeps no change feed for this connection)."""
    try:
        head = get(HEAD, head=(str, int)).get("head")
    except APIError:
        return None
    return str(head) if head is not None else None


def changes_since(get: Callable[..., dict], cursor: str) -> bool | None:
    """Did anything this connection sees change since `cursor`? None when the feed cannot say:
    the cursor was pruned (410), the server refuses the feed, or it says "more" forever."""
    try:
        for _ in range(MAX_SYNC_PAGES):
            ans = get(SYNC, {"cursor": cursor}, changes=dict, state=(str, int))
            for bucket in (ans.get("changes") or {}).values():
                if isinstance(bucket, dict) and any(bucket.get(k) for k in ("created", "updated", "destroyed")):
                    return True
            before, cursor = cursor, str(ans.get("state", cursor))
            if not ans.get("hasMore"):
                return False
            if cursor == before:
                return None
    except APIError:  # 410 CURSOR_PRUNED above all
        return None
    return None
